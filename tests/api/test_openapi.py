"""The API's OpenAPI document is valid OpenAPI 3.1, names its operations as
the core names its methods, and its docs page needs nothing from outside."""

from __future__ import annotations

import re

from django.test import Client
from openapi_spec_validator import validate

from core.comments import Discussion
from core.decisions import DecisionTraces
from core.history import ConversationHistory
from core.knowledge import Graph

#: Operations with no single core method of their name (what they call instead).
NOT_CORE_NAMES = {
    "record_events": "load_events or record_event",
    "add_document": "Graph.add",
    "update_document": "Graph.update",
    "delete_document": "Graph.delete",
}


def test_the_openapi_document_is_valid_openapi_3_1(db: None) -> None:
    response = Client().get("/api/v1/openapi.json")
    assert response.status_code == 200
    spec = response.json()
    assert spec["openapi"].startswith("3.1")
    validate(spec)
    ops = {op["operationId"]: op for item in spec["paths"].values() for op in item.values()}
    for name in ops:
        if name in NOT_CORE_NAMES:
            continue
        assert any(hasattr(service, name) for service in (ConversationHistory, DecisionTraces, Graph, Discussion)), name
    answer = ops["record_event"]["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    assert answer.endswith("/RecordEventResult")  # the core's own model
    assert {"401", "409", "422", "429", "503"} <= set(ops["record_event"]["responses"])
    params = {p["name"] for p in ops["record_event"]["parameters"]}
    assert "Idempotency-Key" in params
    assert spec["components"]["securitySchemes"]["TokenAuth"]["scheme"] == "bearer"


def test_the_docs_page_is_served_by_the_app_under_its_csp(db: None) -> None:
    page = Client().get("/api/v1/docs")
    assert page.status_code == 200
    assert "script-src 'self'" in page["Content-Security-Policy"]
    html = page.content.decode()
    for link in re.findall(r'(?:src|href)="([^"]*)"', html):
        assert link.startswith(("/", "#")), link  # nothing from another origin
    for path in ("/api/v1/projects/{project}/tasks/{task}/events", "/api/v1/projects/{project}/review"):
        assert path in html
    assert 'id="schema-RecordEventResult"' in html
