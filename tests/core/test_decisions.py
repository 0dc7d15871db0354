"""DecisionTraces, rule by rule, on every backend (seed 000 and 001)."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import pytest

from core import _causes, _counters
from core import _common as c
from core.decisions import DEFAULT_REAFFIRM_EXPLANATION, DecisionTraces
from core.history import ConversationHistory
from core.knowledge import Graph, encode_span
from core.models import (
    DecisionStatus,
    DocumentSupport,
    ReviewReason,
    ReviewState,
    StepResultValidity,
    WriteErrorCode,
)
from core.models.knowledge import FetchResult, FetchStatus
from core.retention import HistoryRetention
from core.review_views import ReviewViews
from core.stores import GraphStore

ADR = "We store decisions in a graph.\n\nPostgres stays the system of record for billing.\n\nReviews happen weekly."


@dataclass
class World:
    store: GraphStore
    project_id: str
    history: ConversationHistory
    graph: Graph
    traces: DecisionTraces
    retention: HistoryRetention

    def as_(self, agent: str) -> DecisionTraces:
        return DecisionTraces(self.store, project_id=self.project_id, agent_id=agent)

    def cite(self, key: str, passage: str) -> tuple[dict[str, Any], FetchResult]:
        """A document support for a passage of the current version, fetched."""
        text = self.graph.current_text(key)
        assert text is not None and passage in text
        start = text.index(passage)
        evidence = self.graph.span_evidence_id(key, start, start + len(passage))
        return {"kind": "document", "evidence_id": evidence}, self.graph.fetch(evidence)

    def record(
        self,
        task: str,
        key: str,
        conclusion: str,
        *,
        supports: list[Any] | None = None,
        fetched: list[Any] | None = None,
        **kw: Any,
    ) -> Any:
        if supports is None:
            doc, got = self.cite("adr", "Postgres stays the system of record")
            supports, fetched = [doc], [got]
        return self.traces.record_decision(
            task,
            choice_key=key,
            conclusion=conclusion,
            rationale=f"because {conclusion}",
            supports=supports,
            fetched=fetched or [],
            **kw,
        )


@pytest.fixture
def world(store: GraphStore, project_id: str) -> World:
    w = World(
        store,
        project_id,
        ConversationHistory(store, project_id=project_id, agent_id="planner"),
        Graph(store, project_id=project_id, agent_id="ingest"),
        DecisionTraces(store, project_id=project_id, agent_id="planner"),
        HistoryRetention(store, project_id=project_id, agent_id="steward"),
    )
    w.history.create_task("pick-db", goal="Choose the database")
    w.history.create_task("billing", goal="Own the billing service")
    w.history.record_event("pick-db", kind="message", role="user", payload="Which database?")
    w.graph.add("adr", ADR)
    return w


def dep(decision: Any) -> dict[str, str]:
    return {"kind": "decision", "decision_id": str(decision.id)}


def state(world: World, decision: Any) -> tuple[DecisionStatus, ReviewState, ReviewReason | None]:
    d = world.traces.get_decision(str(decision.id)).decision
    assert d is not None
    return d.status, d.review_state, d.review_reason


def review_all(world: World) -> int:
    calls = 0
    while world.traces.continue_decision_review().moved:
        calls += 1
    return calls


# -- recording and supports --------------------------------------------------------


def test_record_keeps_every_field_and_document_version(world: World) -> None:
    doc, got = world.cite("adr", "Postgres stays the system of record")
    result = world.traces.record_decision(
        "pick-db",
        choice_key="db",
        conclusion="Use Postgres",
        rationale="Proven here",
        assumptions=["load stays low"],
        open_questions=["backups?"],
        supports=[doc, {"kind": "event", "task_name": "pick-db", "seq": 1}],
        fetched=[got],
    )
    assert result.recorded and result.warnings == []
    d = result.decision
    assert d is not None and d.id == __import__("uuid").UUID(
        c.decision_id(c.task_id(world.project_id, "pick-db"), "db", 1)
    )
    assert (d.revision, d.author, d.status, d.review_state) == (1, "planner", DecisionStatus.active, ReviewState.clear)
    assert (d.assumptions, d.open_questions) == (["load stays low"], ["backups?"])
    support = d.supports[0]
    assert isinstance(support, DocumentSupport)
    assert support.content_hash == got.content_hash and support.content_hash_prefix == got.content_hash[:16]
    assert support.recorded_activation_seq == 1 and support.document_key == "adr"
    assert world.traces.get_decision(str(d.id)).decision == d


@pytest.mark.parametrize("count", [0, 21])
def test_support_count_is_one_to_twenty(world: World, count: int) -> None:
    supports = [{"kind": "event", "task_name": "pick-db", "seq": 1}] * count
    assert world.record("pick-db", "db", "x", supports=supports).error is WriteErrorCode.support_required


def test_each_kind_of_bad_support_has_its_code(world: World) -> None:
    doc, got = world.cite("adr", "Reviews happen weekly")
    other = world.record("billing", "owner", "Team A").decision
    world.traces.reject_decision(str(other.id), reason="wrong team")
    cases = [
        ([doc], [], WriteErrorCode.support_not_fetched),
        ([doc], [got.model_copy(update={"status": FetchStatus.truncated})], WriteErrorCode.support_not_fetched),
        ([{"kind": "document", "evidence_id": "span:bad"}], [], WriteErrorCode.support_malformed),
        (
            [{"kind": "document", "evidence_id": encode_span(__import__("uuid").uuid4(), 1, 0, 3)}],
            [FetchResult(evidence_id=encode_span(__import__("uuid").UUID(int=7), 1, 0, 3), status="ok")],
            WriteErrorCode.support_not_fetched,
        ),
        ([{"kind": "event", "task_name": "pick-db", "seq": 99}], [], WriteErrorCode.support_event_not_found),
        (
            [{"kind": "decision", "decision_id": str(__import__("uuid").uuid4())}],
            [],
            WriteErrorCode.support_decision_not_found,
        ),
        ([{"kind": "decision", "decision_id": "nope"}], [], WriteErrorCode.support_malformed),
        ([dep(other)], [], WriteErrorCode.support_decision_not_active),
    ]
    for supports, fetched, code in cases:
        assert world.record("pick-db", "db", "x", supports=supports, fetched=fetched).error is code, code
    world.graph.delete("adr")
    assert (
        world.record("pick-db", "db", "x", supports=[doc], fetched=[got]).error
        is WriteErrorCode.support_document_not_found
    )
    assert world.traces.list_decisions("pick-db").page.count == 0


def test_a_redacted_event_cannot_be_cited(world: World) -> None:
    world.retention.redact_event(c.event_id(c.task_id(world.project_id, "pick-db"), 1))
    supports = [{"kind": "event", "task_name": "pick-db", "seq": 1}]
    assert world.record("pick-db", "db", "x", supports=supports).error is WriteErrorCode.support_event_not_found


def test_one_active_decision_per_choice_and_task(world: World) -> None:
    assert world.record("pick-db", "db", "Postgres").recorded
    assert world.record("pick-db", "db", "MySQL").error is WriteErrorCode.choice_exists
    assert world.record("billing", "db", "MySQL").recorded  # another task may choose differently
    assert world.record("nope", "db", "x").error is WriteErrorCode.task_not_found


def test_supersede_gives_the_next_revision_and_keeps_the_old(world: World) -> None:
    first = world.record("pick-db", "db", "Postgres").decision
    doc, got = world.cite("adr", "Reviews happen weekly")
    args = {"conclusion": "FalkorDB", "rationale": "graph fits", "supports": [doc], "fetched": [got]}
    assert (
        world.traces.supersede_decision(str(first.id), explanation="  ", **args).error
        is WriteErrorCode.explanation_required
    )
    second = world.traces.supersede_decision(str(first.id), explanation="Graph queries dominate", **args)
    assert second.recorded and second.decision.revision == 2 and second.decision.choice_key == "db"
    old = world.traces.get_decision(str(first.id)).decision
    assert (old.status, old.conclusion) == (DecisionStatus.superseded, "Postgres")
    again = world.traces.supersede_decision(str(first.id), explanation="again", **args)
    assert again.error is WriteErrorCode.supersede_target_invalid
    revisions = world.traces.list_revisions(str(first.id))
    assert [(r.decision.revision, r.explanation) for r in revisions] == [(1, None), (2, "Graph queries dominate")]
    assert world.record("pick-db", "db", "x").error is WriteErrorCode.choice_exists


def test_reject_keeps_the_record_and_clears_review(world: World) -> None:
    d = world.record("pick-db", "db", "Postgres").decision
    world.graph.update("adr", ADR.replace("Postgres", "MySQL"))
    assert state(world, d)[1] is ReviewState.needs_review
    rejected = world.as_("alice").reject_decision(str(d.id), reason="superseded by ADR 12")
    assert rejected.recorded
    got = world.traces.get_decision(str(d.id)).decision
    assert (got.status, got.review_state, got.rejection_reason, got.rejected_by) == (
        DecisionStatus.rejected,
        ReviewState.clear,
        "superseded by ADR 12",
        "alice",
    )
    assert got.supports == d.supports
    assert world.traces.reject_decision(str(d.id), reason="again").error is WriteErrorCode.decision_not_active
    assert (
        world.traces.reject_decision(str(__import__("uuid").uuid4()), reason="x").error
        is WriteErrorCode.decision_not_found
    )
    assert world.traces.list_decisions_for_review().count == 0
    # the choice is free again, with the next revision
    again = world.record("pick-db", "db", "MySQL", supports=[{"kind": "event", "task_name": "pick-db", "seq": 1}])
    assert again.decision.revision == 2


# -- review --------------------------------------------------------------------------


def test_a_document_update_flags_citers_and_review_spreads_one_step_per_call(world: World) -> None:
    root = world.record("pick-db", "db", "Postgres").decision
    mid = world.record("pick-db", "ops", "One DBA", supports=[dep(root)]).decision
    leaf = world.record("billing", "owner", "Team A", supports=[dep(mid)]).decision
    loner = world.record(
        "billing", "lang", "Python", supports=[{"kind": "event", "task_name": "pick-db", "seq": 1}]
    ).decision

    changed = world.graph.update("adr", ADR.replace("billing", "invoicing"))
    assert changed.flagged_decision_ids == [str(root.id)]
    assert state(world, root) == (DecisionStatus.active, ReviewState.needs_review, ReviewReason.source_changed)
    assert state(world, mid)[1] is ReviewState.unknown  # queued: review incomplete
    assert state(world, leaf)[1] is ReviewState.clear
    assert state(world, loner)[1] is ReviewState.clear

    step = world.traces.continue_decision_review()
    assert step.moved == 1 and step.flagged == [str(mid.id)] and step.more
    assert world.traces.review_counts()["queued"] == 1
    assert state(world, mid)[1:] == (ReviewState.needs_review, ReviewReason.dependency_review)
    assert state(world, leaf)[1] is ReviewState.unknown
    world.traces.continue_decision_review()
    assert state(world, leaf)[1:] == (ReviewState.needs_review, ReviewReason.dependency_review)
    assert world.traces.continue_decision_review().moved == 0
    queue = world.traces.list_decisions_for_review()
    assert queue.count == 3 and next(str(d.id) for d in queue.decisions) == str(root.id)
    assert world.traces.review_root_causes() == [("document:adr:2", 3)]
    assert world.traces.list_decisions_for_review("billing").count == 1
    assert world.traces.list_decisions_for_review(reason="dependency_review").count == 2


def test_review_can_be_interrupted_and_resumed(world: World) -> None:
    root = world.record("pick-db", "db", "Postgres").decision
    kids = [world.record("billing", f"k{i}", "yes", supports=[dep(root)]).decision for i in range(5)]
    world.graph.delete("adr")
    assert state(world, root)[1:] == (ReviewState.needs_review, ReviewReason.source_removed)
    first = world.traces.continue_decision_review(limit=2)
    assert first.moved == 2 and first.more and world.traces.review_counts()["queued"] == 3
    # a new reviewer object (another process) carries on
    rest = DecisionTraces(world.store, project_id=world.project_id, agent_id="cron")
    assert rest.continue_decision_review().moved == 3
    assert all(state(world, k)[1] is ReviewState.needs_review for k in kids)


def test_reaffirm_confirms_against_current_text_and_keeps_history(world: World) -> None:
    d = world.record("pick-db", "db", "Postgres").decision
    world.graph.update("adr", "Preface added.\n\n" + ADR)  # the passage moved but did not change
    assert state(world, d)[1] is ReviewState.needs_review
    result = world.as_("alice").reaffirm_decision(str(d.id))
    assert result.recorded, result.error
    now = world.traces.get_decision(str(d.id)).decision
    assert now.review_state is ReviewState.clear and now.review_reason is None
    new = now.supports[0]
    assert isinstance(new, DocumentSupport) and new.recorded_activation_seq == 2 and new.current
    assert world.graph.fetch(new.evidence_id).text == "Postgres stays the system of record"
    history = world.traces.list_support_history(str(d.id))
    assert [s.current for s in history.supports] == [False, True]
    old = history.supports[0]
    assert (old.reviewed_by, old.review_explanation) == ("alice", DEFAULT_REAFFIRM_EXPLANATION)
    assert old.recorded_activation_seq == 1 and old.reviewed_at is not None
    # paging
    page = world.traces.list_support_history(str(d.id), limit=1)
    assert page.truncated and page.next_after_ordinal == 0
    assert world.traces.list_support_history(str(d.id), after_ordinal=0).supports[0].current


def test_reaffirm_is_refused_when_the_text_changed_or_review_is_incomplete(world: World) -> None:
    d = world.record("pick-db", "db", "Postgres").decision
    child = world.record("billing", "x", "y", supports=[dep(d)]).decision
    world.graph.update("adr", ADR.replace("Postgres stays", "MySQL becomes"))
    assert world.traces.reaffirm_decision(str(d.id)).error is WriteErrorCode.cannot_revalidate
    assert world.traces.reaffirm_decision(str(child.id)).error is WriteErrorCode.cannot_revalidate  # queued
    review_all(world)
    assert world.traces.reaffirm_decision(str(child.id)).error is WriteErrorCode.cannot_revalidate  # dependency flagged
    assert state(world, d)[1] is ReviewState.needs_review
    # superseding settles the root; the child may then be looked at again
    doc, got = world.cite("adr", "MySQL becomes the system of record")
    world.traces.supersede_decision(
        str(d.id), conclusion="MySQL", rationale="r", explanation="ADR changed", supports=[doc], fetched=[got]
    )
    review_all(world)
    assert (
        world.traces.reaffirm_decision(str(child.id)).error is WriteErrorCode.cannot_revalidate
    )  # cites a superseded one


def test_a_source_changing_during_recording_is_flagged_with_a_warning(world: World) -> None:
    doc, got = world.cite("adr", "Postgres stays the system of record")
    world.graph.update("adr", ADR + "\n\nAppendix.")  # after the fetch, before the write
    result = world.record("pick-db", "db", "Postgres", supports=[doc], fetched=[got])
    assert result.recorded and result.warnings == ["source_changed_during_recording"]
    assert state(world, result.decision)[1:] == (ReviewState.needs_review, ReviewReason.source_changed_during_recording)


def test_depending_on_a_flagged_decision_records_it_flagged(world: World) -> None:
    root = world.record("pick-db", "db", "Postgres").decision
    world.graph.update("adr", "changed")
    child = world.record("billing", "x", "y", supports=[dep(root)]).decision
    assert (child.review_state, child.review_reason) == (ReviewState.needs_review, ReviewReason.dependency_review)


# -- reads -------------------------------------------------------------------------


def test_conflicts_across_tasks(world: World) -> None:
    world.history.create_task("third", goal="g")
    world.record("pick-db", "db", "Postgres")
    world.record("billing", "db", "postgres ")  # same conclusion, other spelling
    assert world.traces.list_conflicts().groups == []
    third = world.record("third", "db", "MySQL").decision
    groups = world.traces.list_conflicts().groups
    assert [g.choice_key for g in groups] == ["db"] and len(groups[0].decisions) == 3
    view = world.history.get_task("pick-db").view
    assert [g.choice_key for g in view.conflicts] == ["db"]
    world.record("pick-db", "cache", "Redis", supports=[{"kind": "event", "task_name": "pick-db", "seq": 1}])
    world.record("third", "cache", "Memcached", supports=[{"kind": "event", "task_name": "pick-db", "seq": 1}])
    # each task's view lists the conflicts it takes part in, and only those
    assert [g.choice_key for g in world.history.get_task("pick-db").view.conflicts] == ["cache", "db"]
    assert [g.choice_key for g in world.history.get_task("billing").view.conflicts] == ["db"]
    assert [g.choice_key for g in world.traces.list_conflicts(task_name="billing", max_groups=1).groups] == ["db"]
    # a task with more active decisions than the project has conflicts finds
    # its conflicts from the conflicts, one with fewer from its decisions:
    # the same answer either way
    for k in range(3):
        world.record("pick-db", f"own-{k}", "mine", supports=[{"kind": "event", "task_name": "pick-db", "seq": 1}])
    assert [g.choice_key for g in world.history.get_task("pick-db").view.conflicts] == ["cache", "db"]
    assert [g.choice_key for g in world.traces.list_conflicts(task_name="pick-db", max_groups=1).groups] == ["cache"]
    first = world.traces.list_conflicts(max_groups=1)
    assert [g.choice_key for g in first.groups] == ["cache"] and first.truncated
    rest = world.traces.list_conflicts(max_groups=1, after_key="cache")
    assert [g.choice_key for g in rest.groups] == ["db"] and not rest.truncated
    world.traces.reject_decision(str(world.traces.list_conflicts().groups[0].decisions[0].id), reason="x")
    world.traces.reject_decision(str(third.id), reason="no")
    assert world.traces.list_conflicts().groups == []


def test_task_view_carries_decisions_and_review(world: World) -> None:
    a = world.record("pick-db", "db", "Postgres").decision
    world.record("pick-db", "cache", "Redis", supports=[{"kind": "event", "task_name": "pick-db", "seq": 1}])
    world.graph.update("adr", "changed")
    view = world.history.get_task("pick-db").view
    assert view.decision_count == 2 and [d.choice_key for d in view.decisions] == ["cache", "db"]
    assert [d.id for d in view.review_decisions] == [a.id]


def test_task_view_shows_the_newest_active_decisions_however_many_left(world: World) -> None:
    """The newest active decisions are read from ranges below the task's
    last creation number (where kept); when most of the newest were
    superseded or rejected the ranges widen, and the page stays exact."""
    event = {"kind": "event", "task_name": "pick-db", "seq": 1}
    first = world.traces.load_decisions(
        [
            {
                "task_name": "pick-db",
                "choice_key": f"k{i:03d}",
                "conclusion": "c",
                "rationale": "r",
                "supports": [event],
            }
            for i in range(20)
        ]
    )
    world.record("billing", "other", "elsewhere", supports=[event])  # another task's numbers do not mix in
    later = [world.record("pick-db", f"n{i:03d}", "c", supports=[event]).decision for i in range(130)]

    def shown() -> tuple[list[str], int]:
        view = world.history.get_task("pick-db").view
        return [str(d.id) for d in view.decisions], view.decision_count

    assert shown() == ([str(d.id) for d in reversed(later[-20:])], 150)
    for d in reversed(later):  # all but the 20 oldest retired, newest first
        assert world.traces.reject_decision(str(d.id), reason="retired").recorded
    ids, count = shown()
    assert count == 20 and sorted(ids) == sorted(str(d.id) for d in first)
    assert ids == [str(d.id) for d in reversed(first)]  # numbered in the order they were loaded
    replaced = world.traces.supersede_decision(
        str(first[0].id), conclusion="n", rationale="r", explanation="e", supports=[event]
    ).decision
    ids, count = shown()
    assert count == 20 and ids[0] == str(replaced.id)
    assert sorted(ids[1:]) == sorted(str(d.id) for d in first[1:])


def test_a_task_counted_before_its_numbers_were_kept_is_counted_on_first_read(world: World) -> None:
    """Data from before the task counters (or written where they are not
    kept) has no TaskDecisions node: the first read counts and numbers the
    task's decisions, and from then on every change keeps them."""
    event = {"kind": "event", "task_name": "pick-db", "seq": 1}
    made = [world.record("pick-db", f"k{i:02d}", "c", supports=[event]).decision for i in range(30)]
    before = world.history.get_task("pick-db").view
    world.store.execute(world.project_id, "MATCH (k:TaskDecisions) DETACH DELETE k")
    world.store.execute(world.project_id, "MATCH (d:Decision) SET d.active_seq = null")
    world.record("pick-db", "late", "recorded while uncounted", supports=[event])
    view = world.history.get_task("pick-db").view
    assert view.decision_count == 31
    assert [d.choice_key for d in view.decisions] == ["late"] + [d.choice_key for d in before.decisions][:19]
    assert world.traces.reject_decision(str(made[29].id), reason="no").recorded
    world.record("pick-db", "later", "recorded once counted", supports=[event])
    view = world.history.get_task("pick-db").view
    assert view.decision_count == 31
    assert [d.choice_key for d in view.decisions][:3] == ["later", "late", "k28"]


def test_search_finds_active_decisions_with_their_review_state(world: World) -> None:
    world.record("pick-db", "db", "Use Postgres for durability")
    gone = world.record("billing", "db", "Use Postgres everywhere").decision
    world.traces.reject_decision(str(gone.id), reason="no")
    world.graph.update("adr", "changed")
    hits = world.traces.search_decisions("postgres")
    assert len(hits) == 1 and hits[0].marker == "precedent" and hits[0].task_goal == "Choose the database"
    assert hits[0].decision.review_state is ReviewState.needs_review
    assert world.traces.search_decisions("durability", task_name="billing") == []
    assert world.traces.search_decisions("!!! ~~~") == []


def test_step_result_validity_follows_documents_and_decisions(world: World) -> None:
    doc, _ = world.cite("adr", "Reviews happen weekly")
    d = world.record("pick-db", "db", "Postgres").decision
    world.history.set_step("pick-db", name="a-doc", state="completed", result_basis="supported", result_supports=[doc])
    world.history.set_step(
        "pick-db", name="b-dec", state="completed", result_basis="supported", result_supports=[dep(d)]
    )

    def validity() -> dict[str, StepResultValidity]:
        return {s.name: s.result_validity for s in world.history.list_steps("pick-db").steps}

    assert validity() == {"a-doc": StepResultValidity.reusable, "b-dec": StepResultValidity.reusable}
    world.graph.update("adr", ADR + " v2")
    assert validity() == {"a-doc": StepResultValidity.needs_review, "b-dec": StepResultValidity.needs_review}
    world.graph.delete("adr")
    assert validity()["a-doc"] is StepResultValidity.unavailable


def test_request_ids_replay_decision_writes(world: World) -> None:
    first = world.record("pick-db", "db", "Postgres", request_id="r1")
    assert world.record("pick-db", "db", "Postgres", request_id="r1") == first
    assert world.record("pick-db", "db", "MySQL", request_id="r1").error is WriteErrorCode.request_id_reused
    rid = str(first.decision.id)
    once = world.traces.reject_decision(rid, reason="x", request_id="r2")
    assert world.traces.reject_decision(rid, reason="x", request_id="r2") == once
    assert world.record("pick-db", "db", "x", request_id="").error is WriteErrorCode.invalid_request_id


def test_decisions_stay_in_their_project(world: World) -> None:
    d = world.record("pick-db", "db", "Postgres").decision
    other_id = world.project_id + "-b"
    try:
        other = DecisionTraces(world.store, project_id=other_id, agent_id="x")
        assert other.get_decision(str(d.id)).found is False
        assert other.reject_decision(str(d.id), reason="x").error is WriteErrorCode.decision_not_found
        assert other.list_decisions_for_review().count == 0
    finally:
        world.store.drop_project(other_id)


def test_wrong_argument_types_raise(world: World) -> None:
    with pytest.raises(ValueError):
        world.traces.record_decision("pick-db", choice_key="db", conclusion=3, rationale="r", supports=[])  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        world.traces.record_decision(
            "pick-db", choice_key="db", conclusion="c", rationale="r", supports={"kind": "event"}
        )  # type: ignore[arg-type]
    # a blank reason is bad input of the right type: refused with a code, never raised
    assert world.traces.reject_decision("x", reason="   ").error is WriteErrorCode.explanation_required


# -- concurrency -------------------------------------------------------------------


def test_two_reviewers_superseding_at_once_one_wins(world: World) -> None:
    d = world.record("pick-db", "db", "Postgres").decision
    results: list[Any] = []
    barrier = threading.Barrier(4)

    def supersede(n: int) -> None:
        traces = world.as_(f"reviewer-{n}")
        barrier.wait()
        results.append(
            traces.supersede_decision(
                str(d.id),
                conclusion=f"choice {n}",
                rationale="r",
                explanation="e",
                supports=[{"kind": "event", "task_name": "pick-db", "seq": 1}],
            )
        )

    def reject(n: int) -> None:
        traces = world.as_(f"rejector-{n}")
        barrier.wait()
        results.append(traces.reject_decision(str(d.id), reason="no"))

    threads = [threading.Thread(target=supersede, args=(n,)) for n in range(2)]
    threads += [threading.Thread(target=reject, args=(n,)) for n in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [r for r in results if r.recorded]
    assert len(winners) == 1
    losers = {r.error for r in results if not r.recorded}
    assert losers <= {WriteErrorCode.supersede_target_invalid, WriteErrorCode.decision_not_active}
    active = world.traces.list_decisions("pick-db", include_history=False).page
    assert active.count == (1 if winners[0].decision.status is DecisionStatus.active else 0)


def test_a_document_update_racing_a_record_never_leaves_it_clear_and_stale(world: World) -> None:
    for round_ in range(6):
        doc, got = world.cite("adr", "Postgres stays the system of record")
        barrier = threading.Barrier(2)
        out: dict[str, Any] = {}

        def record() -> None:
            barrier.wait()
            out["r"] = world.record("pick-db", f"db{round_}", "Postgres", supports=[doc], fetched=[got])

        def update() -> None:
            barrier.wait()
            world.graph.update("adr", ADR + f"\n\nrev {round_}")

        threads = [threading.Thread(target=record), threading.Thread(target=update)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        d = world.traces.get_decision(str(out["r"].decision.id)).decision
        current = world.graph.get_document("adr")
        support = d.supports[0]
        assert isinstance(support, DocumentSupport)
        stale = support.recorded_activation_seq != current.activation_seq
        assert not (stale and d.review_state is ReviewState.clear), (round_, d)


def test_bulk_loading_checks_the_batch_and_writes_it_whole(world: World) -> None:
    doc, _ = world.cite("adr", "Reviews happen weekly")
    made = world.traces.load_decisions(
        [
            {"task_name": "pick-db", "choice_key": "db", "conclusion": "Postgres", "rationale": "r", "supports": [doc]},
            {
                "task_name": "billing",
                "choice_key": "db",
                "conclusion": "MySQL",
                "rationale": "r",
                "supports": [{"kind": "event", "task_name": "pick-db", "seq": 1}],
            },
        ]
    )
    assert [d.revision for d in made] == [1, 1]
    assert world.traces.get_decision(str(made[0].id)).decision == made[0]
    assert [g.choice_key for g in world.traces.list_conflicts().groups] == ["db"]
    child = world.traces.load_decisions(
        [{"task_name": "billing", "choice_key": "ops", "conclusion": "c", "rationale": "r", "supports": [dep(made[0])]}]
    )[0]
    world.graph.update("adr", ADR + " v2")
    review_all(world)
    assert state(world, child)[1:] == (ReviewState.needs_review, ReviewReason.dependency_review)
    bad_batch = [
        {"task_name": "pick-db", "choice_key": "fine", "conclusion": "c", "rationale": "r", "supports": [doc]},
        {"task_name": "pick-db", "choice_key": "db", "conclusion": "c", "rationale": "r", "supports": [doc]},
    ]
    with pytest.raises(ValueError, match="choice_exists"):
        world.traces.load_decisions(bad_batch)
    assert world.traces.list_decisions("pick-db").page.count == 1  # nothing of the batch was written


def test_counts_and_task_lists_for_an_overview(world: World) -> None:
    root = world.record("pick-db", "db", "Postgres").decision
    world.record("billing", "x", "y", supports=[dep(root)])
    world.record("billing", "db", "MySQL", supports=[{"kind": "event", "task_name": "pick-db", "seq": 1}])
    world.graph.update("adr", "changed")
    counts = world.traces.review_counts()
    assert counts == {"needs_review": 1, "unknown": 1, "queued": 1, "conflicts": 1}
    assert all(type(n) is int for n in counts.values())
    review_all(world)
    assert world.traces.review_counts() == {"needs_review": 2, "unknown": 0, "queued": 0, "conflicts": 1}
    tasks, more = world.history.list_tasks(search="BILL")
    assert [t.name for t in tasks] == ["billing"] and not more
    page, more = world.history.list_tasks(limit=1)
    assert [t.name for t in page] == ["billing"] and more
    assert [t.name for t in world.history.list_tasks(after_name="billing")[0]] == ["pick-db"]
    assert world.history.count_tasks("open") == 2


@pytest.mark.parametrize("sort_limit", [0, 10_000])
def test_the_queue_reads_oldest_first_and_pages_exactly(
    world: World, monkeypatch: pytest.MonkeyPatch, sort_limit: int
) -> None:
    # with a limit of 0 every page goes through the position index ranges
    import core._decision_reads

    monkeypatch.setattr(core._decision_reads, "QUEUE_SORT_LIMIT", sort_limit)
    world.graph.add("a", "alpha text")
    world.graph.add("b", "beta text")
    cite_a, _ = world.cite("a", "alpha")
    cite_b, _ = world.cite("b", "beta")
    items = [
        {"task_name": "pick-db", "choice_key": f"a{i:02d}", "conclusion": "c", "rationale": "r", "supports": [cite_a]}
        for i in range(25)
    ]
    items += [
        {"task_name": "billing", "choice_key": f"b{i:02d}", "conclusion": "c", "rationale": "r", "supports": [cite_b]}
        for i in range(15)
    ]
    made = world.traces.load_decisions(items)
    world.traces.load_decisions(
        [
            {
                "task_name": "billing",
                "choice_key": f"kid{i}",
                "conclusion": "c",
                "rationale": "r",
                "supports": [dep(made[i])],
            }
            for i in range(3)
        ]
    )
    world.graph.update("b", "beta changed")  # flagged first
    world.graph.update("a", "alpha changed")  # then these, and their dependants queued
    seen: list[str] = []
    offset = 0
    while True:
        page = world.traces.list_decisions_for_review(offset=offset)
        seen += [d.choice_key for d in page.decisions]
        offset += 20
        if not page.truncated:
            break
    assert page.count == 43 and len(seen) == 43 and len(set(seen)) == 43
    b_keys, a_keys = [f"b{i:02d}" for i in range(15)], [f"a{i:02d}" for i in range(25)]
    assert sorted(seen[:15]) == b_keys and sorted(seen[15:40]) == a_keys  # oldest flag first
    assert sorted(seen[40:]) == ["kid0", "kid1", "kid2"]  # roots before what they flagged
    only_b = world.traces.list_decisions_for_review("billing")
    assert only_b.count == 18 and [d.choice_key for d in only_b.decisions][:15] == seen[:15]
    only_a = world.traces.list_decisions_for_review("pick-db")  # far from the whole queue's head
    assert only_a.count == 25 and [d.choice_key for d in only_a.decisions] == seen[15:35]
    assert [d.choice_key for d in world.traces.list_decisions_for_review("pick-db", offset=20).decisions] == seen[35:40]
    assert world.traces.reaffirm_decision(str(made[30].id)).recorded  # "beta" is still in the text
    # reject one from the middle of pick-db's queue (decisions of one batch may come in any order, so by position)
    rejected = seen[25]
    by_key = {d.choice_key: d for d in made}
    assert world.traces.reject_decision(str(by_key[rejected].id), reason="gone").recorded
    rest = world.traces.list_decisions_for_review(limit=20, offset=20)
    assert world.traces.list_decisions_for_review().count == 41 and rest.count == 41
    assert "b05" not in [d.choice_key for d in rest.decisions] and rejected not in [
        d.choice_key for d in rest.decisions
    ]
    assert world.traces.reaffirm_decision(str(by_key[seen[15]].id)).recorded  # the head of pick-db's queue leaves it
    only_a = world.traces.list_decisions_for_review("pick-db")
    assert (
        only_a.count == 23
        and [d.choice_key for d in only_a.decisions] == [k for k in seen[16:40] if k != rejected][:20]
    )


def test_a_worker_serving_only_later_pages_finds_the_queue_head_once(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    # FalkorDB reads a long queue through ranges from its head; a worker
    # that never served the first page scanned for the head on every page
    import core._decision_reads

    monkeypatch.setattr(core._decision_reads, "QUEUE_SORT_LIMIT", 0)
    core._decision_reads._QUEUE_HEADS.pop(world.store, None)
    world.graph.add("a", "alpha text")
    cite, _ = world.cite("a", "alpha")
    world.traces.load_decisions(
        [
            {"task_name": "pick-db", "choice_key": f"k{i:02d}", "conclusion": "c", "rationale": "r", "supports": [cite]}
            for i in range(45)
        ]
    )
    world.graph.update("a", "alpha changed")
    sent: list[str] = []
    real = world.store.read

    def read(project_id: str, query: str, params: Any = None) -> Any:
        sent.append(query)
        return real(project_id, query, params)

    monkeypatch.setattr(world.store, "read", read)
    pages = [[d.choice_key for d in world.traces.list_decisions_for_review(offset=20).decisions] for _ in range(3)]
    monkeypatch.undo()
    sorted_page = [d.choice_key for d in world.traces.list_decisions_for_review(offset=20).decisions]  # by a sort
    assert len(sorted_page) == 20 and pages == [sorted_page] * 3
    assert sum("min(d.queue_pos)" in q for q in sent) <= 1


def test_the_queue_count_stays_exact_through_every_kind_of_change(world: World) -> None:
    def check() -> None:
        direct = world.store.read(
            world.project_id,
            "MATCH (d:Decision) WHERE d.review_open = true AND d.project_id = $p RETURN count(d) AS n",
            {"p": world.project_id},
        )[0]["n"]
        assert world.traces.list_decisions_for_review().count == direct

    root = world.record("pick-db", "db", "Postgres").decision
    mid = world.record("pick-db", "ops", "One DBA", supports=[dep(root)]).decision
    world.record("billing", "team", "A", supports=[dep(mid)])
    ev = world.record(
        "billing", "lang", "Python", supports=[{"kind": "event", "task_name": "pick-db", "seq": 1}]
    ).decision
    check()
    world.graph.update("adr", "Preface.\n\n" + ADR)
    check()
    world.traces.continue_decision_review(limit=1)
    check()
    review_all(world)
    check()
    world.traces.reaffirm_decision(str(root.id))
    check()
    world.graph.update("adr", "changed entirely")
    check()
    world.traces.reject_decision(str(mid.id), reason="no")
    check()
    world.retention.redact_event(c.event_id(c.task_id(world.project_id, "pick-db"), 1))
    check()
    world.traces.supersede_decision(str(ev.id), conclusion="Go", rationale="r", explanation="e", supports=[dep(root)])
    check()
    child = world.record("billing", "late", "x", supports=[dep(root)]).decision  # recorded flagged
    assert child.review_state is ReviewState.needs_review
    check()
    review_all(world)
    world.retention.delete_task("billing")
    check()
    world.graph.delete("adr")
    check()


def test_a_queue_from_before_its_causes_and_conflicts_were_kept_is_counted_once(world: World) -> None:
    """A store written before the root causes' group sizes and the
    conflicts' count were kept has neither: the first read counts them,
    once, and from then on every change moves them."""
    roots = [world.record("pick-db", f"k{i}", "Postgres").decision for i in range(3)]
    world.record("billing", "k0", "MySQL")  # a conflict
    world.record("billing", "dep", "x", supports=[dep(roots[1])])
    world.graph.update("adr", "Preface.\n\n" + ADR)
    review_all(world)
    qid = _counters.queue_node_id(world.project_id)
    world.store.transact(
        world.project_id,
        lambda tx: [
            tx.write("MATCH (k:QueueCause) WHERE k.project_id = $p DELETE k", {"p": world.project_id}),
            tx.write("MATCH (q:ReviewQueue {id: $id}) SET q.causes_counted = null, q.conflicts = null", {"id": qid}),
        ],
    )
    cause = _causes.document_cause("adr", 2)
    views = ReviewViews(world.store, project_id=world.project_id, agent_id="r")
    assert world.traces.review_counts()["conflicts"] == 1
    assert world.traces.review_root_causes() == [(cause, 5)]
    assert views.group_sizes([cause]) == {cause: 5}
    # counted once: kept from now on, and moved by each change
    kept = world.store.read(
        world.project_id, "MATCH (q:ReviewQueue {id: $id}) RETURN q.causes_counted AS c, q.conflicts AS n", {"id": qid}
    )
    assert kept == [{"c": True, "n": 1}]
    assert world.traces.reject_decision(str(roots[0].id), reason="no").recorded  # its conflict and its flag go
    assert world.traces.review_counts()["conflicts"] == 0
    assert views.group_sizes([cause]) == {cause: 4}
    assert world.traces.review_root_causes() == [(cause, 4)]


def test_the_queue_counters_follow_every_kind_of_change(world: World) -> None:
    """The kept counters (on both backends) equal a direct count after every
    change to review state."""

    def direct() -> dict[str, int]:
        rows = world.store.read(
            world.project_id,
            "MATCH (d:Decision) WHERE d.review_open = true AND d.project_id = $p "
            "RETURN d.review_state AS state, d.queued AS queued, count(d) AS n",
            {"p": world.project_id},
        )
        out = {"needs_review": 0, "unknown": 0, "queued": 0}
        for r in rows:
            out[r["state"]] = out.get(r["state"], 0) + r["n"]
            out["queued"] += r["n"] if r["queued"] else 0
        return out

    def direct_causes() -> dict[str, int]:
        rows = world.store.read(
            world.project_id,
            "MATCH (d:Decision) WHERE d.review_open = true AND d.project_id = $p "
            "RETURN coalesce(d.root_cause, '') AS cause, count(d) AS n",
            {"p": world.project_id},
        )
        return {r["cause"]: r["n"] for r in rows}

    def direct_conflicts() -> int:
        return world.store.read(
            world.project_id,
            "MATCH (ch:Choice) WHERE ch.conflict = true AND ch.project_id = $p RETURN count(ch) AS n",
            {"p": world.project_id},
        )[0]["n"]

    def check(step: str) -> None:
        kept = world.traces.review_counts()
        assert {k: kept[k] for k in ("needs_review", "unknown", "queued")} == direct(), step
        # the conflicts' count and each root cause's group are kept too
        assert kept["conflicts"] == direct_conflicts(), step
        causes = direct_causes()
        assert world.traces.review_root_causes() == sorted(causes.items(), key=lambda kv: (-kv[1], kv[0])), step
        assert ReviewViews(world.store, project_id=world.project_id, agent_id="r").group_sizes(
            [*causes, "document:nothing:1"]
        ) == {**causes, "document:nothing:1": 0}, step
        nodes = world.store.read(
            world.project_id,
            "MATCH (k:QueueCause) WHERE k.project_id = $p RETURN k.cause AS cause, k.n AS n",
            {"p": world.project_id},
        )
        assert {r["cause"]: r["n"] for r in nodes} == causes, step  # none left at nothing
        # a decision has a queue position exactly while it is in the queue:
        # Neo4j's queue pages walk the position index and ask nothing else
        split = world.store.read(
            world.project_id,
            "MATCH (d:Decision) WHERE d.project_id = $p AND coalesce(d.review_open, false) <> (d.queue_pos IS NOT NULL) "
            "RETURN d.id AS id",
            {"p": world.project_id},
        )
        assert split == [], step
        assert all(type(kept[k]) is int for k in kept), step  # counts, shown as such
        assert world.traces.list_decisions_for_review().count == direct()["needs_review"] + direct()["unknown"], step
        for task in ("pick-db", "billing"):
            tid = c.task_id(world.project_id, task)
            rows = world.store.read(
                world.project_id,
                "MATCH (d:Decision {task_id: $tid}) WHERE d.project_id = $p RETURN d.id AS id, d.status AS status, "
                "d.review_open AS open, d.created_at AS at",
                {"tid": tid, "p": world.project_id},
            )
            active = sorted((r for r in rows if r["status"] == "active"), key=lambda r: r["at"], reverse=True)
            in_queue = sum(1 for r in rows if r["open"])
            assert world.traces.list_decisions_for_review(task).count == in_queue, (step, task)
            kept_task = _counters.task_state(world.store, world.project_id, tid)
            assert (kept_task["active"], kept_task["open"]) == (len(active), in_queue), (step, task)
            found = world.history.get_task(task)
            if found.found:
                view = found.view
                assert view.decision_count == len(active), (step, task)
                assert [str(d.id) for d in view.decisions] == [r["id"] for r in active[:20]], (step, task)
                assert len(view.review_decisions) == min(in_queue, 20), (step, task)

    check("empty")
    roots = [world.record("pick-db", f"k{i}", "Postgres").decision for i in range(3)]
    # two tasks disagree on k0 and k1: conflicts, gone as the roots are rejected and superseded
    world.record("billing", "k0", "MySQL")
    world.record("billing", "k1", "MySQL")
    event = {"kind": "event", "task_name": "pick-db", "seq": 1}
    mids = [world.record("billing", f"m{i}", "x", supports=[dep(r), event]).decision for i, r in enumerate(roots)]
    leaves = [world.record("billing", f"l{i}", "y", supports=[dep(m)]).decision for i, m in enumerate(mids)]
    check("recorded")
    world.graph.update("adr", "Preface.\n\n" + ADR)  # flags roots, queues mids
    check("flagged")
    world.traces.continue_decision_review()  # mids flagged, leaves queued
    check("swept once")
    assert world.traces.reaffirm_decision(str(roots[0].id)).recorded
    check("reaffirmed")
    assert world.traces.reject_decision(str(roots[1].id), reason="no").recorded
    check("rejected")
    assert world.traces.supersede_decision(
        str(mids[2].id), conclusion="z", rationale="r", explanation="e", supports=[event]
    ).recorded
    check("superseded")
    while world.traces.continue_decision_review().more:
        pass
    check("swept to the end")
    redacted = world.retention.redact_event(c.event_id(c.task_id(world.project_id, "pick-db"), 1), reason="pii")
    assert redacted.recorded
    check("redacted")
    world.traces.continue_decision_review()
    check("swept after redaction")
    assert world.retention.delete_task("billing", include_decisions=True, reason="gone").recorded
    check("task deleted")
    world.graph.delete("adr")
    check("document deleted")
    assert leaves  # (deleted with their task)


def test_every_page_of_a_sparse_queue_is_exact(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """A queue whose positions are dense in places (one change flagged many
    at once), thinned (every other one settled) and far apart in others
    (flagged one change at a time): each page read through the position
    ranges is the slice of the whole queue sorted."""
    import time

    import core._decision_reads

    world.graph.add("bulk", "bulk text")
    cite, _ = world.cite("bulk", "bulk")
    made = world.traces.load_decisions(
        [
            {"task_name": "pick-db", "choice_key": f"k{i:02d}", "conclusion": "c", "rationale": "r", "supports": [cite]}
            for i in range(30)
        ]
    )
    for i in range(5):
        world.graph.add(f"doc{i}", f"text {i}")
        one, got = world.cite(f"doc{i}", "text")
        assert world.record("billing", f"one{i}", "c", supports=[one], fetched=[got]).recorded
    world.graph.update("bulk", "bulk changed")
    for d in made[::2]:
        assert world.traces.reject_decision(str(d.id), reason="thinned").recorded
    for i in range(5):
        time.sleep(0.003)  # positions a few milliseconds apart: millions of positions between them
        world.graph.update(f"doc{i}", f"changed {i}")
    monkeypatch.setattr(core._decision_reads, "QUEUE_SORT_LIMIT", 10_000)
    whole = [d.choice_key for d in world.traces.list_decisions_for_review(limit=100).decisions]
    assert len(whole) == 20 and whole[-5:] == [f"one{i}" for i in range(5)]
    monkeypatch.setattr(core._decision_reads, "QUEUE_SORT_LIMIT", 0)
    for size in (3, 7):
        for offset in range(0, 21, size):
            page = world.traces.list_decisions_for_review(limit=size, offset=offset)
            assert [d.choice_key for d in page.decisions] == whole[offset : offset + size], (size, offset)
