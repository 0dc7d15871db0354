"""Every API write that takes an ``Idempotency-Key``: a retry with the same
key answers the first result and writes nothing more; the same key with other
arguments is refused with ``request_id_reused``. On every backend."""

from __future__ import annotations

from typing import Any

from django.test import Client

from core.history import ConversationHistory

from .conftest import Api

ADR = "Orders stay on Postgres.\n\nWe review the choice every quarter."


def _writes_with_a_key() -> set[str]:
    spec = Client().get("/api/v1/openapi.json").json()
    return {
        op["operationId"]
        for item in spec["paths"].values()
        for op in item.values()
        if any(p.get("name") == "Idempotency-Key" for p in op.get("parameters", []))
    }


def test_every_write_retried_with_the_same_key_answers_the_first_result(api: Api) -> None:
    def call(method: str, tail: str, body: Any, idem: str, **query: Any) -> tuple[int, Any]:
        r = api.call(method, tail, body, idem=idem, **query)
        return r.status_code, r.json()

    ids: dict[str, str] = {}

    def decision_body(conclusion: str) -> dict[str, Any]:
        evidence = api.call("POST", "evidence/span", {"key": "adr", "char_start": 0, "char_end": 24}).json()
        fetched = api.call("GET", "evidence", evidence_id=evidence["evidence_id"]).json()
        return {
            "choice_key": "orders-db",
            "conclusion": conclusion,
            "rationale": "The ADR says so.",
            "supports": [{"kind": "document", "evidence_id": evidence["evidence_id"]}],
            "fetched": [fetched],
        }

    def supersede_body(conclusion: str) -> dict[str, Any]:
        return {
            "conclusion": conclusion,
            "rationale": "asked",
            "explanation": "The question was asked again.",
            "supports": [{"kind": "event", "task_name": "t", "seq": 1}],
        }

    # (operation, method, path, body, another body, query, another query); in order: each builds on the last
    writes: list[tuple[str, str, Any, Any, Any, dict[str, Any], dict[str, Any]]] = [
        ("create_task", "POST", "tasks", {"name": "t", "goal": "g"}, {"name": "t", "goal": "other"}, {}, {}),
        (
            "record_event",
            "POST",
            "tasks/t/events",
            {"kind": "note", "payload": "one"},
            {"kind": "note", "payload": "two"},
            {},
            {},
        ),
        (
            "record_events",
            "POST",
            "tasks/t/events/batch",
            {"events": [{"kind": "note", "payload": "a"}, {"kind": "note", "payload": "b"}]},
            {"events": [{"kind": "note", "payload": "c"}]},
            {},
            {},
        ),
        ("set_step", "PUT", "tasks/t/steps/s", {"state": "in_progress"}, {"state": "completed"}, {}, {}),
        ("add_document", "POST", "documents", {"key": "adr", "text": ADR}, {"key": "adr", "text": "other"}, {}, {}),
        (
            "record_decision",
            "POST",
            "tasks/t/decisions",
            lambda: decision_body("Postgres"),
            lambda: decision_body("MySQL"),
            {},
            {},
        ),
        ("post_comment", "POST", "decisions/{d}/comments", {"body": "Why this?"}, {"body": "Other"}, {}, {}),
        ("resolve_thread", "POST", "threads/{t}/resolve", {}, {"resolved": False}, {}, {}),
        (
            "update_document",
            "PUT",
            "documents",
            {"key": "adr", "text": "Preface.\n\n" + ADR},
            {"key": "adr", "text": "x"},
            {},
            {},
        ),
        ("reaffirm_decision", "POST", "decisions/{d}/reaffirm", {}, {"explanation": "another"}, {}, {}),
        (
            "supersede_decision",
            "POST",
            "decisions/{d}/supersede",
            supersede_body("MySQL"),
            supersede_body("SQLite"),
            {},
            {},
        ),
        ("reject_decision", "POST", "decisions/{d2}/reject", {"reason": "no"}, {"reason": "another"}, {}, {}),
        ("delete_document", "DELETE", "documents", None, None, {"key": "adr"}, {"key": "gone"}),
    ]
    assert {w[0] for w in writes} == _writes_with_a_key(), "every keyed write of the API is tried here"
    history = ConversationHistory(api.store, project_id=api.project, agent_id="reader")
    for op, method, path, body, other, query, other_query in writes:
        tail = path.format(**ids)
        body = body() if callable(body) else body
        key = f"key-{op}"
        first = call(method, tail, body, key, **query)
        assert first[0] == 200 and first[1]["recorded"], (op, first)
        events = history.get_task("t").view.last_event_seq if op != "create_task" else None
        again = call(method, tail, body, key, **query)
        assert again == first, (op, again, first)
        if events is not None:
            assert history.get_task("t").view.last_event_seq == events, op
        other = other() if callable(other) else other
        reused = call(method, tail, other, key, **other_query)
        assert reused[0] == 409 and reused[1]["error"] == "request_id_reused", (op, reused)
        if op == "record_decision":
            ids["d"] = first[1]["decision"]["id"]
        if op == "post_comment":
            ids["t"] = first[1]["comment"]["thread_id"]
        if op == "supersede_decision":
            ids["d2"] = first[1]["decision"]["id"]
