"""Issue 32: a redacted (or deleted) comment leaves its text nowhere, as an
event's redaction does (tests/web/test_redaction_canary.py): after the disk
purge, and after the store restarted, a unique marker written in a comment,
in its earlier version before an edit, and in a reply deleted by its author,
is in no page, API reply, graph property, export, activity entry, log
record or file under the store's data directory (and key store). On both
backends, each with a store of its own."""

from __future__ import annotations

import json
import logging
import uuid

import pytest
from django.test import Client

from core.comments import Discussion
from core.decisions import DecisionTraces
from core.history import ConversationHistory
from core.retention import ActivityLog
from core.traces_io import export_project
from reviewer.api.tokens import create_token
from reviewer.store import get_store

from .conftest import make_user
from .test_redaction_canary import Fresh, _wait_for_purge, fresh  # noqa: F401  (the store of the test's own)


def _assert_gone(fresh: Fresh, project: str, did: str, marker: str, clients: list[Client], token: str, caplog) -> None:
    store = get_store()
    p = f"/p/{project}"
    comments = store.read(project, "MATCH (c:Comment) RETURN c.id AS id")
    urls = [f"{p}/", f"{p}/review/", f"{p}/activity/", f"{p}/decisions/{did}/"]
    urls += [f"{p}/comments/{x['id']}/redact" for x in comments] + [f"{p}/comments/{x['id']}/edit" for x in comments]
    for client in clients:
        for url in urls:
            response = client.get(url)
            assert response.status_code in (200, 400, 403, 404), url
            assert marker not in response.content.decode(), url
    api = Client()
    headers = {"Authorization": f"Bearer {token}"}
    reply = api.get(f"/api/v1/projects/{project}/decisions/{did}/threads", headers=headers)
    assert reply.status_code == 200 and marker not in reply.content.decode()
    assert not any(marker in json.dumps(line, default=str) for line in export_project(store, project))
    assert not any(marker in e.model_dump_json() for e in ActivityLog(store, project_id=project).every())
    for query in ("MATCH (n) RETURN properties(n) AS p", "MATCH ()-[r]->() RETURN properties(r) AS p"):
        for row in store.read(project, query):
            assert marker not in json.dumps(row["p"], default=str), row
    assert fresh.files_with(marker.encode()) == []
    assert not [r for r in caplog.records if marker in r.getMessage() or marker in str(r.args)]


# On the embedded FalkorDB, whose files can be read whole here. A comment is sealed,
# its key destroyed and its purge started by the same code as an event's, which the
# event canary (tests/web/test_redaction_canary.py) follows into Neo4j's files too, and
# tests/core/test_comments.py checks the key's destruction on both backends: a second
# fresh Neo4j for this test cost CI 90 s of its 30 minutes.
@pytest.mark.parametrize("fresh", ["falkordb"], indirect=True)
def test_a_redacted_comment_leaves_the_marker_nowhere(fresh: Fresh, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    project = "canary-" + uuid.uuid4().hex[:8]
    marker = "SECRET-COMMENT-" + uuid.uuid4().hex
    store = get_store()
    ConversationHistory(store, project_id=project, agent_id="agent").create_task("t", goal="g")
    ConversationHistory(store, project_id=project, agent_id="agent").record_event("t", kind="message", payload="hi")
    did = str(
        DecisionTraces(store, project_id=project, agent_id="agent")
        .record_decision(
            "t",
            choice_key="k",
            conclusion="Use k",
            rationale="r",
            supports=[{"kind": "event", "task_name": "t", "seq": 1}],
        )
        .decision.id
    )
    rita, stan = Client(), Client()
    rita.force_login(make_user("rita-" + uuid.uuid4().hex[:4], "reviewer", [project]))
    stan.force_login(make_user("stan-" + uuid.uuid4().hex[:4], "steward", [project]))
    _, token = create_token(project_id=project, name="bot", agent_id="bot")
    p = f"/p/{project}"
    assert (
        rita.post(f"{p}/decisions/{did}/comments", {"body": f"draft {marker}", "request_id": "c1"}).status_code == 302
    )
    discussion = Discussion(store, project_id=project, agent_id="x")
    first = discussion.list_threads(did).threads[0].comments[0]
    edited = rita.post(f"{p}/comments/{first.id}/edit", {"body": f"{marker} card 4111", "request_id": "e1"})
    assert edited.status_code == 302
    body = {"body": f"reply {marker}", "thread_id": first.thread_id, "request_id": "c2"}
    assert rita.post(f"{p}/decisions/{did}/comments", body).status_code == 302
    reply = discussion.list_threads(did).threads[0].comments[1]
    assert marker in rita.get(f"{p}/decisions/{did}/").content.decode()  # readable, before
    assert rita.post(f"{p}/comments/{reply.id}/delete", {"request_id": "d1"}).status_code == 302
    done = stan.post(f"{p}/comments/{first.id}/redact", {"reason": "pii", "confirm": "on", "request_id": "r1"})
    assert done.status_code == 302
    # a retry of the first write answers the comment as it is now: no text
    again = rita.post(f"{p}/decisions/{did}/comments", {"body": f"draft {marker}", "request_id": "c1"})
    assert again.status_code in (302, 400)
    _wait_for_purge()
    _assert_gone(fresh, project, did, marker, [rita, stan], token, caplog)
    fresh.restart()
    _assert_gone(fresh, project, did, marker, [rita, stan], token, caplog)
