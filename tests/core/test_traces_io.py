"""Traces in and out as JSON Lines, on both backends: export then import
rebuilds a project; importing twice changes nothing; bad lines are reported
by number while the good ones are applied."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from core.decisions import DecisionTraces
from core.history import ConversationHistory
from core.knowledge import Graph
from core.models import DecisionSupport, DocumentSupport, EventSupport
from core.retention import ActivityLog
from core.stores import GraphStore
from core.traces_io import LineError, export_project, import_lines
from reviewer import demo


@pytest.fixture
def demo_projects(store: GraphStore) -> Iterator[tuple[str, str]]:
    names = tuple(f"{p}-{uuid.uuid4().hex[:6]}" for p in demo.PROJECTS)
    demo.seed(store, projects=names)  # type: ignore[arg-type]
    yield names  # type: ignore[misc]
    for p in names:
        store.drop_project(p)


def support_view(s: Any, names: dict[str, tuple[str, str, int]]) -> tuple[Any, ...]:
    if isinstance(s, DocumentSupport):
        return ("document", s.document_key, s.recorded_activation_seq, s.char_start, s.char_end, s.content_hash)
    if isinstance(s, EventSupport):
        return ("event", s.task_name, s.seq)
    assert isinstance(s, DecisionSupport)
    return ("decision", names.get(str(s.decision_id)))


def snapshot(store: GraphStore, project: str) -> dict[str, Any]:
    """What a reviewer sees of a project, without its ids and times."""
    history = ConversationHistory(store, project_id=project, agent_id="audit")
    traces = DecisionTraces(store, project_id=project, agent_id="audit")
    graph = Graph(store, project_id=project)
    tasks, _more = history.list_tasks(limit=200)
    out: dict[str, Any] = {"tasks": [], "events": [], "steps": [], "decisions": [], "documents": []}
    decisions = [d for t in tasks for d in traces.list_decisions(t.name).page.decisions]
    names = {str(d.id): (d.task_name, d.choice_key, d.revision) for d in decisions}
    for t in tasks:
        out["tasks"].append((t.name, t.goal, t.status, t.author, t.event_seq))
        for e in history.list_events(t.name, limit=200).events:
            redacted = e.redacted_at is not None
            out["events"].append(
                (
                    t.name,
                    e.seq,
                    e.kind,
                    e.role,
                    e.name,
                    e.payload,
                    e.author,
                    redacted,
                    None if redacted else e.payload_sha256,
                )
            )  # a redacted body is gone
        for s in history.list_steps(t.name, limit=200).steps:
            out["steps"].append(
                (
                    t.name,
                    s.name,
                    s.state,
                    s.kind,
                    s.result_event_seq,
                    s.result_basis,
                    s.result_validity,
                    [support_view(x, names) for x in s.result_supports],
                )
            )
    for d in decisions:
        history_of = traces.list_support_history(str(d.id), limit=200).supports
        out["decisions"].append(
            (
                d.task_name,
                d.choice_key,
                d.revision,
                d.conclusion,
                d.rationale,
                d.assumptions,
                d.open_questions,
                d.author,
                d.status,
                d.review_state,
                d.review_reason,
                d.rejection_reason,
                d.rejected_by,
                [support_view(s, names) for s in d.supports],
                [(support_view(s, names), s.current, s.reviewed_by, s.review_explanation) for s in history_of],
            )
        )
    keys = sorted({s.document_key for d in decisions for s in d.supports if isinstance(s, DocumentSupport)})
    for key in keys:
        info = graph.get_document(key)
        out["documents"].append(
            (key, info.state if info else None, [(v.activation_seq, v.content_hash) for v in graph.list_versions(key)])
        )
    out["review"] = traces.review_counts()
    out["conflicts"] = [g.choice_key for g in traces.list_conflicts().groups]
    out["activity"] = sorted(
        (a.actor, a.action, a.summary, a.reason)
        for a in ActivityLog(store, project_id=project).list(limit=200)
        if a.action != "delete_task"
    )
    return out


def errors(results: Iterator[tuple[int, Any]]) -> list[tuple[int, str]]:
    return [(n, str(o)) for n, o in results if isinstance(o, LineError)]


def review_some(store: GraphStore, project: str) -> None:
    """People at work on the demo: one reaffirm, one supersede, one reject."""
    traces = DecisionTraces(store, project_id=project, agent_id="rita")
    while traces.continue_decision_review().more:  # review spread to the end: nothing queued
        pass
    flagged = traces.list_decisions_for_review(limit=50).decisions
    reaffirmed = [
        d for d in flagged if traces.reaffirm_decision(str(d.id), explanation="Still what the ADR says.").recorded
    ]
    assert reaffirmed, "the demo should hold a decision whose passage only moved"
    rest = [d for d in flagged if d not in reaffirmed]
    event = {"kind": "event", "task_name": rest[0].task_name, "seq": 1}
    assert traces.supersede_decision(
        str(rest[0].id),
        conclusion="Revisit next quarter",
        rationale="Changed policy",
        explanation="The cited text changed",
        supports=[event],
    ).recorded
    assert (
        DecisionTraces(store, project_id=project, agent_id="stan")
        .reject_decision(str(rest[1].id), reason="No longer true")
        .recorded
    )
    while traces.continue_decision_review().more:  # their dependants, reviewed in turn
        pass


def test_export_then_import_rebuilds_the_project(store: GraphStore, demo_projects: tuple[str, str]) -> None:
    source = demo_projects[0]
    review_some(store, source)
    traces = DecisionTraces(store, project_id=source, agent_id="t")
    assert traces.review_counts()["queued"] == 0
    lines = [json.dumps(line, default=str) for line in export_project(store, source)]
    copy = "copy-" + uuid.uuid4().hex[:8]
    try:
        assert errors(import_lines(store, lines, project=copy)) == []
        original, rebuilt = snapshot(store, source), snapshot(store, copy)
        assert original["decisions"] and original["review"]["needs_review"] > 0  # a meaningful comparison
        for part in original:
            assert rebuilt[part] == original[part], part
        # importing the same export again changes nothing
        assert errors(import_lines(store, lines, project=copy)) == []
        assert snapshot(store, copy) == rebuilt
    finally:
        store.drop_project(copy)


def test_an_export_with_review_still_queued_keeps_it_queued(store: GraphStore, demo_projects: tuple[str, str]) -> None:
    source = demo_projects[0]  # the demo's sweep is partial
    assert DecisionTraces(store, project_id=source, agent_id="t").review_counts()["queued"] > 0
    lines = [json.dumps(line, default=str) for line in export_project(store, source)]
    assert not any('"continue_review"' in line for line in lines)
    copy = "copy-" + uuid.uuid4().hex[:8]
    try:
        assert errors(import_lines(store, lines, project=copy)) == []
        rebuilt = DecisionTraces(store, project_id=copy, agent_id="t")
        assert rebuilt.review_counts()["queued"] > 0
        while rebuilt.continue_decision_review().more:  # sweeping both gives the same end
            pass
        original = DecisionTraces(store, project_id=source, agent_id="t")
        while original.continue_decision_review().more:
            pass
        assert snapshot(store, copy)["decisions"] == snapshot(store, source)["decisions"]
    finally:
        store.drop_project(copy)


def test_bad_lines_are_reported_by_number_and_the_good_ones_applied(store: GraphStore, project_id: str) -> None:
    lines = [
        json.dumps({"op": "create_task", "task": "pick-db", "goal": "Pick a database", "agent": "planner"}),
        "{not json",
        json.dumps({"op": "launch_rockets"}),
        json.dumps(
            {
                "op": "record_event",
                "task": "pick-db",
                "kind": "message",
                "role": "user",
                "payload": "Which database for orders?",
            }
        ),
        json.dumps({"op": "record_event", "task": "no-such-task", "kind": "message", "payload": "x"}),
        json.dumps({"op": "record_event", "task": "pick-db", "kind": "shout", "payload": "x"}),
        json.dumps(["a", "list"]),
        "",
        json.dumps(
            {
                "op": "record_decision",
                "task": "pick-db",
                "choice_key": "orders-db",
                "conclusion": "Postgres",
                "rationale": "asked",
                "supports": [{"kind": "event", "task_name": "pick-db", "seq": 1}],
            }
        ),
        json.dumps(
            {"op": "reject_decision", "decision": {"task": "pick-db", "choice_key": "orders-db", "revision": 1}}
        ),
    ]
    found = errors(import_lines(store, lines, project=project_id))
    assert [n for n, _ in found] == [2, 3, 5, 6, 7, 10]
    reasons = dict(found)
    assert reasons[2].startswith("not JSON") and "unknown operation 'launch_rockets'" in reasons[3]
    assert "task_not_found" in reasons[5] and "kind" in reasons[6] and "JSON object" in reasons[7]
    assert "reason" in reasons[10]
    history = ConversationHistory(store, project_id=project_id, agent_id="t")
    assert history.get_task("pick-db").view.last_event_seq == 1
    decision = DecisionTraces(store, project_id=project_id, agent_id="t").list_decisions("pick-db").page.decisions
    assert [(d.conclusion, d.author) for d in decision] == [("Postgres", "import")]
    # the same file again: the good lines do nothing new, the bad ones fail again
    assert [n for n, _ in errors(import_lines(store, lines, project=project_id))] == [2, 3, 5, 6, 7, 10]
    assert history.get_task("pick-db").view.last_event_seq == 1


def test_lines_name_their_own_project_unless_the_importer_does(store: GraphStore, project_id: str) -> None:
    line = json.dumps({"op": "create_task", "project": project_id, "task": "t", "goal": "g"})
    assert errors(import_lines(store, [line])) == []
    assert ConversationHistory(store, project_id=project_id, agent_id="x").get_task("t").found
    orphan = json.dumps({"op": "create_task", "task": "t", "goal": "g"})
    assert "no project" in errors(import_lines(store, [orphan]))[0][1]
    missing = json.dumps({"op": "create_task", "project": project_id, "goal": "g"})
    assert errors(import_lines(store, [missing])) == [(1, "create_task needs 'task'")]


@pytest.mark.parametrize(
    "at, utc",
    [
        ("2026-03-01T09:30:00+02:00", "2026-03-01T07:30:00+00:00"),
        ("2026-03-01T09:30:00-05:30", "2026-03-01T15:00:00+00:00"),
        ("2026-03-01T09:30:00Z", "2026-03-01T09:30:00+00:00"),
        ("2026-03-01T09:30:00", "2026-03-01T09:30:00+00:00"),  # no zone: UTC
    ],
)
def test_an_imported_time_is_kept_as_the_same_instant_in_utc(
    store: GraphStore, project_id: str, at: str, utc: str
) -> None:
    """Every record a line writes keeps its ``at`` converted to UTC, never
    with its offset replaced: the task, the event, the decision, its review,
    the activity entry."""
    from datetime import datetime

    expected = datetime.fromisoformat(utc)
    lines = [
        {"op": "create_task", "task": "t", "goal": "g", "at": at},
        {"op": "record_event", "task": "t", "kind": "message", "payload": "p", "at": at},
        {
            "op": "record_decision",
            "task": "t",
            "choice_key": "k",
            "conclusion": "c",
            "rationale": "r",
            "supports": [{"kind": "event", "task_name": "t", "seq": 1}],
            "at": at,
        },
        {
            "op": "reject_decision",
            "decision": {"task": "t", "choice_key": "k", "revision": 1},
            "reason": "no",
            "at": at,
        },
    ]
    assert errors(import_lines(store, [json.dumps(x) for x in lines], project=project_id)) == []
    history = ConversationHistory(store, project_id=project_id, agent_id="x")
    traces = DecisionTraces(store, project_id=project_id, agent_id="x")
    task = history.get_task("t")
    (decision,) = traces.list_decisions("t").page.decisions
    assert decision.status.value == "rejected"
    times = {"event": history.fetch_event("t", 1).event.at, "decision": decision.created_at}
    entries = ActivityLog(store, project_id=project_id).list()
    times.update({f"activity {e.action}": e.at for e in entries})
    assert len(entries) >= 1 and task.found
    for what, moment in times.items():
        assert moment is not None and moment.utcoffset() is not None, what
        assert moment == expected, (what, moment, expected)
