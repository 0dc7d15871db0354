"""An MCP client session through the official SDK: it records a task, an
event and a decision with a project token and reads them back."""

from __future__ import annotations

import hashlib
import json
import socket
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx
import pytest
import uvicorn
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from core.decisions import DecisionTraces
from core.retention import HistoryRetention
from core.stores import GraphStore
from reviewer import store as shared
from reviewer.api.mcp_server import build_server
from reviewer.api.tokens import create_token


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def mcp_url(store: GraphStore, transactional_db: None, live_server: Any) -> Iterator[tuple[str, str, str]]:
    before = shared._store
    shared._store = store
    project = "mcp-" + uuid.uuid4().hex[:8]
    _, token = create_token(project_id=project, name="host", agent_id="claude-host")
    port = free_port()
    app = build_server(live_server.url, port=port).streamable_http_app()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.time() + 20
    while not server.started and time.time() < deadline:
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}/mcp", token, project
    server.should_exit = True
    thread.join(10)
    store.drop_project(project)
    shared._store = before


@asynccontextmanager
async def connected(url: str, headers: dict[str, str]) -> AsyncIterator[ClientSession]:
    """An initialised MCP client session over streamable HTTP."""
    async with httpx.AsyncClient(headers=headers, timeout=30) as http:  # noqa: SIM117 (three layers, each its own resource)
        async with streamable_http_client(url, http_client=http) as (read, write, _):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


def result(answer: Any) -> Any:
    assert not answer.isError, answer.content
    return json.loads(answer.content[0].text)


def test_an_mcp_session_records_and_reads_back(mcp_url: tuple[str, str, str], store: GraphStore) -> None:
    url, token, project = mcp_url

    async def session() -> dict[str, Any]:
        async with connected(url, {"Authorization": f"Bearer {token}"}) as s:
            tools = {t.name for t in (await s.list_tools()).tools}
            assert {"create_task", "record_event", "record_decision", "get_task"} <= tools
            made = result(
                await s.call_tool("create_task", {"project": project, "name": "plan", "goal": "Plan the release"})
            )
            event = result(
                await s.call_tool(
                    "record_event",
                    {
                        "project": project,
                        "task_name": "plan",
                        "kind": "message",
                        "role": "user",
                        "payload": "Ship on Friday?",
                    },
                )
            )
            decision = result(
                await s.call_tool(
                    "record_decision",
                    {
                        "project": project,
                        "task_name": "plan",
                        "choice_key": "ship-day",
                        "conclusion": "Friday",
                        "rationale": "The user asked.",
                        "supports": [{"kind": "event", "task_name": "plan", "seq": 1}],
                    },
                )
            )
            again = result(
                await s.call_tool("create_task", {"project": project, "name": "plan", "goal": "Another goal"})
            )
            view = result(await s.call_tool("get_task", {"project": project, "name": "plan"}))
            events = result(await s.call_tool("list_events", {"project": project, "task_name": "plan"}))
            read = result(
                await s.call_tool("get_decision", {"project": project, "decision_id": decision["decision"]["id"]})
            )
            return {
                "made": made,
                "event": event,
                "decision": decision,
                "again": again,
                "view": view,
                "events": events,
                "read": read,
            }

    out = anyio.run(session)
    assert out["made"]["recorded"] and out["event"]["event"]["seq"] == 1
    assert out["decision"]["decision"]["author"] == "claude-host"
    assert out["again"] == {"recorded": False, "error": "task_exists", "task": None}
    assert out["view"]["found"] and out["view"]["view"]["decision_count"] == 1
    assert [e["payload"] for e in out["events"]["events"]] == ["Ship on Friday?"]
    assert out["read"]["decision"]["conclusion"] == "Friday"
    traces = DecisionTraces(store, project_id=project, agent_id="audit")
    assert traces.get_decision(out["decision"]["decision"]["id"]).decision.author == "claude-host"


def test_an_mcp_call_without_a_live_token_is_refused(mcp_url: tuple[str, str, str]) -> None:
    url, _, project = mcp_url

    async def session() -> Any:
        async with connected(url, {"Authorization": "Bearer rvw_forged"}) as s:
            return await s.call_tool("create_task", {"project": project, "name": "x", "goal": "g"})

    answer = anyio.run(session)
    assert answer.isError and "401" in answer.content[0].text


def test_mcp_gives_no_hash_of_a_redacted_event(mcp_url: tuple[str, str, str], store: GraphStore) -> None:
    url, token, project = mcp_url
    event = {"project": project, "task_name": "t", "kind": "message", "payload": "PIN 4711", "request_id": "pin"}

    async def call(tool: str, arguments: dict[str, Any]) -> Any:
        async with connected(url, {"Authorization": f"Bearer {token}"}) as s:
            return result(await s.call_tool(tool, arguments))

    anyio.run(call, "create_task", {"project": project, "name": "t", "goal": "g"})
    first = anyio.run(call, "record_event", event)
    assert first["event"]["payload_sha256"] == hashlib.sha256(b"PIN 4711").hexdigest()
    retention = HistoryRetention(store, project_id=project, agent_id="steward")
    assert retention.redact_event(first["event"]["id"]).recorded
    listed = anyio.run(call, "list_events", {"project": project, "task_name": "t"})
    right = anyio.run(call, "record_event", event)
    wrong = anyio.run(call, "record_event", {**event, "payload": "PIN 0000"})
    assert listed["events"][0]["payload"] == "[REDACTED]" and listed["events"][0]["payload_sha256"] is None
    assert right == wrong and right["recorded"] and right["event"]["payload_sha256"] is None
