"""A document write flags its citers in bounded units (issue 18; core/_flag_jobs.py),
on every backend: every citer flagged once with the change's reason and root
cause, the kept counters exact, the work split into units; a writer that stops
between units leaves the document pending, then failed after its lease, and
the next write of the document, a retry with the request id, or the review
sweep finishes the job, exactly once."""

from __future__ import annotations

import itertools
import time
from typing import Any

import pytest

from core import _causes, _counters, _flag_jobs, _review
from core import _common as c
from core.knowledge import document_node_id
from core.models import ReviewReason, ReviewState
from core.models.knowledge import SourceState
from core.review_sweep import review_until_done

from .test_decisions import World
from .test_review_views import world  # noqa: F401  (the fixture)

PASSAGE = "Postgres stays the system of record"
CITERS = 10  # with a batch of 3: four units


def dep(decision_id: str) -> dict[str, str]:
    return {"kind": "decision", "decision_id": decision_id}


class Died(Exception):
    """The writer's process ends between two units."""


def load_citers(world: World, n: int, task: str = "pick-db", prefix: str = "k") -> list[str]:
    text = world.graph.current_text("adr")
    assert text is not None
    start = text.index(PASSAGE)
    evidence = world.graph.span_evidence_id("adr", start, start + len(PASSAGE))
    items = [
        {
            "task_name": task,
            "choice_key": f"{prefix}{i}",
            "conclusion": f"C{i}",
            "rationale": "r",
            "supports": [{"kind": "document", "evidence_id": evidence}],
        }
        for i in range(n)
    ]
    return [str(d.id) for d in world.traces.load_decisions(items)]


def check_counters(world: World) -> None:
    """The kept counters and root-cause groups equal a direct count."""
    rows = world.store.read(
        world.project_id,
        "MATCH (d:Decision) WHERE d.review_open = true AND d.project_id = $p "
        "RETURN d.review_state AS state, d.queued AS queued, coalesce(d.root_cause, '') AS cause, "
        "d.task_id AS task",
        {"p": world.project_id},
    )
    kept = {**_counters.kept_counts(world.store, world.project_id), **world.traces.review_counts()}
    assert kept["open"] == len(rows)
    assert kept["needs_review"] == sum(r["state"] == "needs_review" for r in rows)
    assert kept["unknown"] == sum(r["state"] == "unknown" for r in rows)
    assert kept["queued"] == sum(bool(r["queued"]) for r in rows)
    causes: dict[str, int] = {}
    for r in rows:
        causes[r["cause"]] = causes.get(r["cause"], 0) + 1
    assert world.traces.review_root_causes() == sorted(causes.items(), key=lambda kv: (-kv[1], kv[0]))
    for task in ("pick-db", "billing"):  # each task's kept counts too
        tid = c.task_id(world.project_id, task)
        active = world.store.read(
            world.project_id,
            "MATCH (d:Decision {task_id: $t}) WHERE d.status = 'active' RETURN count(d) AS n",
            {"t": tid},
        )[0]["n"]
        state = _counters.task_state(world.store, world.project_id, tid)
        assert (state["active"], state["open"]) == (active, sum(r["task"] == tid for r in rows)), task


def flag_calls(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The ids each flag write was given (a spy on the real write)."""
    calls: list[list[str]] = []
    real = _review.flag

    def spy(tx: Any, project_id: str, ids: list[str], *a: Any, **kw: Any) -> None:
        calls.append(list(ids))
        real(tx, project_id, ids, *a, **kw)

    monkeypatch.setattr(_review, "flag", spy)
    return calls


def committed_flags(calls: list[list[str]], flagged: set[str]) -> None:
    """Every citer was flagged, and by one unit only: a FalkorDB unit that
    met a concurrent writer runs again, so a batch may repeat whole, never
    split or overlap another."""
    batches: list[list[str]] = []
    for ids in calls:
        if not batches or batches[-1] != ids:
            batches.append(ids)
    seen = [i for b in batches for i in b]
    assert len(seen) == len(set(seen)) and set(seen) == flagged


def job(world: World) -> dict[str, Any] | None:
    rows = world.store.read(
        world.project_id,
        "MATCH (j:FlagJob {id: $id}) RETURN j.units AS units, j.flagged AS flagged, j.vseq AS vseq, j.pos AS pos",
        {"id": document_node_id(world.project_id, "adr")},
    )
    return rows[0] if rows else None


def assert_flagged(world: World, ids: list[str], reason: ReviewReason, cause: str) -> None:
    for i in ids:
        d = world.traces.get_decision(i).decision
        assert d is not None
        assert (d.review_state, d.review_reason) == (ReviewState.needs_review, reason), i
    found = world.store.read(
        world.project_id, "UNWIND $ids AS id MATCH (d:Decision {id: id}) RETURN d.root_cause AS cause", {"ids": ids}
    )
    assert {r["cause"] for r in found} == {cause}


@pytest.mark.parametrize("how", ["update", "delete"])
def test_a_write_flags_many_citers_in_units_each_once(world: World, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    monkeypatch.setattr(_flag_jobs, "FLAG_BATCH", 3)
    citers = load_citers(world, CITERS)
    below = world.record("billing", "below", "x", supports=[dep(citers[0])]).decision  # depends on a citer
    gone = world.traces.reject_decision(citers[-1], reason="not needed").decision  # no longer active
    assert gone is not None
    active = sorted(citers[:-1])
    units: list[str] = []
    real = world.store.transact

    def counting(project_id: str, work: Any, **kw: Any) -> Any:
        units.append(getattr(work, "__qualname__", ""))
        return real(project_id, work, **kw)

    monkeypatch.setattr(world.store, "transact", counting)
    calls = flag_calls(monkeypatch)
    if how == "update":
        result = world.graph.update("adr", "Preface.\n\n" + world.graph.current_text("adr"))
        reason, cause = ReviewReason.source_changed, _causes.document_cause("adr", 2)
    else:
        result = world.graph.delete("adr")
        reason, cause = ReviewReason.source_removed, _causes.document_deleted_cause("adr", 1)
    monkeypatch.undo()
    assert result.recorded and result.flagged_decision_ids == active
    # 10 citations (one of them rejected) in batches of 3: the write's unit and three more
    assert len(units) == 4, units
    committed_flags(calls, set(active))
    assert_flagged(world, active, reason, cause)
    b = world.traces.get_decision(str(below.id)).decision
    assert b is not None and b.review_state is ReviewState.unknown  # queued beneath its flagged citer
    assert world.traces.get_decision(citers[-1]).decision.review_state is ReviewState.clear
    check_counters(world)
    assert job(world) is None
    assert world.graph.source_status("adr") is (SourceState.current if how == "update" else SourceState.deleted)


def test_an_update_flags_the_citers_of_every_older_version_once(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """Citers of two older versions, one decision citing both: each flagged
    once, root cause the newest change, however the batches fall."""
    monkeypatch.setattr(_flag_jobs, "FLAG_BATCH", 2)
    old_doc, old_got = world.cite("adr", PASSAGE)
    first = load_citers(world, 3)
    world.graph.update("adr", "Preface.\n\n" + world.graph.current_text("adr"))
    second = load_citers(world, 4, task="billing")
    new_doc, new_got = world.cite("adr", PASSAGE)
    both = world.record("pick-db", "both", "B", supports=[old_doc, new_doc], fetched=[old_got, new_got]).decision
    assert both is not None
    calls = flag_calls(monkeypatch)
    result = world.graph.update("adr", "Preface two.\n\n" + world.graph.current_text("adr"))
    everyone = sorted([*first, *second, str(both.id)])
    assert result.flagged_decision_ids == everyone
    committed_flags(calls, set(everyone))
    assert_flagged(world, everyone, ReviewReason.source_changed, _causes.document_cause("adr", 3))
    check_counters(world)


def test_a_write_flags_every_citer_of_thinned_places_once(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """Citations whose places are far apart (a deleted task took nine of
    every ten): each unit's batch, read on FalkorDB from widening ranges of
    the places after the cursor, is the next citers in order, so every
    citer is flagged once and none is passed over."""
    world.history.create_task("gone", goal="deleted later")
    kept: list[str] = []
    for i in range(8):
        kept += load_citers(world, 1, prefix=f"k{i}-")
        load_citers(world, 9, task="gone", prefix=f"g{i}-")
    assert world.retention.delete_task("gone", include_decisions=True, reason="gaps").recorded
    places = sorted(
        r["pos"]
        for r in world.store.read(
            world.project_id,
            "UNWIND $ids AS id MATCH (d:Decision {id: id})-[r:CITES_DOC]->() RETURN r.pos AS pos",
            {"ids": kept},
        )
    )
    assert (
        len(places) == 8 and min(b - a for a, b in itertools.pairwise(places)) == 10
    )  # a batch's first range holds one
    monkeypatch.setattr(_flag_jobs, "FLAG_BATCH", 3)
    calls = flag_calls(monkeypatch)
    result = world.graph.update("adr", "Preface.\n\n" + (world.graph.current_text("adr") or ""))
    assert result.recorded and result.flagged_decision_ids == sorted(kept)
    batches = [ids for i, ids in enumerate(calls) if not i or calls[i - 1] != ids]  # (a unit run again)
    assert batches == [kept[:3], kept[3:6], kept[6:]]  # three units, each the next batch in place order
    committed_flags(calls, set(kept))
    assert_flagged(world, kept, ReviewReason.source_changed, _causes.document_cause("adr", 2))
    assert job(world) is None
    check_counters(world)


@pytest.mark.parametrize("recovery", ["retry", "next_write", "sweep"])
@pytest.mark.parametrize("how", ["update", "delete"])
def test_a_writer_that_stops_between_units_is_finished_once(
    world: World, monkeypatch: pytest.MonkeyPatch, how: str, recovery: str
) -> None:
    monkeypatch.setattr(_flag_jobs, "FLAG_BATCH", 3)
    monkeypatch.setattr(_flag_jobs, "LEASE_S", 1.5)
    citers = sorted(load_citers(world, CITERS))
    below = world.record("billing", "below", "x", supports=[dep(citers[5])]).decision
    calls = flag_calls(monkeypatch)
    text = "Preface.\n\n" + (world.graph.current_text("adr") or "")

    def write() -> Any:
        if how == "update":
            return world.graph.update("adr", text, request_id="req-1")
        return world.graph.delete("adr", request_id="req-1")

    def died(*a: Any, **kw: Any) -> Any:
        raise Died

    with monkeypatch.context() as m:
        m.setattr(_flag_jobs, "continue_job", died)
        with pytest.raises(Died):
            write()
    # the first unit committed: the version (or the delete) and the first batch
    info = world.graph.get_document("adr")
    assert info is not None and info.state is SourceState.pending
    assert info.live is (how == "update") and (info.activation_seq == 2) is (how == "update")
    assert job(world) == {"units": 1, "flagged": 3, "vseq": 1, "pos": 3}
    flagged_now = [i for i in citers if world.traces.get_decision(i).decision.review_state is ReviewState.needs_review]
    assert len(flagged_now) == 3
    check_counters(world)  # consistent between units
    time.sleep(1.6)
    assert world.graph.source_status("adr") is SourceState.failed  # the lease ran out: nobody is at it

    if recovery == "retry":
        result = write()  # the same request: the whole call's result
        assert result.recorded and result.flagged_decision_ids == citers
    elif recovery == "next_write":
        if how == "update":
            assert world.graph.update("adr", "Another text entirely.").recorded
        else:
            assert world.graph.add("adr", "Added again.").recorded
    else:
        sweep = review_until_done(world.traces)
        assert sweep.sources_flagged == CITERS - 3 and sweep.done
        b = world.traces.get_decision(str(below.id)).decision
        assert b is not None and b.review_state is ReviewState.needs_review  # the review spread on after
    assert job(world) is None
    if recovery == "next_write" and how == "update":
        # the stopped job's units, then the new version's (every citer again, in four units)
        committed_flags(calls[:-4], set(citers))
        committed_flags(calls[-4:], set(citers))
        assert_flagged(world, citers, ReviewReason.source_changed, _causes.document_cause("adr", 3))
    else:
        committed_flags(calls, set(citers))
    if recovery != "next_write":
        reason = ReviewReason.source_changed if how == "update" else ReviewReason.source_removed
        cause = _causes.document_cause("adr", 2) if how == "update" else _causes.document_deleted_cause("adr", 1)
        assert_flagged(world, citers, reason, cause)
        assert world.graph.source_status("adr") is (SourceState.current if how == "update" else SourceState.deleted)
    check_counters(world)
    # whoever finished it, a retry of the stopped call returns the whole call's result
    again = write()
    assert again.recorded and again.flagged_decision_ids == citers
    if how == "update":
        assert again.version is not None and again.version.activation_seq == 2


def test_a_retry_returns_the_whole_result_and_writes_nothing(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_flag_jobs, "FLAG_BATCH", 4)
    citers = sorted(load_citers(world, CITERS))
    text = "Preface.\n\n" + (world.graph.current_text("adr") or "")
    first = world.graph.update("adr", text, request_id="up-1")
    assert first.flagged_decision_ids == citers
    calls = flag_calls(monkeypatch)
    assert world.graph.update("adr", text, request_id="up-1") == first
    assert calls == [] and len(world.graph.list_versions("adr")) == 2
    kept = world.store.read(
        world.project_id,
        "MATCH (b:FlagBatch {request: $r}) RETURN b.unit AS unit, size(b.ids) AS n ORDER BY unit",
        {"r": c.request_node_id(world.project_id, world.graph.agent_id, "up-1")},
    )
    assert kept == [{"unit": 2, "n": 4}, {"unit": 3, "n": 2}]  # the later units' ids, kept with the request


def test_a_store_from_before_the_citation_places_is_numbered_then_flagged(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Citations written before their places were kept are numbered once
    (their own unit), then flagged in units as any other."""
    from .test_citations import _forget_the_numbers

    monkeypatch.setattr(_flag_jobs, "FLAG_BATCH", 3)
    citers = sorted(load_citers(world, 7))
    _forget_the_numbers(world.store, world.project_id)
    result = world.graph.delete("adr")
    assert result.flagged_decision_ids == citers
    assert_flagged(world, citers, ReviewReason.source_removed, _causes.document_deleted_cause("adr", 1))
    check_counters(world)
    assert job(world) is None and world.graph.source_status("adr") is SourceState.deleted


def test_a_second_write_waits_for_a_living_writer_whose_answer_stays_whole(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writer A's first unit opened a job and its lease holds (A is between
    units): B's update of the same document waits instead of taking A's
    units, so what A goes on to flag is A's to report; B writes after."""
    import threading

    from core.knowledge import Graph

    monkeypatch.setattr(_flag_jobs, "FLAG_BATCH", 3)
    monkeypatch.setattr(_flag_jobs, "LEASE_S", 30.0)
    citers = sorted(load_citers(world, CITERS))
    text = world.graph.current_text("adr") or ""

    def died(*a: Any, **kw: Any) -> Any:
        raise Died

    with monkeypatch.context() as m:  # A: its first unit commits, then it pauses
        m.setattr(_flag_jobs, "continue_job", died)
        with pytest.raises(Died):
            world.graph.update("adr", "Preface.\n\n" + text)
    assert world.graph.source_status("adr") is SourceState.pending
    b_graph = Graph(world.store, project_id=world.project_id, agent_id="b")
    answers: list[Any] = []
    b = threading.Thread(target=lambda: answers.append(b_graph.update("adr", "Third.\n\n" + text)))
    b.start()
    b.join(1.0)
    assert b.is_alive() and not answers  # B waits
    assert job(world) == {"units": 1, "flagged": 3, "vseq": 1, "pos": 3}  # A's units untouched
    # A goes on: the rest of its job is its own to report
    rest = _flag_jobs.finish(
        world.store, world.project_id, document_node_id(world.project_id, "adr"), cause=_causes.document_cause("adr", 2)
    )
    assert len(rest) == CITERS - 3
    b.join(30)
    assert not b.is_alive() and answers and answers[0].recorded and answers[0].version.activation_seq == 3
    assert answers[0].flagged_decision_ids == citers  # B's change flags every citer again, with its cause
    assert_flagged(world, citers, ReviewReason.source_changed, _causes.document_cause("adr", 3))
    assert job(world) is None
    check_counters(world)
