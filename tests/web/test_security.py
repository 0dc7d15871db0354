"""Nobody let in: every route of the dashboard, swept for each kind of person.

The sweep reads the URL configuration itself, so a route added later without
a place in PAGES or ACTIONS fails here until someone says who may use it.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.test import Client, override_settings
from django.urls import URLPattern, get_resolver, reverse

from core.decisions import DecisionTraces
from core.history import ConversationHistory
from core.retention import ActivityLog
from reviewer.store import get_store

from .conftest import PASSWORD, Story

ROOT = Path(__file__).resolve().parents[2]

# Pages anyone may read once logged in (login/logout/healthz need no login).
PAGES = {
    "home",
    "healthz",
    "login",
    "logout",
    "overview",
    "queue",
    "decision",
    "conflicts",
    "tasks",
    "task",
    "events",
    "document",
    "activity",
}
# Actions, with the least role that may take them.
ACTIONS = {
    "reaffirm": "reviewer",
    "supersede": "reviewer",
    "reject": "reviewer",
    "sweep": "steward",
    "redact": "steward",
    "delete_task": "steward",
}
LOWER = {"reviewer": ["viewer"], "steward": ["viewer", "reviewer"]}


def route_names() -> set[str]:
    return {p.name for p in get_resolver().url_patterns if isinstance(p, URLPattern) and p.name}


def action(story: Story, name: str) -> tuple[str, dict[str, Any]]:
    """The URL and a form that the right person could submit successfully."""
    project = {"project": story.project}
    if name in ("reaffirm", "supersede", "reject"):
        url = reverse(name, kwargs={**project, "decision_id": story.moved})
        data = {
            "request_id": f"sec-{name}",
            "explanation": "Still holds.",
            "reason": "Wrong call.",
            "conclusion": "Postgres, again",
            "rationale": "The ADR still says so.",
            "add": "event choose-db 1",
        }
        return url, data
    if name == "redact":
        return reverse(name, kwargs=project), {
            "event_id": story.event_id,
            "reason": "personal data",
            "confirm": "on",
            "request_id": "sec-redact",
        }
    if name == "delete_task":
        return reverse(name, kwargs=project), {
            "name": "on-call",
            "reason": "test task",
            "confirm": "on",
            "include_decisions": "on",
            "request_id": "sec-delete",
        }
    return reverse(name, kwargs=project), {}


def state(story: Story) -> tuple[Any, ...]:
    """Everything a person's action could change, read through the core."""
    store = get_store()
    traces = DecisionTraces(store, project_id=story.project, agent_id="audit")
    history = ConversationHistory(store, project_id=story.project, agent_id="audit")
    decisions = []
    for did in (story.moved, story.changed, story.clear, story.xss):
        d = traces.get_decision(did).decision
        decisions.append(None if d is None else (d.status, d.review_state, d.revision))
    return (
        tuple(decisions),
        history.fetch_event("choose-db", 1).event.redacted_at,
        history.get_task("on-call").found,
        len(ActivityLog(store, project_id=story.project).list(limit=200)),
        traces.review_counts(),
    )


def test_every_route_has_a_declared_audience() -> None:
    assert route_names() == PAGES | set(ACTIONS), "a new route needs a place in PAGES or ACTIONS"


@pytest.mark.parametrize("name", sorted(ACTIONS))
def test_every_action_without_a_login_redirects_to_login_and_changes_nothing(story: Story, name: str) -> None:
    before = state(story)
    url, data = action(story, name)
    response = Client().post(url, data)
    assert response.status_code == 302 and response["Location"].startswith("/login/"), name
    assert state(story) == before


@pytest.mark.parametrize("name", sorted(ACTIONS))
def test_every_action_with_a_lower_role_is_403_and_changes_nothing(story: Story, as_: Any, name: str) -> None:
    before = state(story)
    url, data = action(story, name)
    for role in LOWER[ACTIONS[name]]:
        client = as_(role)
        assert client.post(url, data).status_code == 403, (name, role)
        assert client.post(url, data, HTTP_HX_REQUEST="true").status_code == 403, (name, role)
        if name in ("redact", "delete_task"):  # their confirmation pages are stewards' too
            assert client.get(url, {"event_id": story.event_id, "name": "on-call"}).status_code == 403
    assert state(story) == before


@pytest.mark.parametrize("name", sorted(ACTIONS))
def test_every_action_on_another_project_is_404_and_changes_nothing(story: Story, as_: Any, name: str) -> None:
    before = state(story)
    url, data = action(story, name)
    assert as_("outsider").post(url, data).status_code == 404, name
    assert state(story) == before


@pytest.mark.parametrize("name", sorted(ACTIONS))
def test_the_right_role_can_take_each_action(story: Story, as_: Any, name: str) -> None:
    # The other side of the sweep: the same form from the right person acts,
    # so the refusals above are refusals and not a broken form.
    before = state(story)
    url, data = action(story, name)
    response = as_(ACTIONS[name]).post(url, data)
    assert response.status_code in (200, 302), (name, response.status_code)
    if name != "sweep":  # the story's queue has nothing left for the sweep to move
        assert state(story) != before, name


def test_a_forged_post_without_csrf_is_refused_for_every_action(story: Story, people: Any) -> None:
    before = state(story)
    client = Client(enforce_csrf_checks=True)
    client.force_login(people["steward"])
    for name in ACTIONS:
        url, data = action(story, name)
        assert client.post(url, data).status_code == 403, name
    assert state(story) == before


def test_manage_check_deploy_is_clean_in_production_settings(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "REVIEWER_"))}
    env.update(
        DJANGO_SETTINGS_MODULE="reviewer.settings",
        REVIEWER_DATA_DIR=str(tmp_path),
        DJANGO_SECRET_KEY="k" + os.urandom(40).hex(),
        DJANGO_ALLOWED_HOSTS="reviewer.example.org",
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_production_settings_refuse_to_start_without_a_secret_key(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "REVIEWER_"))}
    env.update(DJANGO_SETTINGS_MODULE="reviewer.settings", REVIEWER_DATA_DIR=str(tmp_path))
    result = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode != 0 and "DJANGO_SECRET_KEY is not set" in result.stderr


def test_no_password_or_secret_reaches_logs_or_pages(
    story: Story, people: Any, caplog: pytest.LogCaptureFixture, settings: Any
) -> None:
    caplog.set_level(logging.DEBUG)
    client = Client()
    typed = "hunter2-typed-by-mistake"
    refused = client.post("/login/", {"username": "rita", "password": typed})
    assert refused.status_code == 200 and typed.encode() not in refused.content
    assert client.post("/login/", {"username": "rita", "password": PASSWORD}).status_code == 302
    page = client.get(f"/p/{story.project}/review/")
    with override_settings(REVIEWER_STORE_URL="falkordb://svc:store-pw-not-shown@127.0.0.1:1"):
        from reviewer.store import reset_store

        reset_store()
        down = client.get(f"/p/{story.project}/review/")
        health = client.get("/healthz")
        reset_store()
    assert down.status_code == 503 and health.status_code == 503
    shown = b"".join(r.content for r in (refused, page, down, health)).decode()
    logged = caplog.text
    for secret in (typed, PASSWORD, "store-pw-not-shown", settings.SECRET_KEY):
        assert secret not in logged, secret
        assert secret not in shown, secret
    assert "127.0.0.1:1" in logged  # the store trouble itself is logged, without its password
