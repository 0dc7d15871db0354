"""The OpenAPI document fuzzed with schemathesis against a live server, on
every backend: whatever the input, no 5xx and every answer matches the
schema (its status, content type and body). Bounded in examples per
operation so the run stays short."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from core.stores import GraphStore
from reviewer import store as shared
from reviewer.api.tokens import create_token
from reviewer.api.views import api

from .live import LiveClient

EXAMPLES = 8  # per operation and backend


@pytest.fixture
def fuzzed(store: GraphStore, transactional_db: None, live_server: Any) -> Iterator[dict[str, str]]:
    before = shared._store
    shared._store = store
    project = "fuzz-" + uuid.uuid4().hex[:8]
    _, token = create_token(project_id=project, name="fuzz", agent_id="fuzzer")
    client = LiveClient(live_server.url)  # something to find: a task with an event, a document
    headers = {"Authorization": f"Bearer {token}"}
    client.post(f"/api/v1/projects/{project}/tasks", {"name": "t", "goal": "g"}, headers=headers)
    client.post(f"/api/v1/projects/{project}/tasks/t/events", {"kind": "note", "payload": "x"}, headers=headers)
    client.post(f"/api/v1/projects/{project}/documents", {"key": "d", "text": "Some text."}, headers=headers)
    yield {"url": live_server.url, "token": token, "project": project}
    store.drop_project(project)
    shared._store = before


schema = schemathesis.openapi.from_dict(api.get_openapi_schema())


@schema.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
def test_no_input_gets_a_5xx_or_an_answer_outside_the_schema(case: Any, fuzzed: dict[str, Any]) -> None:
    if case.path_parameters and "project" in case.path_parameters:
        case.path_parameters["project"] = fuzzed["project"]  # the token's project: reach the operation itself
    case.call_and_validate(
        base_url=fuzzed["url"],
        headers={"Authorization": f"Bearer {fuzzed['token']}"},
        checks=[not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance],
    )
