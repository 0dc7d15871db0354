"""API fixtures: a project with an agent token and an automation token, on
every backend (the dashboard's store is pointed at the backend's store)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.test import Client

from core.stores import GraphStore
from reviewer import store as shared
from reviewer.api.tokens import create_token


@dataclass
class Api:
    project: str
    token: str
    review_token: str
    client: Client
    store: GraphStore

    def url(self, tail: str, project: str | None = None) -> str:
        return f"/api/v1/projects/{project or self.project}/{tail.lstrip('/')}"

    def call(
        self,
        method: str,
        tail: str,
        body: Any = None,
        *,
        token: str | None = None,
        idem: str | None = None,
        project: str | None = None,
        **query: Any,
    ) -> Any:
        headers = {"Authorization": f"Bearer {token or self.token}"}
        if idem is not None:
            headers["Idempotency-Key"] = idem
        url = self.url(tail, project)
        send = getattr(self.client, method.lower())
        if method.upper() in ("GET", "DELETE"):
            return (
                send(url, query, headers=headers)
                if method.upper() == "GET"
                else send(
                    url + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else ""), headers=headers
                )
            )
        return send(url, body, content_type="application/json", headers=headers)


@pytest.fixture
def api(store: GraphStore, db: None) -> Iterator[Api]:
    """The API over ``store`` (each backend in turn), with a fresh project."""
    before = shared._store
    shared._store = store
    project = "api-" + uuid.uuid4().hex[:10]
    _, token = create_token(project_id=project, name="planner bot", agent_id="planner")
    _, review = create_token(project_id=project, name="sweeper", agent_id="sweeper", role="automation")
    yield Api(project, token, review, Client(), store)
    store.drop_project(project)
    shared._store = before


from tests.web.conftest import as_, people, story  # noqa: E402,F401  (the dashboard's people, for the tokens page)
