"""Re-anchoring (core/_supports.py ``find_nearest``): the nearest copy of a
cited passage in a newer text, found in time linear in the text whatever
the text repeats, and a hard limit past which a support reads as not
re-anchorable (never as a wrong anchor). The rule agrees with the naive
one (every occurrence, the closest, the earlier of two as close) on small
random texts; hostile documents re-anchor on every backend within a
generous bound (each took from 5 to 70 seconds before)."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import _supports
from core._supports import closest_match, find_nearest
from core.models import WriteErrorCode
from core.review_views import ReviewViews
from tests.hostile_data import raised_limit

from .test_decisions import World
from .test_review_views import world  # noqa: F401  (the fixture)

#: the CPU time of this process (not the store's) one hostile operation may
#: take on a loaded machine: it took 5 to 70 s, it takes milliseconds
BOUND = 2.0


def naive(text: str, passage: str, near: int) -> int | None:
    """The rule as first written: every occurrence, the closest kept (the
    first found of two as close)."""
    best = None
    at = text.find(passage)
    while at != -1:
        if best is None or abs(at - near) < abs(best - near):
            best = at
        at = text.find(passage, at + 1)
    return best


texts = st.text(alphabet="ab", max_size=40)
passages = st.text(alphabet="ab", max_size=6)


@settings(max_examples=1500, deadline=None)
@given(texts, passages, st.integers(min_value=-5, max_value=50), st.integers(min_value=1, max_value=8))
def test_the_nearest_occurrence_is_the_naive_rules(text: str, passage: str, near: int, radius: int) -> None:
    """Every first radius (so rings of every size are crossed) gives the
    naive rule's answer, overlapping copies and ties included."""
    assert _supports._nearest(text, passage, near, radius) == naive(text, passage, near)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet="abc\n ", max_size=300), st.data())
def test_a_passage_of_the_text_is_found_where_the_naive_rule_finds_it(text: str, data: st.DataObject) -> None:
    start = data.draw(st.integers(min_value=0, max_value=len(text)))
    end = data.draw(st.integers(min_value=start, max_value=min(len(text), start + 30)))
    near = data.draw(st.integers(min_value=0, max_value=len(text) + 5))
    assert find_nearest(text, text[start:end], near) == naive(text, text[start:end], near)


def test_a_self_repeating_text_costs_one_pass() -> None:
    """200k "a"s cited over 20k, then one character changed inside the
    cited place: the nearest copy is the earlier one (10,000 before, against
    10,001 after); and 2 MiB cited over 500k with the change at its far end."""
    text = "a" * 200_000
    changed = text[:20_000] + "b" + text[20_001:]
    began = time.process_time()
    assert find_nearest(changed, "a" * 20_000, 10_000) == 0
    assert find_nearest(text + "b", "a" * 20_000, 180_000) == 180_000
    big = "a" * 2**21
    assert find_nearest(big[:-1000] + "b" + big[-999:], "a" * 500_000, len(big) - 500_000) == len(big) - 1000 - 500_000
    assert find_nearest(big, "a" * 499_999 + "b", 1_000_000) is None
    assert time.process_time() - began < BOUND


def test_past_the_search_limit_nothing_is_anchored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_supports, "SEARCH_LIMIT", 100)
    assert find_nearest("a" * 100, "a", 5) is None and find_nearest("a" * 99, "a", 5) == 5
    assert closest_match("x " * 60, "x " * 60, 0, 4) is None  # no rewording is guessed either


def hostile(world: World, length: int, cited: int) -> str:
    """A decision citing ``cited`` of a document of ``length`` "a"s from the
    middle, the document then changed by one character in the middle of the
    cited place: the passage stands in every place that misses it, nearest
    ending just before it (the one after is a character farther)."""
    text = "a" * length
    start = (length - cited) // 2
    with raised_limit():  # a passage cited before the limits on new ones existed
        world.graph.add("aaa", text)
        evidence = world.graph.span_evidence_id("aaa", start, start + cited)
        d = world.record(
            "pick-db",
            "aaa",
            "As",
            supports=[{"kind": "document", "evidence_id": evidence}],
            fetched=[world.graph.fetch(evidence)],
        ).decision
        world.graph.update("aaa", text[: start + cited // 2] + "b" + text[start + cited // 2 + 1 :])
    return str(d.id)


@pytest.mark.parametrize(("length", "cited"), [(200_000, 20_000), (600_000, 120_000)])
def test_a_hostile_document_re_anchors_on_the_pages_and_in_reaffirming(
    world: World,
    length: int,
    cited: int,
) -> None:
    d_id = hostile(world, length, cited)
    start, half = (length - cited) // 2, cited // 2
    nearest = start + half - cited  # it ends just before the changed character
    views = ReviewViews(world.store, project_id=world.project_id)
    d = world.traces.get_decision(d_id).decision
    began = time.process_time()
    review = views.decision_review(d)
    assert [v.state for v in review.supports] == ["moved"] and review.can_reaffirm
    [choice] = review.choices
    assert world.graph.fetch(choice.token).char_start == nearest
    [pick] = views.supersede_choices(d).documents
    assert (pick.state, pick.start) == ("moved", nearest)
    assert views.review_actions_many([d])[d_id].reaffirm
    assert time.process_time() - began < 2 * BOUND
    began = time.process_time()
    assert world.as_("alice").reaffirm_decision(d_id).recorded
    assert time.process_time() - began < BOUND
    assert world.graph.fetch(world.traces.get_decision(d_id).decision.supports[0].evidence_id).char_start == nearest


def test_a_support_past_the_search_limit_reads_as_not_re_anchorable(
    world: World,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Past the limit the support is never anchored anywhere: not offered,
    reaffirming refused, and the page says why in words that are true."""
    d_id = hostile(world, 2_000, 200)
    monkeypatch.setattr(_supports, "SEARCH_LIMIT", 1_000)
    views = ReviewViews(world.store, project_id=world.project_id)
    d = world.traces.get_decision(d_id).decision
    review = views.decision_review(d)
    assert [v.state for v in review.supports] == ["changed"] and review.choices == []
    assert review.actions.blocked == ["aaa is too long to find the cited passage in its current text"]
    [pick] = views.supersede_choices(d).documents
    assert pick.state == "gone" and pick.evidence_id is None
    assert world.as_("alice").reaffirm_decision(d_id).error is WriteErrorCode.cannot_revalidate
