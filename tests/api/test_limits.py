"""The API's limits are the core's (``core.limits``): the OpenAPI document
shows them (``maxLength``, ``maxItems``), and a body over one answers 422
with the write's code and writes nothing."""

from __future__ import annotations

from django.test import Client

from core import limits as L
from tests.api.conftest import Api


def _schema(spec: dict, name: str) -> dict:
    return spec["components"]["schemas"][name]["properties"]


def test_the_openapi_document_shows_every_limit(db: None) -> None:
    spec = Client().get("/api/v1/openapi.json").json()
    assert _schema(spec, "CreateTask")["name"]["maxLength"] == L.TASK_NAME_MAX
    assert _schema(spec, "CreateTask")["goal"]["maxLength"] == L.GOAL_MAX
    assert _schema(spec, "Document")["text"]["maxLength"] == L.DOCUMENT_MAX
    assert _schema(spec, "Document")["key"]["maxLength"] == L.DOCUMENT_KEY_MAX
    decision = _schema(spec, "RecordDecision")
    assert decision["choice_key"]["maxLength"] == L.CHOICE_KEY_MAX
    assert decision["conclusion"]["maxLength"] == L.CONCLUSION_MAX
    assert decision["rationale"]["maxLength"] == L.RATIONALE_MAX
    assert decision["supports"]["maxItems"] == L.DECISION_SUPPORTS_MAX
    assumptions = next(a for a in decision["assumptions"]["anyOf"] if a.get("type") == "array")
    assert (assumptions["maxItems"], assumptions["items"]["maxLength"]) == (L.ITEMS_MAX, L.ITEM_MAX)
    assert _schema(spec, "RejectDecision")["reason"]["maxLength"] == L.EXPLANATION_MAX
    steps = next(op for op in spec["paths"].values() if "put" in op and op["put"]["operationId"] == "set_step")
    step = next(p for p in steps["put"]["parameters"] if p["name"] == "step")
    assert step["schema"]["maxLength"] == L.STEP_NAME_MAX


def test_a_body_over_a_limit_is_422_with_the_code_and_writes_nothing(api: Api) -> None:
    over = api.call("POST", "tasks", {"name": "t" * (L.TASK_NAME_MAX + 1), "goal": "g"})
    assert over.status_code == 422
    body = over.json()
    assert (body["recorded"], body["error"]) == (False, "value_too_long")
    assert body["detail"][0]["loc"][-1] == "name" and "input" not in body["detail"][0]
    assert api.call("GET", "tasks").json()["tasks"] == []
    at = api.call("POST", "tasks", {"name": "t" * L.TASK_NAME_MAX, "goal": "g" * L.GOAL_MAX})
    assert at.status_code == 200 and at.json()["recorded"]
    assert api.call("POST", "tasks", {"name": "t", "goal": "g" * (L.GOAL_MAX + 1)}).json()["error"] == "value_too_long"

    assert api.call("POST", "tasks", {"name": "pick", "goal": "g"}).json()["recorded"]
    event = {"kind": "note", "payload": "p", "name": "n" * (L.LABEL_MAX + 1)}
    assert api.call("POST", "tasks/pick/events", event).json()["error"] == "value_too_long"
    too_long_step = "s" * (L.STEP_NAME_MAX + 1)
    step = api.call("PUT", f"tasks/pick/steps/{too_long_step}", {"state": "not_started"})
    assert (step.status_code, step.json()["error"]) == (422, "value_too_long")
    assert api.call("PUT", f"tasks/pick/steps/{'s' * L.STEP_NAME_MAX}", {"state": "not_started"}).json()["recorded"]
    many = [{"kind": "event", "task_name": "pick", "seq": 1}] * (L.STEP_SUPPORTS_MAX + 1)
    body = {"state": "completed", "result_basis": "supported", "result_supports": many}
    assert api.call("PUT", "tasks/pick/steps/read", body).json()["error"] == "too_many_supports"

    decision = {"choice_key": "k", "conclusion": "c", "rationale": "r", "supports": many[:21]}
    assert api.call("POST", "tasks/pick/decisions", decision).json()["error"] == "support_required"
    decision = {**decision, "supports": many[:1], "assumptions": ["a" * (L.ITEM_MAX + 1)]}
    assert api.call("POST", "tasks/pick/decisions", decision).json()["error"] == "value_too_long"
    document = {"key": "adr", "text": "a" * (L.DOCUMENT_MAX + 1)}
    refused = api.call("POST", "documents", document)
    assert (refused.status_code, refused.json()["error"]) == (422, "value_too_long")
    assert api.call("GET", "documents", key="adr").status_code == 404
    assert api.call("POST", "documents", {"key": "adr", "text": "a" * L.DOCUMENT_MAX}).json()["recorded"]
    # a body with another fault is ninja's plain answer
    plain = api.call("POST", "tasks", {"name": "t" * (L.TASK_NAME_MAX + 1)})
    assert plain.status_code == 422 and "error" not in plain.json()


def test_a_blank_rejection_reason_is_explanation_required(api: Api) -> None:
    assert api.call("POST", "tasks", {"name": "pick", "goal": "g"}).json()["recorded"]
    assert api.call("POST", "tasks/pick/events", {"kind": "note", "payload": "p"}).json()["recorded"]
    made = api.call(
        "POST",
        "tasks/pick/decisions",
        {
            "choice_key": "k",
            "conclusion": "c",
            "rationale": "r",
            "supports": [{"kind": "event", "task_name": "pick", "seq": 1}],
        },
    ).json()
    did = made["decision"]["id"]
    for blank in ("", "  "):
        refused = api.call("POST", f"decisions/{did}/reject", {"reason": blank})
        assert (refused.status_code, refused.json()["error"]) == (422, "explanation_required")
    assert api.call("GET", f"decisions/{did}").json()["status"] == "active"
