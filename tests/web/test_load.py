"""Several reviewers at once through HTTP on one shared queue (a CI-sized run
of ``python -m tests.benchmarks.load``): no 5xx, every action applied once or
refused with a sentence, exactly one winner per contested decision."""

from __future__ import annotations

import re
from typing import Any

from core.decisions import DecisionTraces
from core.models import DecisionStatus, ReviewState
from reviewer.store import get_store
from tests.benchmarks.load import check_store, drive, flagged_project

from .conftest import PASSWORD, make_user


def test_reviewers_at_once_on_one_queue_act_once_each(transactional_db: None, live_server: Any) -> None:
    store = get_store()
    project, ids = flagged_project(store, 30)
    names = [f"load{i}" for i in range(4)]
    for name in names:
        make_user(name, "reviewer", [project])
    contested = set(ids[:10])
    try:
        report = drive(live_server.url, project, names, PASSWORD, ids, contested=10, seconds=300, max_requests=2000)

        assert report.problems(contested) == []
        assert check_store(store, project, report, contested) == []
        # Every decision was acted on; each contested one had two tries and one winner.
        assert sorted(a.decision for a in report.acts) == sorted(ids + list(contested))
        losers = [a for a in report.acts if a.status == 400]
        assert len(losers) == len(contested) and {a.decision for a in losers} == contested
        # the refusal names who won, what they did and when (issue 15)
        assert all(re.search(r"load\d rejected this at \d\d:\d\d", a.sentence or "") for a in losers)
        traces = DecisionTraces(store, project_id=project, agent_id="audit")
        for a in report.acts:
            d = traces.get_decision(a.decision).decision
            if a.status == 302 and a.action == "reject":
                assert d.status is DecisionStatus.rejected and d.rejected_by == a.reviewer
            elif a.status == 302:
                assert d.status is DecisionStatus.active and d.review_state is ReviewState.clear
        assert traces.review_counts()["needs_review"] == 0
    finally:
        get_store().drop_project(project)
