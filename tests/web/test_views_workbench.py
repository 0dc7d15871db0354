"""The decision page and the queue card as a workbench (issue 15), through
Django's test client: decisions named, never shown as UUIDs; only the
actions that can succeed now, with the exact reason for the others;
refusals that name their actual cause; supersede by picks without
JavaScript and never a silent drop; "cite revision N instead"; "and next"."""

from __future__ import annotations

import re
from typing import Any

from django.utils.html import escape

from core.decisions import DecisionTraces
from core.knowledge import Graph
from core.models import DecisionStatus, DocumentSupport
from core.retention import HistoryRetention
from reviewer.store import get_store

from .conftest import Story
from .test_dashboard import decision

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def _traces(story: Story, agent: str = "planner") -> DecisionTraces:
    return DecisionTraces(get_store(), project_id=story.project, agent_id=agent)


def _graph(story: Story) -> Graph:
    return Graph(get_store(), project_id=story.project, agent_id="t")


def _text(body: str) -> str:
    """What a reader sees: the page without its tags, attributes and URLs."""
    body = re.sub(r"<(script|style)[^>]*>.*?</\1>", " ", body, flags=re.S)
    return re.sub(r"<[^>]+>", " ", body)


def _chain(story: Story) -> tuple[Any, Any, Any]:
    """A dependant of story.clear, then story.clear superseded: (dependant, old, new)."""
    traces = _traces(story)
    dependant = traces.record_decision(
        "on-call",
        choice_key="pager-rota",
        conclusion="Rota",
        rationale="r",
        supports=[{"kind": "decision", "decision_id": story.clear}],
    ).decision
    new = (
        _traces(story, "carol")
        .supersede_decision(
            story.clear,
            conclusion="MySQL 8",
            rationale="r",
            explanation="upgrade",
            supports=[{"kind": "event", "task_name": "choose-db", "seq": 1}],
        )
        .decision
    )
    return dependant, decision(story, story.clear), new


# -- names -----------------------------------------------------------------------------


def test_the_decision_page_names_every_decision_and_shows_no_uuid(story: Story, as_: Any) -> None:
    dependant, _old, new = _chain(story)
    for did in (story.clear, str(new.id), str(dependant.id)):
        text = _text(as_("reviewer").get(f"/p/{story.project}/decisions/{did}/").content.decode())
        assert not UUID.search(text), (did, UUID.search(text))
    old_page = as_("reviewer").get(f"/p/{story.project}/decisions/{story.clear}/").content.decode()
    assert "pager-rota · on-call · revision 1 (active)" in old_page  # a dependant
    assert "orders-db · on-call · revision 2 (active)" in old_page  # what replaced it
    dep_page = as_("reviewer").get(f"/p/{story.project}/decisions/{dependant.id}/").content.decode()
    assert "orders-db · on-call · revision 1 (superseded)" in dep_page  # what it depends on, in its history too
    assert dep_page.count("orders-db · on-call · revision 1 (superseded)") >= 3  # supports, depends on, history


# -- honest actions ---------------------------------------------------------------------


def test_a_changed_passage_says_why_instead_of_offering_reaffirm(story: Story, as_: Any) -> None:
    body = as_("reviewer").get(f"/p/{story.project}/decisions/{story.changed}/").content.decode()
    assert "This decision cannot be reaffirmed now" in body
    assert "the cited passage of oncall changed: an hour. → a day." in body
    assert f'action="/p/{story.project}/decisions/{story.changed}/reaffirm"' not in body
    assert "reaffirming can work" not in body
    moved = as_("reviewer").get(f"/p/{story.project}/decisions/{story.moved}/").content.decode()
    assert f'action="/p/{story.project}/decisions/{story.moved}/reaffirm"' in moved
    assert "reaffirming can work" in moved and "cannot be reaffirmed" not in moved


def test_the_queue_card_offers_only_what_can_succeed(story: Story, as_: Any) -> None:
    body = as_("reviewer").get(f"/p/{story.project}/review/").content.decode()
    cards = dict(re.findall(r'id="d-([0-9a-f-]{36})"(.*?)</article>', body, flags=re.S))
    # the queue's forms act and move on ("Reaffirm and next"): the card offers only what can succeed
    assert "Reaffirm and next</button>" in cards[story.moved] and "Cannot be reaffirmed" not in cards[story.moved]
    assert "Reaffirm and next</button>" not in cards[story.changed]
    assert "the cited passage of oncall changed: an hour. → a day." in cards[story.changed]
    assert "Reject and next</button>" in cards[story.changed]


def test_a_dependant_waiting_for_review_says_so(story: Story, as_: Any) -> None:
    traces = _traces(story)
    base = traces.record_decision(
        "on-call",
        choice_key="pager-ack-sla",
        conclusion="c",
        rationale="r",
        supports=[{"kind": "event", "task_name": "choose-db", "seq": 1}],
    ).decision
    d = traces.record_decision(
        "on-call",
        choice_key="rota",
        conclusion="c",
        rationale="r",
        supports=[{"kind": "decision", "decision_id": str(base.id)}],
    ).decision
    # the base is flagged through an event redaction: it needs review, the dependant waits
    HistoryRetention(get_store(), project_id=story.project, agent_id="dana").redact_event(story.event_id, reason="pii")
    body = as_("reviewer").get(f"/p/{story.project}/decisions/{d.id}/").content.decode()
    assert "its review is not finished" in body and "it depends on pager-ack-sla, which needs review" in body
    while traces.continue_decision_review().moved:
        pass
    body = as_("reviewer").get(f"/p/{story.project}/decisions/{d.id}/").content.decode()
    assert "its review is not finished" not in body and "it depends on pager-ack-sla, which needs review" in body


def test_a_settled_decision_offers_no_review_action_and_says_who_settled_it(story: Story, as_: Any) -> None:
    assert _traces(story, "carol").reject_decision(story.moved, reason="duplicate").recorded
    body = as_("reviewer").get(f"/p/{story.project}/decisions/{story.moved}/").content.decode()
    assert re.search(r"carol rejected this at \d\d:\d\d: duplicate", body)
    assert 'id="act"' not in body and "reaffirming can work" not in body and "/reaffirm" not in body


def test_a_viewer_sees_no_action_keys_or_hints(story: Story, as_: Any) -> None:
    body = as_("viewer").get(f"/p/{story.project}/decisions/{story.changed}/").content.decode()
    assert 'id="act"' not in body and "and next" not in body and "<kbd>" not in body
    assert "cannot be reaffirmed" not in body and "data-key" not in body and 'id="supersede"' not in body
    queue = as_("viewer").get(f"/p/{story.project}/review/").content.decode()
    assert "Cannot be reaffirmed" not in queue and "data-key" not in queue
    assert "<kbd>" not in queue and "Keys:" not in queue  # no keys to act with, so no key hints
    assert "Keys:" in as_("reviewer").get(f"/p/{story.project}/review/").content.decode()


# -- refusals name their cause ------------------------------------------------------------


def test_a_refused_reaffirm_names_the_changed_passage(story: Story, as_: Any) -> None:
    response = as_("reviewer").post(
        f"/p/{story.project}/decisions/{story.changed}/reaffirm",
        {"request_id": "r1", "explanation": "I think it holds"},
    )
    body = response.content.decode()
    assert response.status_code == 400
    assert "This decision cannot be reaffirmed: the cited passage of oncall changed: an hour. → a day." in body
    hx = (
        as_("reviewer")
        .post(
            f"/p/{story.project}/decisions/{story.changed}/reaffirm",
            {"request_id": "r2", "explanation": "x"},
            HTTP_HX_REQUEST="true",
        )
        .content.decode()
    )
    assert "the cited passage of oncall changed: an hour. → a day." in hx and 'class="card decision-card' in hx


def test_a_refusal_caused_by_another_person_says_who_did_what_when(story: Story, as_: Any) -> None:
    _chain(story)  # carol superseded story.clear
    response = as_("reviewer").post(
        f"/p/{story.project}/decisions/{story.clear}/reject", {"request_id": "j1", "reason": "Two databases"}
    )
    assert response.status_code == 400
    assert re.search(r"carol superseded this at \d\d:\d\d with revision 2\.", response.content.decode())


# -- supersede by picking, without JavaScript --------------------------------------------------


def _form(story: Story, client: Any, did: str) -> str:
    return client.get(f"/p/{story.project}/decisions/{did}/").content.decode()


def test_supersede_with_the_offered_passage_cites_version_2(story: Story, as_: Any) -> None:
    client = as_("reviewer")
    page = _form(story, client, story.changed)
    [candidate] = re.findall(r'name="doc-0" value="(span:[^"]+)"', page)
    assert "oncall version 2: “within a day.”" in page  # what the new revision will cite
    response = client.post(
        f"/p/{story.project}/decisions/{story.changed}/supersede",
        {
            "request_id": "p1",
            "conclusion": "A day",
            "rationale": "r",
            "explanation": "the policy says a day",
            "doc-0": candidate,
            "doc-0-version": "2",
        },
    )
    assert response.status_code == 302
    new = _traces(story).list_revisions(story.changed)[-1].decision
    [doc] = [s for s in new.supports if isinstance(s, DocumentSupport)]
    assert doc.recorded_activation_seq == 2 and _graph(story).fetch(doc.evidence_id).text == "within a day."


def test_supersede_with_offsets_typed_cites_that_text_of_version_2(story: Story, as_: Any) -> None:
    text = _graph(story).current_text("oncall")
    start = text.index("Owners answer pages")
    response = as_("reviewer").post(
        f"/p/{story.project}/decisions/{story.changed}/supersede",
        {
            "request_id": "p2",
            "conclusion": "A day",
            "rationale": "r",
            "explanation": "e",
            "doc-0": "selection",
            "doc-0-version": "2",
            "doc-0-start": start,
            "doc-0-end": start + 19,
        },
    )
    assert response.status_code == 302
    new = _traces(story).list_revisions(story.changed)[-1].decision
    assert _graph(story).fetch(new.supports[0].evidence_id).text == "Owners answer pages"


def test_a_document_is_never_dropped_silently(story: Story, as_: Any) -> None:
    client = as_("reviewer")
    url = f"/p/{story.project}/decisions/{story.changed}/supersede"
    base = {"conclusion": "A day", "rationale": "r", "explanation": "e", "add": "event choose-db 1"}
    unpicked = client.post(url, {**base, "request_id": "d1"})
    assert unpicked.status_code == 400 and "Choose what the new revision cites of oncall" in unpicked.content.decode()
    dropped = client.post(url, {**base, "request_id": "d2", "doc-0": "drop"})
    body = dropped.content.decode()
    assert dropped.status_code == 400 and "oncall will no longer be cited" in body
    assert re.search(r'name="doc-0" value="drop"[^>]*checked', body)  # what they chose is kept
    assert decision(story, story.changed).status is DecisionStatus.active
    confirmed = client.post(url, {**base, "request_id": "d3", "doc-0": "drop", "confirm_drop": "on"})
    assert confirmed.status_code == 302
    assert decision(story, story.changed).status is DecisionStatus.superseded


def test_a_stale_pick_is_refused_and_changes_nothing(story: Story, as_: Any) -> None:
    client = as_("reviewer")
    url = f"/p/{story.project}/decisions/{story.changed}/supersede"
    _graph(story).update("oncall", "Owners answer pages within two days.")
    stale = client.post(
        url,
        {
            "request_id": "s1",
            "conclusion": "c",
            "rationale": "r",
            "explanation": "e",
            "doc-0": "selection",
            "doc-0-version": "2",
            "doc-0-start": "0",
            "doc-0-end": "6",
        },
    )
    assert (
        stale.status_code == 400 and "oncall changed while you were choosing (now version 3)" in stale.content.decode()
    )
    assert decision(story, story.changed).status is DecisionStatus.active


def test_the_form_offers_the_task_log_and_decisions_by_name(story: Story, as_: Any) -> None:
    client = as_("reviewer")
    page = _form(story, client, story.xss)  # on-call, citing event 1 of choose-db
    assert 'value="event choose-db 1"' in page  # the cited event, kept
    _traces(story).record_decision(
        "choose-db",
        choice_key="cache",
        conclusion="Redis",
        rationale="r",
        supports=[{"kind": "event", "task_name": "choose-db", "seq": 1}],
    )
    response = client.post(
        f"/p/{story.project}/decisions/{story.xss}/supersede",
        {
            "request_id": "n1",
            "conclusion": "c",
            "rationale": "r",
            "explanation": "e",
            "keep": "event choose-db 1",
            "cite_key": "cache",
            "cite_task": "choose-db",
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    new = _traces(story).list_revisions(story.xss)[-1].decision
    assert [s.kind for s in new.supports] == ["event", "decision"]
    missing = client.post(
        f"/p/{story.project}/decisions/{new.id}/supersede",
        {"request_id": "n2", "conclusion": "c", "rationale": "r", "explanation": "e", "cite_key": "nope"},
    )
    assert (
        missing.status_code == 400
        and escape("No active decision “nope” in task “on-call”.") in missing.content.decode()
    )


def test_a_span_typed_with_the_document_key_is_accepted(story: Story, as_: Any) -> None:
    text = _graph(story).current_text("oncall")
    start = text.index("within a day")
    response = as_("reviewer").post(
        f"/p/{story.project}/decisions/{story.changed}/supersede",
        {
            "request_id": "k1",
            "conclusion": "c",
            "rationale": "r",
            "explanation": "e",
            "doc-0": "drop",
            "confirm_drop": "on",
            "add": f"span:oncall:2:{start}-{start + 12}",
        },
    )
    assert response.status_code == 302
    new = _traces(story).list_revisions(story.changed)[-1].decision
    assert _graph(story).fetch(new.supports[0].evidence_id).text == "within a day"


# -- cite revision N instead, and next ----------------------------------------------------------


def test_cite_revision_n_instead_in_one_step(story: Story, as_: Any) -> None:
    dependant, _old, new = _chain(story)
    page = as_("reviewer").get(f"/p/{story.project}/decisions/{story.clear}/").content.decode()
    assert "Cite revision 2 instead" in page
    assert escape("Cites revision 2 of orders-db instead of revision 1, which it replaced.") in page
    assert (
        "Cite revision 2 instead"
        not in as_("viewer").get(f"/p/{story.project}/decisions/{story.clear}/").content.decode()
    )
    response = as_("reviewer").post(
        f"/p/{story.project}/decisions/{dependant.id}/cite-instead",
        {"request_id": "c1", "old": story.clear, "new": str(new.id), "explanation": "Follows revision 2."},
    )
    assert response.status_code == 302
    latest = _traces(story).list_revisions(str(dependant.id))[-1]
    assert latest.explanation == "Follows revision 2." and latest.decision.conclusion == "Rota"
    assert [str(s.decision_id) for s in latest.decision.supports] == [str(new.id)]
    again = as_("reviewer").post(
        f"/p/{story.project}/decisions/{latest.decision.id}/cite-instead",
        {"request_id": "c2", "old": story.clear, "new": str(new.id), "explanation": "again"},
    )
    assert again.status_code == 400 and "does not cite that revision" in again.content.decode()


def test_and_next_lands_on_the_next_decision_of_the_group(story: Story, as_: Any) -> None:
    graph, traces = _graph(story), _traces(story)
    text = "Pages are answered by the owner.\n\nWe review the runbook monthly."
    graph.add("runbook", text)
    ids = []
    for key in ("a", "b"):
        at = text.index("We review")
        evidence = graph.span_evidence_id("runbook", at, at + 9)
        ids.append(
            str(
                traces.record_decision(
                    "choose-db",
                    choice_key=key,
                    conclusion="c",
                    rationale="r",
                    supports=[{"kind": "document", "evidence_id": evidence}],
                    fetched=[graph.fetch(evidence)],
                ).decision.id
            )
        )
    graph.update("runbook", "Another preface.\n\n" + text)
    client = as_("reviewer")
    page = client.get(f"/p/{story.project}/decisions/{ids[0]}/").content.decode()
    assert "Reaffirm and next" in page
    first = client.post(
        f"/p/{story.project}/decisions/{ids[0]}/reaffirm", {"request_id": "n1", "explanation": "holds", "then": "next"}
    )
    assert first.status_code == 302 and first["Location"] == f"/p/{story.project}/decisions/{ids[1]}/"
    last = client.post(
        f"/p/{story.project}/decisions/{ids[1]}/reject", {"request_id": "n2", "reason": "dup", "then": "next"}
    )
    assert last.status_code == 302 and last["Location"] == f"/p/{story.project}/review/"
