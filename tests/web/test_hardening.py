"""Hardening of the dashboard (issue 16): pages for signed-in people are not
cached, and a redacted event's hash is a steward's to see."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AnonymousUser
from django.http import HttpResponse
from django.test import RequestFactory
from django.urls import reverse

from core.history import ConversationHistory
from core.retention import HistoryRetention
from reviewer.middleware import NoStoreForSignedInMiddleware
from reviewer.store import get_store

from .conftest import Story

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
