"""Traces in and out as JSON Lines: one core operation a line.

The format (version 1) maps one to one onto the core API. Every line is an
object with ``op`` and the operation's arguments, named as the core names
them; ``project`` (or the importer's ``--project``), ``agent`` (the agent id
the write runs as; default ``import``) and ``request_id`` are common to all::

    {"op": "create_task", "project": "acme", "agent": "planner", "task": "choose-db", "goal": "Pick a database"}
    {"op": "record_event", "task": "choose-db", "kind": "message", "role": "user", "payload": "Which one?"}
    {"op": "set_step", "task": "choose-db", "name": "compare", "state": "completed", "kind": "analysis",
     "result_event_seq": 1, "result_basis": "supported", "result_supports": [{"kind": "event", "task_name": "choose-db", "seq": 1}]}
    {"op": "add_document", "key": "adr-7", "text": "..."}          also update_document, delete_document
    {"op": "record_decision", "task": "choose-db", "choice_key": "orders-db", "conclusion": "...",
     "rationale": "...", "assumptions": [], "open_questions": [], "supports": [...]}
    {"op": "supersede_decision", "decision": {"task": "choose-db", "choice_key": "orders-db", "revision": 1},
     "conclusion": "...", "rationale": "...", "explanation": "...", "supports": [...]}
    {"op": "reject_decision", "decision": "<decision id>", "reason": "..."}
    {"op": "reaffirm_decision", "decision": {...}, "explanation": "..."}
    {"op": "redact_event", "task": "choose-db", "seq": 3, "reason": "..."}
    {"op": "delete_task", "task": "scratch", "include_decisions": true, "reason": "..."}
    {"op": "continue_review", "limit": 500}                       or "until_done": true
    {"op": "comment", "decision": {...}, "thread": "<id>", "comment": "<id>", "body": "...", "mentions": []}
    {"op": "resolve_thread", "thread": "<id>", "resolved": true}

A ``comment`` line is one comment of a discussion (``core.comments``) as it
stands: its thread is made by its first comment; ``edited_at`` when it was
edited; a deleted or redacted comment has ``state`` (``deleted``,
``redacted``), ``removed_by`` and ``removed_at`` and no ``body``.

A decision is named by its id or, portably, by ``{"task", "choice_key",
"revision"}``. Supports are the core's support inputs; a document support may
also be written portably as ``{"kind": "document", "key", "version",
"start", "end"}`` (a span) or ``{"kind": "document", "key", "version",
"chunk"}``, and a decision support as ``{"kind": "decision", "task_name",
"choice_key", "revision"}``. Document passages are fetched at import time, as
the agent would have fetched them. Each reference takes exactly the fields of
one of its forms (``REFERENCE_FORMS``): a missing or unknown field (``task``
where a support takes ``task_name``) is reported as such.

A line may carry ``at``, the ISO-8601 time the operation happened (UTC when
it names no zone): events, decisions, revisions, reviews and the other
records it writes keep that time, and its activity entry keeps both that
time and the time of the import. A line without ``at`` happens at the
time it is imported.

A line without ``request_id`` gets one derived from its line number and
content, so importing the same file twice changes nothing the second time.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic import BaseModel

from . import _common as c
from .claims import Claims
from .comments import Discussion
from .decisions import DecisionTraces
from .history import ConversationHistory
from .knowledge import (
    Graph,
    decode_evidence_id,
    document_node_id,
    encode_chunk,
    encode_span,
)
from .models import DecisionSupport, DocumentSupport, EventSupport
from .retention import ActivityLog, HistoryRetention
from .review_sweep import review_until_done
from .stores import GraphStore

FORMAT_VERSION = 1
OPERATIONS = (
    "create_task",
    "record_event",
    "set_step",
    "add_document",
    "update_document",
    "delete_document",
    "record_decision",
    "supersede_decision",
    "reject_decision",
    "reaffirm_decision",
    "redact_event",
    "delete_task",
    "continue_review",
    "assign",
    "comment",
    "resolve_thread",
)
_COMMON = {"op", "project", "agent", "request_id", "at"}

#: Each reference a line may hold, with the fields of each of its forms
#: (every field required, no other allowed).
REFERENCE_FORMS: dict[str, tuple[tuple[str, ...], ...]] = {
    "decision": (("task", "choice_key", "revision"),),  # or the decision id as a string
    "event support": (("kind", "task_name", "seq"),),
    "document support": (
        ("kind", "evidence_id"),
        ("kind", "key", "version", "start", "end"),
        ("kind", "key", "version", "chunk"),
    ),
    "decision support": (("kind", "decision_id"), ("kind", "task_name", "choice_key", "revision")),
}
_INTEGER_FIELDS = {"revision", "seq", "version", "start", "end", "chunk"}


class LineError(ValueError):
    """A line that cannot be applied: not an operation, bad arguments, or
    refused by the core (``code`` is then the core's error code)."""

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class Outcome:
    op: str
    project: str
    result: BaseModel | None


def derived_request_id(line_number: int, line: dict[str, Any]) -> str:
    body = json.dumps({k: v for k, v in line.items() if k != "request_id"}, sort_keys=True, ensure_ascii=False)
    return "import:" + hashlib.sha256(f"{line_number}\x1f{body}".encode()).hexdigest()[:48]


class Importer:
    """Applies lines to a store, building each service once per project and agent."""

    def __init__(self, store: GraphStore, *, project: str | None = None) -> None:
        self.store = store
        self.project = project
        self._services: dict[tuple[str, str, str], Any] = {}

    def _service(self, kind: type, project: str, agent: str) -> Any:
        key = (kind.__name__, project, agent)
        if key not in self._services:
            self._services[key] = kind(self.store, project_id=project, agent_id=agent)
        return self._services[key]

    def apply(self, line: Any, line_number: int) -> Outcome:
        if not isinstance(line, dict):
            raise LineError("a line must be a JSON object")
        op = line.get("op")
        if op not in OPERATIONS:
            raise LineError(f"unknown operation {op!r}; expected one of {', '.join(OPERATIONS)}")
        project = self.project or line.get("project")
        if not isinstance(project, str) or not project:
            raise LineError('no project: give "project" on the line or --project to the importer')
        agent = line.get("agent", "import")
        if not isinstance(agent, str) or not agent:
            raise LineError('"agent" must be a non-empty string')
        request_id = line.get("request_id") or derived_request_id(line_number, line)
        happened = _time(line.get("at"))
        args = {k: v for k, v in line.items() if k not in _COMMON}
        try:
            with c.happened_at(happened):
                result = getattr(self, "_" + op)(project, agent, request_id, args)
        except KeyError as exc:
            raise LineError(f"{op} needs {exc.args[0]!r}") from exc
        except (TypeError, ValueError) as exc:
            if isinstance(exc, LineError):
                raise
            raise LineError(f"bad arguments for {op}: {exc}") from exc
        error = getattr(result, "error", None)
        if result is not None and getattr(result, "recorded", True) is False:
            code = getattr(error, "value", str(error))
            raise LineError(f"{op} refused: {code}", code)
        return Outcome(op, project, result)

    # -- operations -------------------------------------------------------

    def _history(self, project: str, agent: str) -> ConversationHistory:
        return self._service(ConversationHistory, project, agent)

    def _graph(self, project: str, agent: str) -> Graph:
        return self._service(Graph, project, agent)

    def _traces(self, project: str, agent: str) -> DecisionTraces:
        return self._service(DecisionTraces, project, agent)

    def _retention(self, project: str, agent: str) -> HistoryRetention:
        return self._service(HistoryRetention, project, agent)

    def _create_task(self, project: str, agent: str, rid: str, a: dict[str, Any]) -> Any:
        return self._history(project, agent).create_task(a.pop("task"), request_id=rid, **a)

    def _record_event(self, project: str, agent: str, rid: str, a: dict[str, Any]) -> Any:
        return self._history(project, agent).record_event(a.pop("task"), request_id=rid, **a)

    def _set_step(self, project: str, agent: str, rid: str, a: dict[str, Any]) -> Any:
        if a.get("result_supports") is not None:
            a["result_supports"] = [self._support(project, s) for s in a["result_supports"]]
        return self._history(project, agent).set_step(a.pop("task"), request_id=rid, **a)

    def _add_document(self, project: str, agent: str, rid: str, a: dict[str, Any]) -> Any:
        return self._graph(project, agent).add(a.pop("key"), a.pop("text"), request_id=rid, **a)

    def _update_document(self, project: str, agent: str, rid: str, a: dict[str, Any]) -> Any:
        return self._graph(project, agent).update(a.pop("key"), a.pop("text"), request_id=rid, **a)

    def _delete_document(self, project: str, agent: str, rid: str, a: dict[str, Any]) -> Any:
        return self._graph(project, agent).delete(a.pop("key"), request_id=rid, **a)

    def _supports_and_fetched(self, project: str, agent: str, raw: Any) -> tuple[list[Any], list[Any]]:
        if not isinstance(raw, list):
            raise LineError('"supports" must be a list')
        supports = [self._support(project, s) for s in raw]
        graph = self._graph(project, agent)
        fetched = [graph.fetch(s["evidence_id"]) for s in supports if s.get("kind") == "document"]
        return supports, fetched

    def _record_decision(self, project: str, agent: str, rid: str, a: dict[str, Any]) -> Any:
        supports, fetched = self._supports_and_fetched(project, agent, a.pop("supports", None))
        return self._traces(project, agent).record_decision(
            a.pop("task"), supports=supports, fetched=fetched, request_id=rid, **a
        )

    def _supersede_decision(self, project: str, agent: str, rid: str, a: dict[str, Any]) -> Any:
        target = self._decision(project, a.pop("decision"))
        supports, fetched = self._supports_and_fetched(project, agent, a.pop("supports", None))
        return self._traces(project, agent).supersede_decision(
            target, supports=supports, fetched=fetched, request_id=rid, **a
        )

    def _reject_decision(self, project: str, agent: str, rid: str, a: dict[str, Any]) -> Any:
        return self._traces(project, agent).reject_decision(
            self._decision(project, a.pop("decision")), request_id=rid, **a
        )

    def _reaffirm_decision(self, project: str, agent: str, rid: str, a: dict[str, Any]) -> Any:
        return self._traces(project, agent).reaffirm_decision(
            self._decision(project, a.pop("decision")), request_id=rid, **a
        )

    def _redact_event(self, project: str, agent: str, rid: str, a: dict[str, Any]) -> Any:
        task, seq = a.pop("task"), a.pop("seq")
        if not isinstance(task, str) or not isinstance(seq, int) or isinstance(seq, bool):
            raise LineError('redact_event needs "task" (a name) and "seq" (a number)')
        eid = c.event_id(c.task_id(project, task), seq)
        return self._retention(project, agent).redact_event(eid, request_id=rid, **a)

    def _delete_task(self, project: str, agent: str, rid: str, a: dict[str, Any]) -> Any:
        return self._retention(project, agent).delete_task(a.pop("task"), request_id=rid, **a)

    def _continue_review(self, project: str, agent: str, rid: str, a: dict[str, Any]) -> Any:
        traces = self._traces(project, agent)
        if a.pop("until_done", False):
            review_until_done(traces)
            return None
        return traces.continue_decision_review(**a)

    def _assign(self, project: str, agent: str, rid: str, a: dict[str, Any]) -> Any:
        """A steward's assignment (``core.claims``): of a decision (``decision``)
        or of a root-cause group (``group``, its key) to ``assignee``."""
        claims = self._service(Claims, project, agent)
        if "group" in a:
            return claims.assign("group", a.pop("group"), assignee=a.pop("assignee"))
        return claims.assign("decision", self._decision(project, a.pop("decision")), assignee=a.pop("assignee"))

    @staticmethod
    def _restored_id(project: str, kind: str, exported: Any) -> str:
        """The id an exported thread or comment takes in ``project``: derived
        from both, so a copy beside its source (Neo4j keeps every project in
        one graph, where ids are unique) never takes the source's ids, and
        a second import finds the first's."""
        if not isinstance(exported, str) or not exported:
            raise LineError(f'"{kind}" must be the exported id (a string)')
        return str(uuid.uuid5(c.NAMESPACE, f"imported-{kind}\x1f{project}\x1f{exported}"))

    def _comment(self, project: str, agent: str, rid: str, a: dict[str, Any]) -> Any:
        restore = {"comment": self._restored_id(project, "comment", a.pop("comment")), "state": a.pop("state", "live")}
        for name in ("edited_at", "removed_by", "removed_at"):
            if a.get(name) is not None:
                restore[name] = a.pop(name)
        return self._service(Discussion, project, agent)._post(
            self._decision(project, a.pop("decision")),
            a.pop("body", None),
            thread_id=self._restored_id(project, "thread", a.pop("thread")),
            mentions=a.pop("mentions", None),
            request_id=rid,
            restore=restore,
            **a,
        )

    def _resolve_thread(self, project: str, agent: str, rid: str, a: dict[str, Any]) -> Any:
        thread = self._restored_id(project, "thread", a.pop("thread"))
        return self._service(Discussion, project, agent).resolve_thread(thread, request_id=rid, **a)

    # -- references -------------------------------------------------------

    def _decision(self, project: str, ref: Any) -> str:
        if isinstance(ref, str):
            return ref
        if not isinstance(ref, dict):
            raise LineError('a decision is named by its id or by {"task", "choice_key", "revision"}')
        _check_form("decision", ref)
        return self._decision_id(project, ref["task"], ref["choice_key"], ref["revision"])

    def _decision_id(self, project: str, task: Any, choice_key: Any, revision: int) -> str:
        """The id of a revision of a choice in the live task of that name (a
        task created again after a deletion derives its ids anew)."""
        if not isinstance(task, str) or not isinstance(choice_key, str):
            raise LineError('a decision\'s "task" and "choice_key" must be text')
        tid = c.task_id(project, task)
        rows = self.store.read(project, "MATCH (t:Task {id: $id}) RETURN t.generation AS g", {"id": tid})
        return c.decision_id(tid, choice_key, revision, int(rows[0]["g"] or 0) if rows else 0)

    def _support(self, project: str, s: Any) -> dict[str, Any]:
        if not isinstance(s, dict):
            raise LineError("a support must be an object")
        kind = s.get("kind")
        if kind not in ("document", "event", "decision"):
            raise LineError(f'a support needs "kind": document, event or decision (not {kind!r})')
        fields = _check_form(f"{kind} support", s)
        if kind == "document" and "key" in fields:
            doc = document_node_id(project, c.text(s["key"], "key"))
            if "chunk" in fields:
                return {"kind": "document", "evidence_id": encode_chunk(doc, s["version"], s["chunk"])}
            return {"kind": "document", "evidence_id": encode_span(doc, s["version"], s["start"], s["end"])}
        if kind == "decision" and "choice_key" in fields:
            return {
                "kind": "decision",
                "decision_id": self._decision_id(project, s["task_name"], s["choice_key"], s["revision"]),
            }
        return dict(s)


def _check_form(what: str, ref: dict[str, Any]) -> tuple[str, ...]:
    """The form of ``REFERENCE_FORMS[what]`` that ``ref`` has, its whole
    numbers checked; otherwise a LineError naming the missing and unknown
    fields (of the closest form) and every form's fields."""
    forms = REFERENCE_FORMS[what]
    given = set(ref)
    for form in forms:
        if given == set(form):
            for name in form:
                value = ref[name]
                if name in _INTEGER_FIELDS and (isinstance(value, bool) or not isinstance(value, int)):
                    raise LineError(f'{what}: "{name}" must be a whole number, not {value!r}')
            return form
    closest = min(forms, key=lambda f: len(set(f) ^ given))
    missing = [f for f in closest if f not in given]
    unknown = sorted(given - {f for form in forms for f in form})
    problems = []
    if missing:
        problems.append("misses " + ", ".join(f'"{f}"' for f in missing))
    if unknown:
        problems.append("has unknown " + ", ".join(f'"{f}"' for f in unknown))
    if not problems:
        problems.append("mixes the fields of two forms")
    takes = " or ".join("{" + ", ".join(form) + "}" for form in forms)
    raise LineError(f"{what} {' and '.join(problems)}: it takes {takes}")


def _time(value: Any) -> datetime | None:
    """A line's ``at``: ISO-8601, UTC when it names no zone."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            return datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            pass
    raise LineError(f'"at" must be an ISO-8601 time such as 2026-03-01T09:30:00Z, not {value!r}')


def import_lines(
    store: GraphStore, lines: Iterable[str], *, project: str | None = None
) -> Iterator[tuple[int, Outcome | LineError]]:
    """Apply each line in order; yields (line number, outcome or error).
    A bad line is reported and the import goes on."""
    importer = Importer(store, project=project)
    for number, text in enumerate(lines, start=1):
        if not text.strip():
            continue
        try:
            line = json.loads(text)
        except json.JSONDecodeError as exc:
            yield number, LineError(f"not JSON: {exc.msg} at column {exc.colno}")
            continue
        try:
            yield number, importer.apply(line, number)
        except LineError as exc:
            yield number, exc


# -- export ---------------------------------------------------------------------------


def export_project(store: GraphStore, project: str) -> Iterator[dict[str, Any]]:
    """The project as operations, in the order they happened; importing
    them into an empty store rebuilds its tasks, events, steps, documents,
    decisions and their review."""
    export = _Export(store, project)
    export.documents()
    tasks = export.tasks_and_events()
    decisions = _all_decisions(export.traces, [t.name for t in tasks])
    export.ref = {
        str(d.id): {"task": d.task_name, "choice_key": d.choice_key, "revision": d.revision} for d in decisions
    }
    for task in tasks:
        export.steps(task)
    export.decisions(decisions)
    export.reviews()
    export.assignments()
    export.comments()
    yield from export.in_order()
    # The source's review spread to the end: so does the import's. (Review
    # still queued at the source stays queued in the import, for a sweep.)
    if decisions and export.traces.review_counts().get("queued", 0) == 0:
        yield {"op": "continue_review", "project": project, "agent": "import", "until_done": True}


class _Export:
    """The lines of one project's export, each with when it happened and a
    rank that orders lines of one instant (documents, tasks, events, steps,
    decisions, reviews, deletions)."""

    def __init__(self, store: GraphStore, project: str) -> None:
        self.store = store
        self.project = project
        self.timed: list[tuple[datetime, int, int, dict[str, Any]]] = []
        self.history = ConversationHistory(store, project_id=project, agent_id="export")
        self.graph = Graph(store, project_id=project, agent_id="export")
        self.traces = DecisionTraces(store, project_id=project, agent_id="export")
        self.event_at: dict[tuple[str, int], datetime] = {}
        self.event_of: dict[str, tuple[str, int]] = {}
        self.ref: dict[str, dict[str, Any]] = {}

    def at(self, when: Any, rank: int, line: dict[str, Any]) -> None:
        op = line.pop("op")
        self.timed.append((when, rank, len(self.timed), {"op": op, "project": self.project, **line, "at": c.iso(when)}))

    def in_order(self) -> Iterator[dict[str, Any]]:
        self.timed.sort(key=lambda t: (t[0], t[1], t[2]))
        return (line for _when, _rank, _n, line in self.timed)

    def documents(self) -> None:
        """Every version of every document, and the deletions between them."""
        keys = [
            r["key"]
            for r in self.store.read(
                self.project,
                "MATCH (d:Document) WHERE d.project_id = $p RETURN d.key AS key ORDER BY key",
                {"p": self.project},
            )
        ]
        for key in keys:
            versions = sorted(self.graph.list_versions(key), key=lambda v: v.activation_seq)
            live = False
            for i, v in enumerate(versions):
                text = self.graph.version_text(key, v.activation_seq)
                op = "update_document" if live else "add_document"
                self.at(
                    v.created_at,
                    0,
                    {
                        "op": op,
                        "agent": v.author or "import",
                        "key": key,
                        "text": text,
                        "request_id": f"export:doc:{key}:{v.activation_seq}"[:64],
                    },
                )
                live = True
                following = versions[i + 1] if i + 1 < len(versions) else None
                if v.superseded_at is not None and (following is None or following.created_at != v.superseded_at):
                    self.at(
                        v.superseded_at,
                        9,
                        {
                            "op": "delete_document",
                            "agent": "import",
                            "key": key,
                            "request_id": f"export:del:{key}:{v.activation_seq}"[:64],
                        },
                    )
                    live = False

    def tasks_and_events(self) -> list[Any]:
        tasks = []
        after: str | None = None
        while True:
            page, more = self.history.list_tasks(after_name=after, limit=200)
            tasks += page
            if not more or not page:
                break
            after = page[-1].name
        for task in tasks:
            self.at(
                task.created_at,
                1,
                {
                    "op": "create_task",
                    "agent": task.author,
                    "task": task.name,
                    "goal": task.goal,
                    "request_id": f"export:task:{task.id}",
                },
            )
            self.events(task)
        return tasks

    def events(self, task: Any) -> None:
        seq = 0
        while True:
            events = self.history.list_events(task.name, after_seq=seq, limit=200)
            for e in events.events:
                self.event_at[(task.name, e.seq)] = e.at
                self.event_of[str(e.id)] = (task.name, e.seq)
                line = {
                    "op": "record_event",
                    "agent": e.author,
                    "task": task.name,
                    "kind": e.kind.value,
                    "payload": e.payload,
                    "request_id": f"export:event:{e.id}",
                }
                if e.role is not None:
                    line["role"] = e.role
                if e.name is not None:
                    line["name"] = e.name
                self.at(e.at, 2, line)
            if not events.truncated:
                return
            seq = events.next_after_seq

    def steps(self, task: Any) -> None:
        """A task's steps; a step carries the task's event number when it was
        last set, so it goes right after that event."""
        set_at = {
            r["name"]: r["seq"] or 0
            for r in self.store.read(
                self.project,
                "MATCH (s:Step) WHERE s.task_id = $tid RETURN s.name AS name, s.updated_seq AS seq",
                {"tid": str(task.id)},
            )
        }
        name: str | None = None
        while True:
            steps = self.history.list_steps(task.name, after_name=name, limit=200)
            for s in steps.steps:
                line = {
                    "op": "set_step",
                    "agent": task.author,
                    "task": task.name,
                    "name": s.name,
                    "state": s.state.value,
                    "kind": s.kind.value,
                    "result_event_seq": s.result_event_seq,
                    "result_basis": s.result_basis.value,
                    "result_supports": [_portable(x, self.ref) for x in s.result_supports] or None,
                    "request_id": f"export:step:{c.step_id(str(task.id), s.name)}",
                }
                self.at(self.event_at.get((task.name, set_at.get(s.name, 0)), task.created_at), 3, line)
            if not steps.truncated:
                return
            name = steps.next_after_name

    def decisions(self, decisions: list[Any]) -> None:
        """Each revision as it was recorded, with the supports it had then."""
        for d in decisions:
            initial = _initial_supports(self.traces, str(d.id))
            line: dict[str, Any] = {
                "agent": d.author,
                "conclusion": d.conclusion,
                "rationale": d.rationale,
                "assumptions": d.assumptions,
                "open_questions": d.open_questions,
                "supports": [_portable(s, self.ref) for s in initial],
                "request_id": f"export:decision:{d.id}",
            }
            if d.revision == 1:
                self.at(
                    d.created_at, 4, {"op": "record_decision", "task": d.task_name, "choice_key": d.choice_key, **line}
                )
                continue
            explanation = next(
                (r.explanation for r in self.traces.list_revisions(str(d.id)) if r.decision.id == d.id), None
            )
            previous = {"task": d.task_name, "choice_key": d.choice_key, "revision": d.revision - 1}
            self.at(
                d.created_at,
                4,
                {"op": "supersede_decision", "decision": previous, "explanation": explanation or "superseded", **line},
            )

    def assignments(self) -> None:
        _assignments(self)

    def reviews(self) -> None:
        """What people did afterwards: redactions, rejections, reaffirmations."""
        for entry in ActivityLog(self.store, project_id=self.project).every():
            rid = f"export:activity:{entry.id}"[:64]
            if entry.action == "redact" and entry.target_id in self.event_of:
                task_name, seq = self.event_of[entry.target_id]
                self.at(
                    entry.at,
                    5,
                    {
                        "op": "redact_event",
                        "agent": entry.actor,
                        "task": task_name,
                        "seq": seq,
                        "reason": entry.reason,
                        "request_id": rid,
                    },
                )
            elif entry.action == "reject" and entry.target_id in self.ref:
                self.at(
                    entry.at,
                    5,
                    {
                        "op": "reject_decision",
                        "agent": entry.actor,
                        "decision": self.ref[entry.target_id],
                        "reason": entry.reason or "rejected",
                        "request_id": rid,
                    },
                )
            elif entry.action == "reaffirm" and entry.target_id in self.ref:
                line = {
                    "op": "reaffirm_decision",
                    "agent": entry.actor,
                    "decision": self.ref[entry.target_id],
                    "request_id": rid,
                }
                if entry.reason:
                    line["explanation"] = entry.reason
                self.at(entry.at, 5, line)

    def comments(self) -> None:
        """Every comment as it stands (a gone one without text), and each
        resolved thread's resolution."""
        discussion = Discussion(self.store, project_id=self.project, agent_id="export")
        threads = self.store.read(
            self.project,
            "MATCH (t:Thread) WHERE t.project_id = $p RETURN t.id AS id, t.resolved_at AS at, t.resolved_by AS by",
            {"p": self.project},
        )
        for thread in discussion._comments_of([t["id"] for t in threads]).values():
            for x in thread:
                line: dict[str, Any] = {
                    "op": "comment",
                    "agent": x.author,
                    "decision": self.ref.get(x.decision_id, x.decision_id),
                    "thread": x.thread_id,
                    "comment": x.id,
                    "request_id": f"export:comment:{x.id}",
                }
                if x.state.value == "live":
                    line.update({"body": x.body, "mentions": x.mentions})
                    if x.edited_at is not None:
                        line["edited_at"] = c.iso(x.edited_at)
                else:
                    line.update({"state": x.state.value, "removed_by": x.removed_by})
                    line["removed_at"] = c.iso(x.removed_at) if x.removed_at else None
                self.at(x.at, 6, line)
        for t in threads:
            if t["at"] is not None:
                line = {"op": "resolve_thread", "agent": t["by"], "thread": t["id"], "resolved": True}
                self.at(datetime.fromisoformat(t["at"]), 7, {**line, "request_id": f"export:resolve:{t['id']}"})


def _assignments(export: _Export) -> None:
    """The assignments standing now, each at the time it was made, as its
    steward made it (claims are leases: not exported)."""
    rows = export.store.read(
        export.project,
        "MATCH (a:Assignment) WHERE a.project_id = $p AND a.assignee IS NOT NULL "
        "RETURN a.target_kind AS kind, a.target_id AS target, a.assignee AS who, a.assigned_by AS by, "
        "a.assigned_at AS at ORDER BY a.assigned_at, a.id",
        {"p": export.project},
    )
    for r in rows:
        if r["kind"] == "decision" and r["target"] not in export.ref:
            continue
        target = {"decision": export.ref[r["target"]]} if r["kind"] == "decision" else {"group": r["target"]}
        export.at(_time(r["at"]), 6, {"op": "assign", "agent": r["by"], **target, "assignee": r["who"]})


def _all_decisions(traces: DecisionTraces, task_names: list[str]) -> list[Any]:
    out = []
    for name in task_names:
        offset = 0
        while True:
            page = traces.list_decisions(name, include_history=True, offset=offset).page
            out += page.decisions
            if not page.truncated:
                break
            offset += len(page.decisions)
    return out


def _initial_supports(traces: DecisionTraces, decision_id: str) -> list[Any]:
    """The supports a decision was recorded with: the first batch of its
    support history (a reaffirm replaces the batch and keeps the old one)."""
    records: list[Any] = []
    after = -1
    while True:
        page = traces.list_support_history(decision_id, after_ordinal=after, limit=200)
        records += page.supports
        if not page.truncated:
            break
        after = page.next_after_ordinal
    if not records:
        return []
    first = records[0].reviewed_at
    return [r for r in records if r.reviewed_at == first and r.current == records[0].current]


def _portable(s: Any, ref: dict[str, dict[str, Any]]) -> dict[str, Any]:
    if isinstance(s, DocumentSupport):
        evidence = decode_evidence_id(s.evidence_id)
        if evidence.kind.value == "chunk":
            return {
                "kind": "document",
                "key": s.document_key,
                "version": evidence.activation_seq,
                "chunk": evidence.chunk_index,
            }
        return {
            "kind": "document",
            "key": s.document_key,
            "version": evidence.activation_seq,
            "start": evidence.char_start,
            "end": evidence.char_end,
        }
    if isinstance(s, EventSupport):
        return {"kind": "event", "task_name": s.task_name, "seq": s.seq}
    if isinstance(s, DecisionSupport):
        target = ref.get(str(s.decision_id))
        if target is None:
            return {"kind": "decision", "decision_id": str(s.decision_id)}
        return {
            "kind": "decision",
            "task_name": target["task"],
            "choice_key": target["choice_key"],
            "revision": target["revision"],
        }
    raise ValueError(f"unknown support {s!r}")
