"""Request ids, structurally, on both backends: every write of every service
(found by its ``request_id`` parameter), repeated with one argument changed
at a time, is refused ``request_id_reused``; repeated unchanged, it returns
the stored result. A write added to a service fails here until it is listed."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest

from core import _common as c
from core.decisions import DecisionTraces
from core.history import ConversationHistory
from core.knowledge import Graph
from core.retention import HistoryRetention
from tests.core.test_decisions import World, world  # noqa: F401  (the shared fixture)

SERVICES = {"history": ConversationHistory, "traces": DecisionTraces, "retention": HistoryRetention, "graph": Graph}

EVENT_1 = {"kind": "event", "task_name": "pick-db", "seq": 1}
EVENT_2 = {"kind": "event", "task_name": "billing", "seq": 1}

#: Arguments that are not part of what a request asks for: ``fetched`` is
#: the outcome of the caller's read of a document support (a retry may read
#: again), not part of the write.
NOT_ARGUMENTS = {"self", "request_id", "fetched"}


def _decision(w: World, task: str = "pick-db", key: str = "db", conclusion: str = "Postgres") -> str:
    return str(
        w.traces.record_decision(
            task, choice_key=key, conclusion=conclusion, rationale="r", supports=[EVENT_1]
        ).decision.id
    )


def _event(w: World, task: str, seq: int) -> str:
    return c.event_id(c.task_id(w.project_id, task), seq)


# (service, method) -> (the first call's arguments, each argument's other value)
Case = tuple[dict[str, Any], dict[str, Any]]
CASES: dict[tuple[str, str], Callable[[World], Case]] = {
    ("history", "create_task"): lambda w: ({"name": "new", "goal": "g"}, {"name": "other", "goal": "g2"}),
    ("history", "record_event"): lambda w: (
        {"task_name": "pick-db", "kind": "message", "payload": "p", "role": "user", "name": None},
        {"task_name": "billing", "kind": "note", "payload": "p2", "role": "assistant", "name": "search"},
    ),
    ("history", "set_step"): lambda w: (
        {
            "task_name": "pick-db",
            "name": "s",
            "state": "completed",
            "kind": "read",
            "result_event_seq": 1,
            "result_basis": "supported",
            "result_supports": [EVENT_1],
        },
        {
            "task_name": "billing",
            "name": "s2",
            "state": "failed",
            "kind": "analysis",
            "result_event_seq": None,
            "result_basis": "independent",
            "result_supports": [EVENT_2],
        },
    ),
    ("traces", "record_decision"): lambda w: (
        {
            "task_name": "pick-db",
            "choice_key": "k",
            "conclusion": "c",
            "rationale": "r",
            "supports": [EVENT_1],
            "assumptions": ["a"],
            "open_questions": ["q"],
        },
        {
            "task_name": "billing",
            "choice_key": "k2",
            "conclusion": "c2",
            "rationale": "r2",
            "supports": [EVENT_2],
            "assumptions": ["a2"],
            "open_questions": [],
        },
    ),
    ("traces", "supersede_decision"): lambda w: (
        {
            "decision_id": _decision(w),
            "conclusion": "c",
            "rationale": "r",
            "explanation": "e",
            "supports": [EVENT_1],
            "assumptions": [],
            "open_questions": [],
        },
        {
            "decision_id": _decision(w, "billing"),
            "conclusion": "c2",
            "rationale": "r2",
            "explanation": "e2",
            "supports": [EVENT_2],
            "assumptions": ["a"],
            "open_questions": ["q"],
        },
    ),
    ("traces", "reject_decision"): lambda w: (
        {"decision_id": _decision(w), "reason": "no"},
        {"decision_id": _decision(w, "billing"), "reason": "other reason"},
    ),
    ("traces", "reaffirm_decision"): lambda w: (
        {"decision_id": _decision(w), "explanation": "still true"},
        {"decision_id": _decision(w, "billing"), "explanation": "checked again"},
    ),
    ("retention", "redact_event"): lambda w: (
        {"event_id": _event(w, "pick-db", 1), "reason": "personal data"},
        {"event_id": _event(w, "billing", 1), "reason": "other reason"},
    ),
    ("retention", "delete_task"): lambda w: (
        {"task_name": "pick-db", "include_decisions": True, "reason": "policy"},
        {"task_name": "billing", "include_decisions": False, "reason": "other"},
    ),
    ("graph", "add"): lambda w: ({"key": "new-doc", "text": "t"}, {"key": "other-doc", "text": "t2"}),
    ("graph", "update"): lambda w: ({"key": "adr", "text": "v2"}, {"key": "other-doc", "text": "v3"}),
    ("graph", "delete"): lambda w: ({"key": "adr"}, {"key": "other-doc"}),
}


def writes() -> list[tuple[str, str]]:
    """Every public method of every service that takes a request id."""
    found = []
    for name, cls in SERVICES.items():
        for method, fn in inspect.getmembers(cls, inspect.isfunction):
            if not method.startswith("_") and "request_id" in inspect.signature(fn).parameters:
                found.append((name, method))
    return sorted(found)


def test_every_write_is_listed() -> None:
    assert writes() == sorted(CASES)


def _call(w: World, service: str, method: str, args: dict[str, Any], rid: str) -> Any:
    target = w.graph if service == "graph" else getattr(w, service)
    return getattr(target, method)(**args, request_id=rid)


@pytest.mark.parametrize(("service", "method"), sorted(CASES), ids=[f"{s}.{m}" for s, m in sorted(CASES)])
def test_a_request_id_reused_with_any_argument_changed_is_refused(world: World, service: str, method: str) -> None:
    world.history.record_event("billing", kind="message", payload="billing question")
    first_args, others = CASES[(service, method)](world)
    params = set(inspect.signature(getattr(SERVICES[service], method)).parameters) - NOT_ARGUMENTS
    assert set(first_args) == set(others) == params, "list every argument of the write"
    first = _call(world, service, method, first_args, "rq-1")
    assert first.recorded, first.error
    assert _call(world, service, method, first_args, "rq-1") == first  # the stored result
    for name, other in others.items():
        assert other != first_args[name]
        changed = _call(world, service, method, {**first_args, name: other}, "rq-1")
        assert (changed.recorded, getattr(changed.error, "value", changed.error)) == (False, "request_id_reused"), name
    assert _call(world, service, method, first_args, "rq-1") == first
