"""The importer's references and times (issue 13), on both backends: a
reference with a missing or misspelled field is reported as such, by line;
a line's ``at`` is kept as the time its operation happened."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

from core.decisions import DecisionTraces
from core.history import ConversationHistory
from core.retention import ActivityLog
from core.stores import GraphStore
from core.traces_io import REFERENCE_FORMS, LineError, import_lines

BASE = [
    {"op": "create_task", "task": "pick-db", "goal": "Pick a database"},
    {"op": "record_event", "task": "pick-db", "kind": "message", "payload": "Which database?"},
    {
        "op": "record_decision",
        "task": "pick-db",
        "choice_key": "orders-db",
        "conclusion": "Postgres",
        "rationale": "asked",
        "supports": [{"kind": "event", "task_name": "pick-db", "seq": 1}],
    },
]


def run(store: GraphStore, project: str, lines: list[dict[str, Any]]) -> dict[int, str]:
    return {
        n: str(o)
        for n, o in import_lines(store, [json.dumps(x) for x in lines], project=project)
        if isinstance(o, LineError)
    }


def decision_line(support: dict[str, Any], key: str = "other") -> dict[str, Any]:
    return {
        "op": "record_decision",
        "task": "pick-db",
        "choice_key": key,
        "conclusion": "c",
        "rationale": "r",
        "supports": [support],
    }


def test_a_misspelled_or_missing_reference_field_is_reported_by_line(store: GraphStore, project_id: str) -> None:
    bad = [
        decision_line({"kind": "decision", "task": "pick-db", "choice_key": "orders-db", "revision": 1}),
        decision_line({"kind": "decision", "task_name": "pick-db", "choice_key": "orders-db"}),
        decision_line({"kind": "event", "task_name": "pick-db"}),
        decision_line({"kind": "event", "task": "pick-db", "seq": 1}),
        decision_line({"kind": "event", "task_name": "pick-db", "seq": "one"}),
        decision_line({"kind": "document", "key": "adr", "version": 1, "start": 0}),
        decision_line({"kind": "rumour"}),
        {
            "op": "reject_decision",
            "decision": {"task_name": "pick-db", "choice_key": "orders-db", "revision": 1},
            "reason": "r",
        },
    ]
    found = run(store, project_id, BASE + bad)
    assert sorted(found) == list(range(4, 4 + len(bad)))
    assert 'has unknown "task"' in found[4] and 'misses "task_name"' in found[4]
    assert "support_decision_not_found" not in found[4]
    assert 'misses "revision"' in found[5]
    assert 'misses "seq"' in found[6]
    assert 'unknown "task"' in found[7] and 'misses "task_name"' in found[7]
    assert '"seq" must be a whole number' in found[8]
    assert 'misses "end"' in found[9]
    assert '"kind"' in found[10]
    assert 'unknown "task_name"' in found[11] and 'misses "task"' in found[11]
    # each message names the fields the reference takes
    assert "task_name, choice_key, revision" in found[4]
    traces = DecisionTraces(store, project_id=project_id, agent_id="t")
    assert traces.list_decisions("pick-db").page.count == 1  # only the good line's decision
    # the correct spellings go through
    good = [
        decision_line({"kind": "decision", "task_name": "pick-db", "choice_key": "orders-db", "revision": 1}),
        {"op": "reject_decision", "decision": {"task": "pick-db", "choice_key": "other", "revision": 1}, "reason": "r"},
    ]
    assert run(store, project_id, good) == {}
    assert set(REFERENCE_FORMS) == {"decision", "event support", "document support", "decision support"}


def test_a_lines_time_is_kept_and_the_activity_log_keeps_both(store: GraphStore, project_id: str) -> None:
    t0 = datetime(2025, 3, 1, 9, 30, tzinfo=UTC)

    def at(minutes: int) -> str:
        return (t0 + timedelta(minutes=minutes)).isoformat().replace("+00:00", "Z")

    lines = [
        {**BASE[0], "at": at(0)},
        {**BASE[1], "at": at(1)},
        {**BASE[2], "at": at(2)},
        {
            "op": "supersede_decision",
            "decision": {"task": "pick-db", "choice_key": "orders-db", "revision": 1},
            "conclusion": "MySQL",
            "rationale": "r",
            "explanation": "e",
            "supports": [{"kind": "event", "task_name": "pick-db", "seq": 1}],
            "at": at(3),
        },
        {
            "op": "reject_decision",
            "decision": {"task": "pick-db", "choice_key": "orders-db", "revision": 2},
            "reason": "no",
            "at": at(4),
        },
        {"op": "record_event", "task": "pick-db", "kind": "note", "payload": "now"},  # no time: now
        {"op": "record_event", "task": "pick-db", "kind": "note", "payload": "x", "at": "last tuesday"},
    ]
    before = datetime.now(UTC)
    found = run(store, project_id, lines)
    assert list(found) == [7] and '"at"' in found[7]
    history = ConversationHistory(store, project_id=project_id, agent_id="t")
    traces = DecisionTraces(store, project_id=project_id, agent_id="t")
    events = history.list_events("pick-db").events
    assert events[0].at == t0 + timedelta(minutes=1)
    assert events[1].at >= before  # a line without "at" happens when it is imported
    revisions = {d.revision: d for d in traces.list_decisions("pick-db").page.decisions}
    assert revisions[1].created_at == t0 + timedelta(minutes=2)
    assert revisions[2].created_at == t0 + timedelta(minutes=3)
    assert revisions[2].rejection_reason == "no"
    entries = {e.action: e for e in ActivityLog(store, project_id=project_id).list()}
    assert entries["supersede"].at == t0 + timedelta(minutes=3)
    assert entries["reject"].at == t0 + timedelta(minutes=4)
    for e in (entries["supersede"], entries["reject"]):
        assert e.imported_at is not None and e.imported_at >= before
    # a write that is not imported happens now, and is not marked imported
    d = traces.record_decision(
        "pick-db",
        choice_key="live",
        conclusion="c",
        rationale="r",
        supports=[{"kind": "event", "task_name": "pick-db", "seq": 1}],
    ).decision
    assert d.created_at >= before
    traces.reject_decision(str(d.id), reason="live")
    live = ActivityLog(store, project_id=project_id).list(action="reject")
    assert [(e.reason, e.imported_at is None) for e in live if e.reason == "live"] == [("live", True)]
