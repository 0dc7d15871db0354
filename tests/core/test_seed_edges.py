"""The seeds' rules at their edges (issue 13), on every backend: a retry
racing its first call, kept decisions of a deleted task, superseding a
flagged decision, supports of invalid form, step supports naming text their
document lacks."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from core import _common as c
from core import _counters, _review
from core.knowledge import encode_chunk, encode_span
from core.models import ReviewReason, ReviewState, StepResultValidity, WriteErrorCode
from core.stores import GraphStore
from tests.core.test_decisions import ADR, World, dep, state, world  # noqa: F401  (the shared fixture)

# -- 1. a retry racing its first call -------------------------------------------


def _race(calls: int, call: Callable[[], Any]) -> list[Any]:
    """``calls`` identical calls started together, their results in order."""
    barrier = threading.Barrier(calls)
    results: list[Any] = [None] * calls
    errors: list[BaseException] = []

    def run(n: int) -> None:
        try:
            barrier.wait(timeout=30)
            results[n] = call()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(calls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    return results


ROUNDS = 40  # on FalkorDB before the fix, a few calls in every 40 rounds were refused
CALLERS = 4


def test_identical_record_calls_racing_with_one_request_id_all_get_the_stored_result(world: World) -> None:
    doc, got = world.cite("adr", "Postgres stays the system of record")
    for n in range(ROUNDS):
        results = _race(
            CALLERS,
            lambda n=n: world.traces.record_decision(
                "pick-db",
                choice_key=f"db-{n}",
                conclusion="Postgres",
                rationale="r",
                supports=[doc],
                fetched=[got],
                request_id=f"race-{n}",
            ),
        )
        assert all(r.recorded for r in results), [r.error for r in results]
        assert len({r.decision.id for r in results}) == 1
    assert world.traces.list_decisions("pick-db", limit=20).page.count == ROUNDS


def test_identical_reject_calls_racing_with_one_request_id_all_get_the_stored_result(world: World) -> None:
    for n in range(ROUNDS):
        did = str(world.record("pick-db", f"db-{n}", "Postgres").decision.id)
        results = _race(
            CALLERS,
            lambda did=did, n=n: world.traces.reject_decision(
                did,
                reason="wrong",
                request_id=f"reject-{n}",
            ),
        )
        assert [(r.recorded, r.error) for r in results] == [(True, None)] * CALLERS


# -- 3. superseding a flagged decision keeps its reason -----------------------------


def test_falkordb_removes_the_wrong_property_when_one_set_removes_two(falkordb_store: GraphStore) -> None:
    """Pins FalkorDB's behaviour that ``_review.unset`` works around: when it
    changes (an upgrade fixes it), this fails, and the workaround can go."""
    pid = "pin-remove"
    try:
        falkordb_store.execute(pid, "CREATE (:N {a: 1, b: 2, c: 3})")
        falkordb_store.execute(pid, "MATCH (n:N) SET n.a = null, n.c = null")
        assert falkordb_store.read(pid, "MATCH (n:N) RETURN properties(n) AS p")[0]["p"] == {"c": 3}
    finally:
        falkordb_store.drop_project(pid)


def test_unset_removes_exactly_the_named_properties(store: GraphStore, project_id: str) -> None:
    store.execute(project_id, "CREATE (:N {a: 1, b: 2, c: 3, d: 4, e: 5})")
    store.execute(project_id, "MATCH (n:N) SET n.b = 7 " + _review.unset("n", ("a", "d", "c")))
    assert store.read(project_id, "MATCH (n:N) RETURN properties(n) AS p")[0]["p"] == {"b": 7, "e": 5}


def test_superseding_a_flagged_decision_keeps_its_reason_and_fields(world: World) -> None:
    old = world.record("pick-db", "db", "Postgres").decision
    world.graph.update("adr", ADR + " Amended.")
    flagged = world.traces.get_decision(str(old.id)).decision
    assert (flagged.review_state, flagged.review_reason) == (ReviewState.needs_review, ReviewReason.source_changed)
    doc, got = world.cite("adr", "Postgres stays the system of record")
    new = world.traces.supersede_decision(
        str(old.id),
        conclusion="Postgres 16",
        rationale="r",
        explanation="newer",
        supports=[doc],
        fetched=[got],
    )
    assert new.recorded, new.error
    after = world.traces.get_decision(str(old.id)).decision
    assert after.status.value == "superseded"
    assert (after.review_state, after.review_reason) == (ReviewState.needs_review, ReviewReason.source_changed)
    assert after.model_dump(exclude={"status"}) == flagged.model_dump(exclude={"status"})
    # every decision that needs review has a reason, whatever its status
    rows = world.store.read(
        world.project_id,
        "MATCH (d:Decision) WHERE d.review_state = 'needs_review' AND d.review_reason IS NULL RETURN d.id AS id",
    )
    assert rows == []


def test_rejecting_and_reaffirming_keep_every_other_field(world: World) -> None:
    a = world.record("pick-db", "a", "Postgres").decision
    b = world.record("billing", "b", "Stripe").decision
    world.graph.update("adr", ADR + " Amended.")
    rejected = world.traces.reject_decision(str(a.id), reason="no").decision
    stored = world.traces.get_decision(str(a.id)).decision
    assert stored == rejected
    assert (stored.conclusion, stored.rationale, stored.rejection_reason) == ("Postgres", "because Postgres", "no")
    reaffirmed = world.traces.reaffirm_decision(str(b.id))
    assert reaffirmed.recorded, reaffirmed.error
    assert world.traces.get_decision(str(b.id)).decision == reaffirmed.decision


# -- 4. supports of invalid form are refused, not raised ------------------------------

MALFORMED = [
    {"kind": "event", "task_name": "pick-db"},  # no seq
    {"kind": "event", "task_name": "pick-db", "seq": "one"},
    {"kind": "rumour", "task_name": "pick-db", "seq": 1},
    {"kind": "decision"},
    {"kind": "document"},
    {"task_name": "pick-db", "seq": 1},  # no kind
    "pick-db#1",
]


@pytest.mark.parametrize("bad", MALFORMED, ids=range(len(MALFORMED)))
def test_a_support_of_invalid_form_is_refused_and_writes_nothing(world: World, bad: Any) -> None:
    good = {"kind": "event", "task_name": "pick-db", "seq": 1}
    refused = world.traces.record_decision(
        "pick-db",
        choice_key="db",
        conclusion="c",
        rationale="r",
        supports=[good, bad],
    )
    assert (refused.recorded, refused.error) == (False, WriteErrorCode.support_malformed)
    assert world.traces.list_decisions("pick-db").page.count == 0
    d = world.record("pick-db", "db", "Postgres").decision
    refused = world.traces.supersede_decision(
        str(d.id),
        conclusion="c",
        rationale="r",
        explanation="e",
        supports=[bad],
    )
    assert (refused.recorded, refused.error) == (False, WriteErrorCode.support_malformed)
    assert world.traces.get_decision(str(d.id)).decision.status.value == "active"
    step = world.history.set_step(
        "pick-db",
        name="s",
        state="completed",
        result_basis="supported",
        result_supports=[bad],
    )
    assert (step.recorded, step.error) == (False, WriteErrorCode.support_invalid)
    assert world.history.list_steps("pick-db").steps == []


def test_supports_that_are_not_a_list_still_raise(world: World) -> None:
    with pytest.raises(ValueError):
        world.traces.record_decision("pick-db", choice_key="db", conclusion="c", rationale="r", supports="pick-db#1")  # type: ignore[arg-type]


# -- 5. a step support names text its version has ---------------------------------------


def test_a_step_cannot_cite_text_its_document_does_not_have(world: World) -> None:
    world.graph.add("short", "abcdef")
    info = world.graph.get_document("short")
    assert info is not None and len(world.graph.chunk_evidence_ids("short")) == 1
    beyond = [
        encode_span(info.node_id, info.activation_seq, 0, 9999),
        encode_span(info.node_id, info.activation_seq, 3, 7),
        encode_chunk(info.node_id, info.activation_seq, 7),
        encode_chunk(info.node_id, info.activation_seq, 1),
    ]
    for n, evidence in enumerate(beyond):
        step = world.history.set_step(
            "pick-db",
            name=f"s{n}",
            state="completed",
            result_basis="supported",
            result_supports=[{"kind": "document", "evidence_id": evidence}],
        )
        assert (step.recorded, step.error) == (False, WriteErrorCode.support_invalid), evidence
    assert world.history.list_steps("pick-db").steps == []
    inside = [encode_span(info.node_id, info.activation_seq, 0, 6), encode_chunk(info.node_id, info.activation_seq, 0)]
    for n, evidence in enumerate(inside):
        step = world.history.set_step(
            "pick-db",
            name=f"ok{n}",
            state="completed",
            result_basis="supported",
            result_supports=[{"kind": "document", "evidence_id": evidence}],
        )
        assert step.recorded, step.error
    assert {s.result_validity for s in world.history.list_steps("pick-db").steps} == {StepResultValidity.reusable}


# -- 2. decisions kept by a task deletion belong to no task -------------------------------


def counted_queue(world: World) -> dict[str, int]:
    """The review queue's counts (as ``review_counts`` gives them) counted
    from the decisions themselves, not read from the kept counters."""
    scope = "" if world.store.graph_per_project else " AND d.project_id = $p"
    rows = world.store.read(
        world.project_id,
        f"MATCH (d:Decision) WHERE d.review_open = true{scope} "
        "RETURN d.review_state AS state, d.queued AS queued, count(d) AS n",
        {"p": world.project_id},
    )
    counts = {"needs_review": 0, "unknown": 0, "queued": 0}
    for r in rows:
        if r["state"] in counts:
            counts[r["state"]] += r["n"]
        if r["queued"]:
            counts["queued"] += r["n"]
    conflicts = world.store.read(
        world.project_id,
        f"MATCH (ch:Choice) WHERE ch.conflict = true{scope.replace('d.', 'ch.')} RETURN count(ch) AS n",
        {"p": world.project_id},
    )[0]["n"]
    return {**counts, "conflicts": conflicts}


def _task_counts_are_exact(world: World, task: str) -> None:
    """The kept counters agree with the decisions themselves."""
    assert world.traces.review_counts() == counted_queue(world)
    tid = c.task_id(world.project_id, task)
    kept = _counters.task_state(world.store, world.project_id, tid)
    rows = world.store.read(
        world.project_id,
        "MATCH (d:Decision {task_id: $tid}) RETURN sum(CASE WHEN d.status = 'active' THEN 1 ELSE 0 END) AS active, "
        "sum(CASE WHEN d.review_open = true THEN 1 ELSE 0 END) AS open",
        {"tid": tid},
    )
    assert (kept["active"], kept["open"]) == (rows[0]["active"] or 0, rows[0]["open"] or 0)


def test_a_new_task_with_a_deleted_tasks_name_starts_empty_and_the_kept_decisions_stay(world: World) -> None:
    kept = world.record("pick-db", "db", "Postgres").decision
    other = world.record("billing", "db", "MySQL").decision  # a conflict across tasks
    assert world.history.get_task("pick-db").view.decision_count == 1  # counted before the deletion
    assert world.retention.delete_task("pick-db", include_decisions=False).recorded
    assert world.history.create_task("pick-db", goal="another goal").recorded

    view = world.history.get_task("pick-db").view
    assert (view.decisions, view.decision_count, view.review_decisions, view.conflicts) == ([], 0, [], [])
    assert world.traces.list_decisions("pick-db").page.count == 0
    assert world.traces.list_conflicts(task_name="pick-db").groups == []
    _task_counts_are_exact(world, "pick-db")

    # the kept decision: readable by id, in search and in conflicts, in no task
    stored = world.traces.get_decision(str(kept.id)).decision
    assert stored is not None and stored.status.value == "active" and stored.conclusion == "Postgres"
    assert stored.task_id != c.task_id(world.project_id, "pick-db")
    assert str(kept.id) in {str(h.decision.id) for h in world.traces.search_decisions("Postgres")}
    assert world.traces.search_decisions("Postgres", task_name="pick-db") == []
    (group,) = world.traces.list_conflicts().groups
    assert {str(d.id) for d in group.decisions} == {str(kept.id), str(other.id)}

    # the choice is free again in the new task
    doc, got = world.cite("adr", "Postgres stays the system of record")
    again = world.traces.record_decision(
        "pick-db", choice_key="db", conclusion="FalkorDB", rationale="r", supports=[doc], fetched=[got]
    )
    assert again.recorded, again.error
    assert again.decision.revision == 1 and again.decision.id != kept.id
    view = world.history.get_task("pick-db").view
    assert [d.id for d in view.decisions] == [again.decision.id] and view.decision_count == 1
    assert world.traces.get_decision(str(kept.id)).decision == stored

    # both stay in the review queue and the counters stay exact
    world.graph.update("adr", ADR + " Amended.")
    assert {str(d.id) for d in world.history.get_task("pick-db").view.review_decisions} == {str(again.decision.id)}
    _task_counts_are_exact(world, "pick-db")
    superseded = world.traces.supersede_decision(
        str(kept.id), conclusion="Postgres 16", rationale="r", explanation="e", supports=[doc], fetched=[got]
    )
    assert superseded.recorded and superseded.decision.task_id == stored.task_id
    _task_counts_are_exact(world, "pick-db")

    # and again: a third task of the name starts empty too
    assert world.retention.delete_task("pick-db", include_decisions=False).recorded
    assert world.history.create_task("pick-db", goal="third").recorded
    assert world.history.get_task("pick-db").view.decision_count == 0
    third = world.traces.record_decision(
        "pick-db", choice_key="db", conclusion="Neo4j", rationale="r", supports=[doc], fetched=[got]
    )
    assert third.recorded, third.error
    assert len({third.decision.id, again.decision.id, kept.id}) == 3
    for d in (kept, again.decision, superseded.decision):
        assert world.traces.get_decision(str(d.id)).found
    _task_counts_are_exact(world, "pick-db")


# -- tests that would have caught the mutations ------------------------------------


def _counters_exact(world: World, step: str) -> None:
    """The kept review counters (FalkorDB) equal a direct count of the queue."""
    counted = counted_queue(world)
    kept = world.traces.review_counts()
    assert kept == counted, step
    assert all(v >= 0 for v in kept.values()), step
    # a root cause only while in the queue: the queue's group sizes count it alone
    stray = world.store.read(
        world.project_id,
        "MATCH (d:Decision) WHERE d.project_id = $p AND d.root_cause IS NOT NULL "
        "AND (d.review_open IS NULL OR d.review_open <> true) RETURN count(d) AS n",
        {"p": world.project_id},
    )[0]["n"]
    assert stray == 0, step


def test_a_queued_dependant_whose_dependency_was_reaffirmed_leaves_the_queue(world: World) -> None:
    root = world.record("pick-db", "db", "Postgres").decision
    child = world.record("billing", "team", "DBA team", supports=[dep(root)]).decision
    world.graph.update("adr", "Preface.\n\n" + ADR)  # the passage moved: root flagged, child queued
    assert state(world, child)[1] is ReviewState.unknown
    _counters_exact(world, "queued")
    assert world.traces.reaffirm_decision(str(root.id)).recorded
    progress = world.traces.continue_decision_review()
    assert progress.cleared == [str(child.id)] and progress.flagged == []
    assert state(world, child)[1:] == (ReviewState.clear, None)
    assert world.traces.list_decisions_for_review().count == 0
    assert world.traces.review_counts() == {"needs_review": 0, "unknown": 0, "queued": 0, "conflicts": 0}
    _counters_exact(world, "cleared")
    assert world.traces.continue_decision_review().moved == 0


def test_the_queued_counter_holds_when_a_queued_decision_is_flagged_by_its_own_document(world: World) -> None:
    world.graph.add("runbook", "Backups run nightly.")
    root = world.record("pick-db", "db", "Postgres").decision
    doc, got = world.cite("runbook", "Backups run nightly")
    child = world.record("billing", "backup", "Nightly", supports=[dep(root), doc], fetched=[got]).decision
    world.graph.update("adr", ADR + " Amended.")  # root flagged, child queued
    _counters_exact(world, "child queued")
    assert world.traces.review_counts()["queued"] == 1
    world.graph.update("runbook", "Backups run hourly.")  # the queued child flagged by its own document
    assert state(world, child)[1:] == (ReviewState.needs_review, ReviewReason.source_changed)
    _counters_exact(world, "queued child flagged")
    assert world.traces.review_counts()["queued"] == 1
    while world.traces.continue_decision_review().more:
        pass
    _counters_exact(world, "swept")
    assert world.traces.review_counts()["queued"] == 0
    assert state(world, child)[1:] == (ReviewState.needs_review, ReviewReason.source_changed)


def test_load_events_keeps_a_payload_of_exactly_the_limit_whole(world: World) -> None:
    exact, over = "x" * 32_000, "y" * 32_001
    last = world.history.load_events("billing", [{"kind": "note", "payload": exact}, {"kind": "note", "payload": over}])
    first, second = world.history.list_events("billing", after_seq=last - 2).events
    assert (first.payload, first.truncated) == (exact, False)
    assert (second.payload, second.truncated) == (over[:32_000], True)
    recorded = world.history.record_event("billing", kind="note", payload=exact).event
    assert (recorded.payload, recorded.truncated) == (exact, False)


def test_search_clamps_its_limit_to_one_to_a_hundred(world: World) -> None:
    world.traces.load_decisions(
        [
            {
                "task_name": "pick-db",
                "choice_key": f"k{i}",
                "conclusion": "Postgres everywhere",
                "rationale": "r",
                "supports": [{"kind": "event", "task_name": "pick-db", "seq": 1}],
            }
            for i in range(105)
        ]
    )
    assert len(world.traces.search_decisions("Postgres")) == 20  # the default
    assert len(world.traces.search_decisions("Postgres", limit=1000)) == 100
    assert len(world.traces.search_decisions("Postgres", limit=100)) == 100
    assert len(world.traces.search_decisions("Postgres", limit=0)) == 1  # clamped, as every page size
    assert len(world.traces.search_decisions("Postgres", limit=-5)) == 1
