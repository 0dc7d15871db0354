"""The demo data: it loads through the core and tells the story it claims."""

from __future__ import annotations

import uuid

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
