"""docs/api.md's curl session and Python client example run as written
against a live server."""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import uvicorn

from core.history import ConversationHistory
from core.stores import GraphStore
from reviewer import store as shared
from reviewer.api.mcp_server import build_server
from reviewer.api.tokens import create_token

from .test_mcp import connected, free_port, result

DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def blocks(lang: str) -> list[str]:
    found = re.findall(rf"```{lang}\n(.*?)```", DOC.read_text(), re.S)
    assert found, lang
    return found


def block(lang: str) -> str:
    """The curl session (the sh block that calls curl) or the first block."""
    found = blocks(lang)
    return next(b for b in found if "curl" in b) if lang == "sh" else found[0]


@pytest.fixture
def portal(store: GraphStore, transactional_db: None, live_server: Any) -> Iterator[tuple[str, str, str]]:
    before = shared._store
    shared._store = store
    project = "docs-" + uuid.uuid4().hex[:8]
    _, token = create_token(project_id=project, name="docs", agent_id="planner")
    yield live_server.url, token, project
    store.drop_project(project)
    shared._store = before


def test_the_curl_session_runs(portal: tuple[str, str, str], store: GraphStore) -> None:
    url, token, project = portal
    script = "set -euo pipefail\n" + block("sh").replace("/projects/acme", f"/projects/{project}")
    result = subprocess.run(
        ["bash", "-c", script],
        env={**os.environ, "REVIEWER_URL": url, "TOKEN": token},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.split() == ["true"] * 5
    view = ConversationHistory(store, project_id=project, agent_id="audit").get_task("choose-db").view
    assert view.decision_count == 1 and view.last_event_seq == 1


def test_the_python_client_example_runs(portal: tuple[str, str, str], store: GraphStore) -> None:
    url, token, project = portal
    code = (
        block("py")
        .replace("http://127.0.0.1:8000", url)
        .replace("rvw_your_token", token)
        .replace('"acme"', repr(project))
    )
    exec(compile(code, "docs/api.md", "exec"), {})
    view = ConversationHistory(store, project_id=project, agent_id="audit").get_task("pick-cache").view
    assert view.decision_count == 1 and view.decisions[0].author == "planner"


def test_the_mcp_configuration_opens_a_session(portal: tuple[str, str, str], store: GraphStore) -> None:
    url, token, project = portal
    command = next(b for b in blocks("sh") if "mcp_server" in b)
    port = int(re.search(r"--port (\d+)", command).group(1))
    config = json.loads(block("json"))["mcpServers"]["reviewer"]
    assert config["type"] == "http" and config["url"] == f"http://127.0.0.1:{port}/mcp"
    mine = free_port()  # the documented port may be taken on a test machine
    server = uvicorn.Server(
        uvicorn.Config(
            build_server(url, port=mine).streamable_http_app(), host="127.0.0.1", port=mine, log_level="warning"
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    headers = {k: v.replace("rvw_your_token", token) for k, v in config["headers"].items()}

    async def session() -> Any:
        async with connected(config["url"].replace(str(port), str(mine)), headers) as s:
            return await s.call_tool("create_task", {"project": project, "name": "via-mcp", "goal": "g"})

    try:
        assert result(anyio.run(session))["task"]["author"] == "planner"
    finally:
        server.should_exit = True
        thread.join(10)
