"""Hardening of the dashboard (issue 16): pages for signed-in people are not
cached, a redacted event's hash is a steward's to see, and a project id of
any text is reachable on every page."""

from __future__ import annotations

import html
import re
import urllib.parse
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser
from django.http import HttpResponse
from django.test import Client, RequestFactory
from django.urls import resolve, reverse
from django.utils.html import escape

from core.decisions import DecisionTraces
from core.history import ConversationHistory
from core.knowledge import Graph
from core.retention import HistoryRetention
from reviewer.middleware import NoStoreForSignedInMiddleware
from reviewer.store import get_store, reset_store

from .conftest import Story, make_user

# -- Cache-Control: no-store on every page a signed-in person sees -------------------


def pages(story: Story) -> list[str]:
    p = {"project": story.project}
    return [
        reverse("home"),
        reverse("overview", kwargs=p),
        reverse("queue", kwargs=p),
        reverse("decision", kwargs={**p, "decision_id": story.moved}),
        reverse("conflicts", kwargs=p),
        reverse("tasks", kwargs=p),
        reverse("task", kwargs=p) + "?name=on-call",
        reverse("events", kwargs=p) + "?task=choose-db",
        reverse("document", kwargs=p) + "?key=adr",
        reverse("activity", kwargs=p),
        reverse("tokens", kwargs=p),
        reverse("redact", kwargs=p) + f"?event_id={story.event_id}",
        reverse("healthz"),
    ]


def test_every_page_for_a_signed_in_person_is_sent_with_no_store(story: Story, as_: Any) -> None:
    client = as_("steward")
    for url in pages(story):
        response = client.get(url)
        assert response.status_code in (200, 302), url
        assert "no-store" in response.get("Cache-Control", ""), url
    # an htmx fragment and the answer to a form as well
    fragment = client.get(reverse("queue", kwargs={"project": story.project}), HTTP_HX_REQUEST="true")
    assert "no-store" in fragment["Cache-Control"]
    refused = client.post(reverse("reject", kwargs={"project": story.project, "decision_id": story.moved}), {})
    assert refused.status_code == 400 and "no-store" in refused["Cache-Control"]  # the form again, refused


def test_static_files_and_anonymous_pages_keep_their_own_cache_headers() -> None:
    class Signed:
        is_authenticated = True

    def long_cached(request: Any) -> HttpResponse:
        response = HttpResponse("body{}", content_type="text/css")
        response["Cache-Control"] = "max-age=315360000, public, immutable"
        return response

    middleware = NoStoreForSignedInMiddleware(long_cached)
    request = RequestFactory().get("/static/css/reviewer.css")
    request.user = Signed()
    assert middleware(request)["Cache-Control"] == "max-age=315360000, public, immutable"
    request = RequestFactory().get("/login/")
    request.user = AnonymousUser()
    assert middleware(request)["Cache-Control"] == "max-age=315360000, public, immutable"
    request = RequestFactory().get("/")
    request.user = Signed()
    assert "no-store" in middleware(request)["Cache-Control"]


# -- a redacted event's hash ---------------------------------------------------------


def test_a_redacted_events_hash_is_shown_to_stewards_only(story: Story, as_: Any) -> None:
    store = get_store()
    history = ConversationHistory(store, project_id=story.project, agent_id="audit")
    history.record_event("choose-db", kind="message", role="user", payload="kept in the open")
    HistoryRetention(store, project_id=story.project, agent_id="steward").redact_event(
        story.event_id, reason="a password"
    )
    redacted = history.fetch_event("choose-db", 1).event
    open_one = history.fetch_event("choose-db", 2).event
    assert redacted.redacted_at is not None and redacted.payload_sha256
    secret_hash, open_hash = redacted.payload_sha256[:12], open_one.payload_sha256[:12]
    url = reverse("events", kwargs={"project": story.project}) + "?task=choose-db"
    for role in ("viewer", "reviewer"):
        body = as_(role).get(url).content.decode()
        assert "redacted" in body and open_hash in body, role  # the page itself is whole
        assert secret_hash not in body, role  # a guess of a short secret cannot be checked against it
    assert secret_hash in as_("steward").get(url).content.decode()
    decision = as_("viewer").get(reverse("decision", kwargs={"project": story.project, "decision_id": story.clear}))
    activity = as_("viewer").get(reverse("activity", kwargs={"project": story.project}))
    for response in (decision, activity):
        assert response.status_code == 200 and secret_hash not in response.content.decode()


# -- project ids of any text ---------------------------------------------------------

ODD_IDS = [
    "a/b",
    "what?x=1",
    "hash#frag",
    "with space",
    "50%",
    "%2F%",
    "<script>alert(1)</script>",
    "проект/名前",
    "..",
    "back\\slash",
]


@pytest.fixture(params=ODD_IDS)
def odd(request: Any, db: None) -> Iterator[tuple[str, str]]:
    """A project named with ``request.param``: a task, a document, a decision
    its change flagged."""
    project = request.param
    store = get_store()
    history = ConversationHistory(store, project_id=project, agent_id="planner")
    graph = Graph(store, project_id=project, agent_id="ingest")
    traces = DecisionTraces(store, project_id=project, agent_id="planner")
    history.create_task("choose-db", goal="Choose")
    history.record_event("choose-db", kind="message", role="user", payload="Which DB?")
    graph.add("adr", "Orders stay on Postgres.")
    evidence = graph.span_evidence_id("adr", 0, 24)
    d = traces.record_decision(
        "choose-db",
        choice_key="orders-db",
        conclusion="Postgres",
        rationale="ADR",
        supports=[{"kind": "document", "evidence_id": evidence}],
        fetched=[graph.fetch(evidence)],
    ).decision
    graph.update("adr", "Preface. Orders stay on Postgres.")
    plain = "plain-" + uuid.uuid4().hex[:8]  # a second project: the home page lists both
    ConversationHistory(store, project_id=plain, agent_id="planner").create_task("t", goal="g")
    yield project, str(d.id)
    get_store().drop_project(project)
    get_store().drop_project(plain)
    reset_store()


def _links(body: str) -> set[str]:
    return {html.unescape(h) for h in re.findall(r'href="(/p/[^"]+)"', body)}


def test_a_project_id_of_any_text_is_reachable_on_every_page(odd: tuple[str, str]) -> None:
    project, decision = odd
    staff = Client()
    staff.force_login(make_user("root", "steward", [project, "other-project"], staff=True))
    home = staff.get("/")
    assert home.status_code == 200  # was a NoReverseMatch (500) for an id such as a/b
    body = home.content.decode()
    assert escape(project) in body and "<script>alert" not in body
    overview = reverse("overview", kwargs={"project": project})
    assert f'href="{overview}"' in body
    seen, todo = set(), {overview, reverse("decision", kwargs={"project": project, "decision_id": decision})}
    while todo:  # every project page a link reaches, and the links on those
        url = todo.pop()
        seen.add(url)
        response = staff.get(url)
        assert response.status_code == 200, url
        if response.streaming:  # a download of the activity log: reachable, and no page to crawl
            assert b"".join(response.streaming_content) is not None
            continue
        page = response.content.decode()
        assert escape(project) in page and "<script>alert" not in page, url  # this project's page, its id escaped
        todo |= {u for u in _links(page) if u not in seen and "/redact" not in u}
    assert any("/decisions/" in u for u in seen) and any("/events/" in u for u in seen), seen
    # an action, and the way back to the page it came from
    queue = reverse("queue", kwargs={"project": project})
    done = staff.post(
        reverse("reject", kwargs={"project": project, "decision_id": decision}),
        {"reason": "wrong", "request_id": "odd-reject", "next": queue},
    )
    assert done.status_code == 302 and done["Location"] == queue
    assert DecisionTraces(get_store(), project_id=project, agent_id="t").get_decision(
        decision
    ).decision.status.value == ("rejected")


def test_the_queue_cards_act_on_their_own_decision_in_a_project_of_any_id(odd: tuple[str, str]) -> None:
    """The cards' links are built once per page from a reversed shape; each
    form and link still names this project and this card's decision."""
    project, decision = odd
    staff = Client()
    staff.force_login(make_user("root", "steward", [project], staff=True))
    page = staff.get(reverse("queue", kwargs={"project": project})).content.decode()
    card = page[page.index(f'id="d-{decision}"') :]
    actions = {html.unescape(a) for a in re.findall(r'action="(/p/[^"]+)"', card)}
    claim = reverse("claim_action", kwargs={"project": project, "action": "claim"})
    assert actions == {
        claim,
        *(
            reverse("queue_act", kwargs={"project": project, "decision_id": decision, "action": action})
            for action in ("reaffirm", "reject")
        ),
    }, actions
    for url in actions - {claim}:
        match = resolve(urllib.parse.unquote(url))
        assert match.kwargs["project"] == project and str(match.kwargs["decision_id"]) == decision
    assert resolve(urllib.parse.unquote(claim)).kwargs["project"] == project
    claim_form = card[card.index(f'action="{escape(claim)}"') :]
    assert f'value="{decision}"' in claim_form[: claim_form.index("</form>")]  # the claim names this card's decision
    detail = reverse("decision", kwargs={"project": project, "decision_id": decision})
    assert f'data-detail="{escape(detail)}"' in card and f'href="{escape(detail)}#supersede"' in card
    task = reverse("task", kwargs={"project": project})
    assert f'href="{escape(task)}?name=choose-db"' in card


def test_card_links_find_the_decision_after_the_project_even_when_the_project_looks_like_one() -> None:
    from django.template import Context, Template

    zero = "00000000-0000-0000-0000-000000000000"
    d = uuid.UUID(int=1)
    for project in [zero, f"{zero}/x", *ODD_IDS]:
        for flow in (False, True):
            out = Template("{% load reviewer_tags %}{% card_links d as u %}{{ u.detail }} {{ u.reaffirm }}").render(
                Context({"d": type("D", (), {"id": d})(), "project": project, "flow": flow})
            )
            kind = "queue_act" if flow else "reaffirm"
            args = {"action": "reaffirm"} if flow else {}
            detail = reverse("decision", kwargs={"project": project, "decision_id": d})
            act = reverse(kind, kwargs={"project": project, "decision_id": d, **args})
            assert out == f"{escape(detail)} {escape(act)}", (project, flow, out)


def test_decision_url_is_the_decision_pages_url_for_any_project() -> None:
    """``{% decision_url %}`` (conflicts, document, task pages) gives what
    ``{% url 'decision' %}`` gives, escaped alike; an id that is no UUID is
    refused by Django as before."""
    from django.template import Context, Template
    from django.urls import NoReverseMatch

    zero = "00000000-0000-0000-0000-000000000000"
    page = Template("{% load reviewer_tags %}{% for i in ids %}{% decision_url project i %} {% endfor %}")
    django_page = Template("{% for i in ids %}{% url 'decision' project i %} {% endfor %}")
    ids = [uuid.UUID(int=1), str(uuid.uuid4()), uuid.uuid4()]
    for project in [zero, f"{zero}/x", *ODD_IDS]:
        context = {"project": project, "ids": ids}
        assert page.render(Context(context)) == django_page.render(Context(context)), project
    with pytest.raises(NoReverseMatch):
        page.render(Context({"project": "acme", "ids": ["not-a-uuid"]}))


def test_the_project_converter_round_trips_any_text() -> None:
    for project in [*ODD_IDS, "acme", "%", "%%25", ".", "...", "a.b", "\u202e"]:
        url = reverse("queue", kwargs={"project": project})
        assert url.count("/") == 4, url  # p/<one segment>/review/
        path = urllib.parse.unquote(url)  # as a WSGI server hands the path over
        match = resolve(path)
        assert match.url_name == "queue" and match.kwargs["project"] == project, (project, url)
    assert reverse("queue", kwargs={"project": "acme"}) == "/p/acme/review/"  # plain ids read as before


# -- bidi, zero-width and control characters in agent text ---------------------------

BIDI = [chr(c) for c in [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]]
ZERO_WIDTH = ["\u200b", "\u200c", "\u200d", "\u200e", "\u200f", "\u2060", "\ufeff", "\u00ad", "\u061c"]
CONTROL = ["\x00", "\x07", "\x1b", "\x7f", "\x85", "\u2028", "\u2029"]


def test_every_reordering_or_hidden_character_is_shown_as_its_code() -> None:
    from reviewer.visible import agent_html, raw_marked_html, visible_text

    for ch in BIDI + ZERO_WIDTH + CONTROL:
        code = f"⟨U+{ord(ch):04X}⟩"
        assert agent_html(f"a{ch}b") == f"<bdi>a{code}b</bdi>", repr(ch)
        assert visible_text(f"a{ch}b") == f"a{code}b", repr(ch)
        # the picker keeps the character (offsets count it), inert, with its code for CSS to draw
        assert raw_marked_html(f"a{ch}<") == f'a<span class="cc" data-cc="U+{ord(ch):04X}">{ch}</span>&lt;'
    # what is ordinary text stays: tabs, line breaks, right-to-left letters, emoji
    for text in ("a\tb\nc\r\n", "שלום עולם", "مرحبا", "日本語", "café"):
        assert agent_html(text) == f"<bdi>{escape(text)}</bdi>"
    assert agent_html(3) == 3 and agent_html(None) is None


def test_a_right_to_left_override_cannot_reorder_the_queue(story: Story, as_: Any) -> None:
    traces = DecisionTraces(get_store(), project_id=story.project, agent_id="planner\u202e")
    d = traces.record_decision(
        "on-call",
        choice_key="rlo\u202e-key",
        conclusion="Amount: \u202e$100 paid\u202c on 2026-01-02",
        rationale="r",
        supports=[{"kind": "event", "task_name": "choose-db", "seq": 1}],
    ).decision
    body = as_("viewer").get(reverse("decision", kwargs={"project": story.project, "decision_id": str(d.id)}))
    page = body.content.decode()
    assert "\u202e" not in page and "\u202c" not in page
    assert "<bdi>Amount: ⟨U+202E⟩$100 paid⟨U+202C⟩ on 2026-01-02</bdi>" in page
    assert "<bdi>rlo⟨U+202E⟩-key</bdi>" in page and "<bdi>planner⟨U+202E⟩</bdi>" in page
    assert "<title>rlo⟨U+202E⟩-key" in page
    css = (Path(__file__).resolve().parents[2] / "static/css/reviewer.css").read_text()
    assert "unicode-bidi: isolate" in css


def test_numbers_from_the_environment_are_read_strictly(monkeypatch: pytest.MonkeyPatch) -> None:
    """A setting that must be a whole number is refused with its name and
    what was given (never a traceback from ``int``); zero only where it
    means something (an auth database connection per request)."""
    from django.core.exceptions import ImproperlyConfigured

    from reviewer.env import env_int, env_positive_int

    monkeypatch.setenv("REVIEWER_DB_CONN_MAX_AGE", "0")
    assert env_int("REVIEWER_DB_CONN_MAX_AGE", 60, minimum=0) == 0
    monkeypatch.delenv("REVIEWER_DB_CONN_MAX_AGE")
    assert env_int("REVIEWER_DB_CONN_MAX_AGE", 60, minimum=0) == 60
    for bad in ("-1", "sixty", "1.5"):
        monkeypatch.setenv("REVIEWER_DB_CONN_MAX_AGE", bad)
        with pytest.raises(
            ImproperlyConfigured, match=f"REVIEWER_DB_CONN_MAX_AGE must be a whole number of at least 0, not '{bad}'"
        ):
            env_int("REVIEWER_DB_CONN_MAX_AGE", 60, minimum=0)
    monkeypatch.setenv("REVIEWER_API_RATE", "0")
    with pytest.raises(ImproperlyConfigured, match="REVIEWER_API_RATE must be a whole number of at least 1"):
        env_positive_int("REVIEWER_API_RATE", 12000)
