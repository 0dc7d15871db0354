"""Conversation history: tasks, their ordered events, and their steps (seed 000/001).

Writes return a result with ``recorded`` and ``error`` and never raise for a
refused write; arguments of the wrong type or an unknown enum value raise
``ValueError`` before anything is written; store failures raise
``GraphStoreError``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import TypeAdapter, ValidationError

from . import _common as c
from .models.decision import (
    MAX_SUPPORTS,
    DecisionStatus,
    DecisionSupport,
    DecisionSupportInput,
    DocumentSupportInput,
    EventSupport,
    EventSupportInput,
    ReviewState,
    Support,
    SupportInput,
)
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
    StepResultValidity,
    StepState,
    StepSummary,
    Task,
    TaskLookup,
    TaskStatus,
    TaskView,
)
from .models.write_result import CreateTaskResult, RecordEventResult, SetStepResult, WriteErrorCode
from .stores.base import GraphStore, NodeIndex, Schema, Tx

__all__ = ["ConversationHistory"]

R = TypeVar("R", RecordEventResult, SetStepResult)

HISTORY_SCHEMA = (
    Schema(
        (
            NodeIndex("Task", ("id",), unique=True),
            NodeIndex("Task", ("project_id",)),
            NodeIndex("Event", ("id",), unique=True),
            NodeIndex("Event", ("task_id",)),
            NodeIndex("Step", ("id",), unique=True),
            NodeIndex("Step", ("task_id",)),
        )
    )
    + c.REQUEST_SCHEMA
)

EVENTS_MAX = 200
STEPS_MAX = 200
VIEW_STEPS = 50
VIEW_DECISIONS = 20
VIEW_CONFLICTS = 10

_SUPPORT_INPUTS: TypeAdapter[list[Any]] = TypeAdapter(list[SupportInput])
_SUPPORTS: TypeAdapter[list[Support]] = TypeAdapter(list[Support])

_TASK_FIELDS = (
    "t.id AS id, t.project_id AS project_id, t.name AS name, t.goal AS goal, t.status AS status, "
    "t.event_seq AS event_seq, t.author AS author, t.created_at AS created_at"
)
_EVENT_FIELDS = (
    "e.id AS id, e.task_id AS task_id, e.seq AS seq, e.kind AS kind, e.role AS role, e.name AS name, "
    "e.payload AS payload, e.payload_sha256 AS payload_sha256, e.truncated AS truncated, "
    "e.author AS author, e.at AS at, e.redacted_at AS redacted_at"
)
_STEP_FIELDS = (
    "s.id AS id, s.task_id AS task_id, s.name AS name, s.kind AS kind, s.state AS state, "
    "s.result_event_seq AS result_event_seq, s.updated_seq AS updated_seq, "
    "s.result_basis AS result_basis, s.result_supports AS result_supports"
)


def _supports_from_json(raw: str | None) -> list[Support]:
    return _SUPPORTS.validate_json(raw) if raw else []


def _step(row: dict[str, Any]) -> Step:
    return Step.model_validate({**row, "result_supports": _supports_from_json(row.get("result_supports"))})


def parse_support_inputs(supports: Any, field: str = "supports") -> list[Any]:
    """Support inputs as models; dicts are accepted. Bad shapes raise ValueError."""
    if supports is None:
        return []
    if isinstance(supports, (str, bytes)) or not isinstance(supports, Sequence):
        raise ValueError(f"{field} must be a list of support inputs")
    items = [s.model_dump() if hasattr(s, "model_dump") else s for s in supports]
    try:
        return _SUPPORT_INPUTS.validate_python(items)
    except ValidationError as exc:
        raise ValueError(f"{field}: {exc.errors()[0]['msg']}") from exc


class ConversationHistory:
    """The history of one project, written as one agent (or person)."""

    def __init__(self, store: GraphStore, *, project_id: str, agent_id: str) -> None:
        self.store = store
        self.project_id = c.text(project_id, "project_id", allow_empty=False)
        self.agent_id = c.text(agent_id, "agent_id", allow_empty=False)
        store.ensure_schema(self.project_id, HISTORY_SCHEMA)

    # -- reads used inside units ------------------------------------------

    def _task_row(self, tx: Tx | None, name: str) -> dict[str, Any] | None:
        query = f"MATCH (t:Task {{id: $id}}) RETURN {_TASK_FIELDS}"
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
        earlier = c.replayed(
            tx, replay, result_type, lambda: result_type(recorded=False, error=WriteErrorCode.request_id_reused)
        )
        if earlier is not None:
            return earlier, {}
        task = self._task_row(tx, task_name)
        if task is None:
            return result_type(recorded=False, error=WriteErrorCode.task_not_found), {}
        return None, task

    # -- tasks ------------------------------------------------------------

    def create_task(self, name: str, *, goal: str, request_id: str | None = None) -> CreateTaskResult:
        name = c.text(name, "name", allow_empty=False)
        goal = c.text(goal, "goal")
        if not c.check_request_id(request_id):
            return CreateTaskResult(recorded=False, error=WriteErrorCode.invalid_request_id)
        replay = c.Replay(self.project_id, request_id, "create_task", {"name": name, "goal": goal})
        tid = c.task_id(self.project_id, name)

        def work(tx: Tx) -> CreateTaskResult:
            earlier = c.replayed(
                tx, replay, CreateTaskResult,
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
                id=tid, project_id=self.project_id, name=name, goal=goal, status=TaskStatus.open,
                event_seq=0, author=self.agent_id, created_at=c.now(),
            )
            tx.write(
                "CREATE (:Task {id: $id, project_id: $p, name: $name, goal: $goal, status: $status, "
                "event_seq: 0, author: $author, created_at: $at})",
                {"id": tid, "p": self.project_id, "name": name, "goal": goal, "status": task.status.value,
                 "author": self.agent_id, "at": c.iso(task.created_at)},
            )
            result = CreateTaskResult(recorded=True, task=task)
            replay.remember(tx, result)
            return result

        return self.store.transact(self.project_id, work)

    def get_task(self, name: str) -> TaskLookup:
        """The bounded resume view: never an event body."""
        name = c.text(name, "name")
        row = self._task_row(None, name)
        if row is None:
            return TaskLookup(found=False)
        tid = row["id"]
        shown = self.store.read(
            self.project_id,
            f"MATCH (s:Step {{task_id: $tid}}) RETURN {_STEP_FIELDS} ORDER BY s.name LIMIT $n",
            {"tid": tid, "n": VIEW_STEPS + 1},
        )
        counts_rows = self.store.read(
            self.project_id,
            "MATCH (s:Step {task_id: $tid}) RETURN s.state AS state, count(s) AS n",
            {"tid": tid},
        )
        steps_truncated = len(shown) > VIEW_STEPS
        summaries = self._summaries([_step(r) for r in shown[:VIEW_STEPS]])
        steps: dict[StepState, list[StepSummary]] = {state: [] for state in StepState}
        for summary in summaries:
            steps[summary.state].append(summary)
        counts = {state: 0 for state in StepState}
        for r in counts_rows:
            counts[StepState(r["state"])] = r["n"]
        extra = self._decision_view(row["name"])
        view = TaskView(
            task_name=row["name"], goal=row["goal"], status=TaskStatus(row["status"]),
            last_event_seq=row["event_seq"], steps=steps, step_counts=counts,
            steps_truncated=steps_truncated, **extra,
        )
        return TaskLookup(found=True, view=view)

    def _decision_view(self, task_name: str) -> dict[str, Any]:
        """Active decisions, review decisions and conflicts of the task. The
        decision layer is not built yet (issue 4), so the view carries the
        model's empty defaults."""
        return {}

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
        sha = hashlib.sha256(payload.encode("utf-8")).hexdigest()
        truncated = len(payload) > PAYLOAD_LIMIT
        stored = payload[:PAYLOAD_LIMIT]
        replay = c.Replay(
            self.project_id, request_id, "record_event",
            {"task": task_name, "kind": kind.value, "sha": sha, "role": role, "name": name},
        )
        tid = c.task_id(self.project_id, task_name)

        def work(tx: Tx) -> RecordEventResult:
            earlier, task = self._begin_task_write(tx, task_name, replay, RecordEventResult)
            if earlier is not None:
                return earlier
            seq = task["event_seq"] + 1
            event = Event(
                id=c.event_id(tid, seq), task_id=tid, seq=seq, kind=kind, role=role, name=name,
                payload=stored, payload_sha256=sha, truncated=truncated, author=self.agent_id, at=c.now(),
            )
            tx.write(
                "MATCH (t:Task {id: $tid}) SET t.event_seq = $seq "
                "CREATE (:Event {id: $id, project_id: $p, task_id: $tid, seq: $seq, kind: $kind, role: $role, "
                "name: $name, payload: $payload, payload_sha256: $sha, truncated: $truncated, author: $author, at: $at})",
                {"tid": tid, "seq": seq, "id": str(event.id), "p": self.project_id, "kind": kind.value,
                 "role": role, "name": name, "payload": stored, "sha": sha, "truncated": truncated,
                 "author": self.agent_id, "at": c.iso(event.at)},
            )
            result = RecordEventResult(recorded=True, event=event)
            replay.remember(tx, result)
            return result

        return self.store.transact(self.project_id, work)

    def list_events(self, task_name: str, *, after_seq: int = 0, limit: int = 50) -> EventPage:
        task_name = c.text(task_name, "task_name")
        after_seq = c.integer(after_seq, "after_seq")
        limit = c.clamp(limit, 50, EVENTS_MAX)
        task = self._task_row(None, task_name)
        if task is None:
            return EventPage(found=False)
        # Numbers run from 1 with no gaps and ids derive from them, so a page
        # is fetched by its ids: its cost does not grow with the log.
        first = max(after_seq, 0) + 1
        last = min(first + limit - 1, task["event_seq"])
        if last < first:
            return EventPage(found=True)
        tid = task["id"]
        rows = self.store.read(
            self.project_id,
            f"UNWIND $ids AS id MATCH (e:Event {{id: id}}) RETURN {_EVENT_FIELDS} ORDER BY e.seq",
            {"ids": [c.event_id(tid, seq) for seq in range(first, last + 1)]},
        )
        events = [Event.model_validate(r) for r in rows]
        truncated = last < task["event_seq"]
        return EventPage(found=True, events=events, truncated=truncated, next_after_seq=last if truncated else None)

    def fetch_event(self, task_name: str, seq: int) -> EventLookup:
        task_name = c.text(task_name, "task_name")
        seq = c.integer(seq, "seq")
        rows = self.store.read(
            self.project_id,
            f"MATCH (e:Event {{id: $id}}) RETURN {_EVENT_FIELDS}",
            {"id": c.event_id(c.task_id(self.project_id, task_name), seq)},
        )
        return EventLookup(found=True, event=Event.model_validate(rows[0])) if rows else EventLookup(found=False)

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
        inputs = parse_support_inputs(result_supports, "result_supports")
        if not c.check_request_id(request_id):
            return SetStepResult(recorded=False, error=WriteErrorCode.invalid_request_id)
        if basis is StepResultBasis.supported and not inputs:
            return SetStepResult(recorded=False, error=WriteErrorCode.support_required)
        if len(inputs) > MAX_SUPPORTS:
            return SetStepResult(recorded=False, error=WriteErrorCode.support_invalid)
        replay = c.Replay(
            self.project_id, request_id, "set_step",
            {"task": task_name, "name": name, "state": state.value, "kind": kind.value,
             "seq": result_event_seq, "basis": basis.value, "supports": [i.model_dump() for i in inputs]},
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
                id=c.step_id(tid, name), task_id=tid, name=name, kind=kind, state=state,
                result_event_seq=result_event_seq, updated_seq=task["event_seq"],
                result_basis=basis, result_supports=supports,
            )
            tx.write(
                "MERGE (s:Step {id: $id}) "
                "SET s.project_id = $p, s.task_id = $tid, s.name = $name, s.kind = $kind, s.state = $state, "
                "s.result_event_seq = $seq, s.updated_seq = $updated, s.result_basis = $basis, "
                "s.result_supports = $supports",
                {"id": str(step.id), "p": self.project_id, "tid": tid, "name": name, "kind": kind.value,
                 "state": state.value, "seq": result_event_seq, "updated": step.updated_seq,
                 "basis": basis.value,
                 "supports": json.dumps([s.model_dump(mode="json") for s in supports])},
            )
            result = SetStepResult(recorded=True, step=step)
            replay.remember(tx, result)
            return result

        return self.store.transact(self.project_id, work)

    def list_steps(self, task_name: str, *, after_name: str | None = None, limit: int = 50) -> StepPage:
        task_name = c.text(task_name, "task_name")
        after_name = c.optional_text(after_name, "after_name")
        limit = c.clamp(limit, 50, STEPS_MAX)
        rows = self.store.read(
            self.project_id,
            f"MATCH (s:Step {{task_id: $tid}}) WHERE $after IS NULL OR s.name > $after "
            f"RETURN {_STEP_FIELDS} ORDER BY s.name LIMIT $n",
            {"tid": c.task_id(self.project_id, task_name), "after": after_name, "n": limit + 1},
        )
        summaries = self._summaries([_step(r) for r in rows[:limit]])
        truncated = len(rows) > limit
        return StepPage(
            steps=summaries, truncated=truncated, next_after_name=summaries[-1].name if truncated else None
        )

    def _summaries(self, steps: list[Step]) -> list[StepSummary]:
        validity = step_validities(self.store, self.project_id, steps)
        return [
            StepSummary(
                name=s.name, kind=s.kind, state=s.state, result_event_seq=s.result_event_seq,
                result_basis=s.result_basis, result_validity=validity[s.name], result_supports=s.result_supports,
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

        self.store.transact(self.project_id, work)
        return self.steps_to_rerun(task_name)


# -- supports of step results, shared with the decision layer -----------------


def resolve_step_supports(tx: Tx, project_id: str, inputs: list[Any]) -> list[Support] | None:
    """Stored supports for step-result inputs, or None when one matches
    nothing in the project."""
    supports: list[Support] = []
    for item in inputs:
        if isinstance(item, EventSupportInput):
            tid = c.task_id(project_id, item.task_name)
            rows = tx.read(
                "MATCH (e:Event {id: $id}) RETURN e.id AS id",
                {"id": c.event_id(tid, item.seq)},
            )
            if not rows:
                return None
            supports.append(EventSupport(event_id=rows[0]["id"], task_name=item.task_name, seq=item.seq))
        elif isinstance(item, DecisionSupportInput):
            rows = tx.read(
                "MATCH (d:Decision {id: $id, project_id: $p}) RETURN d.id AS id",
                {"id": item.decision_id, "p": project_id},
            )
            if not rows:
                return None
            supports.append(DecisionSupport(decision_id=rows[0]["id"]))
        elif isinstance(item, DocumentSupportInput):
            # No knowledge layer yet (issue 4): no evidence id names a document.
            return None
    return supports


def step_validities(store: GraphStore, project_id: str, steps: list[Step]) -> dict[str, StepResultValidity]:
    """Check the supports of completed step results again (seed 000, "Steps")."""
    validity: dict[str, StepResultValidity] = {}
    event_ids: set[str] = set()
    decision_ids: set[str] = set()
    for step in steps:
        for s in step.result_supports:
            if isinstance(s, EventSupport):
                event_ids.add(str(s.event_id))
            elif isinstance(s, DecisionSupport):
                decision_ids.add(str(s.decision_id))
    events = {
        r["id"]: r
        for r in (
            store.read(
                project_id,
                "UNWIND $ids AS id MATCH (e:Event {id: id}) RETURN e.id AS id, e.redacted_at AS redacted_at, "
                "e.truncated AS truncated",
                {"ids": sorted(event_ids)},
            )
            if event_ids
            else []
        )
    }
    decisions = {
        r["id"]: r
        for r in (
            store.read(
                project_id,
                "UNWIND $ids AS id MATCH (d:Decision {id: id, project_id: $p}) "
                "RETURN d.id AS id, d.status AS status, d.review_state AS review_state",
                {"ids": sorted(decision_ids), "p": project_id},
            )
            if decision_ids
            else []
        )
    }
    # Document supports are checked by the knowledge layer (issue 4); until
    # then none can be stored, and an unknown one reads as unavailable.
    doc_states: dict[str, StepResultValidity] = {}
    for step in steps:
        if step.state is not StepState.completed:
            validity[step.name] = StepResultValidity.unknown
            continue
        if step.result_basis is StepResultBasis.independent:
            validity[step.name] = StepResultValidity.reusable
            continue
        if step.result_basis is StepResultBasis.unknown or not step.result_supports:
            validity[step.name] = StepResultValidity.unknown
            continue
        verdict = StepResultValidity.reusable
        for s in step.result_supports:
            if isinstance(s, EventSupport):
                event = events.get(str(s.event_id))
                if event is None or event["redacted_at"] is not None or event["truncated"]:
                    verdict = StepResultValidity.unavailable
                    break
            elif isinstance(s, DecisionSupport):
                decision = decisions.get(str(s.decision_id))
                if decision is None:
                    verdict = StepResultValidity.unavailable
                    break
                if decision["status"] != DecisionStatus.active.value or decision["review_state"] != ReviewState.clear.value:
                    verdict = StepResultValidity.needs_review
            else:
                state = doc_states.get(s.evidence_id, StepResultValidity.unavailable)
                if state is StepResultValidity.unavailable:
                    verdict = StepResultValidity.unavailable
                    break
                if state is StepResultValidity.needs_review:
                    verdict = StepResultValidity.needs_review
        validity[step.name] = verdict
    return validity
