"""The hot reads of the review pages are answered from indexes on Neo4j.

Neo4j keeps every project in one graph, so a read that falls back to a
label scan (``NodeByLabelScan``, ``AllNodesScan``) grows with every project's
data. This test records the statements the hot reads send (the review
queue's count and pages, one task's queue, a task view's newest decisions,
the overview's counts) and asks Neo4j for each one's plan (``EXPLAIN``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from core import _decision_reads
from core.decisions import DecisionTraces
from core.history import ConversationHistory
from core.knowledge import Graph
from core.stores import GraphStore

POLICY = "Every service keeps its data in Postgres.\n\nBackups run nightly."
SCANS = ("NodeByLabelScan", "AllNodesScan")


class Recording:
    """The store, recording every read statement sent through it."""

    def __init__(self, store: GraphStore) -> None:
        self._store = store
        self.reads: list[tuple[str, dict[str, Any]]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def read(self, project_id: str, query: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        self.reads.append((query, dict(params or {})))
        return self._store.read(project_id, query, params)


def operators(plan: Any) -> Iterator[str]:
    details = plan.get("args", {}).get("Details", "")
    yield str(plan["operatorType"]).split("@")[0] + (f" {details}" if "Index" in str(plan["operatorType"]) else "")
    for child in plan.get("children", []):
        yield from operators(child)


def plan_of(store: GraphStore, query: str, params: dict[str, Any]) -> list[str]:
    with store._driver.session(database=store._database) as session:  # type: ignore[attr-defined]
        summary = session.run("EXPLAIN " + query, params).consume()
    return list(operators(summary.plan))


@pytest.fixture
def project(neo4j_store: GraphStore) -> Iterator[str]:
    import uuid

    pid = "plan-" + uuid.uuid4().hex[:8]
    history = ConversationHistory(neo4j_store, project_id=pid, agent_id="planner")
    graph = Graph(neo4j_store, project_id=pid, agent_id="ingest")
    traces = DecisionTraces(neo4j_store, project_id=pid, agent_id="planner")
    for t in range(3):
        history.create_task(f"task-{t}", goal="plans")
    graph.add("policy", POLICY)
    cite = {"kind": "document", "evidence_id": graph.span_evidence_id("policy", 0, 27)}
    traces.load_decisions(
        [
            {
                "task_name": f"task-{n % 3}",
                "choice_key": f"choice-{n}",
                "conclusion": "Postgres",
                "rationale": "the policy",
                "supports": [cite],
            }
            for n in range(120)
        ]
    )
    assert len(graph.update("policy", POLICY + "\n\nAmended.").flagged_decision_ids) == 120
    yield pid
    neo4j_store.drop_project(pid)


def test_the_hot_review_reads_use_indexes_on_neo4j(
    neo4j_store: GraphStore, project: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the queue's widening ranges of positions, as on a long queue
    monkeypatch.setattr(_decision_reads, "QUEUE_SORT_LIMIT", 10)
    recording = Recording(neo4j_store)
    traces = DecisionTraces(recording, project_id=project, agent_id="reviewer")  # type: ignore[arg-type]
    hot = {
        "queue count and first page": lambda: traces.list_decisions_for_review(),
        "queue page 3": lambda: traces.list_decisions_for_review(offset=40),
        "one task's queue": lambda: traces.list_decisions_for_review("task-1"),
        "task view's newest": lambda: traces.task_view_decisions("task-2"),
        "overview counts": traces.review_counts,
    }
    seen: dict[str, list[str]] = {}
    for name, read in hot.items():
        read()  # the first read counts what was never counted
        recording.reads.clear()
        answer = read()
        assert answer, name
        assert recording.reads, name
        for query, params in recording.reads:
            ops = plan_of(neo4j_store, query, params)
            seen[f"{name}: {query}"] = ops
            assert not [op for op in ops if op.split()[0] in SCANS], f"{name} scans a label: {query}\n{ops}"
    # the orderings come from the range indexes, not from a sort of the project
    # (a scan of the whole position index, every project's, is no better)
    page_reads = [ops for q, ops in seen.items() if "queue_pos" in q]
    assert page_reads and all(any("IndexSeek" in op and "queue_pos" in op for op in ops) for ops in page_reads), (
        page_reads
    )
    # the task view's newest walk the (task_id, active_seq) index in its order
    newest = [ops for q, ops in seen.items() if "active_seq" in q and "Decision(task_id, active_seq)" in q]
    assert newest and all(any("IndexSeek" in op and "active_seq" in op for op in ops) for ops in newest), newest
    assert not [op for ops in newest for op in ops if op.split()[0] in ("Sort", "Top", "PartialSort")], newest


def test_the_review_pages_reads_use_indexes_and_index_order_on_neo4j(neo4j_store: GraphStore, project: str) -> None:
    """Every read the review queue's pages and flow send (a page of the
    queue, one task's, a page deep in it, a root-cause group, where "and
    next" lands, the progress line, group sizes, the task filter, a
    decision's actions, the overview, the document page, the conflicts) is
    answered from indexes; and every read in queue order (or conflicts in
    key order) walks an index in its order, reading what it returns (and
    skips), not sorting what matched: no ``Sort`` or ``Top`` over the queue
    or the conflicts, which grow with the data."""
    from core.retention import ActivityLog
    from core.review_views import ReviewViews

    recording = Recording(neo4j_store)
    views = ReviewViews(recording, project_id=project, agent_id="reviewer")  # type: ignore[arg-type]
    first = views.traces.list_decisions_for_review().decisions
    cause = views.queue_page().review_rows[str(first[0].id)]["cause"]
    assert cause
    group = views.group_review(cause)
    assert group.count == 120 and len(group.items) == views.GROUP_SHOWN
    hot = {
        "queue page": lambda: views.queue_page(),
        "queue page 3": lambda: views.queue_page(page=3),
        "one task's queue": lambda: views.queue_page(task="task-1"),
        "a reason's queue": lambda: views.queue_page(reason="source_changed"),
        "task filter": lambda: views.queue_page_matching(task="TASK"),
        "group preview": lambda: views.group_review(cause),
        "and next": lambda: views.next_after_in_group(str(first[0].id), cause),
        "progress": lambda: views.queue_progress(cause, group_total=120, next_id=str(first[3].id)),
        "group sizes": lambda: views.group_sizes([cause, ""]),
        "actions": lambda: views.review_actions_many(first),
        "overview": lambda: views.traces.review_summary(causes=10),
        "activity": lambda: ActivityLog(recording, project_id=project).list_with_links(limit=10),  # type: ignore[arg-type]
        "document page": lambda: views.document_page("policy"),
        "conflicts page": lambda: views.traces.list_conflicts(),
        "conflicts page 2": lambda: views.traces.list_conflicts(after_key="choice-1"),
        "a task's conflicts": lambda: views.traces.list_conflicts(task_name="task-1"),
    }
    for name, read in hot.items():
        read()
        recording.reads.clear()
        assert read() is not None, name
        assert recording.reads, name
        for query, params in recording.reads:
            ops = plan_of(neo4j_store, query, params)
            assert not [op for op in ops if op.split()[0] in SCANS], f"{name} scans a label: {query}\n{ops}"
            ordered_by = query.split("ORDER BY")[1] if "ORDER BY" in query else ""
            if "ch.key" in ordered_by:  # a page of conflicts, from the choices' index in key order
                assert any("IndexSeek" in op and "key" in op for op in ops), f"{name}: {query}\n{ops}"
                assert not [op for op in ops if op.split()[0] in ("Sort", "Top")], f"{name} sorts: {query}\n{ops}"
            if "queue_pos" in ordered_by:
                assert any("IndexSeek" in op and "queue_pos" in op for op in ops), f"{name}: {query}\n{ops}"
                assert not [op for op in ops if op.split()[0] in ("Sort", "Top")], f"{name} sorts: {query}\n{ops}"
    # the flow's answers are the queue's order
    assert views.next_after_in_group(str(first[0].id), cause) == str(first[1].id)
    assert [str(i.decision.id) for i in group.items[:20]] == [str(d.id) for d in first]
    assert views.queue_page(page=3).result.decisions == views.traces.list_decisions_for_review(offset=40).decisions


def test_the_document_pages_citers_are_a_range_of_the_citations_index_on_neo4j(
    neo4j_store: GraphStore, project: str
) -> None:
    """The document page reads a version's newest citers (and a page of
    older ones) from the ``(version_id, pos)`` relationship index in its
    order: no expansion of the document's citations, no sort of them, so
    the read is the same with 120 citers or 100,000."""
    from core.review_views import ReviewViews

    recording = Recording(neo4j_store)
    views = ReviewViews(recording, project_id=project, agent_id="reviewer")  # type: ignore[arg-type]
    views.VERSION_CITERS, views.CITERS_PAGE = 10, 25
    for read in (
        lambda: views.document_page("policy"),
        lambda: views.document_page("policy", version=1),
        lambda: views.document_page("policy", version=1, before=60),
    ):
        page = read()  # the first read numbers what was never numbered (nothing here)
        recording.reads.clear()
        assert read() == page and page is not None
        counts = {s.version.activation_seq: (s.count, len(s.citing)) for s in page.versions}
        assert counts[1][0] == 120 and counts[1][1] in (10, 25), counts
        citers = [(q, p) for q, p in recording.reads if "CITES_DOC" in q]
        assert len(citers) == 1, recording.reads  # version 2 has none: only version 1 is read
        ops = plan_of(neo4j_store, *citers[0])
        assert any(op.startswith("DirectedRelationshipIndexSeek") and "version_id, pos" in op for op in ops), ops
        assert not [op for op in ops if op.split()[0] in (*SCANS, "Sort", "Top", "PartialSort", "Expand(All)")], ops


def test_the_decision_page_and_task_view_reads_use_indexes_on_neo4j(neo4j_store: GraphStore, project: str) -> None:
    """The statements that fold several reads into one (issue 18: the
    decision with its support history, revisions and dependants; the task
    with its kept counters, the task with its page of events) reach each
    part through an index, not a scan."""
    from core.review_views import ReviewViews

    recording = Recording(neo4j_store)
    views = ReviewViews(recording, project_id=project, agent_id="reviewer")  # type: ignore[arg-type]
    history = ConversationHistory(recording, project_id=project, agent_id="reviewer")  # type: ignore[arg-type]
    first = views.traces.list_decisions_for_review(limit=1).decisions[0]
    for name, read in {
        "decision page": lambda: views.decision_review_of(first.id),
        "task view": lambda: history.get_task("task-1"),
        "task log": lambda: history.list_events("task-1"),
    }.items():
        read()
        recording.reads.clear()
        assert read() is not None, name
        for query, params in recording.reads:
            ops = plan_of(neo4j_store, query, params)
            assert not [op for op in ops if op.split()[0] in SCANS], f"{name} scans a label: {query}\n{ops}"


def test_the_review_actions_writes_find_their_nodes_by_index_on_neo4j(
    neo4j_store: GraphStore, project: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A unit's writes go as one statement that is never planned again once
    cached (``_as_one``): the plan made on a small store must already find
    every node by an index, or a large store would keep scanning labels."""
    from core.stores import neo4j as neo4j_module

    sent: list[tuple[str, dict[str, Any]]] = []
    as_one = neo4j_module._as_one

    def recording(writes: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
        out = as_one(writes)
        sent.extend(out)
        return out

    monkeypatch.setattr(neo4j_module, "_as_one", recording)
    traces = DecisionTraces(neo4j_store, project_id=project, agent_id="reviewer")
    history = ConversationHistory(neo4j_store, project_id=project, agent_id="reviewer")
    history.record_event("task-0", kind="message", role="user", payload="Which store?")
    queue = traces.list_decisions_for_review(limit=3).decisions
    cite = {"kind": "event", "task_name": "task-0", "seq": 1}
    done = {
        "reaffirm": traces.reaffirm_decision(str(queue[0].id), explanation="still holds"),
        "reject": traces.reject_decision(str(queue[1].id), reason="not needed"),
        "supersede": traces.supersede_decision(
            str(queue[2].id), conclusion="MySQL", rationale="r", explanation="e", supports=[cite]
        ),
        "record": traces.record_decision(
            task_name="task-1", choice_key="fresh", conclusion="Postgres", rationale="r", supports=[cite]
        ),
        "step": history.set_step("task-0", name="read", state="completed"),
    }
    assert all(result.recorded for result in done.values()), done
    # a loaded decision agreeing with an active one of its choice: the choice is counted again
    loaded = traces.load_decisions(
        [
            {
                "task_name": "task-1",
                "choice_key": "choice-3",
                "conclusion": "Postgres",
                "rationale": "r",
                "supports": [cite],
            }
        ]
    )
    assert len(loaded) == 1 and any("count(d) AS n" in q for q, _ in sent)
    combined = [(q, p) for q, p in sent if q.startswith("CYPHER replan=skip")]
    assert len(combined) >= len(done) + 1, [q[:80] for q, _ in sent]
    for query, params in combined:
        ops = plan_of(neo4j_store, query, params)
        assert not [op for op in ops if op.split()[0] in SCANS], f"a write scans a label: {query}\n{ops}"
        # nor every node of the project: an index on project_id alone finds them all
        assert not [op for op in ops if "Index" in op and "(project_id)" in op], f"a write reads a project: {ops}"


def test_the_activity_logs_filters_and_progress_use_indexes_on_neo4j(neo4j_store: GraphStore, project: str) -> None:
    """Each filter of the activity log (alone, combined, with the page's
    cursor), a download's windows and the team's progress reach the
    entries through an index, never a label scan."""
    from datetime import UTC, datetime

    from core.models import ActivityFilter
    from core.retention import ActivityLog

    traces = DecisionTraces(neo4j_store, project_id=project, agent_id="rita")
    first = traces.list_decisions_for_review(limit=2).decisions
    assert traces.reaffirm_decision(str(first[0].id), explanation="holds").recorded
    assert traces.reject_decision(str(first[1].id), reason="no").recorded
    recording = Recording(neo4j_store)
    log = ActivityLog(recording, project_id=project)  # type: ignore[arg-type]
    since, until = datetime(2020, 1, 1, tzinfo=UTC), datetime(2100, 1, 1, tzinfo=UTC)
    cursor = ActivityLog.cursor(log.list()[0])
    reads = {
        "everything": lambda: log.list_with_links(limit=10),
        "dates": lambda: log.list_with_links(where=ActivityFilter(since=since, until=until)),
        "next page": lambda: log.list_with_links(before=cursor, where=ActivityFilter(since=since)),
        "person": lambda: log.list_with_links(where=ActivityFilter(actor="rita")),
        "action": lambda: log.list_with_links(where=ActivityFilter(action="reject")),
        "task": lambda: log.list_with_links(where=ActivityFilter(task="task-1")),
        "decision": lambda: log.list_with_links(where=ActivityFilter(decision=str(first[0].id))),
        "combined": lambda: log.list_with_links(
            before=cursor, where=ActivityFilter(actor="rita", action="reaffirm", task="task-0", since=since)
        ),
        "download": lambda: list(log.every(where=ActivityFilter(actor="rita"))),
        "progress": lambda: log.progress(today=since, week=since),
    }
    for name, read in reads.items():
        read()
        recording.reads.clear()
        read()
        assert recording.reads, name
        for query, params in recording.reads:
            ops = plan_of(neo4j_store, query, params)
            assert not [op for op in ops if op.split()[0] in SCANS], f"{name} scans a label: {query}\n{ops}"
