"""The decision workbench's read models (core/_workbench.py through
ReviewViews), on every backend: names, the actions that can succeed now and
why not, the passages the supersede form offers, "cite revision N instead"."""

from __future__ import annotations

import itertools
import re
import time
from typing import Any

import pytest

from core import _flag_jobs
from core._supports import closest_match
from core.review_views import ReviewViews

from .test_decisions import ADR, World, dep
from .test_review_views import world  # noqa: F401  (the fixture)

PASSAGE = "Postgres stays the system of record"


def views(w: World) -> ReviewViews:
    return ReviewViews(w.store, project_id=w.project_id)


def fresh(w: World, d: object) -> object:
    return w.traces.get_decision(str(d.id)).decision  # type: ignore[attr-defined]


# -- the closest match (no store) ----------------------------------------------------


def test_the_closest_match_is_the_passage_itself_or_its_rewording() -> None:
    old = "Runbook\n\nThe primary on-call engineer acknowledges a page within 15 minutes.\n\nEscalate after 30."
    start, end = old.index("acknowledges"), old.index("15 minutes") + len("15 minutes")
    moved = "Preface.\n\n" + old
    assert closest_match(old, moved, start, end) == (start + 10, end + 10)
    reworded = old.replace("within 15 minutes", "within 5 minutes")
    s, e = closest_match(old, reworded, start, end)
    assert reworded[s:e] == "acknowledges a page within 5 minutes"
    s, e = closest_match(old, old.replace("acknowledges a page", "answers every page"), start, end)
    assert old.replace("acknowledges a page", "answers every page")[s:e] == "answers every page within 15 minutes"
    gone = old.replace("The primary on-call engineer acknowledges a page within 15 minutes.\n\n", "")
    assert closest_match(old, gone, start, end) is None
    assert closest_match(old, old, 0, 0) is None


# -- names -------------------------------------------------------------------------


def test_a_decision_reads_as_choice_task_revision_and_status(world: World) -> None:
    d = world.record("pick-db", "db", "Postgres").decision
    names = views(world).decision_names([str(d.id), "not-an-id"])
    assert str(names[str(d.id)]) == "db · pick-db · revision 1 (active)"
    review = views(world).decision_review(d)
    assert review.name.label == "db · pick-db · revision 1 (active)"


# -- what can succeed now ---------------------------------------------------------


def test_a_changed_passage_names_the_words_that_changed_and_the_core_agrees(world: World) -> None:
    d = world.record("pick-db", "db", "Postgres").decision
    world.graph.update("adr", ADR.replace("Postgres stays", "MySQL stays"))
    actions = views(world).review_actions(fresh(world, d))
    assert (actions.reaffirm, actions.supersede, actions.reject) == (False, True, True)
    assert actions.blocked == ["the cited passage of adr changed: Postgres → MySQL"]
    assert actions.cause == "document:adr:2"
    assert not world.as_("alice").reaffirm_decision(str(d.id)).recorded


def test_a_moved_passage_can_be_reaffirmed_and_the_core_agrees(world: World) -> None:
    d = world.record("pick-db", "db", "Postgres").decision
    world.graph.update("adr", "Preface.\n\n" + ADR)
    actions = views(world).review_actions(fresh(world, d))
    assert actions.reaffirm and actions.blocked == []
    assert world.as_("alice").reaffirm_decision(str(d.id)).recorded


def test_a_dependant_waits_for_its_review_then_names_the_decision_it_depends_on(world: World) -> None:
    base = world.record("pick-db", "base", "Postgres").decision
    d = world.record(
        "billing",
        "db",
        "Billing on Postgres",
        supports=[{"kind": "event", "task_name": "pick-db", "seq": 1}, dep(base)],
    ).decision
    world.graph.update("adr", ADR.replace("Postgres stays", "MySQL stays"))
    assert views(world).review_actions(fresh(world, d)).blocked == [
        "its review is not finished",
        "it depends on base, which needs review",
    ]
    assert not world.as_("alice").reaffirm_decision(str(d.id)).recorded
    while world.traces.continue_decision_review().moved:
        pass
    actions = views(world).review_actions(fresh(world, d))
    assert actions.blocked == ["it depends on base, which needs review"] and not actions.reaffirm
    assert not world.as_("alice").reaffirm_decision(str(d.id)).recorded


def test_a_redacted_event_blocks_reaffirming(world: World) -> None:
    d = world.record("billing", "db", "Billing", supports=[{"kind": "event", "task_name": "pick-db", "seq": 1}])
    event = world.history.fetch_event("pick-db", 1).event
    assert world.retention.redact_event(str(event.id), reason="pii").recorded
    actions = views(world).review_actions(fresh(world, d.decision))
    assert actions.blocked == ["event 1 of pick-db was redacted"]
    assert not world.as_("alice").reaffirm_decision(str(d.decision.id)).recorded


def test_a_settled_decision_offers_nothing_and_says_who_settled_it(world: World) -> None:
    a = world.record("pick-db", "a", "Postgres").decision
    b = world.record("pick-db", "b", "Postgres").decision
    assert world.as_("carol").reject_decision(str(a.id), reason="duplicate").recorded
    rejected = views(world).review_actions(fresh(world, a))
    assert (rejected.reaffirm, rejected.supersede, rejected.reject) == (False, False, False)
    assert re.fullmatch(r"carol rejected this at \d\d:\d\d: duplicate", rejected.settled)
    doc, got = world.cite("adr", PASSAGE)
    new = (
        world.as_("dave")
        .supersede_decision(str(b.id), conclusion="c", rationale="r", explanation="e", supports=[doc], fetched=[got])
        .decision
    )
    superseded = views(world).review_actions(fresh(world, b))
    assert not (superseded.reaffirm or superseded.supersede or superseded.reject)
    assert re.fullmatch(r"dave superseded this at \d\d:\d\d with revision 2", superseded.settled)
    assert superseded.replaced_by.label == "b · pick-db · revision 2 (active)" and superseded.replaced_by.id == str(
        new.id
    )
    many = views(world).review_actions_many([fresh(world, a), fresh(world, b), new])
    assert [x.reaffirm for x in many.values()] == [False, False, True]


# -- the supersede form --------------------------------------------------------------


def test_the_form_offers_the_moved_passage_the_rewording_or_nothing(world: World) -> None:
    d = world.record("pick-db", "db", "Postgres").decision
    world.graph.update("adr", "Preface.\n\n" + ADR)
    [pick] = views(world).supersede_choices(fresh(world, d)).documents
    assert (pick.state, pick.version, pick.candidate) == ("moved", 2, PASSAGE)
    assert world.graph.fetch(pick.evidence_id).text == PASSAGE
    assert pick.before + pick.candidate + pick.after == "Preface.\n\n" + ADR
    world.graph.update("adr", ADR.replace("Postgres stays", "MySQL stays"))
    [pick] = views(world).supersede_choices(fresh(world, d)).documents
    assert (pick.state, pick.version, pick.candidate) == ("closest", 3, "MySQL stays the system of record")
    world.graph.update("adr", "Reviews happen weekly.")
    [pick] = views(world).supersede_choices(fresh(world, d)).documents
    assert (pick.state, pick.evidence_id, pick.text) == ("gone", None, "Reviews happen weekly.")
    world.graph.delete("adr")
    [pick] = views(world).supersede_choices(fresh(world, d)).documents
    assert (pick.state, pick.text, pick.passage) == ("removed", None, PASSAGE)


def test_the_form_offers_the_task_log_and_the_active_revision_of_a_cited_decision(world: World) -> None:
    world.history.record_event("pick-db", kind="message", role="user", payload="Postgres, please. " * 20)
    base = world.record("pick-db", "base", "Postgres").decision
    d = world.record(
        "pick-db", "db", "On Postgres", supports=[{"kind": "event", "task_name": "pick-db", "seq": 2}, dep(base)]
    ).decision
    choices = views(world).supersede_choices(d)
    assert [(e.seq, e.cited) for e in choices.events] == [(1, False), (2, True)]
    assert choices.events[0].preview == "Which database?" and len(choices.events[1].preview) <= 100
    [pick] = choices.decisions
    assert pick.offer == pick.cited and pick.token == f"decision {base.id}"
    doc, got = world.cite("adr", PASSAGE)
    new = world.traces.supersede_decision(
        str(base.id), conclusion="c", rationale="r", explanation="e", supports=[doc], fetched=[got]
    ).decision
    [pick] = views(world).supersede_choices(d).decisions
    assert (pick.cited.revision, pick.offer.revision, pick.token) == (1, 2, f"decision {new.id}")


def test_a_selection_is_cited_only_at_the_version_shown(world: World) -> None:
    world.graph.update("adr", "Preface.\n\n" + ADR)
    text = world.graph.current_text("adr")
    start = text.index("Reviews")
    v = views(world)
    evidence = v.cite_selection("adr", 2, start, start + 7)
    assert world.graph.fetch(evidence).text == "Reviews" and world.graph.fetch(evidence).activation_seq == 2
    # offsets counted another way (a browser's): the selected text is found again near them
    assert v.cite_selection("adr", 2, start - 2, start + 5, "Reviews") == evidence
    assert v.cite_selection("adr", 1, start, start + 7) is None  # version 1 is no longer current
    assert v.cite_selection("adr", 2, 5, 5) is None and v.cite_selection("adr", 2, 0, 10**6) is None
    assert v.cite_selection("nope", 1, 0, 3) is None


# -- dependants --------------------------------------------------------------------------


def test_cite_revision_n_instead_swaps_the_old_revision_for_the_new(world: World) -> None:
    base = world.record("pick-db", "base", "Postgres").decision
    d = world.record(
        "billing",
        "db",
        "Billing on Postgres",
        supports=[world.cite("adr", PASSAGE)[0], dep(base)],
        fetched=[world.cite("adr", PASSAGE)[1]],
    ).decision
    v = views(world)
    assert [x.swap for x in v.decision_review(base).dependant_views] == [False]  # base is still active
    doc, got = world.cite("adr", PASSAGE)
    new = world.traces.supersede_decision(
        str(base.id), conclusion="c", rationale="r", explanation="e", supports=[doc], fetched=[got]
    ).decision
    review = v.decision_review(fresh(world, base))
    [dependant] = review.dependant_views
    assert dependant.swap and dependant.name.label == "db · billing · revision 1 (active)"
    assert review.actions.replaced_by.revision == 2
    inputs, fetched = v.swapped_supports(fresh(world, d), base.id, new.id)
    assert inputs[1] == {"kind": "decision", "decision_id": str(new.id)} and len(fetched) == 1
    result = world.traces.supersede_decision(
        str(d.id),
        conclusion="Billing on Postgres",
        rationale="r",
        explanation="cite revision 2",
        supports=inputs,
        fetched=fetched,
    )
    assert result.recorded
    assert [str(s.decision_id) for s in result.decision.supports if s.kind == "decision"] == [str(new.id)]


def test_the_next_decision_of_a_group_is_the_one_after_it_in_queue_order(world: World) -> None:
    a = world.record("pick-db", "a", "Postgres").decision
    b = world.record("billing", "b", "Postgres too").decision
    world.graph.update("adr", "Preface.\n\n" + ADR)
    v = views(world)
    cause = "document:adr:2"
    queued = [str(d.id) for d in v.traces.list_decisions_for_review(None, limit=10, root_cause=cause).decisions]
    assert set(queued) == {str(a.id), str(b.id)}
    first, second = queued
    assert v.next_after_in_group(first, cause) == second
    assert v.next_after_in_group(second, cause) is None  # the group is done after its last one
    assert v.next_after_in_group(first, "document:zzz:9") is None
    assert v.next_after_in_group("00000000-0000-0000-0000-000000000000", cause) is None
    assert not hasattr(v, "next_in_group")  # one read of "the next in the group", not two


def test_and_next_lands_on_the_next_of_the_group_over_thinned_and_far_apart_positions(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A group flagged in units milliseconds apart (a document write's flag
    job: a million positions a millisecond), thinned by settling every other
    decision, with another group's decisions among its positions: from each
    decision, "and next" is the next open one of the group in queue order
    (on FalkorDB read through widening ranges of the position index)."""
    monkeypatch.setattr(_flag_jobs, "FLAG_BATCH", 3)
    world.graph.add("other", "other text")
    other, got = world.cite("other", "other")
    for i in range(3):
        assert world.record("billing", f"o{i}", "c", supports=[other], fetched=[got]).recorded
    doc, _ = world.cite("adr", PASSAGE)
    world.traces.load_decisions(
        [
            {"task_name": "pick-db", "choice_key": f"k{i:02d}", "conclusion": "c", "rationale": "r", "supports": [doc]}
            for i in range(18)
        ]
    )
    real, units = _flag_jobs.continue_job, []

    def later(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.003)  # each unit a few milliseconds after the last: millions of positions between
        if len(units) == 1:
            assert world.graph.update("other", "other changed").recorded  # another group among them
        units.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(_flag_jobs, "continue_job", later)
    assert world.graph.update("adr", "Preface.\n\n" + ADR).recorded
    monkeypatch.undo()
    assert len(units) >= 5  # 18 citers in units of 3
    cause, v = "document:adr:2", views(world)
    whole = [str(d.id) for d in v.traces.list_decisions_for_review(None, limit=20, root_cause=cause).decisions]
    for d in whole[3::2]:  # thinned past the first unit
        assert world.traces.reject_decision(d, reason="thinned").recorded
    group = [str(d.id) for d in v.traces.list_decisions_for_review(None, limit=20, root_cause=cause).decisions]
    assert len(whole) == 18 and sorted(group) == sorted(set(whole) - set(whole[3::2]))
    pos = {
        r["id"]: r["pos"]
        for r in world.store.read(
            world.project_id,
            "UNWIND $ids AS id MATCH (d:Decision {id: id}) RETURN d.id AS id, d.queue_pos AS pos",
            {"ids": group},
        )
    }
    assert max(pos[b] - pos[a] for a, b in itertools.pairwise(group)) > 64 * 4096  # ranges must widen
    for a, b in zip(group, [*group[1:], None], strict=True):
        assert v.next_after_in_group(a, cause) == b, group.index(a)


# -- what is offered is what succeeds ------------------------------------------------


def _deleted_document(w: World) -> Any:
    d = w.record("pick-db", "db", "Postgres").decision
    assert w.graph.delete("adr").recorded
    return d


def _deleted_then_added_again(w: World) -> Any:
    d = w.record("pick-db", "db", "Postgres").decision
    assert w.graph.delete("adr").recorded
    w.graph.add("adr", ADR)
    return d


def _moved(w: World) -> Any:
    d = w.record("pick-db", "db", "Postgres").decision
    w.graph.update("adr", "Preface.\n\n" + ADR)
    return d


def _changed(w: World) -> Any:
    d = w.record("pick-db", "db", "Postgres").decision
    w.graph.update("adr", ADR.replace("Postgres stays", "MySQL stays"))
    return d


def _redacted_event(w: World) -> Any:
    d = w.record("billing", "db", "Billing", supports=[{"kind": "event", "task_name": "pick-db", "seq": 1}]).decision
    assert w.retention.redact_event(str(w.history.fetch_event("pick-db", 1).event.id), reason="pii").recorded
    return d


def _event_of_a_deleted_task(w: World) -> Any:
    d = w.record("billing", "db", "Billing", supports=[{"kind": "event", "task_name": "pick-db", "seq": 1}]).decision
    assert w.retention.delete_task("pick-db").recorded
    return d


def _dependency(settle: str) -> Any:
    def make(w: World) -> Any:
        base = w.record("pick-db", "base", "Postgres").decision
        d = w.record(
            "billing",
            "db",
            "Billing on Postgres",
            supports=[{"kind": "event", "task_name": "pick-db", "seq": 1}, dep(base)],
        ).decision
        if settle == "rejected":
            assert w.traces.reject_decision(str(base.id), reason="wrong").recorded
        elif settle == "superseded":
            doc, got = w.cite("adr", PASSAGE)
            assert w.traces.supersede_decision(
                str(base.id), conclusion="P2", rationale="r", explanation="newer", supports=[doc], fetched=[got]
            ).recorded
        elif settle == "flagged":
            w.graph.update("adr", ADR.replace("Postgres stays", "MySQL stays"))
        elif settle == "moved":
            w.graph.update("adr", "Preface.\n\n" + ADR)
        return d

    return make


SITUATIONS = {
    "document deleted": _deleted_document,
    "document deleted then added again": _deleted_then_added_again,
    "passage moved": _moved,
    "passage changed": _changed,
    "event redacted": _redacted_event,
    "event's task deleted": _event_of_a_deleted_task,
    "depends on a rejected decision": _dependency("rejected"),
    "depends on a superseded decision": _dependency("superseded"),
    "depends on a flagged decision": _dependency("flagged"),
    "depends on a decision whose passage moved": _dependency("moved"),
}


@pytest.mark.parametrize("situation", list(SITUATIONS))
def test_reaffirm_is_offered_exactly_when_it_succeeds(world: World, situation: str) -> None:
    """The workbench offers Reaffirm when, and only when, reaffirm_decision
    records; before and after the review has run its course; one decision
    at a time and in a page of several."""
    d = SITUATIONS[situation](world)
    v = views(world)
    for _ in range(2):  # while the review is under way, then when it has finished
        now = fresh(world, d)
        offered = v.review_actions(now).reaffirm
        assert (
            v.review_actions_many([now, *world.traces.list_decisions("pick-db").page.decisions])[str(d.id)].reaffirm
            is offered
        )
        if not offered:  # a refused reaffirm changes nothing, so it can be tried here
            assert not world.as_("alice").reaffirm_decision(str(d.id)).recorded, situation
        while world.traces.continue_decision_review().moved:
            pass
    now = fresh(world, d)
    actions = v.review_actions(now)
    done = world.as_("alice").reaffirm_decision(str(d.id))
    assert actions.reaffirm is done.recorded, (situation, actions.blocked, done.error)
    if not actions.reaffirm:
        assert actions.blocked, "a refusal says why"
