"""Dashboard fixtures: a project with a story in the dashboard's own store,
and people with each role."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from core import _common as c
from core.decisions import DecisionTraces
from core.history import ConversationHistory
from core.knowledge import Graph
from reviewer.models import ProjectGrant
from reviewer.store import get_store, reset_store

ADR = "Orders stay on Postgres.\n\nWe review the choice every quarter.\n\nOwners answer pages within an hour."
PASSWORD = "a-long-test-password"


@dataclass
class Story:
    project: str
    moved: str  # flagged; its passage moved, so it can be reaffirmed
    changed: str  # flagged; its passage changed
    clear: str
    event_id: str
    xss: str


@pytest.fixture
def story(db: None) -> Iterator[Story]:
    store = get_store()
    project = "web-" + uuid.uuid4().hex[:8]
    history = ConversationHistory(store, project_id=project, agent_id="planner")
    graph = Graph(store, project_id=project, agent_id="ingest")
    traces = DecisionTraces(store, project_id=project, agent_id="planner")
    history.create_task("choose-db", goal="Choose the orders database")
    history.create_task("on-call", goal="Own the pager")
    history.record_event("choose-db", kind="message", role="user", payload='Which DB? "><img src=x onerror=alert(1)>')
    graph.add("adr", ADR)
    graph.add("oncall", "Owners answer pages within an hour.")

    def cite(key: str, passage: str) -> tuple[list[Any], list[Any]]:
        text = graph.current_text(key)
        start = text.index(passage)
        evidence = graph.span_evidence_id(key, start, start + len(passage))
        return [{"kind": "document", "evidence_id": evidence}], [graph.fetch(evidence)]

    s, f = cite("adr", "Orders stay on Postgres.")
    moved = traces.record_decision(
        "choose-db", choice_key="orders-db", conclusion="Postgres", rationale="ADR", supports=s, fetched=f
    ).decision
    s, f = cite("oncall", "within an hour")
    changed = traces.record_decision(
        "on-call", choice_key="pager", conclusion="One hour", rationale="policy", supports=s, fetched=f
    ).decision
    xss = traces.record_decision(
        "on-call",
        choice_key="xss",
        conclusion="<script>alert('x')</script>",
        rationale="<b onmouseover=alert(1)>hi</b>",
        supports=[{"kind": "event", "task_name": "choose-db", "seq": 1}],
    ).decision
    clear = traces.record_decision(
        "on-call",
        choice_key="orders-db",
        conclusion="MySQL",
        rationale="conflict",
        supports=[{"kind": "event", "task_name": "choose-db", "seq": 1}],
    ).decision
    graph.update("adr", "Preface.\n\n" + ADR)  # the passage moved
    graph.update("oncall", "Owners answer pages within a day.")  # the passage changed
    yield Story(
        project,
        str(moved.id),
        str(changed.id),
        str(clear.id),
        c.event_id(c.task_id(project, "choose-db"), 1),
        str(xss.id),
    )
    get_store().drop_project(project)  # the handle may have been reopened by the test
    reset_store()


def make_user(name: str, role: str | None, projects: list[str], *, staff: bool = False) -> User:
    """A person with ``role`` in each of ``projects`` (no role: no grants)."""
    user = User.objects.create_user(name, password=PASSWORD, is_staff=staff)
    if role:
        for p in projects:
            ProjectGrant.objects.create(user=user, project_id=p, role=role)
    return user


@pytest.fixture
def people(story: Story) -> dict[str, User]:
    return {
        "viewer": make_user("vera", "viewer", [story.project]),
        "reviewer": make_user("rita", "reviewer", [story.project]),
        "steward": make_user("stan", "steward", [story.project]),
        "outsider": make_user("otto", "steward", ["elsewhere"]),
    }


@pytest.fixture
def as_(people: dict[str, User]) -> Any:
    def login(role: str) -> Client:
        client = Client()
        client.force_login(people[role])
        return client

    return login
