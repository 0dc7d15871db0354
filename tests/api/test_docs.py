"""docs/api.md's curl session and Python client example run as written
against a live server."""

from __future__ import annotations

import os
import re
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core.history import ConversationHistory
from core.stores import GraphStore
from reviewer import store as shared
from reviewer.api.tokens import create_token

DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def block(lang: str) -> str:
    found = re.findall(rf"```{lang}\n(.*?)```", DOC.read_text(), re.S)
    assert found, lang
    return found[-1] if lang == "sh" else found[0]


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
    result = subprocess.run(["bash", "-c", script], env={**os.environ, "REVIEWER_URL": url, "TOKEN": token},
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.split() == ["true"] * 5
    view = ConversationHistory(store, project_id=project, agent_id="audit").get_task("choose-db").view
    assert view.decision_count == 1 and view.last_event_seq == 1


def test_the_python_client_example_runs(portal: tuple[str, str, str], store: GraphStore) -> None:
    url, token, project = portal
    code = (block("py").replace("http://127.0.0.1:8000", url).replace("rvw_your_token", token)
            .replace('"acme"', repr(project)))
    exec(compile(code, "docs/api.md", "exec"), {})  # noqa: S102 - our own documentation
    view = ConversationHistory(store, project_id=project, agent_id="audit").get_task("pick-cache").view
    assert view.decision_count == 1 and view.decisions[0].author == "planner"
