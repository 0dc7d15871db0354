"""Every endpoint of /api/v1 through Django's test client, on every backend:
what an agent records over HTTP is what the library reads back, and what the
library recorded is what the API shows."""

from __future__ import annotations

from typing import Any

from core.decisions import DecisionTraces
from core.history import ConversationHistory
from core.models import ActorKind
from core.retention import ActivityLog

from .conftest import Api

ADR = "Orders stay on Postgres.\n\nWe review the choice every quarter."


def ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, (response.status_code, response.content[:500])
    return response.json()


def test_tasks_events_and_steps_round_trip(api: Api) -> None:
    made = ok(api.call("POST", "tasks", {"name": "choose-db", "goal": "Choose the orders database"}))
    assert made["recorded"] and made["task"]["author"] == "planner"
    ok(api.call("POST", "tasks", {"name": "on-call", "goal": "Own the pager"}))
    listed = ok(api.call("GET", "tasks", search="choose"))
    assert [t["name"] for t in listed["tasks"]] == ["choose-db"] and listed["more"] is False

    event = ok(api.call("POST", "tasks/choose-db/events", {"kind": "message", "role": "user", "payload": "Which DB?"}))
    assert event["recorded"] and event["event"]["seq"] == 1 and event["event"]["author"] == "planner"
    batch = ok(
        api.call(
            "POST", "tasks/choose-db/events/batch", {"events": [{"kind": "note", "payload": f"n{i}"} for i in range(3)]}
        )
    )
    assert batch == {"recorded": True, "error": None, "last_event_seq": 4, "results": []}
    keyed = ok(
        api.call(
            "POST",
            "tasks/choose-db/events/batch",
            {
                "events": [
                    {"kind": "tool_call", "name": "psql", "payload": "select 1"},
                    {"kind": "tool_result", "name": "psql", "payload": "1"},
                ]
            },
            idem="batch-1",
        )
    )
    assert keyed["last_event_seq"] == 6 and [r["event"]["seq"] for r in keyed["results"]] == [5, 6]

    page = ok(api.call("GET", "tasks/choose-db/events", after_seq=1, limit=3))
    assert [e["seq"] for e in page["events"]] == [2, 3, 4] and page["next_after_seq"] == 4
    assert ok(api.call("GET", "tasks/choose-db/events/5"))["name"] == "psql"

    step = ok(
        api.call(
            "PUT",
            "tasks/choose-db/steps/compare",
            {
                "state": "completed",
                "kind": "analysis",
                "result_event_seq": 6,
                "result_basis": "supported",
                "result_supports": [{"kind": "event", "task_name": "choose-db", "seq": 6}],
            },
        )
    )
    assert step["recorded"] and step["step"]["state"] == "completed"
    steps = ok(api.call("GET", "tasks/choose-db/steps"))
    assert [s["name"] for s in steps["steps"]] == ["compare"]
    view = ok(api.call("GET", "tasks/choose-db"))
    assert view["last_event_seq"] == 6 and view["step_counts"]["completed"] == 1

    # the library reads what the API wrote
    history = ConversationHistory(api.store, project_id=api.project, agent_id="reader")
    assert history.fetch_event("choose-db", 6).event.payload == "1"
    assert history.list_steps("choose-db").steps[0].result_event_seq == 6


def test_documents_evidence_decisions_and_review_round_trip(api: Api) -> None:
    ok(api.call("POST", "tasks", {"name": "choose-db", "goal": "Choose"}))
    ok(api.call("POST", "tasks", {"name": "other", "goal": "Other"}))
    ok(api.call("POST", "tasks/choose-db/events", {"kind": "message", "payload": "Which DB?"}))
    added = ok(api.call("POST", "documents", {"key": "adr", "text": ADR}))
    assert added["recorded"] and added["version"]["activation_seq"] >= 1
    assert ok(api.call("GET", "documents", key="adr"))["state"] == "current"
    evidence = ok(api.call("POST", "evidence/span", {"key": "adr", "char_start": 0, "char_end": 24}))["evidence_id"]
    fetched = ok(api.call("GET", "evidence", evidence_id=evidence))
    assert fetched["text"] == "Orders stay on Postgres." and fetched["status"] == "ok"

    first = ok(
        api.call(
            "POST",
            "tasks/choose-db/decisions",
            {
                "choice_key": "orders-db",
                "conclusion": "Postgres",
                "rationale": "The ADR says so.",
                "supports": [{"kind": "document", "evidence_id": evidence}],
                "fetched": [fetched],
                "assumptions": ["load stays low"],
            },
        )
    )
    assert first["recorded"] and first["decision"]["author"] == "planner"
    did = first["decision"]["id"]
    other = ok(
        api.call(
            "POST",
            "tasks/other/decisions",
            {
                "choice_key": "orders-db",
                "conclusion": "MySQL",
                "rationale": "habit",
                "supports": [{"kind": "event", "task_name": "choose-db", "seq": 1}],
            },
        )
    )["decision"]["id"]
    assert ok(api.call("GET", f"decisions/{did}"))["conclusion"] == "Postgres"
    assert ok(api.call("GET", "tasks/choose-db/decisions"))["count"] == 1
    conflicts = ok(api.call("GET", "conflicts"))
    assert [g["choice_key"] for g in conflicts["groups"]] == ["orders-db"]
    hits = ok(api.call("GET", "search", q="Postgres"))
    assert did in [h["decision"]["id"] for h in hits]

    # a changed document flags the decision: the queue shows it, with its filters
    updated = ok(api.call("PUT", "documents", {"key": "adr", "text": "Orders move to MySQL.\n\nReviewed yearly."}))
    assert did in updated["flagged_decision_ids"]
    assert len(ok(api.call("GET", "documents/versions", key="adr"))) == 2
    queue = ok(api.call("GET", "review"))
    assert [d["id"] for d in queue["decisions"]] == [did]
    assert ok(api.call("GET", "review", reason="source_changed"))["count"] == 1
    assert ok(api.call("GET", "review", reason="dependency_review"))["count"] == 0
    assert ok(api.call("GET", "review", task="other"))["count"] == 0
    assert ok(api.call("GET", "review/counts"))["needs_review"] == 1
    ok(api.call("POST", "review/continue", {}, token=api.review_token))

    new = ok(
        api.call(
            "POST",
            f"decisions/{did}/supersede",
            {
                "conclusion": "MySQL",
                "rationale": "The ADR changed.",
                "explanation": "The ADR now says MySQL.",
                "supports": [{"kind": "event", "task_name": "choose-db", "seq": 1}],
            },
        )
    )
    assert new["recorded"] and new["decision"]["revision"] == 2
    revisions = ok(api.call("GET", f"decisions/{new['decision']['id']}/revisions"))
    assert [r["decision"]["revision"] for r in revisions] == [1, 2]
    assert revisions[1]["explanation"] == "The ADR now says MySQL."
    history = ok(api.call("GET", f"decisions/{new['decision']['id']}/supports"))
    assert [s["kind"] for s in history["supports"]] == ["event"]

    # the automation token reviews: its agent id names it in the activity log
    rejected = ok(
        api.call("POST", f"decisions/{other}/reject", {"reason": "Not what we chose."}, token=api.review_token)
    )
    assert rejected["decision"]["rejected_by"] == "sweeper"
    reaffirmed = ok(api.call("POST", f"decisions/{new['decision']['id']}/reaffirm", {}))
    assert reaffirmed["recorded"]
    actors = {(e.actor, e.action, e.actor_kind) for e in ActivityLog(api.store, project_id=api.project).list()}
    assert ("sweeper", "reject", ActorKind.agent) in actors  # a token is an agent, never a person
    assert all(kind is ActorKind.agent for _, _, kind in actors)
    deleted = ok(api.call("DELETE", "documents", key="adr"))
    assert deleted["recorded"]
    traces = DecisionTraces(api.store, project_id=api.project, agent_id="reader")
    assert traces.get_decision(other).decision.status.value == "rejected"


def test_refused_writes_answer_the_seed_code_with_a_fitting_status(api: Api) -> None:
    ok(api.call("POST", "tasks", {"name": "t", "goal": "g"}))
    ok(api.call("POST", "tasks/t/events", {"kind": "note", "payload": "x"}))
    cases = [
        (("POST", "tasks", {"name": "t", "goal": "another"}), 409, "task_exists"),
        (("POST", "tasks/missing/events", {"kind": "note", "payload": "x"}), 404, "task_not_found"),
        (
            ("POST", "tasks/t/decisions", {"choice_key": "k", "conclusion": "c", "rationale": "r", "supports": []}),
            422,
            "support_required",
        ),
        (
            (
                "POST",
                "tasks/t/decisions",
                {
                    "choice_key": "k",
                    "conclusion": "c",
                    "rationale": "r",
                    "supports": [{"kind": "event", "task_name": "t", "seq": 9}],
                },
            ),
            422,
            "support_event_not_found",
        ),
        (("POST", "decisions/00000000-0000-0000-0000-000000000000/reject", {"reason": "x"}), 404, "decision_not_found"),
        (("POST", "documents", {"key": "d", "text": "x"}), 200, None),
        (("POST", "documents", {"key": "d", "text": "y"}), 409, "document_exists"),
        (("PUT", "documents", {"key": "nope", "text": "y"}), 404, "document_not_found"),
    ]
    for (method, tail, body), status, code in cases:
        answer = ok(api.call(method, tail, body), status)
        assert answer["error"] == code, (tail, answer)
        assert answer["recorded"] is (code is None)
    made = ok(
        api.call(
            "POST",
            "tasks/t/decisions",
            {
                "choice_key": "k",
                "conclusion": "c",
                "rationale": "r",
                "supports": [{"kind": "event", "task_name": "t", "seq": 1}],
            },
        )
    )
    again = ok(
        api.call(
            "POST",
            "tasks/t/decisions",
            {
                "choice_key": "k",
                "conclusion": "c2",
                "rationale": "r",
                "supports": [{"kind": "event", "task_name": "t", "seq": 1}],
            },
        ),
        409,
    )
    assert again["error"] == "choice_exists"
    did = made["decision"]["id"]
    ok(api.call("POST", f"decisions/{did}/reject", {"reason": "no"}))
    assert ok(api.call("POST", f"decisions/{did}/reject", {"reason": "no"}), 409)["error"] == "decision_not_active"
    blank = ok(
        api.call(
            "POST",
            f"decisions/{did}/supersede",
            {
                "conclusion": "c",
                "rationale": "r",
                "explanation": " ",
                "supports": [{"kind": "event", "task_name": "t", "seq": 1}],
            },
        ),
        422,
    )
    assert blank["error"] == "explanation_required"


def test_bad_input_is_422_with_the_field_and_the_reason_and_changes_nothing(api: Api) -> None:
    ok(api.call("POST", "tasks", {"name": "t", "goal": "g"}))
    headers = {"Authorization": f"Bearer {api.token}"}
    broken = api.client.post(api.url("tasks/t/events"), "{not json", content_type="application/json", headers=headers)
    assert broken.status_code == 422 and broken.json()["detail"][0]["loc"] == ["body"]
    for body, field in [
        ({"kind": "shout", "payload": "x"}, "kind"),
        ({"kind": "note", "payload": 5}, "payload"),
        ({"kind": "note"}, "payload"),
        ({"kind": "note", "payload": "x", "extra": 1}, "extra"),
    ]:
        answer = ok(api.call("POST", "tasks/t/events", body), 422)
        assert field in answer["detail"][0]["loc"], (body, answer)
        assert answer["detail"][0]["msg"]
    assert ok(api.call("GET", "tasks/t/events", after_seq="two"), 422)["detail"][0]["loc"][-1] == "after_seq"
    assert ok(api.call("GET", "review", reason="bogus"), 422)["detail"][0]["loc"][-1] == "reason"
    assert ok(api.call("GET", "evidence", evidence_id="not-an-evidence-id"))["status"] == "malformed"
    # a value the core itself refuses (ValueError) is a 422 that names the reason, never a 500
    zero = ok(api.call("GET", "evidence", evidence_id="not-an-evidence-id", max_chars=0), 422)
    assert "max_chars" in zero["detail"][0]["msg"]
    assert ok(api.call("POST", "evidence/span", {"key": "missing", "char_start": 0, "char_end": 1}), 404)
    assert ok(api.call("GET", "tasks/t"))["last_event_seq"] == 0


def test_reads_of_what_is_not_there_are_404(api: Api) -> None:
    for tail in (
        "tasks/nope",
        "tasks/nope/events",
        "tasks/nope/events/1",
        "tasks/nope/decisions",
        "decisions/00000000-0000-0000-0000-000000000000",
        "decisions/not-a-uuid",
    ):
        assert api.call("GET", tail).status_code == 404, tail
    assert api.call("GET", "documents", key="nope").status_code == 404
    api.call("POST", "documents", {"key": "gone", "text": "soon deleted"})
    api.call("DELETE", "documents", key="gone")
    assert api.call("POST", "evidence/span", {"key": "gone", "char_start": 0, "char_end": 4}).status_code == 404
