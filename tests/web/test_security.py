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

from core.comments import Discussion
from core.decisions import DecisionTraces
from core.history import ConversationHistory
from core.retention import ActivityLog
from reviewer.api.tokens import create_token
from reviewer.models import ApiToken, ProjectGrant, ProjectMarks
from reviewer.store import get_store

from .conftest import PASSWORD, Story

ROOT = Path(__file__).resolve().parents[2]

# Pages anyone may read once logged in (login/logout/healthz and the single
# sign-on start and callback, tests/web/test_oidc.py, need no login).
PAGES = {
    "home",
    "healthz",
    "login",
    "logout",
    "oidc_authentication_init",
    "oidc_authentication_callback",
    "overview",
    "queue",
    "decision",
    "decision_text",
    "decision_pick",
    "conflicts",
    "tasks",
    "task",
    "events",
    "document",
    "activity",
    # the log's downloads: whoever reads the log (tests/web/test_activity_filters.py checks each role)
    "activity_csv",
    "activity_jsonl",
    # each person's own inbox, read marks and e-mail choice: no project's role (tests/web/test_inbox.py)
    "inbox",
    "inbox_read",
    "inbox_read_all",
    "inbox_preferences",
    "claim_target",
    "mention_people",  # a reviewer's autocomplete (a read; tests/web/test_comments.py checks each role)
}
# Actions, with the least role that may take them.
ACTIONS = {
    "reaffirm": "reviewer",
    "supersede": "reviewer",
    "reject": "reviewer",
    "queue_act": "reviewer",
    "group": "reviewer",
    "cite_instead": "reviewer",
    "sweep": "steward",
    "redact": "steward",
    "delete_task": "steward",
    "tokens": "steward",
    "revoke_token": "steward",
    "people": "steward",
    "mark_seen": "viewer",  # the person's own "last looked" in the project
    "claim_action": "reviewer",
    "claim_lease": "steward",
    "post_comment": "reviewer",
    "edit_comment": "reviewer",
    "delete_comment": "reviewer",
    "resolve_thread": "reviewer",
    "redact_comment": "steward",
}
LOWER = {"viewer": [], "reviewer": ["viewer"], "steward": ["viewer", "reviewer"]}


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
            "doc-0": "drop",
            "confirm_drop": "on",
        }
        return url, data
    if name == "queue_act":
        url = reverse(name, kwargs={**project, "decision_id": story.moved, "action": "reaffirm"})
        return url, {"request_id": "sec-flow", "explanation": "Still holds.", "cause": "", "filters": ""}
    if name == "group":
        return reverse(name, kwargs=project), {
            "cause": "document:adr:2",
            "action": "reaffirm",
            "confirm": "on",
            "request_id": "sec-group",
            "decision": story.moved,
        }
    if name == "cite_instead":  # the story has no dependant: test_views_workbench.py acts on one
        url = reverse(name, kwargs={**project, "decision_id": story.xss})
        return url, {"request_id": "sec-cite", "old": story.clear, "new": story.moved, "explanation": "swap"}
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
    if name == "tokens":
        return reverse(name, kwargs=project), {"name": "sweep bot", "agent_id": "sweep-bot", "role": "agent"}
    if name == "people":
        return reverse(name, kwargs=project), {"username": "vera", "role": "reviewer"}
    if name == "revoke_token":
        return reverse(name, kwargs={**project, "token_id": _token(story).pk}), {}
    if name == "claim_action":
        return reverse(name, kwargs={**project, "action": "claim"}), {"kind": "decision", "target": story.moved}
    if name == "claim_lease":
        return reverse(name, kwargs=project), {"minutes": "5"}
    if name == "post_comment":
        return reverse(name, kwargs={**project, "decision_id": story.moved}), {"body": "Why?", "request_id": "sec-c"}
    if name in ("edit_comment", "delete_comment", "redact_comment"):
        data = {"body": "Edited.", "reason": "personal data", "confirm": "on", "request_id": f"sec-{name}"}
        return reverse(name, kwargs={**project, "comment_id": _comment(story).id}), data
    if name == "resolve_thread":
        return reverse(name, kwargs={**project, "thread_id": _comment(story).thread_id}), {"request_id": "sec-rt"}
    return reverse(name, kwargs=project), {}


def _comment(story: Story) -> Any:
    """The reviewer's (rita's) comment the discussion's actions aim at,
    made once, before a test reads the state."""
    discussion = Discussion(get_store(), project_id=story.project, agent_id="rita")
    threads = discussion.list_threads(story.moved).threads
    if threads:
        return threads[0].comments[0]
    return discussion.post_comment(story.moved, "Is this still right?").comment


def _token(story: Story) -> ApiToken:
    """The project's API token that the revoke action aims at."""
    found = ApiToken.objects.filter(project_id=story.project, agent_id="sec-bot").first()
    return found or create_token(project_id=story.project, name="sec", agent_id="sec-bot")[0]


def state(story: Story) -> tuple[Any, ...]:
    """Everything a person's action could change, read through the core (and
    the project's API tokens)."""
    tokens = (
        tuple(
            ApiToken.objects.filter(project_id=story.project).values_list("agent_id", "revoked_at").order_by("agent_id")
        )
        if _token(story) and _comment(story)
        else ()
    )
    store = get_store()
    traces = DecisionTraces(store, project_id=story.project, agent_id="audit")
    history = ConversationHistory(store, project_id=story.project, agent_id="audit")
    decisions = []
    for did in (story.moved, story.changed, story.clear, story.xss):
        d = traces.get_decision(did).decision
        decisions.append(None if d is None else (d.status, d.review_state, d.revision))
    grants = tuple(
        ProjectGrant.objects.filter(project_id=story.project).values_list("user__username", "role").order_by("id")
    )
    return (
        grants,
        tuple(decisions),
        history.fetch_event("choose-db", 1).event.redacted_at,
        history.get_task("on-call").found,
        len(ActivityLog(store, project_id=story.project).list(limit=200)),
        traces.review_counts(),
        tokens,
        # each person's "last looked" (reviewer.inbox.looked)
        tuple(ProjectMarks.objects.filter(project_id=story.project).values_list("user__username", "looked_at")),
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
        if name in (
            "redact",
            "delete_task",
            "tokens",
            "group",
            "people",
        ):  # their confirmation pages are for the same role
            assert client.get(url, {"event_id": story.event_id, "name": "on-call", "cause": "x"}).status_code == 403
    assert state(story) == before


@pytest.mark.parametrize("name", sorted(ACTIONS))
def test_every_action_on_another_project_is_404_and_changes_nothing(story: Story, as_: Any, name: str) -> None:
    before = state(story)
    url, data = action(story, name)
    assert as_("outsider").post(url, data).status_code == 404, name
    assert state(story) == before


@pytest.mark.parametrize("name", sorted(set(ACTIONS) - {"cite_instead"}))
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


# -- the agents' JSON API: every operation declares who may call it ----------------------

#: Each API operation (its operationId, the core method's name) and its audience: ``read`` (any token
#: of the project), ``record`` (agent tokens only), ``review`` (agent and automation tokens).
API_OPERATIONS = {
    "list_tasks": "read",
    "get_task": "read",
    "list_events": "read",
    "fetch_event": "read",
    "list_steps": "read",
    "list_decisions": "read",
    "get_decision": "read",
    "list_support_history": "read",
    "list_revisions": "read",
    "list_decisions_for_review": "read",
    "review_counts": "read",
    "list_conflicts": "read",
    "search_decisions": "read",
    "get_document": "read",
    "list_versions": "read",
    "fetch": "read",
    "span_evidence_id": "read",
    "create_task": "record",
    "record_event": "record",
    "record_events": "record",
    "set_step": "record",
    "record_decision": "record",
    "add_document": "record",
    "update_document": "record",
    "delete_document": "record",
    "supersede_decision": "review",
    "reject_decision": "review",
    "reaffirm_decision": "review",
    "continue_decision_review": "review",
    "list_threads": "read",
    "get_thread": "read",
    "post_comment": "review",
    "resolve_thread": "review",
}
API_BODIES = {
    "create_task": {"name": "api-task", "goal": "g"},
    "record_event": {"kind": "note", "payload": "x"},
    "record_events": {"events": [{"kind": "note", "payload": "x"}]},
    "set_step": {"state": "completed"},
    "record_decision": {
        "choice_key": "k",
        "conclusion": "c",
        "rationale": "r",
        "supports": [{"kind": "event", "task_name": "choose-db", "seq": 1}],
    },
    "add_document": {"key": "new-doc", "text": "x"},
    "update_document": {"key": "adr", "text": "x"},
    "supersede_decision": {
        "conclusion": "c",
        "rationale": "r",
        "explanation": "e",
        "supports": [{"kind": "event", "task_name": "choose-db", "seq": 1}],
    },
    "reject_decision": {"reason": "no"},
    "reaffirm_decision": {},
    "continue_decision_review": {},
    "span_evidence_id": {"key": "adr", "char_start": 0, "char_end": 3},
    "post_comment": {"body": "x"},
    "resolve_thread": {"resolved": True},
}
API_QUERY = {"key": "adr", "q": "Postgres", "evidence_id": "x"}


def api_operations(story: Story) -> list[tuple[str, str, str, dict[str, Any]]]:
    """(operationId, method, url, query) of every operation in the API's own schema."""
    from reviewer.api.views import api

    values = {"project": story.project, "task": "choose-db", "decision_id": story.moved, "seq": "1", "step": "s1"}
    values["thread_id"] = _comment(story).thread_id
    found = []
    for path, item in api.get_openapi_schema()["paths"].items():
        for method, op in item.items():
            query = {
                p["name"]: API_QUERY[p["name"]]
                for p in op.get("parameters", [])
                if p["in"] == "query" and p.get("required")
            }
            found.append((op["operationId"], method.upper(), path.format(**values), query))
    return found


def call_api(client: Client, method: str, url: str, query: dict[str, Any], body: Any, token: str | None) -> Any:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if method in ("GET", "DELETE"):
        return (
            getattr(client, method.lower())(url, query, headers=headers)
            if method == "GET"
            else client.delete(url + "?" + "&".join(f"{k}={v}" for k, v in query.items()), headers=headers)
        )
    return getattr(client, method.lower())(url, body or {}, content_type="application/json", headers=headers)


def test_every_api_operation_has_a_declared_audience(story: Story) -> None:
    assert {op for op, *_ in api_operations(story)} == set(API_OPERATIONS), (
        "a new API operation needs a place in API_OPERATIONS"
    )


def test_every_api_operation_refuses_those_it_is_not_for_and_changes_nothing(story: Story, db: None) -> None:
    from reviewer.api.tokens import revoke

    agent = create_token(project_id=story.project, name="a", agent_id="api-agent")[1]
    automation = create_token(project_id=story.project, name="b", agent_id="api-auto", role="automation")[1]
    foreign = create_token(project_id="elsewhere", name="c", agent_id="api-foreign")[1]
    revoked_record, revoked = create_token(project_id=story.project, name="d", agent_id="api-revoked")
    revoke(revoked_record)
    client = Client()
    before = state(story)
    for op, method, url, query in api_operations(story):
        body = API_BODIES.get(op)
        for token in (None, revoked, "rvw_forged"):
            assert call_api(client, method, url, query, body, token).status_code == 401, (op, token)
        assert call_api(client, method, url, query, body, foreign).status_code == 404, op
        if API_OPERATIONS[op] == "record":
            assert call_api(client, method, url, query, body, automation).status_code == 403, op
    assert state(story) == before
    # the other side: the right token is let in (what the core then answers is its own business)
    for op, method, url, query in api_operations(story):
        token = automation if API_OPERATIONS[op] != "record" else agent
        status = call_api(client, method, url, query, API_BODIES.get(op), token).status_code
        assert status not in (401, 403) and status < 500, (op, status)


def test_every_route_under_the_api_is_an_operation_or_a_public_page(story: Story) -> None:
    """The API's include: its operations are swept above; anything else
    under /api/v1/ must be one of these public pages (the schema and its
    docs hold no project data)."""
    from django.urls import URLResolver

    public = {"api_docs", "openapi-json", "api-root"}  # api-root: ninja's index of the API
    api = next(p for p in get_resolver().url_patterns if isinstance(p, URLResolver) and "api/v1" in str(p.pattern))
    names: set[str] = set()

    def walk(patterns: Any) -> None:
        for p in patterns:
            if isinstance(p, URLResolver):
                walk(p.url_patterns)
            elif p.name:
                names.add(p.name)

    walk(api.url_patterns)
    operations = {op for op, *_ in api_operations(story)}
    ninja_named = {n for n in names if n not in public}
    # ninja names a route after the first operation on its path
    assert ninja_named <= operations, ninja_named - operations
    assert public <= names
    for url, status in (("/api/v1/docs", 200), ("/api/v1/openapi.json", 200), ("/api/v1/", 404)):
        response = Client().get(url)
        assert response.status_code == status and story.project.encode() not in response.content, url
