"""The Django shell: health, login, the store-down page, security headers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.contrib.auth.models import User
from django.test import Client, override_settings
from django.urls import reverse

from reviewer.store import get_store, reset_store

from .conftest import Story


@pytest.fixture(autouse=True)
def fresh_store_handle() -> Iterator[None]:
    reset_store()
    yield
    reset_store()


@pytest.fixture
def member(db: None) -> User:
    return User.objects.create_user("ada", password="a-long-test-password")


@pytest.fixture
def staff(db: None) -> User:
    return User.objects.create_user("root", password="a-long-test-password", is_staff=True)


def test_healthz_answers_ok_and_nothing_else_to_anyone(client: Client, member: User) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}  # no backend name for an anonymous caller
    client.force_login(member)
    assert client.get("/healthz").json() == {"status": "ok"}  # nor for a signed-in non-staff person


def test_healthz_names_the_backend_to_staff(client: Client, staff: User) -> None:
    client.force_login(staff)
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "backend": "falkordb"}


@override_settings(REVIEWER_STORE_URL="falkordb://svc:pw-not-shown@store.internal:1")
def test_healthz_answers_503_with_no_backend_detail_when_the_store_is_down(client: Client) -> None:
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json() == {"status": "unavailable"}
    text = response.content.decode()
    for detail in ("falkordb", "svc", "pw-not-shown", "store.internal", ":1"):
        assert detail not in text, detail


@override_settings(REVIEWER_STORE_URL="falkordb://svc:pw-not-shown@127.0.0.1:1")
def test_healthz_gives_staff_the_reason_without_the_password(client: Client, staff: User) -> None:
    client.force_login(staff)
    response = client.get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert "127.0.0.1:1" in body["reason"]
    assert "pw-not-shown" not in response.content.decode()


def test_pages_need_a_login(client: Client) -> None:
    response = client.get("/")
    assert response.status_code == 302
    assert response["Location"].startswith("/login/")


def test_a_logged_in_person_sees_the_home_page(client: Client, member: User) -> None:
    client.force_login(member)
    response = client.get("/")
    assert response.status_code == 200
    assert b"Reviewer" in response.content


@override_settings(REVIEWER_STORE_URL="falkordb://svc:pw-not-shown@127.0.0.1:1")
def test_a_store_that_is_down_gives_a_clear_503_page(client: Client, member: User) -> None:
    client.force_login(member)
    response = client.get("/")
    assert response.status_code == 503
    text = response.content.decode()
    assert "graph store is not answering" in text
    assert "Traceback" not in text and "pw-not-shown" not in text
    assert "127.0.0.1:1" not in text  # where the store is, only for those who run it


@override_settings(REVIEWER_STORE_URL="falkordb://svc:pw-not-shown@127.0.0.1:1")
def test_the_503_page_tells_staff_where_the_store_is_without_the_password(client: Client, staff: User) -> None:
    client.force_login(staff)
    response = client.get("/")
    assert response.status_code == 503
    text = response.content.decode()
    assert "127.0.0.1:1" in text and "pw-not-shown" not in text


def test_the_dashboard_recovers_when_the_store_returns(client: Client, member: User) -> None:
    client.force_login(member)
    with override_settings(REVIEWER_STORE_URL="falkordb://127.0.0.1:1"):
        assert client.get("/").status_code == 503
    assert client.get("/").status_code == 200  # no restart needed


def test_a_staff_members_page_reopens_a_store_that_stopped_answering(client: Client, staff: User, story: Story) -> None:
    """A staff member's page asks the store whether its project exists
    instead of pinging it first: that question reopens a dead handle as
    the ping did, and the page is answered, not a 503."""
    client.force_login(staff)
    overview = reverse("overview", kwargs={"project": story.project})
    assert client.get(overview).status_code == 200
    get_store().close()  # the process's handle stops answering (the embedded server stops with it)
    response = client.get(overview)
    assert response.status_code == 200, response.status_code
    assert client.get(reverse("overview", kwargs={"project": "no-such-project"})).status_code == 404


def test_responses_carry_a_content_security_policy(client: Client) -> None:
    response = client.get("/login/")
    assert response.status_code == 200
    csp = response["Content-Security-Policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp


def test_login_with_a_wrong_password_is_refused_with_a_message(client: Client, member: User) -> None:
    response = client.post("/login/", {"username": "ada", "password": "wrong"})
    assert response.status_code == 200
    assert b"Please enter a correct username and password" in response.content


def _count_calls(monkeypatch: pytest.MonkeyPatch, name: str) -> list[str]:
    """The store's ``name`` calls from here on (the real method still runs)."""
    store, calls = get_store(), []
    real = getattr(store, name)

    def counted(*args: object, **kwargs: object) -> object:
        calls.append(name)
        return real(*args, **kwargs)

    monkeypatch.setattr(store, name, counted)
    return calls


def test_a_page_that_only_reads_asks_the_store_nothing_before_its_reads(
    client: Client, story: Story, people: dict[str, User], monkeypatch: pytest.MonkeyPatch
) -> None:
    """No ping before a reviewer's page, and a staff member's project is
    asked after once (not on every page): each was a round trip."""
    overview = reverse("overview", kwargs={"project": story.project})
    client.force_login(people["reviewer"])
    pings = _count_calls(monkeypatch, "ping")
    asked = _count_calls(monkeypatch, "has_project")
    assert client.get(overview).status_code == 200
    assert client.get(reverse("queue", kwargs={"project": story.project})).status_code == 200
    assert pings == [] and asked == []
    root = User.objects.create_user("root", password="a-long-test-password", is_staff=True)
    client.force_login(root)
    for _ in range(3):
        assert client.get(overview).status_code == 200
    assert asked == ["has_project"] and pings == []
    # an action still pings first: a dead handle never fails half of it
    client.force_login(people["reviewer"])
    response = client.post(
        reverse("reject", kwargs={"project": story.project, "decision_id": story.clear}),
        {"reason": "wrong", "request_id": "shell-reject"},
    )
    assert response.status_code in (200, 302) and pings == ["ping"]


def test_a_reviewers_page_is_answered_when_the_store_stopped_answering_since_the_last(
    client: Client, story: Story, people: dict[str, User]
) -> None:
    """The page skips the ping: its first read fails on the dead handle,
    the store is reopened and the page asked once more."""
    client.force_login(people["reviewer"])
    queue = reverse("queue", kwargs={"project": story.project})
    assert client.get(queue).status_code == 200
    get_store().close()  # the embedded server stops with the process's handle
    response = client.get(queue)
    assert response.status_code == 200, response.status_code
    assert story.changed in response.content.decode()


@override_settings(REVIEWER_STORE_URL="falkordb://svc:pw-not-shown@127.0.0.1:1")
def test_a_page_whose_store_stays_down_is_the_503_page_after_one_more_try(client: Client, member: User) -> None:
    """A project page's reads fail twice (no ping before them): the person
    sees the clear page, not a traceback."""
    from reviewer.access import grant

    grant(member, "some-project", "reviewer")
    client.force_login(member)
    response = client.get(reverse("overview", kwargs={"project": "some-project"}))
    assert response.status_code == 503 and "graph store is not answering" in response.content.decode()


def test_an_action_on_a_store_whose_client_reconnects_asks_no_ping_first(
    client: Client, db: None, neo4j_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Neo4j driver finds a dead connection by itself and runs the unit
    again on a new one: a ping before each action would be a round trip for
    nothing. The action is recorded all the same."""
    import uuid

    from core.decisions import DecisionTraces
    from core.history import ConversationHistory
    from core.stores import open_store
    from reviewer import store as reviewer_store

    from .conftest import make_user

    store = open_store(neo4j_url + "?timeout=30")  # a handle of its own: this test may close it
    project = "shell-" + uuid.uuid4().hex[:8]
    try:
        assert store.reconnects
        monkeypatch.setattr(reviewer_store, "_store", store)
        history = ConversationHistory(store, project_id=project, agent_id="agent")
        history.create_task("pick", goal="Pick a store")
        history.record_event("pick", kind="message", role="user", payload="Which store?")
        traces = DecisionTraces(store, project_id=project, agent_id="agent")
        d = traces.record_decision(
            "pick",
            choice_key="db",
            conclusion="Postgres",
            rationale="r",
            supports=[{"kind": "event", "task_name": "pick", "seq": 1}],
        ).decision
        client.force_login(make_user("rev", "reviewer", [project]))
        pings = _count_calls(monkeypatch, "ping")
        response = client.post(
            reverse("reject", kwargs={"project": project, "decision_id": str(d.id)}),
            {"reason": "wrong", "request_id": "neo4j-reject"},
        )
        assert response.status_code == 302 and pings == []
        assert traces.get_decision(str(d.id)).decision.status.value == "rejected"
    finally:
        store.drop_project(project)
        store.close()
