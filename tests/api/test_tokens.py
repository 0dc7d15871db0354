"""Who may use the API: a live token of the project, for what its role
allows; the limits per token; a store that is down."""

from __future__ import annotations

import io
import uuid
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client, override_settings

from core.history import ConversationHistory
from reviewer import store as shared
from reviewer.api.tokens import create_token, find_token, revoke
from reviewer.models import ApiToken

from .conftest import Api


def test_a_token_of_another_project_sees_nothing_there(api: Api) -> None:
    api.call("POST", "tasks", {"name": "t", "goal": "g"})
    other = "api-other-" + uuid.uuid4().hex[:6]
    _, foreign = create_token(project_id=other, name="foreign", agent_id="foreign")
    for method, tail, body in [
        ("GET", "tasks/t", None),
        ("GET", "review", None),
        ("POST", "tasks/t/events", {"kind": "note", "payload": "x"}),
        ("POST", "tasks", {"name": "u", "goal": "g"}),
    ]:
        assert api.call(method, tail, body, token=foreign).status_code == 404, tail
    # and the project's own token sees nothing of the other project
    assert api.call("GET", "tasks", project=other).status_code == 404
    history = ConversationHistory(api.store, project_id=api.project, agent_id="audit")
    assert history.get_task("t").view.last_event_seq == 0 and not history.get_task("u").found


def test_revoked_missing_and_forged_tokens_are_401(api: Api) -> None:
    assert api.call("GET", "tasks").status_code == 200
    revoke(find_token(api.token))
    for token in (api.token, "rvw_forged", "not-even-a-token"):
        response = api.call("POST", "tasks", {"name": "t", "goal": "g"}, token=token)
        assert response.status_code == 401 and response["WWW-Authenticate"] == "Bearer", token
    assert Client().get(api.url("tasks")).status_code == 401
    assert not ConversationHistory(api.store, project_id=api.project, agent_id="audit").get_task("t").found


def test_an_automation_token_reads_and_reviews_but_records_no_work(api: Api) -> None:
    api.call("POST", "tasks", {"name": "t", "goal": "g"})
    for tail, body in [
        ("tasks/t/events", {"kind": "note", "payload": "x"}),
        ("tasks/t/events/batch", {"events": [{"kind": "note", "payload": "x"}]}),
        ("tasks", {"name": "u", "goal": "g"}),
        ("documents", {"key": "d", "text": "x"}),
    ]:
        assert api.call("POST", tail, body, token=api.review_token).status_code == 403, tail
    assert api.call("GET", "tasks/t", token=api.review_token).json()["last_event_seq"] == 0
    assert api.call("POST", "review/continue", {}, token=api.review_token).status_code == 200


def test_the_author_is_the_tokens_agent_and_last_use_is_noted(api: Api) -> None:
    assert find_token(api.token).last_used_at is None
    made = api.call("POST", "tasks", {"name": "t", "goal": "g"}).json()
    assert made["task"]["author"] == "planner"
    kept = ApiToken.objects.get(digest=find_token(api.token).digest)  # what the tokens page and command read
    assert kept.agent_id == "planner" and kept.last_used_at is not None


def test_tokens_are_kept_only_as_hashes(api: Api) -> None:
    for record in ApiToken.objects.filter(project_id=api.project):
        assert api.token not in (record.digest, record.prefix, record.name)
        assert len(record.digest) == 64


@override_settings(REVIEWER_API_RATE=3)
def test_the_rate_limit_is_per_token_with_retry_after(api: Api) -> None:
    from django.core.cache import cache

    cache.clear()
    answers = [api.call("GET", "tasks").status_code for _ in range(4)]
    assert answers == [200, 200, 200, 429]
    limited = api.call("GET", "tasks")
    assert limited.status_code == 429 and 1 <= int(limited["Retry-After"]) <= 60
    assert api.call("GET", "tasks", token=api.review_token).status_code == 200  # another token has its own count
    cache.clear()


@override_settings(REVIEWER_API_MAX_BODY=1000)
def test_a_body_over_the_limit_is_413_and_records_nothing(api: Api) -> None:
    api.call("POST", "tasks", {"name": "t", "goal": "g"})
    too_big = api.call("POST", "tasks/t/events", {"kind": "note", "payload": "x" * 2000})
    assert too_big.status_code == 413 and "1000" in too_big.json()["detail"]
    assert api.call("POST", "tasks/t/events", {"kind": "note", "payload": "x" * 500}).status_code == 200
    assert api.call("GET", "tasks/t").json()["last_event_seq"] == 1


def test_a_store_that_is_down_is_503_with_retry_after(api: Api) -> None:
    with override_settings(REVIEWER_STORE_URL="falkordb://127.0.0.1:1"):
        shared._store = None
        try:
            down = api.call("POST", "tasks", {"name": "t", "goal": "g"})
            read = api.call("GET", "review")
        finally:
            shared.reset_store()
            shared._store = api.store
    for response in (down, read):
        assert response.status_code == 503 and response["Retry-After"] == "5"
        assert "unavailable" in response.json()["detail"]
    assert api.call("POST", "tasks", {"name": "t", "goal": "g"}).status_code == 200


def test_the_command_creates_lists_and_revokes_tokens(db: None) -> None:
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "api_token",
        "create",
        "--project",
        "acme",
        "--name",
        "nightly",
        "--agent-id",
        "night-bot",
        "--role",
        "automation",
        stdout=out,
        stderr=err,
    )
    token = out.getvalue().strip()
    record = find_token(token)
    assert record is not None and record.role == "automation" and record.agent_id == "night-bot"
    assert "shown once" in err.getvalue()
    listed = io.StringIO()
    call_command("api_token", "list", "--project", "acme", stdout=listed)
    assert "night-bot" in listed.getvalue() and token not in listed.getvalue()
    call_command("api_token", "revoke", "--project", "acme", "--agent-id", "night-bot", stdout=io.StringIO())
    assert find_token(token).revoked_at is not None
    from django.core.management.base import CommandError

    with pytest.raises(CommandError):  # one token per agent id in a project
        call_command(
            "api_token",
            "create",
            "--project",
            "acme",
            "--name",
            "again",
            "--agent-id",
            "night-bot",
            stdout=io.StringIO(),
            stderr=io.StringIO(),
        )


def _page(client: Client, project: str) -> Any:
    return client.get(f"/p/{project}/tokens/")


def test_stewards_make_and_revoke_tokens_on_the_tokens_page(as_: Any, story: Any) -> None:
    steward = as_("steward")
    page = _page(steward, story.project)
    assert page.status_code == 200 and b"No tokens yet" in page.content
    made = steward.post(
        f"/p/{story.project}/tokens/", {"name": "planner <b>bot</b>", "agent_id": "planner-1", "role": "agent"}
    )
    assert made.status_code == 200 and "no-store" in made["Cache-Control"]
    token = made.content.decode().split('<code id="new-token">')[1].split("</code>")[0]
    record = find_token(token)
    assert record.project_id == story.project and record.agent_id == "planner-1"
    assert b"planner &lt;b&gt;bot&lt;/b&gt;" in made.content
    assert token.encode() not in _page(steward, story.project).content  # shown once
    duplicate = steward.post(f"/p/{story.project}/tokens/", {"name": "x", "agent_id": "planner-1", "role": "agent"})
    assert duplicate.status_code == 400 and b"already has a token" in duplicate.content
    assert ApiToken.objects.filter(project_id=story.project).count() == 1
    assert steward.post(f"/p/{story.project}/tokens/{record.pk}/revoke").status_code == 302
    assert find_token(token).revoked_at is not None
    overview = steward.get(f"/p/{story.project}/")
    assert f"/p/{story.project}/tokens/".encode() in overview.content  # linked for stewards


def test_only_stewards_of_the_project_may_open_the_tokens_page(as_: Any, story: Any) -> None:
    record, _ = create_token(project_id=story.project, name="n", agent_id="a")
    for role in ("viewer", "reviewer"):
        client = as_(role)
        assert _page(client, story.project).status_code == 403
        assert client.post(f"/p/{story.project}/tokens/", {"name": "n", "agent_id": "b"}).status_code == 403
        assert client.post(f"/p/{story.project}/tokens/{record.pk}/revoke").status_code == 403
        assert f"/p/{story.project}/tokens/".encode() not in client.get(f"/p/{story.project}/").content
    outsider = as_("outsider")
    assert _page(outsider, story.project).status_code == 404
    assert outsider.post(f"/p/{story.project}/tokens/{record.pk}/revoke").status_code == 404
    assert ApiToken.objects.filter(project_id=story.project).count() == 1
    record.refresh_from_db()
    assert record.revoked_at is None


def test_a_revocation_by_another_process_counts_within_the_trust_time(api: Api, monkeypatch: Any) -> None:
    import time

    from django.utils import timezone

    from reviewer.api import tokens

    monkeypatch.setattr(tokens, "TRUST_SECONDS", 0.2)
    assert api.call("GET", "tasks").status_code == 200  # looked up and trusted for a moment
    ApiToken.objects.filter(agent_id="planner", project_id=api.project).update(revoked_at=timezone.now())  # elsewhere
    time.sleep(0.3)
    assert api.call("GET", "tasks").status_code == 401


def test_a_write_that_gives_up_under_contention_is_503_and_keeps_the_store_open(api: Api, monkeypatch: Any) -> None:
    from core.history import ConversationHistory as History
    from core.stores import GraphStoreWriteConflictError

    def contended(*args: Any, **kwargs: Any) -> Any:
        raise GraphStoreWriteConflictError("gave up after 64 attempts: other writers kept changing the project")

    monkeypatch.setattr(History, "create_task", contended)
    answer = api.call("POST", "tasks", {"name": "t", "goal": "g"})
    assert answer.status_code == 503 and answer["Retry-After"] == "1"
    assert shared._store is api.store  # not closed under the other requests' feet
