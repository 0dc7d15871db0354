"""The redaction preview lists the other events that hold the text and
redacts the ticked ones in the same confirmed action; after a purge round
the pages say what is true of each backend (FalkorDB: the files were
rewritten; Neo4j: the key is destroyed, the transaction log keeps the
ciphertext until it rotates). On both backends: the dashboard is pointed at
the session's store of each."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client

from core import _common as c
from core import _copies
from core._purge import purge_round
from core.decisions import DecisionTraces
from core.history import ConversationHistory
from core.retention import ActivityLog
from core.stores import GraphStore
from reviewer import store as reviewer_store

from .conftest import make_user

SECRET = "Customer Ada Lovelace, card 4111-1111-1111-1111, expires 12/29, CVV 737."


@pytest.fixture
def dashboard(store: GraphStore, project_id: str, monkeypatch: pytest.MonkeyPatch, db: None) -> Iterator[Any]:
    monkeypatch.setattr(reviewer_store, "_store", store)
    history = ConversationHistory(store, project_id=project_id, agent_id="agent")
    history.create_task("chat", goal="g")
    history.create_task("tools", goal="g")
    history.record_event("chat", kind="message", role="user", payload=SECRET)
    history.record_event("tools", kind="tool_result", payload=f"<script>alert(1)</script> {SECRET}")
    history.record_event("tools", kind="tool_result", payload="quoted: " + SECRET[5:47] + " <b>end</b>")  # 42
    history.record_event("tools", kind="tool_result", payload="short: " + SECRET[5:44])  # 39: not a copy
    DecisionTraces(store, project_id=project_id, agent_id="agent").record_decision(
        "tools",
        choice_key="card",
        conclusion="on file",
        rationale="r",
        supports=[{"kind": "event", "task_name": "tools", "seq": 2}],
    )
    client = Client()
    client.force_login(make_user("stan-" + uuid.uuid4().hex[:6], "steward", [project_id]))
    yield client


def _eid(project_id: str, task: str, seq: int) -> str:
    return c.event_id(c.task_id(project_id, task), seq)


def test_the_preview_lists_the_copies_escaped_with_links(dashboard: Client, project_id: str) -> None:
    page = dashboard.get(f"/p/{project_id}/events/redact?event_id={_eid(project_id, 'chat', 1)}").content.decode()
    assert "2 other events" in page and "All 3 other events of the project searched" in page
    for seq in (1, 2):
        assert f'name="copy" value="{_eid(project_id, "tools", seq)}"' in page
        assert f"?task=tools&amp;after={seq - 1}#e{seq}" in page
    assert f'value="{_eid(project_id, "tools", 3)}"' not in page  # a run of 39
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<b>end</b>" not in page and "a run of 42 characters" in page and "the whole text" in page


def test_the_ticked_copies_are_redacted_in_the_same_action(dashboard: Client, project_id: str) -> None:
    main, copy = _eid(project_id, "chat", 1), _eid(project_id, "tools", 2)
    form = {"event_id": main, "reason": "pii", "confirm": "on", "request_id": "rc-1", "copy": [copy]}
    done = dashboard.post(f"/p/{project_id}/events/redact", form)
    assert done.status_code == 302
    assert "Event 1 and 1 copy redacted; 1 citing decision flagged" in dashboard.get(done.url).content.decode()
    again = dashboard.post(f"/p/{project_id}/events/redact", form)  # a retry acts once
    assert again.status_code == 302
    entries = [e for e in ActivityLog(reviewer_store._store, project_id=project_id).list() if e.action == "redact"]
    assert sorted(e.summary for e in entries) == ["chat #1", "tools #2"] and {e.reason for e in entries} == {"pii"}
    history = ConversationHistory(reviewer_store._store, project_id=project_id, agent_id="x")
    assert history.fetch_event("tools", 2).event.redacted_at is not None
    assert history.fetch_event("tools", 1).event.redacted_at is None  # not ticked
    assert SECRET not in dashboard.get(f"/p/{project_id}/events/?task=tools").content.decode().split("#2", 1)[1]


def test_too_many_copies_are_refused_beside_the_form(dashboard: Client, project_id: str) -> None:
    picked = [str(uuid.uuid4()) for _ in range(_copies.SHOWN + 1)]
    form = {"event_id": _eid(project_id, "chat", 1), "reason": "pii", "confirm": "on", "request_id": "rc-2"}
    refused = dashboard.post(f"/p/{project_id}/events/redact", {**form, "copy": picked})
    assert refused.status_code == 400 and f"Pick at most {_copies.SHOWN}" in refused.content.decode()
    assert "pii" in refused.content.decode()  # what was typed is kept
    assert (
        ConversationHistory(reviewer_store._store, project_id=project_id, agent_id="x")
        .fetch_event("chat", 1)
        .event.redacted_at
        is None
    )


def test_a_capped_search_says_so(dashboard: Client, project_id: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_copies, "SCAN_EVENTS", 1)
    page = dashboard.get(f"/p/{project_id}/events/redact?event_id={_eid(project_id, 'chat', 1)}").content.decode()
    assert "The search stopped after 1 of the project's 4 events" in page


def test_after_a_purge_the_pages_say_what_each_backend_did(dashboard: Client, project_id: str) -> None:
    store = reviewer_store._store
    main = _eid(project_id, "chat", 1)
    form = {"event_id": main, "reason": "pii", "confirm": "on", "request_id": "rc-3"}
    done = dashboard.post(f"/p/{project_id}/events/redact", form)
    flash = dashboard.get(done.url).content.decode()
    redact_page = dashboard.get(f"/p/{project_id}/events/redact?event_id={_eid(project_id, 'tools', 1)}")
    purge_round(store)
    pages = [
        dashboard.get(f"/p/{project_id}/events/?task=chat").content.decode(),
        dashboard.get(f"/p/{project_id}/activity/").content.decode(),
    ]
    deletion = dashboard.get(f"/p/{project_id}/task/delete?name=tools").content.decode()
    for text in pages:
        assert "pending" not in text
    if store.backend == "neo4j":
        for text in pages:
            assert "removed from disk" not in text and "rewritten" not in text
            assert "key destroyed" in text and "the text cannot be read" in text
            assert "db.tx_log.rotation.size" in text and "db.tx_log.rotation.retention_policy" in text
        for text in (flash, redact_page.content.decode(), deletion):
            assert "removed from disk" not in text.lower() and "rewritten" not in text
            assert "destroyed" in text and "cannot be read" in text and "transaction log" in text
    else:
        for text in pages:
            assert "removed from disk: the store's files were rewritten at" in text and "key destroyed" not in text
        assert "Removal from disk is pending." in flash
        assert "rewrites the store's files" in redact_page.content.decode() and "rewrites the store's files" in deletion
