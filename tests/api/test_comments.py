"""Issue 32 over the API and MCP: an agent reads the questions put to it on a
decision and answers them; the token's project only; limits as codes; a
redacted comment reaches no reply."""

from __future__ import annotations

import uuid
from typing import Any

import anyio

from core.comments import Discussion
from core.decisions import DecisionTraces
from core.history import ConversationHistory
from core.stores import GraphStore
from reviewer.models import ProjectGrant
from tests.web.conftest import make_user

from .test_mcp import connected, mcp_url, result  # noqa: F401  (the MCP server fixture)


def _decision(store: GraphStore, project: str) -> str:
    ConversationHistory(store, project_id=project, agent_id="planner").create_task("t", goal="g")
    ConversationHistory(store, project_id=project, agent_id="planner").record_event("t", kind="message", payload="hi")
    made = DecisionTraces(store, project_id=project, agent_id="planner").record_decision(
        "t", choice_key="k", conclusion="Use k", rationale="r", supports=[{"kind": "event", "task_name": "t", "seq": 1}]
    )
    return str(made.decision.id)


def test_an_agent_lists_threads_answers_and_resolves(api: Any) -> None:
    did = _decision(api.store, api.project)
    make_user("rita", "reviewer", [api.project])
    make_user("otto", "reviewer", ["elsewhere"])
    question = Discussion(api.store, project_id=api.project, agent_id="rita").post_comment(did, "@planner why k?")
    listed = api.call("GET", f"decisions/{did}/threads")
    assert listed.status_code == 200
    thread = listed.json()["threads"][0]
    assert thread["comments"][0]["body"] == "@planner why k?" and thread["resolved_at"] is None
    body = {"body": "Because of the ADR, @rita (cc @otto)", "thread_id": thread["id"]}
    answered = api.call("POST", f"decisions/{did}/comments", body, idem="a1")
    assert answered.status_code == 200 and answered.json()["comment"]["author"] == "planner"
    assert answered.json()["comment"]["mentions"] == ["rita"]  # otto cannot see the project
    assert api.call("POST", f"decisions/{did}/comments", body, idem="a1").json() == answered.json()  # a retry
    other = {**body, "body": "another text"}
    assert api.call("POST", f"decisions/{did}/comments", other, idem="a1").status_code == 409
    resolved = api.call("POST", f"threads/{thread['id']}/resolve", {"resolved": True}, token=api.review_token)
    assert resolved.status_code == 200 and resolved.json()["thread"]["resolved_by"] == "sweeper"
    assert api.call("GET", f"threads/{thread['id']}").json()["resolved_by"] == "sweeper"
    # limits and refusals as codes
    long = api.call("POST", f"decisions/{did}/comments", {"body": "x" * 10_001})
    assert long.status_code == 422 and long.json()["error"] == "value_too_long"
    assert api.call("POST", f"decisions/{did}/comments", {"body": "  "}).json()["error"] == "body_required"
    missing = api.call("POST", f"decisions/{uuid.uuid4()}/comments", {"body": "x"})
    assert missing.status_code == 404 and missing.json()["error"] == "decision_not_found"
    assert api.call("GET", f"decisions/{uuid.uuid4()}/threads").status_code == 404
    # another project's token finds nothing of this one
    from reviewer.api.tokens import create_token

    _, foreign = create_token(project_id="api-else-" + uuid.uuid4().hex[:6], name="x", agent_id="x")
    assert api.call("GET", f"decisions/{did}/threads", token=foreign).status_code == 404
    assert api.call("GET", f"threads/{thread['id']}", token=foreign).status_code == 404
    # a redacted comment reaches no reply
    Discussion(api.store, project_id=api.project, agent_id="stan").redact_comment(question.comment.id)
    reply = api.call("GET", f"decisions/{did}/threads").content.decode()
    assert "why k?" not in reply and '"state":"redacted"' in reply.replace(" ", "")
    assert ProjectGrant.objects.filter(project_id=api.project).count() == 1
    # the OpenAPI document bounds the body
    schema = api.client.get("/api/v1/openapi.json").json()["components"]["schemas"]["PostComment"]
    assert schema["properties"]["body"]["maxLength"] == 10_000


def test_an_agent_reads_threads_a_page_at_a_time(api: Any) -> None:
    from core import limits

    did = _decision(api.store, api.project)
    rita = Discussion(api.store, project_id=api.project, agent_id="rita")
    for i in range(limits.THREADS_PAGE_MAX + 1):
        tid = rita.post_comment(did, f"q{i}").comment.thread_id
    for i in range(1, limits.THREAD_COMMENTS_SHOWN + 3):
        rita.post_comment(did, f"r{i:02d}", thread_id=tid)
    # a limit over the page is cut to it, as every list here is (no 100 threads of 100 comments in one answer)
    listed = api.call("GET", f"decisions/{did}/threads?limit=100").json()
    assert len(listed["threads"]) == limits.THREADS_PAGE_MAX and listed["more"]
    long = listed["threads"][0]
    assert long["id"] == tid and long["comment_count"] == limits.THREAD_COMMENTS_SHOWN + 3 and long["omitted"] == 2
    page = api.call("GET", f"threads/{tid}?offset=1&limit=1000").json()
    assert [x["body"] for x in page["comments"]] == [f"r{i:02d}" for i in range(1, limits.THREAD_COMMENTS_SHOWN + 1)]
    assert [x["body"] for x in api.call("GET", f"threads/{tid}?offset=21&limit=5").json()["comments"]] == ["r21", "r22"]
    ops = {
        op["operationId"]: op
        for item in api.client.get("/api/v1/openapi.json").json()["paths"].values()
        for op in item.values()
    }
    maximum = {
        (name, p["name"]): p["schema"].get("maximum")
        for name in ("list_threads", "get_thread")
        for p in ops[name]["parameters"]
    }
    assert maximum[("list_threads", "limit")] == limits.THREADS_PAGE_MAX
    assert maximum[("get_thread", "limit")] == limits.THREAD_COMMENTS_SHOWN


def test_an_mcp_host_reads_a_question_and_answers_it(mcp_url: tuple[str, str, str], store: GraphStore) -> None:
    url, token, project = mcp_url
    did = _decision(store, project)
    asked = Discussion(store, project_id=project, agent_id="rita").post_comment(did, "Is k still right?").comment

    async def session() -> tuple[Any, Any, Any]:
        async with connected(url, {"Authorization": f"Bearer {token}"}) as s:
            listed = result(await s.call_tool("list_threads", {"project": project, "decision_id": did}))
            answer = result(
                await s.call_tool(
                    "post_comment",
                    {"project": project, "decision_id": did, "body": "Yes.", "thread_id": asked.thread_id},
                )
            )
            done = result(await s.call_tool("resolve_thread", {"project": project, "thread_id": asked.thread_id}))
            page = {"project": project, "thread_id": asked.thread_id, "offset": 1, "limit": 500}
            assert [x["body"] for x in result(await s.call_tool("get_thread", page))["comments"]] == ["Yes."]
            return listed, answer, done

    listed, answer, done = anyio.run(session)
    assert listed["threads"][0]["comments"][0]["body"] == "Is k still right?"
    assert answer["recorded"] and answer["comment"]["author"] == "claude-host"
    assert done["thread"]["resolved_by"] == "claude-host"
    thread = Discussion(store, project_id=project, agent_id="x").get_thread(asked.thread_id)
    assert [x.body for x in thread.comments] == ["Is k still right?", "Yes."]
