"""The demo data: it loads through the core and tells the story it claims."""

from __future__ import annotations

import uuid

import pytest

from core import _common as c
from core.decisions import DecisionTraces
from core.history import ConversationHistory
from core.models import DecisionStatus, ReviewReason, ReviewState
from core.stores import GraphStore
from reviewer import demo


def test_the_demo_holds_work_to_review(store: GraphStore) -> None:
    renamed = tuple(f"{p}-{uuid.uuid4().hex[:6]}" for p in demo.PROJECTS)
    try:
        counts = demo.seed(store, projects=renamed)
        acme = DecisionTraces(store, project_id=renamed[0], agent_id="t")
        history = ConversationHistory(store, project_id=renamed[0], agent_id="t")
        assert counts.tasks == 8 and counts.documents == 5 and counts.decisions == 15
        queue = acme.list_decisions_for_review()
        reasons = {d.review_reason for d in queue.decisions}
        assert {ReviewReason.source_changed, ReviewReason.source_removed} <= reasons
        assert any(d.review_state is ReviewState.unknown for d in queue.decisions)  # the sweep is partial
        assert acme.review_counts()["queued"] > 0
        assert [g.choice_key for g in acme.list_conflicts().groups] == ["job-queue"]
        redacted = history.fetch_event("incident-2026-11-12-followup", 1).event
        assert redacted.payload == "[REDACTED]" and "jane.doe" not in redacted.payload
        decisions = acme.list_decisions("retention-review").page.decisions
        assert {d.status for d in decisions} == {DecisionStatus.active, DecisionStatus.rejected}
        every_state = history.get_task("own-payments-service").view.step_counts
        assert all(every_state[s] == 1 for s in every_state if s.value != "in_progress")
    finally:
        for project in renamed:
            store.drop_project(project)


def test_the_large_set_holds_what_it_says_and_is_the_same_for_a_seed(store: GraphStore) -> None:
    from reviewer import demo_large

    a, b, other = (f"scale-{uuid.uuid4().hex[:6]}" for _ in range(3))
    try:
        counts = demo_large.seed_large(store, project=a, decisions=500, events=3_000, seed=3)
        assert (counts.tasks, counts.events, counts.decisions, counts.steps, counts.documents) == (
            5,
            3_000,
            500,
            25,
            len(demo_large.POLICIES) + len(demo_large.SERVICES),
        )
        traces = DecisionTraces(store, project_id=a, agent_id="t")
        history = ConversationHistory(store, project_id=a, agent_id="t")
        tasks, _more = history.list_tasks(limit=200)
        assert len(tasks) == 5 and sum(t.event_seq for t in tasks) == 3_000
        kinds = {e.kind.value for e in history.list_events(tasks[0].name, limit=200).events}
        assert {"message", "tool_call", "tool_result", "note"} <= kinds
        view = history.get_task(tasks[0].name).view
        assert all(view.step_counts[s] == 1 for s in view.step_counts)  # a step in every state
        review = traces.review_counts()
        assert counts.flagged > 0 and review["needs_review"] > 0
        for reason in (ReviewReason.source_changed, ReviewReason.source_removed):
            assert traces.list_decisions_for_review(reason=reason).decisions, reason

        demo_large.seed_large(store, project=b, decisions=500, events=3_000, seed=3)
        demo_large.seed_large(store, project=other, decisions=500, events=3_000, seed=4)

        def story(project: str) -> list[tuple[str, str]]:
            t = DecisionTraces(store, project_id=project, agent_id="t")
            name = tasks[3].name
            service, concern = name.split("-")[0], name.split("-")[1]
            ids = [c.decision_id(c.task_id(project, name), f"{service}-{concern}-{k:03d}", 1) for k in range(100)]
            return [(d.choice_key, d.conclusion) for d in (t.get_decision(i).decision for i in ids)]

        assert story(a) == story(b) and story(a) != story(other)
    finally:
        for project in (a, b, other):
            store.drop_project(project)


def test_the_large_set_loads_fewer_tasks_a_batch_when_they_hold_more_decisions(
    store: GraphStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # batches of at most 100 decisions and 20 decisions a task: 17 tasks
    # loaded 5 a batch; the 17th is the orders service's second task, in the
    # last batch, and its chained decisions depend on the first decision of
    # the first task
    from reviewer import demo_large

    monkeypatch.setattr(demo_large, "BATCH_DECISIONS", 100)
    project = f"scale-{uuid.uuid4().hex[:6]}"
    try:
        counts = demo_large.seed_large(store, project=project, decisions=340, events=340, seed=3, decisions_per_task=20)
        assert (counts.tasks, counts.decisions, counts.events) == (17, 340, 340)
        traces = DecisionTraces(store, project_id=project, agent_id="t")
        history = ConversationHistory(store, project_id=project, agent_id="t")
        tasks, _more = history.list_tasks(limit=200)
        assert len(tasks) == 17 and all(t.event_seq == 20 for t in tasks)
        first, later = "orders-storage-review-001", "orders-queue-review-001"
        root = c.decision_id(c.task_id(project, first), "orders-storage-000", 1)
        chained = traces.get_decision(c.decision_id(c.task_id(project, later), "orders-queue-001", 1)).decision
        assert chained is not None
        assert [str(s.decision_id) for s in chained.supports if s.kind == "decision"] == [str(root)]
    finally:
        store.drop_project(project)
