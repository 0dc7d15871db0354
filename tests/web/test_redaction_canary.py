"""Issue 12: a redaction (and a task deletion) leaves the text nowhere.

A unique marker goes in through every path that carries text; a steward
redacts (or deletes) through the web form; after the disk purge reports done
and after the store restarted, the marker is in no page, export, activity
entry, graph property, full-text index, log record or file under the
store's data directory (and key store). On both backends, each test with a
store of its own, so it can be restarted and its files read.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from core._purge import Purger, pending_count
from core.decisions import DecisionTraces
from core.history import ConversationHistory
from core.retention import ActivityLog, HistoryRetention
from core.stores.keystore import SLOT, keys_of
from core.traces_io import export_project, import_lines
from reviewer.store import get_store, reset_store
from tests.conftest import BACKENDS, SLOW_MACHINE_TIMEOUT_S

from .conftest import make_user

#: what the pages show of a redaction on disk, by backend (the words are
#: tests/web/test_redaction_copies.py's)
DONE = {"falkordb": 'data-state="rewritten"', "neo4j": 'data-state="key_destroyed"'}
PENDING = {"falkordb": 'data-state="rewrite_pending"', "neo4j": 'data-state="key_pending"'}


class Fresh:
    """A store of the test's own: its url, the directories that hold its
    files, and a restart (or a kill and restart) of the store itself."""

    def __init__(self, backend: str, tmp: Path, settings: Any) -> None:
        self.backend = backend
        self.settings = settings
        self.server = None
        if backend == "falkordb":
            self.data = tmp / "falkordb"
            self.url = f"falkordb+embedded://{self.data}?appendfsync=everysec&timeout={SLOW_MACHINE_TIMEOUT_S}"
            self.dirs = [self.data]
        else:
            from tests.neo4j_server.launcher import Neo4jServer

            self.data = tmp / "neo4j"
            self.server = Neo4jServer(data_dir=str(self.data))
            self.port = int(self.server.url.rsplit(":", 1)[1])
            keys = tmp / "keys" / "neo4j.keys"
            self.url = f"{self.server.url}?keys={keys}&timeout={SLOW_MACHINE_TIMEOUT_S}"
            self.dirs = [self.data, keys.parent]
        settings.REVIEWER_STORE_URL = self.url
        reset_store()

    def restart(self, *, kill: bool = False) -> None:
        if self.backend == "falkordb":
            get_store()
            if kill:  # the server dies: no clean shutdown, no final rewrite
                os.kill(int((self.data / "falkordb.pid").read_text()), signal.SIGKILL)
            reset_store()
        else:
            from tests.neo4j_server.launcher import Neo4jServer

            reset_store()
            assert self.server is not None
            self.server.kill() if kill else self.server.stop()
            self.server = Neo4jServer(port=self.port, data_dir=str(self.data))
        get_store()

    def files_with(self, marker: bytes) -> list[str]:
        found = []
        for root in self.dirs:
            for dirpath, _, names in os.walk(root):
                for name in names:
                    path = Path(dirpath) / name
                    try:
                        if marker in path.read_bytes():
                            found.append(str(path))
                    except OSError:
                        pass
        return found

    def close(self) -> None:
        reset_store()
        if self.server is not None:
            self.server.stop()


@pytest.fixture(params=BACKENDS)
def fresh(request: pytest.FixtureRequest, tmp_path: Path, settings: Any, db: None) -> Iterator[Fresh]:
    f = Fresh(request.param, tmp_path, settings)
    yield f
    f.close()


def _key_counts() -> tuple[int, int]:
    """(live keys, keys ever made) of the store's key store."""
    keys = keys_of(get_store())
    return keys.live_keys(), keys.path.stat().st_size // SLOT


def _record_everywhere(project: str, marker: str) -> list[str]:
    """The marker through record_event (with and without a request id),
    load_events and an import file, cited by a step result and a decision.
    Returns the ids of the events that carry it."""
    store = get_store()
    history = ConversationHistory(store, project_id=project, agent_id="agent")
    history.create_task("t", goal="find the card")
    history.create_task("other", goal="elsewhere")
    history.record_event("t", kind="message", role="user", payload=f"{marker} card 4111 (rq)", request_id="rq-1")
    history.record_event("t", kind="message", role="user", payload=f"{marker} card 4111 (plain)")
    history.load_events("t", [{"kind": "tool_result", "name": "grep", "payload": f"{marker} card 4111 (loaded)"}])
    line = {
        "op": "record_event",
        "project": project,
        "agent": "importer",
        "task": "t",
        "kind": "note",
        "payload": f"{marker} card 4111 (imported)",
    }
    outcomes = list(import_lines(store, [json.dumps(line)]))
    assert not isinstance(outcomes[0][1], Exception), outcomes
    history.set_step(
        "t",
        name="read",
        state="completed",
        result_event_seq=1,
        result_basis="supported",
        result_supports=[{"kind": "event", "task_name": "t", "seq": 1}],
    )
    traces = DecisionTraces(store, project_id=project, agent_id="agent")
    cited = traces.record_decision(
        "other",
        choice_key="card",
        conclusion="The card is on file",
        rationale="the user said so",
        supports=[{"kind": "event", "task_name": "t", "seq": s} for s in (1, 2, 3, 4)],
    )
    assert cited.recorded, cited
    page = history.list_events("t")
    assert [marker in e.payload for e in page.events] == [True] * 4  # readers see the text before
    return [str(e.id) for e in page.events]


def _steward(project: str) -> Client:
    client = Client()
    client.force_login(make_user("stan-" + uuid.uuid4().hex[:6], "steward", [project]))
    return client


def _wait_for_purge() -> None:
    store = get_store()
    purger = Purger.kick(store, now=True)
    assert purger.wait(120), "the purge did not finish"
    assert purger.error is None, purger.error
    assert pending_count(store) == 0


def _assert_gone(
    fresh: Fresh, project: str, marker: str, client: Client, event_ids: list[str], caplog: pytest.LogCaptureFixture
) -> None:
    store = get_store()
    p = f"/p/{project}"
    decisions = store.read(project, "MATCH (d:Decision) WHERE d.project_id = $p RETURN d.id AS id", {"p": project})
    urls = [
        f"{p}/",
        f"{p}/review/",
        f"{p}/conflicts/",
        f"{p}/tasks/",
        f"{p}/task/?name=t",
        f"{p}/task/?name=other",
        f"{p}/events/?task=t",
        f"{p}/events/?task=other",
        f"{p}/activity/",
    ]
    urls += [f"{p}/decisions/{d['id']}/" for d in decisions]
    urls += [f"{p}/events/redact?event_id={e}" for e in event_ids]
    for url in urls:
        response = client.get(url)
        assert response.status_code in (200, 404), url
        assert marker not in response.content.decode(), url
    assert not any(marker in json.dumps(line, default=str) for line in export_project(store, project))
    assert not any(marker in e.model_dump_json() for e in ActivityLog(store, project_id=project).every())
    for query in ("MATCH (n) RETURN properties(n) AS p", "MATCH ()-[r]->() RETURN properties(r) AS p"):
        for row in store.read(project, query):
            assert marker not in json.dumps(row["p"], default=str), row
    traces = DecisionTraces(store, project_id=project, agent_id="x")
    assert traces.search_decisions(marker) == []
    assert traces.search_decisions("4111") == []
    assert fresh.files_with(marker.encode()) == []
    assert not [r for r in caplog.records if marker in r.getMessage() or marker in str(r.args)]


def test_a_redaction_leaves_the_marker_nowhere(fresh: Fresh, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)  # every logger at every level: store clients, Django, ours
    project = "canary-" + uuid.uuid4().hex[:8]
    marker = "SECRET-CANARY-" + uuid.uuid4().hex
    event_ids = _record_everywhere(project, marker)
    client = _steward(project)
    for n, eid in enumerate(event_ids):
        done = client.post(
            f"/p/{project}/events/redact", {"event_id": eid, "reason": "pii", "confirm": "on", "request_id": f"r{n}"}
        )
        assert done.status_code == 302
    _wait_for_purge()
    page = client.get(f"/p/{project}/events/?task=t").content.decode()
    assert page.count(DONE[fresh.backend]) == 4 and PENDING[fresh.backend] not in page
    assert DONE[fresh.backend] in client.get(f"/p/{project}/activity/").content.decode()
    # a retry of the first write answers with the body as it is now, and
    # seals nothing: no key is made for it
    keys = _key_counts()
    again = ConversationHistory(get_store(), project_id=project, agent_id="agent").record_event(
        "t", kind="message", role="user", payload=f"{marker} card 4111 (rq)", request_id="rq-1"
    )
    assert again.recorded and again.event is not None and again.event.payload == "[REDACTED]"
    assert again.event.redacted_at is not None and again.event.seq == 1
    assert _key_counts() == keys
    _assert_gone(fresh, project, marker, client, event_ids, caplog)
    fresh.restart()
    _assert_gone(fresh, project, marker, client, event_ids, caplog)


def test_a_task_deletion_leaves_the_marker_nowhere(fresh: Fresh, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    project = "canary-" + uuid.uuid4().hex[:8]
    marker = "SECRET-CANARY-" + uuid.uuid4().hex
    event_ids = _record_everywhere(project, marker)
    client = _steward(project)
    done = client.post(
        f"/p/{project}/task/delete",
        {"name": "t", "include_decisions": "on", "reason": "retention", "confirm": "on", "request_id": "d1"},
    )
    assert done.status_code == 302
    _wait_for_purge()
    assert DONE[fresh.backend] in client.get(f"/p/{project}/activity/").content.decode()
    keys = _key_counts()
    again = ConversationHistory(get_store(), project_id=project, agent_id="agent").record_event(
        "t", kind="message", role="user", payload=f"{marker} card 4111 (rq)", request_id="rq-1"
    )
    assert again.recorded and again.event is not None and again.event.payload == ""  # no body after deletion
    assert _key_counts() == keys  # the retry made no key
    _assert_gone(fresh, project, marker, client, event_ids, caplog)
    fresh.restart()
    _assert_gone(fresh, project, marker, client, event_ids, caplog)


@pytest.mark.usefixtures("purges_held")
def test_a_purge_cut_short_by_a_crash_completes_after_restart(fresh: Fresh, monkeypatch: pytest.MonkeyPatch) -> None:
    project = "canary-" + uuid.uuid4().hex[:8]
    marker = "SECRET-CANARY-" + uuid.uuid4().hex
    store = get_store()
    history = ConversationHistory(store, project_id=project, agent_id="agent")
    history.create_task("t", goal="g")
    event = history.record_event("t", kind="message", payload=f"{marker} password hunter2").event
    assert event is not None
    slot = store.read(project, "MATCH (e:Event {id: $id}) RETURN e.key_slot AS s", {"id": str(event.id)})[0]["s"]
    keys = keys_of(store)
    # the process dies after the commit, before it destroys the key, and the store dies before any purge
    monkeypatch.setattr(type(keys), "destroy", lambda self, slots: 0)
    assert HistoryRetention(store, project_id=project, agent_id="steward").redact_event(str(event.id)).recorded
    monkeypatch.undo()
    assert keys.key(slot) is not None
    assert pending_count(store) == 1
    page = _steward(project).get(f"/p/{project}/events/?task=t").content.decode()
    assert PENDING[fresh.backend] in page
    fresh.restart(kill=True)  # opening the store again starts the purge that was left pending
    _wait_for_purge()
    assert keys_of(get_store()).key(slot) is None
    entry = ActivityLog(get_store(), project_id=project).list()[0]
    assert entry.disk_purge == "done" and entry.disk_purged_at is not None
    assert fresh.files_with(marker.encode()) == []
    assert DONE[fresh.backend] in _steward(project).get(f"/p/{project}/events/?task=t").content.decode()


def test_the_purge_command_finishes_what_is_pending(story: Any, as_: Any) -> None:
    from io import StringIO

    from django.core.management import call_command

    client = as_("steward")
    done = client.post(
        f"/p/{story.project}/events/redact",
        {"event_id": story.event_id, "reason": "PII", "confirm": "on", "request_id": "pc1"},
    )
    assert done.status_code == 302
    out = StringIO()
    call_command("purge_disk", stdout=out)
    assert "0 pending now" in out.getvalue()
    entry = ActivityLog(get_store(), project_id=story.project).list()[0]
    assert entry.action == "redact" and entry.disk_purge == "done"
    page = client.get(f"/p/{story.project}/activity/").content.decode()
    assert DONE["falkordb"] in page and PENDING["falkordb"] not in page
