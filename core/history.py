"""Conversation history: tasks, their ordered events, and their steps (seed 000/001).

Writes return a result with ``recorded`` and ``error`` and never raise for a
refused write; arguments of the wrong type or an unknown enum value raise
``ValueError`` before anything is written; store failures raise
``GraphStoreError``.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, TypeVar

from pydantic import TypeAdapter

from . import _common as c
from . import _counters, _decision_rows, limits
from ._decision_reads import DecisionReads
from ._schema import CORE_SCHEMA, HISTORY_SCHEMA  # noqa: F401  (HISTORY_SCHEMA: public name kept)
from ._steps import resolve_step_supports, step_validities
from ._supports import MalformedSupportError, parse_support_inputs
from .models.decision import Support
from .models.task import (
    PAYLOAD_LIMIT,
    Event,
    EventKind,
    EventLookup,
    EventPage,
    Step,
    StepKind,
    StepPage,
    StepResultBasis,
    StepState,
    StepSummary,
    Task,
    TaskLookup,
    TaskStatus,
    TaskView,
)
from .models.write_result import (
    CreateTaskResult,
    RecordEventResult,
    SetStepResult,
    WriteErrorCode,
)
from .stores.base import (
    GraphStore,
    GraphStoreConstraintViolationError,
    GraphStoreWriteConflictError,
    Tx,
)
from .stores.keystore import KeyStore, keys_of, open_bodies, seal

__all__ = ["ConversationHistory", "MalformedSupportError"]

R = TypeVar("R", RecordEventResult, SetStepResult)

log = logging.getLogger(__name__)

EVENTS_MAX = 200
STEPS_MAX = 200
VIEW_STEPS = 50

_SUPPORTS: TypeAdapter[list[Support]] = TypeAdapter(list[Support])

_TASK_FIELDS = (
    "t.id AS id, t.project_id AS project_id, t.name AS name, t.goal AS goal, t.status AS status, "
    "t.event_seq AS event_seq, t.author AS author, t.created_at AS created_at"
)
# A task keeps a count of its steps in each state, so the view's counts cost
# nothing however many steps it has.
_STEP_COUNT_FIELDS = ", ".join(f"coalesce(t.steps_{st.value}, 0) AS steps_{st.value}" for st in StepState)
_EVENT_CREATE = (
    "CREATE (:Event {id: $id, project_id: $p, task_id: $tid, seq: $seq, kind: $kind, role: $role, "
    "name: $name, payload_ct: $ct, key_slot: $slot, payload_sha256: $sha, truncated: $truncated, "
    "author: $author, at: $at})"
)
_EVENT_FIELDS = (
    "e.id AS id, e.task_id AS task_id, e.seq AS seq, e.kind AS kind, e.role AS role, e.name AS name, "
    "e.payload AS payload, e.payload_sha256 AS payload_sha256, e.truncated AS truncated, "
    "e.author AS author, e.at AS at, e.redacted_at AS redacted_at, e.payload_ct AS payload_ct, e.key_slot AS key_slot"
)

#: The same as a map, for a ``collect`` of events beside other columns.
_EVENT_MAP = (
    "{" + ", ".join(f"{alias}: {expr}" for expr, alias in (f.split(" AS ") for f in _EVENT_FIELDS.split(", "))) + "}"
)


def _supports_from_json(raw: str | None) -> list[Support]:
    return _SUPPORTS.validate_json(raw) if raw else []


_SUMMARY_KEYS = ("name", "kind", "state", "result_event_seq", "result_basis")
# the step fields a view shows, as one map per step
_STEP_MAP = (
    "{name: s.name, kind: s.kind, state: s.state, result_event_seq: s.result_event_seq, "
    "result_basis: s.result_basis, result_supports: s.result_supports}"
)


def _when(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) else value


def _cut(payload: str) -> tuple[str, bool, str]:
    """The SHA-256 of the full text, whether it is cut, and the stored text
    (seed 001: at most 32,000 characters)."""
    return hashlib.sha256(payload.encode("utf-8")).hexdigest(), len(payload) > PAYLOAD_LIMIT, payload[:PAYLOAD_LIMIT]


class _MintedKeys:
    """The event keys made for one write. A key is made before the graph
    names it, so a write that does not commit (a replay found after all, a
    refusal, a conflict, an error) leaves a key that no event needs: it is
    destroyed, unless the write may have committed and the store cannot be
    asked (then it is kept: a key is never destroyed under an event that may
    exist)."""

    def __init__(self, keys: KeyStore) -> None:
        self.keys = keys
        self._ranges: list[tuple[int, int]] = []

    def new(self, n: int) -> tuple[int, list[bytes]]:
        first, made = self.keys.new_keys(n)
        if n:
            self._ranges.append((first, first + n - 1))
        return first, made

    def keep(self) -> None:
        """The write committed with the keys made so far."""
        self._ranges = []

    def discard(self) -> None:
        ranges, self._ranges = self._ranges, []
        if ranges:
            self.keys.destroy(ranges)

    @contextmanager
    def settled(self, committed: Callable[[], bool]) -> Iterator[None]:
        """Keys neither kept nor discarded are destroyed on leaving; after
        an error that may have come from the commit, unless ``committed()``
        says the write went through with them."""
        try:
            yield
        except (GraphStoreWriteConflictError, ValueError):
            self.discard()  # nothing was committed (raised before the commit, or every attempt lost)
            raise
        except BaseException:
            try:
                went = committed()
            except Exception:  # the store cannot say: keep them
                log.warning("a write failed in an unknown state; its event keys %s are kept", self._ranges)
                went = True
            if went:
                self.keep()
            else:
                self.discard()
            raise
        self.discard()


class ConversationHistory:
    """The history of one project, written as one agent (or person)."""

    def __init__(self, store: GraphStore, *, project_id: str, agent_id: str) -> None:
        self.store = store
        self.project_id = c.text(project_id, "project_id", allow_empty=False)
        self.agent_id = c.text(agent_id, "agent_id", allow_empty=False)
        #: ids written before the limits stay readable; this object writes nothing with them
        self._ids_too_long = limits.any_over(
            (self.project_id, limits.PROJECT_ID_MAX), (self.agent_id, limits.AGENT_ID_MAX)
        )
        store.ensure_schema(self.project_id, CORE_SCHEMA)
        # The last event number this object saw per task: record_event first
        # tries one compare-and-set statement with it (one round trip on
        # FalkorDB, one transaction on Neo4j), and falls back to a full unit
        # of work when another writer got there first.
        self._seq_hint: dict[str, int] = {}

    # -- reads used inside units ------------------------------------------

    def _task_row(self, tx: Tx | None, name: str, *, counts: bool = False) -> dict[str, Any] | None:
        fields = f"{_TASK_FIELDS}, {_STEP_COUNT_FIELDS}" if counts else _TASK_FIELDS
        query = f"MATCH (t:Task {{id: $id}}) RETURN {fields}"
        params = {"id": c.task_id(self.project_id, name)}
        rows = tx.read(query, params) if tx is not None else self.store.read(self.project_id, query, params)
        return rows[0] if rows else None

    def _begin_task_write(
        self, tx: Tx, task_name: str, replay: c.Replay, result_type: type[R]
    ) -> tuple[R | None, dict[str, Any]]:
        """The start of a write to an existing task: lock it, answer a
        repeated request, refuse a missing task. Returns (answer, task row);
        the write goes ahead when the answer is None."""
        tx.lock("Task", c.task_id(self.project_id, task_name))
        reused = lambda: result_type(recorded=False, error=WriteErrorCode.request_id_reused)  # noqa: E731
        earlier = c.replayed(tx, replay, result_type, reused)
        if earlier is not None:
            if isinstance(earlier, RecordEventResult) and earlier.event is not None:
                earlier = self._replayed_event(tx, earlier, replay) or reused()  # type: ignore[assignment]
            return earlier, {}
        task = self._task_row(tx, task_name)
        if task is None:
            return result_type(recorded=False, error=WriteErrorCode.task_not_found), {}
        return None, task

    def _replayed_event(self, tx: Tx, earlier: RecordEventResult, replay: c.Replay) -> RecordEventResult | None:
        """A replayed ``record_event`` with the event as it is now: its
        text, or the marker after a redaction; once its task was deleted,
        with an empty body and no hash (its ids and number stay as
        recorded). None when the event still has its key and the request's
        body is not the one recorded (``request_id_reused``); once the key
        is gone (redacted, deleted) the body cannot be checked, and a right
        and a wrong guess of it are answered alike."""
        assert earlier.event is not None
        rows = tx.read(f"MATCH (e:Event {{id: $id}}) RETURN {_EVENT_FIELDS}", {"id": str(earlier.event.id)})
        row = rows[0] if rows else None
        if row is not None and (row["author"], _when(row["at"])) != (earlier.event.author, earlier.event.at):
            row = None  # another event of the same number: its task was deleted and made again
        if row is None:
            return earlier
        slot = row["key_slot"]
        if replay.same_body(None if slot is None else keys_of(self.store).key(slot)) is False:
            return None
        current = Event.model_validate(open_bodies(self.store, [row])[0])
        return earlier.model_copy(update={"event": current})

    # -- tasks ------------------------------------------------------------

    def create_task(self, name: str, *, goal: str, request_id: str | None = None) -> CreateTaskResult:
        name = c.text(name, "name", allow_empty=False)
        goal = c.text(goal, "goal")
        if not c.check_request_id(request_id):
            return CreateTaskResult(recorded=False, error=WriteErrorCode.invalid_request_id)
        if self._ids_too_long or limits.any_over((name, limits.TASK_NAME_MAX), (goal, limits.GOAL_MAX)):
            return CreateTaskResult(recorded=False, error=WriteErrorCode.value_too_long)
        replay = c.Replay(self.project_id, self.agent_id, request_id, "create_task", {"name": name, "goal": goal})
        tid = c.task_id(self.project_id, name)

        def work(tx: Tx) -> CreateTaskResult:
            earlier = c.replayed(
                tx,
                replay,
                CreateTaskResult,
                lambda: CreateTaskResult(recorded=False, error=WriteErrorCode.request_id_reused),
            )
            if earlier is not None:
                return earlier
            existing = self._task_row(tx, name)
            if existing is not None:
                if existing["goal"] != goal:
                    return CreateTaskResult(recorded=False, error=WriteErrorCode.task_exists)
                result = CreateTaskResult(recorded=True, task=Task.model_validate(existing))
                replay.remember(tx, result)
                return result
            task = Task(
                id=tid,
                project_id=self.project_id,
                name=name,
                goal=goal,
                status=TaskStatus.open,
                event_seq=0,
                author=self.agent_id,
                created_at=c.now(),
            )
            generation = _decision_rows.next_generation(tx, tid)  # > 0 after a deletion that kept decisions
            _counters.start_task(tx, self.project_id, tid)
            tx.write(
                "CREATE (t:Task {id: $id, project_id: $p, name: $name, goal: $goal, status: $status, "
                "event_seq: 0, author: $author, created_at: $at}) SET t.generation = $generation",
                {
                    "id": tid,
                    "p": self.project_id,
                    "name": name,
                    "goal": goal,
                    "status": task.status.value,
                    "author": self.agent_id,
                    "at": c.iso(task.created_at),
                    "generation": generation or None,
                },
            )
            result = CreateTaskResult(recorded=True, task=task)
            replay.remember(tx, result)
            return result

        return self.store.transact(self.project_id, work)

    def list_tasks(
        self, *, search: str | None = None, after_name: str | None = None, limit: int = 50
    ) -> tuple[list[Task], bool]:
        """Tasks by name (optionally those whose name contains ``search``,
        any case), a page at a time: (tasks, more follow)."""
        search = c.optional_text(search, "search")
        after_name = c.optional_text(after_name, "after_name")
        limit = c.clamp(limit, 50, 200)
        rows = self.store.read(
            self.project_id,
            "MATCH (t:Task) WHERE t.project_id = $p AND ($after IS NULL OR t.name > $after) "
            "AND ($q IS NULL OR toLower(t.name) CONTAINS toLower($q)) "
            f"WITH t ORDER BY t.name LIMIT $n RETURN {_TASK_FIELDS}",
            {"p": self.project_id, "after": after_name, "q": search or None, "n": limit + 1},
        )
        return [Task.model_validate(r) for r in rows[:limit]], len(rows) > limit

    def task_name_by_id(self, task_id: str) -> str | None:
        """The name of the task with this id (None: no such task, or not an
        id): how the dashboard opens a task whose name, written before the
        limits, is too long for a URL."""
        task_id = c.text(task_id, "task_id")
        if not c.is_uuid(task_id):
            return None
        rows = self.store.read(
            self.project_id, "MATCH (t:Task {id: $id}) RETURN t.name AS name", {"id": task_id.lower()}
        )
        return rows[0]["name"] if rows else None

    def count_tasks(self, status: TaskStatus | str | None = None) -> int:
        value = c.enum_value(TaskStatus, status, "status").value if status is not None else None
        return self.store.read(
            self.project_id,
            "MATCH (t:Task) WHERE t.project_id = $p AND ($s IS NULL OR t.status = $s) RETURN count(t) AS n",
            {"p": self.project_id, "s": value},
        )[0]["n"]

    def get_task(self, name: str) -> TaskLookup:
        """The bounded resume view: never an event body."""
        name = c.text(name, "name")
        # one round trip: the task, its step counts, and the first steps by
        # name (sorted and cut before their fields are read); and the kept
        # counters its decisions' part of the view starts from (two nodes by
        # id, looked up after the steps are cut)
        rows = self.store.read(
            self.project_id,
            "MATCH (t:Task {id: $id}) OPTIONAL MATCH (s:Step {task_id: $id}) "
            "WITH t, s ORDER BY s.name LIMIT $n "
            f"WITH t, collect({_STEP_MAP}) AS steps "
            "OPTIONAL MATCH (k:TaskDecisions {id: $id}) OPTIONAL MATCH (q:ReviewQueue {id: $qid}) "
            f"RETURN {_TASK_FIELDS}, {_STEP_COUNT_FIELDS}, steps, {_counters.TASK_VIEW_FIELDS}",
            {
                "id": c.task_id(self.project_id, name),
                "n": VIEW_STEPS + 1,
                "qid": _counters.queue_node_id(self.project_id),
            },
        )
        if not rows:
            return TaskLookup(found=False)
        row = rows[0]
        shown = [s for s in row["steps"] if s["name"] is not None]
        steps_truncated = len(shown) > VIEW_STEPS
        steps: dict[StepState, list[StepSummary]] = {state: [] for state in StepState}
        for summary in self._summaries(shown[:VIEW_STEPS]):
            steps[summary.state].append(summary)
        counts = {state: row[f"steps_{state.value}"] for state in StepState}
        extra = DecisionReads(self.store, project_id=self.project_id).task_view_decisions(row["name"], kept=row)
        view = TaskView(
            task_name=row["name"],
            goal=row["goal"],
            status=TaskStatus(row["status"]),
            last_event_seq=row["event_seq"],
            steps=steps,
            step_counts=counts,
            steps_truncated=steps_truncated,
            **extra,
        )
        return TaskLookup(found=True, view=view)

    # -- events -----------------------------------------------------------

    def record_event(
        self,
        task_name: str,
        *,
        kind: EventKind | str,
        payload: str,
        role: str | None = None,
        name: str | None = None,
        request_id: str | None = None,
    ) -> RecordEventResult:
        task_name = c.text(task_name, "task_name")
        kind = c.enum_value(EventKind, kind, "kind")
        payload = c.text(payload, "payload")
        role = c.optional_text(role, "role")
        name = c.optional_text(name, "name")
        if not c.check_request_id(request_id):
            return RecordEventResult(recorded=False, error=WriteErrorCode.invalid_request_id)
        if self._ids_too_long or limits.any_over((role, limits.LABEL_MAX), (name, limits.LABEL_MAX)):
            return RecordEventResult(recorded=False, error=WriteErrorCode.value_too_long)
        sha, truncated, stored = _cut(payload)
        replay = c.Replay(
            self.project_id,
            self.agent_id,
            request_id,
            "record_event",
            {"task": task_name, "kind": kind.value, "role": role, "name": name},
            body=sha,
        )
        tid = c.task_id(self.project_id, task_name)
        minted = _MintedKeys(keys_of(self.store))
        key: dict[str, Any] = {}  # made when a number is first tried, for as long as it may be used

        def new_event(seq: int) -> tuple[RecordEventResult, dict[str, Any]]:
            event = Event(
                id=c.event_id(tid, seq),
                task_id=tid,
                seq=seq,
                kind=kind,
                role=role,
                name=name,
                payload=stored,
                payload_sha256=sha,
                truncated=truncated,
                author=self.agent_id,
                at=c.now(),
            )
            if not key:
                key["slot"], (key["key"],) = minted.new(1)  # on disk before the graph names it
            key["event"] = str(event.id)
            params = {
                "tid": tid,
                "seq": seq,
                "id": str(event.id),
                "p": self.project_id,
                "kind": kind.value,
                "role": role,
                "name": name,
                "ct": seal(key["key"], str(event.id), stored),
                "slot": key["slot"],
                "sha": sha,
                "truncated": truncated,
                "author": self.agent_id,
                "at": c.iso(event.at),
            }
            return RecordEventResult(recorded=True, event=event), params

        def work(tx: Tx) -> RecordEventResult:
            wrote.clear()
            earlier, task = self._begin_task_write(tx, task_name, replay, RecordEventResult)
            if earlier is not None:
                return earlier
            result, params = new_event(task["event_seq"] + 1)
            tx.write("MATCH (t:Task {id: $tid}) SET t.event_seq = $seq " + _EVENT_CREATE, params)
            replay.remember(tx, result, body_key=key["key"])
            wrote.append(key["slot"])
            return result

        wrote: list[int] = []  # the key the unit's last run wrote its event with
        with minted.settled(lambda: self._has_key(key.get("event"), key.get("slot"))):
            prev = self._seq_hint.get(tid)
            if prev is not None:
                fast = self._record_after(tid, prev, new_event, replay, key)
                if fast is not None:
                    minted.keep()
                    return fast
                if key:  # the fast write did not happen: its key goes, a unit makes its own
                    minted.discard()
                    key.clear()
            result = self.store.transact(self.project_id, work)
            if wrote:
                minted.keep()
        if wrote and result.event is not None:  # (a replay's number says nothing of the task's last)
            self._seq_hint[tid] = result.event.seq
        return result

    def _has_key(self, event_id: str | None, slot: int | None) -> bool:
        """Whether the event ``event_id`` was written with the key in
        ``slot`` (a write that failed in an unknown state: committed?)."""
        if event_id is None:
            return False
        rows = self.store.read(self.project_id, "MATCH (e:Event {id: $id}) RETURN e.key_slot AS slot", {"id": event_id})
        return bool(rows) and rows[0]["slot"] == slot

    def _record_after(
        self, tid: str, prev: int, new_event: Any, replay: c.Replay, key: dict[str, Any]
    ) -> RecordEventResult | None:
        """The single-statement write of an event numbered ``prev + 1``: a
        compare-and-set on the task's last number (and, with a request id,
        on its request record being absent). None when another writer was
        first, or the request was seen before: the caller's unit then sorts
        it out. A request id is looked up first, so a replay seals nothing."""
        if replay.request_id is not None:
            seen = self.store.read(
                self.project_id,
                "OPTIONAL MATCH (t:Task {id: $tid}) OPTIONAL MATCH (r:Request {id: $rq}) "
                "RETURN t.event_seq AS seq, r IS NOT NULL AS seen",
                {"tid": tid, "rq": replay.node_id},
            )
            if not seen or seen[0]["seen"] or seen[0]["seq"] is None:
                self._seq_hint.pop(tid, None)
                return None
            prev = seen[0]["seq"]  # the task's last number as read now
        result, params = new_event(prev + 1)
        query = "MATCH (t:Task {id: $tid}) "
        if not self.store.graph_per_project:
            # Neo4j reads committed data: the task's write lock first, so the
            # number compared is the last one committed, not one a racing
            # writer is about to replace (the event id's uniqueness would
            # refuse the duplicate anyway; this refuses it before writing)
            query += "SET t._lock = true REMOVE t._lock WITH t "
        query += "WHERE t.event_seq = $prev "
        if replay.request_id is not None:
            query += "OPTIONAL MATCH (r:Request {id: $rq_id}) WITH t, r WHERE r IS NULL "
        query += "SET t.event_seq = $seq " + _EVENT_CREATE
        if replay.request_id is not None:
            clause, rq_params = replay.create_clause(result, body_key=key["key"])
            query += " " + clause
            params.update(rq_params)
        try:
            applied = self.store.execute(
                self.project_id, query + " RETURN $seq AS seq", {**params, "prev": prev}, guard=("Task", tid)
            )
        except (GraphStoreConstraintViolationError, GraphStoreWriteConflictError):
            applied = []  # a racing writer took the number
        if applied:
            self._seq_hint[tid] = prev + 1
            return result
        self._seq_hint.pop(tid, None)
        return None

    def load_events(self, task_name: str, events: Sequence[dict[str, Any]]) -> int:
        """Append many events to a task in one unit: for seeding large data
        sets (the demo's large size, benchmarks), where one unit per event
        would take hours. Each item has the fields of ``record_event``
        (``kind``, ``payload``, optional ``role`` and ``name``; no request
        ids). Numbered on from the task's last event, with the same
        truncation and hashes; checked as a whole and written all or nothing.
        Anything ``record_event`` would refuse raises ``ValueError``.
        Returns the task's last event number."""
        task_name = c.text(task_name, "task_name")
        if self._ids_too_long:
            raise ValueError(WriteErrorCode.value_too_long.value)
        rows: list[dict[str, Any]] = []
        for n, item in enumerate(events):
            if not isinstance(item, dict):
                raise ValueError(f"item {n} is not a mapping")
            sha, truncated, stored = _cut(c.text(item.get("payload"), "payload"))
            labels = (c.optional_text(item.get("role"), "role"), c.optional_text(item.get("name"), "name"))
            if any(limits.over(label, limits.LABEL_MAX) for label in labels):
                raise ValueError(f"item {n}: {WriteErrorCode.value_too_long.value}")
            rows.append(
                {
                    "kind": c.enum_value(EventKind, item.get("kind"), "kind").value,
                    "role": c.optional_text(item.get("role"), "role"),
                    "name": c.optional_text(item.get("name"), "name"),
                    "payload": stored,
                    "truncated": truncated,
                    "sha": sha,
                }
            )
        tid = c.task_id(self.project_id, task_name)

        def work(tx: Tx) -> int:
            tx.lock("Task", tid)
            task = self._task_row(tx, task_name)
            if task is None:
                raise ValueError(WriteErrorCode.task_not_found.value)
            first = task["event_seq"] + 1
            tried["event"] = c.event_id(tid, first)
            at = c.iso(c.now())
            sealed = []
            for n, r in enumerate(rows):
                eid = c.event_id(tid, first + n)
                sealed.append(
                    {
                        "seq": first + n,
                        "id": eid,
                        "kind": r["kind"],
                        "role": r["role"],
                        "name": r["name"],
                        "ct": seal(batch[n], eid, r["payload"]),
                        "slot": first_slot + n,
                        "sha": r["sha"],
                        "truncated": r["truncated"],
                    }
                )
            last = first + len(rows) - 1
            tx.write(
                "MATCH (t:Task {id: $tid}) SET t.event_seq = $last WITH t UNWIND $rows AS r "
                "CREATE (:Event {id: r.id, project_id: $p, task_id: $tid, seq: r.seq, kind: r.kind, role: r.role, "
                "name: r.name, payload_ct: r.ct, key_slot: r.slot, payload_sha256: r.sha, truncated: r.truncated, "
                "author: $author, at: $at})",
                {"tid": tid, "last": last, "rows": sealed, "p": self.project_id, "author": self.agent_id, "at": at},
            )
            return last

        if not rows:
            task = self.get_task(task_name)
            if not task.found:
                raise ValueError(WriteErrorCode.task_not_found.value)
            return task.view.last_event_seq
        # every key of the batch in one write, on disk before the graph names
        # them; destroyed again unless the batch is committed with them
        minted = _MintedKeys(keys_of(self.store))
        tried: dict[str, str] = {}
        first_slot, batch = minted.new(len(rows))
        with minted.settled(lambda: self._has_key(tried.get("event"), first_slot)):
            last = self.store.transact(self.project_id, work)
            minted.keep()
        self._seq_hint.pop(tid, None)
        return last

    def list_events(self, task_name: str, *, after_seq: int = 0, limit: int = 50) -> EventPage:
        task_name = c.text(task_name, "task_name")
        after_seq = c.integer(after_seq, "after_seq")
        limit = c.clamp(limit, 50, EVENTS_MAX)
        # Numbers run from 1 with no gaps and ids derive from them, so a page
        # is fetched by its ids: its cost does not grow with the log. One
        # round trip: the task (how many events it has) and the page's ids
        # up to that number.
        tid = c.task_id(self.project_id, task_name)
        first = max(after_seq, 0) + 1
        rows = self.store.read(
            self.project_id,
            "MATCH (t:Task {id: $tid}) WITH t UNWIND $ids AS id "
            "OPTIONAL MATCH (e:Event {id: id}) WHERE e.seq <= t.event_seq "
            f"WITH t, e ORDER BY e.seq WITH t, collect({_EVENT_MAP}) AS events "
            "RETURN t.event_seq AS event_seq, events",
            {"tid": tid, "ids": [c.event_id(tid, seq) for seq in range(first, first + limit)]},
        )
        if not rows:
            return EventPage(found=False)
        last = min(first + limit - 1, rows[0]["event_seq"])
        if last < first:
            return EventPage(found=True)
        found = [e for e in rows[0]["events"] if e["id"] is not None]  # (no event: a map of nulls)
        events = [Event.model_validate(r) for r in open_bodies(self.store, found)]
        truncated = last < rows[0]["event_seq"]
        return EventPage(found=True, events=events, truncated=truncated, next_after_seq=last if truncated else None)

    def fetch_event(self, task_name: str, seq: int) -> EventLookup:
        task_name = c.text(task_name, "task_name")
        seq = c.integer(seq, "seq")
        rows = self.store.read(
            self.project_id,
            f"MATCH (e:Event {{id: $id}}) RETURN {_EVENT_FIELDS}",
            {"id": c.event_id(c.task_id(self.project_id, task_name), seq)},
        )
        if not rows:
            return EventLookup(found=False)
        return EventLookup(found=True, event=Event.model_validate(open_bodies(self.store, rows)[0]))

    # -- steps ------------------------------------------------------------

    def set_step(
        self,
        task_name: str,
        *,
        name: str,
        state: StepState | str,
        kind: StepKind | str = StepKind.other,
        result_event_seq: int | None = None,
        result_basis: StepResultBasis | str = StepResultBasis.unknown,
        result_supports: Sequence[Any] | None = None,
        request_id: str | None = None,
    ) -> SetStepResult:
        task_name = c.text(task_name, "task_name")
        name = c.text(name, "name", allow_empty=False)
        state = c.enum_value(StepState, state, "state")
        kind = c.enum_value(StepKind, kind, "kind")
        basis = c.enum_value(StepResultBasis, result_basis, "result_basis")
        if result_event_seq is not None:
            result_event_seq = c.integer(result_event_seq, "result_event_seq")
        try:
            inputs: list[Any] | None = parse_support_inputs(result_supports, "result_supports")
        except MalformedSupportError:
            inputs = None
        if not c.check_request_id(request_id):
            return SetStepResult(recorded=False, error=WriteErrorCode.invalid_request_id)
        if self._ids_too_long or limits.over(name, limits.STEP_NAME_MAX):
            return SetStepResult(recorded=False, error=WriteErrorCode.value_too_long)
        if inputs is None:
            return SetStepResult(recorded=False, error=WriteErrorCode.support_invalid)
        if basis is StepResultBasis.supported and not inputs:
            return SetStepResult(recorded=False, error=WriteErrorCode.support_required)
        if len(inputs) > limits.STEP_SUPPORTS_MAX:
            return SetStepResult(recorded=False, error=WriteErrorCode.too_many_supports)
        replay = c.Replay(
            self.project_id,
            self.agent_id,
            request_id,
            "set_step",
            {
                "task": task_name,
                "name": name,
                "state": state.value,
                "kind": kind.value,
                "seq": result_event_seq,
                "basis": basis.value,
                "supports": [i.model_dump() for i in inputs],
            },
        )
        tid = c.task_id(self.project_id, task_name)

        def work(tx: Tx) -> SetStepResult:
            earlier, task = self._begin_task_write(tx, task_name, replay, SetStepResult)
            if earlier is not None:
                return earlier
            if result_event_seq is not None and not (1 <= result_event_seq <= task["event_seq"]):
                return SetStepResult(recorded=False, error=WriteErrorCode.event_not_found)
            supports = resolve_step_supports(tx, self.project_id, inputs)
            if supports is None:
                return SetStepResult(recorded=False, error=WriteErrorCode.support_invalid)
            step = Step(
                id=c.step_id(tid, name),
                task_id=tid,
                name=name,
                kind=kind,
                state=state,
                result_event_seq=result_event_seq,
                updated_seq=task["event_seq"],
                result_basis=basis,
                result_supports=supports,
            )
            self._write_step(tx, step)
            result = SetStepResult(recorded=True, step=step)
            replay.remember(tx, result)
            return result

        return self.store.transact(self.project_id, work)

    def _write_step(self, tx: Tx, step: Step) -> None:
        """The writes of ``set_step``: the step, and the task's count of steps
        in each state moved when the step changes state."""
        tid = str(step.task_id)
        before = tx.read("MATCH (s:Step {id: $id}) RETURN s.state AS state", {"id": str(step.id)})
        old_state = before[0]["state"] if before else None
        if old_state != step.state.value:
            counts = [f"t.steps_{step.state.value} = coalesce(t.steps_{step.state.value}, 0) + 1"]
            if old_state is not None:
                old = StepState(old_state).value
                counts.append(f"t.steps_{old} = coalesce(t.steps_{old}, 0) - 1")
            tx.write(f"MATCH (t:Task {{id: $tid}}) SET {', '.join(counts)}", {"tid": tid})
        tx.write(
            "MERGE (s:Step {id: $id}) "
            "SET s.project_id = $p, s.task_id = $tid, s.name = $name, s.kind = $kind, s.state = $state, "
            "s.result_event_seq = $seq, s.updated_seq = $updated, s.result_basis = $basis, "
            "s.result_supports = $supports",
            {
                "id": str(step.id),
                "p": self.project_id,
                "tid": tid,
                "name": step.name,
                "kind": step.kind.value,
                "state": step.state.value,
                "seq": step.result_event_seq,
                "updated": step.updated_seq,
                "basis": step.result_basis.value,
                "supports": json.dumps([s.model_dump(mode="json") for s in step.result_supports]),
            },
        )

    def list_steps(self, task_name: str, *, after_name: str | None = None, limit: int = 50) -> StepPage:
        task_name = c.text(task_name, "task_name")
        after_name = c.optional_text(after_name, "after_name")
        limit = c.clamp(limit, 50, STEPS_MAX)
        rows = self.store.read(
            self.project_id,
            "MATCH (s:Step {task_id: $tid}) WHERE $after IS NULL OR s.name > $after "
            f"WITH s ORDER BY s.name LIMIT $n RETURN {_STEP_MAP} AS step",
            {"tid": c.task_id(self.project_id, task_name), "after": after_name, "n": limit + 1},
        )
        summaries = self._summaries([r["step"] for r in rows[:limit]])
        truncated = len(rows) > limit
        return StepPage(steps=summaries, truncated=truncated, next_after_name=summaries[-1].name if truncated else None)

    def _summaries(self, rows: list[dict[str, Any]]) -> list[StepSummary]:
        """Summaries of stored steps (maps of ``_STEP_MAP``), with the
        validity of their results checked again."""
        steps = [{**r, "result_supports": _supports_from_json(r["result_supports"])} for r in rows]
        validity = step_validities(self.store, self.project_id, steps)
        return [
            StepSummary.model_validate(
                {
                    **{k: s[k] for k in _SUMMARY_KEYS},
                    "result_supports": s["result_supports"],
                    "result_validity": validity[s["name"]],
                }
            )
            for s in steps
        ]

    # -- resume -----------------------------------------------------------

    def steps_to_rerun(self, task_name: str) -> list[StepSummary]:
        """Every step that is not completed, in name order (all of them, paged through)."""
        rerun: list[StepSummary] = []
        after: str | None = None
        while True:
            page = self.list_steps(task_name, after_name=after, limit=STEPS_MAX)
            rerun.extend(s for s in page.steps if s.state is not StepState.completed)
            if not page.truncated:
                return rerun
            after = page.next_after_name

    def resume_task(self, task_name: str) -> list[StepSummary]:
        """Prepare a rerun: steps still ``in_progress`` ended with the run that
        started them, so they become ``unknown``; returns the steps to rerun."""
        task_name = c.text(task_name, "task_name")
        tid = c.task_id(self.project_id, task_name)

        def work(tx: Tx) -> None:
            tx.lock("Task", tid)
            task = self._task_row(tx, task_name)
            if task is None:
                return
            tx.write(
                "MATCH (s:Step {task_id: $tid}) WHERE s.state = 'in_progress' "
                "SET s.state = 'unknown', s.updated_seq = $seq",
                {"tid": tid, "seq": task["event_seq"]},
            )
            tx.write(
                "MATCH (t:Task {id: $tid}) SET t.steps_unknown = coalesce(t.steps_unknown, 0) + "
                "coalesce(t.steps_in_progress, 0), t.steps_in_progress = 0",
                {"tid": tid},
            )

        self.store.transact(self.project_id, work)
        return self.steps_to_rerun(task_name)
