"""Issue 12 in the core: bodies encrypted at rest with a key per event,
request records without bodies, keys destroyed by a redaction or deletion,
and the disk purge's bookkeeping. (The end-to-end canary through the
dashboard is tests/web/test_redaction_canary.py.)"""

from __future__ import annotations

import json
import os
import stat
import uuid
from pathlib import Path

import pytest

from core import _common as c
from core._purge import Purger, pending_count, purge_round
from core.history import ConversationHistory
from core.retention import REDACTED, ActivityLog, HistoryRetention
from core.stores import GraphStore
from core.stores.keystore import SLOT, KeyStore, keys_of

#: these tests look at what is pending, and run their purge rounds themselves
pytestmark = pytest.mark.usefixtures("purges_held")


def _everything(store: GraphStore, project_id: str) -> str:
    rows = store.read(project_id, "MATCH (n) WHERE n.project_id = $p RETURN properties(n) AS p", {"p": project_id})
    rows += store.read(
        project_id, "MATCH (a)-[r]->() WHERE a.project_id = $p RETURN properties(r) AS p", {"p": project_id}
    )
    return json.dumps([r["p"] for r in rows], default=str)


def test_bodies_are_stored_encrypted_and_read_as_text(store: GraphStore, project_id: str) -> None:
    history = ConversationHistory(store, project_id=project_id, agent_id="a")
    history.create_task("t", goal="g")
    marker = "CANARY-" + uuid.uuid4().hex
    history.record_event("t", kind="message", payload=f"{marker} one", request_id="r1")
    history.record_event("t", kind="message", payload=f"{marker} two")
    history.load_events("t", [{"kind": "note", "payload": f"{marker} {n}"} for n in range(3)])
    assert marker not in _everything(store, project_id)  # neither the events nor the request record
    page = history.list_events("t")
    assert [e.payload for e in page.events] == [f"{marker} one", f"{marker} two"] + [f"{marker} {n}" for n in range(3)]
    assert history.fetch_event("t", 2).event.payload == f"{marker} two"
    # the request record holds no body: a retry reads it from the graph
    again = history.record_event("t", kind="message", payload=f"{marker} one", request_id="r1")
    assert again.event is not None and again.event.seq == 1 and again.event.payload == f"{marker} one"


def test_a_retry_after_a_redaction_or_deletion_returns_the_body_as_it_is_now(
    store: GraphStore, project_id: str
) -> None:
    history = ConversationHistory(store, project_id=project_id, agent_id="a")
    history.create_task("t", goal="g")
    ev = history.record_event("t", kind="message", role="user", payload="SECRET card 4111", request_id="req-1").event
    assert ev is not None
    assert HistoryRetention(store, project_id=project_id, agent_id="s").redact_event(str(ev.id), reason="pii").recorded
    again = history.record_event("t", kind="message", role="user", payload="SECRET card 4111", request_id="req-1")
    assert again.recorded and again.event is not None
    assert again.event.payload == REDACTED and again.event.redacted_at is not None
    assert again.event.payload_sha256 == ev.payload_sha256 and again.event.seq == 1
    assert "SECRET" not in _everything(store, project_id)
    assert HistoryRetention(store, project_id=project_id, agent_id="s").delete_task("t").recorded
    gone = history.record_event("t", kind="message", role="user", payload="SECRET card 4111", request_id="req-1")
    assert gone.recorded and gone.event is not None and gone.event.payload == "" and gone.event.seq == 1


def test_redaction_and_deletion_destroy_the_keys(store: GraphStore, project_id: str) -> None:
    history = ConversationHistory(store, project_id=project_id, agent_id="a")
    history.create_task("t", goal="g")
    history.create_task("u", goal="g")
    history.record_event("t", kind="message", payload="one")
    history.load_events("u", [{"kind": "note", "payload": f"u{n}"} for n in range(5)])

    def slots(task: str) -> list[int]:
        return [
            r["s"]
            for r in store.read(
                project_id, "MATCH (e:Event {task_id: $t}) RETURN e.key_slot AS s", {"t": c.task_id(project_id, task)}
            )
        ]

    keys = keys_of(store)
    t_slots, u_slots = slots("t"), slots("u")
    assert all(keys.key(s) is not None for s in t_slots + u_slots)
    retention = HistoryRetention(store, project_id=project_id, agent_id="s")
    assert retention.redact_event(c.event_id(c.task_id(project_id, "t"), 1)).recorded
    assert retention.delete_task("u").recorded
    assert all(keys.key(s) is None for s in t_slots + u_slots)
    entries = ActivityLog(store, project_id=project_id).list()
    assert [e.disk_purge for e in entries] == ["pending", "pending"]
    assert pending_count(store) >= 2
    report = purge_round(store)
    assert report.covered >= 2
    entries = ActivityLog(store, project_id=project_id).list()
    assert [e.disk_purge for e in entries] == ["done", "done"] and all(e.disk_purged_at for e in entries)


def test_events_written_before_encryption_still_read_and_redact(store: GraphStore, project_id: str) -> None:
    history = ConversationHistory(store, project_id=project_id, agent_id="a")
    history.create_task("t", goal="g")
    tid = c.task_id(project_id, "t")
    store.write(  # an event as the code before encryption wrote it
        project_id,
        "MATCH (t:Task {id: $tid}) SET t.event_seq = 1 CREATE (:Event {id: $id, project_id: $p, task_id: $tid, "
        "seq: 1, kind: 'message', role: null, name: null, payload: 'OLD-PLAIN', payload_sha256: 'x', "
        "truncated: false, author: 'a', at: $at})",
        {"tid": tid, "id": c.event_id(tid, 1), "p": project_id, "at": c.iso(c.now())},
    )
    assert history.fetch_event("t", 1).event.payload == "OLD-PLAIN"
    assert HistoryRetention(store, project_id=project_id, agent_id="s").redact_event(c.event_id(tid, 1)).recorded
    assert history.fetch_event("t", 1).event.payload == REDACTED
    assert "OLD-PLAIN" not in _everything(store, project_id)


def test_the_key_store_overwrites_in_place_and_is_owner_only(tmp_path: Path) -> None:
    keys = KeyStore(tmp_path / "keys" / "events.keys", sync="always")
    first, made = keys.new_keys(3)
    second, _ = keys.new_keys(2)
    assert (first, second) == (0, 3) and keys.key(1) == made[1]
    inode = os.stat(keys.path).st_ino
    keys.destroy([(0, 1)])
    assert keys.key(0) is None and keys.key(1) is None and keys.key(2) == made[2]
    raw = keys.path.read_bytes()
    assert raw[: 2 * SLOT] == bytes(2 * SLOT) and made[0] not in raw and made[1] not in raw
    assert os.stat(keys.path).st_ino == inode and len(raw) == 5 * SLOT  # the same file, the same size
    assert stat.S_IMODE(os.stat(keys.path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(keys.path.parent).st_mode) == 0o700
    assert keys.live_keys() == 3  # 2, 3 and 4
    # a range past the last slot given out destroys up to it and gives out no more
    assert keys.destroy([(4, 50)]) == 1 and keys.count() == 5 and not keys.holds(5)
    assert keys.live_keys() == 2 and keys.key(3) is not None and keys.key(4) is None
    # a torn append (a crash mid-write) does not shift later slots
    with open(keys.path, "ab") as fh:
        fh.write(b"\x01" * 5)
    third, more = keys.new_keys(1)
    assert third == 6 and keys.key(6) == more[0]


def test_a_redaction_during_a_purge_waits_for_the_next_round(
    store: GraphStore, project_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import core.stores.purge as disk

    history = ConversationHistory(store, project_id=project_id, agent_id="a")
    history.create_task("t", goal="g")
    history.load_events("t", [{"kind": "note", "payload": f"n{n}"} for n in range(2)])
    tid = c.task_id(project_id, "t")
    retention = HistoryRetention(store, project_id=project_id, agent_id="s")
    assert retention.redact_event(c.event_id(tid, 1)).recorded
    real = disk.purge_files

    def rewrite_while_another_redaction_arrives(s: GraphStore) -> dict:
        assert retention.redact_event(c.event_id(tid, 2)).recorded
        return real(s)

    monkeypatch.setattr(disk, "purge_files", rewrite_while_another_redaction_arrives)
    purge_round(store)
    monkeypatch.undo()
    first, second = (history.fetch_event("t", n).event for n in (1, 2))
    states = {e.summary: e.disk_purge for e in ActivityLog(store, project_id=project_id).list()}
    assert states == {"t #1": "done", "t #2": "pending"}
    purge_round(store)
    assert {e.disk_purge for e in ActivityLog(store, project_id=project_id).list()} == {"done"}
    assert first.payload == second.payload == REDACTED


def test_the_rewrite_removes_plain_text_of_old_events_from_the_files(falkordb_store: GraphStore) -> None:
    store = falkordb_store
    project_id = "t-" + uuid.uuid4().hex[:12]
    marker = "OLD-PLAIN-" + uuid.uuid4().hex
    try:
        history = ConversationHistory(store, project_id=project_id, agent_id="a")
        history.create_task("t", goal="g")
        tid = c.task_id(project_id, "t")
        store.write(  # written before encryption: the text is in the append-only file
            project_id,
            "MATCH (t:Task {id: $tid}) SET t.event_seq = 1 CREATE (:Event {id: $id, project_id: $p, task_id: $tid, "
            "seq: 1, kind: 'message', payload: $text, payload_sha256: 'x', truncated: false, author: 'a', at: $at})",
            {"tid": tid, "id": c.event_id(tid, 1), "p": project_id, "text": marker, "at": c.iso(c.now())},
        )
        aof = Path(store.embedded_server.data_dir) / "appendonlydir"  # type: ignore[attr-defined]

        def on_disk() -> bool:
            return any(marker.encode() in p.read_bytes() for p in aof.iterdir() if p.is_file())

        assert on_disk()
        assert HistoryRetention(store, project_id=project_id, agent_id="s").redact_event(c.event_id(tid, 1)).recorded
        assert on_disk()  # the redaction alone leaves it in the file
        purge_round(store)
        assert not on_disk()
    finally:
        store.drop_project(project_id)


def test_a_falkordb_server_without_an_append_only_file_gets_a_fresh_snapshot(tmp_path: Path) -> None:
    from core.stores import open_store
    from core.stores.purge import purge_files

    with open_store(f"falkordb+embedded://{tmp_path}?appendfsync=everysec") as store:
        store._redis.config_set("appendonly", "no")  # type: ignore[attr-defined]  # as a server run on snapshots
        store.write("p", "CREATE (:X {v: 1})")
        before = store._redis.info("persistence")["rdb_saves"]  # type: ignore[attr-defined]
        assert purge_files(store)["rdb"] is True
        assert store._redis.info("persistence")["rdb_saves"] == before + 1  # type: ignore[attr-defined]
        assert (tmp_path / "dump.rdb").exists()
        # left on snapshots: turning the append-only file on again starts its
        # first rewrite, during which the server refuses to shut down (and
        # outlived the test)


def test_an_embedded_store_purged_and_reopened_keeps_everything_else(tmp_path: Path) -> None:
    """The purge deletes what the rewrite replaced, never what the store
    needs to start again: its append-only manifest and every file it names."""
    from core.stores import open_store
    from core.stores.purge import manifest_entries
    from tests.conftest import SLOW_MACHINE_TIMEOUT_S

    url = f"falkordb+embedded://{tmp_path}?timeout={SLOW_MACHINE_TIMEOUT_S}"
    store = open_store(url)
    try:
        history = ConversationHistory(store, project_id="kept", agent_id="a")
        history.create_task("t", goal="g")
        event = history.record_event("t", kind="message", role="user", payload="gone soon")
        history.record_event("t", kind="message", role="user", payload="stays")
        assert HistoryRetention(store, project_id="kept", agent_id="s").redact_event(event.event.id).recorded
        (tmp_path / "dump.rdb").write_bytes(b"REDIS0011 an old snapshot: gone soon")  # the server runs with save ""
        assert purge_round(store).verified == "files_rewritten"
        assert not (tmp_path / "dump.rdb").exists()  # a snapshot holds what was redacted
        entries = manifest_entries(tmp_path / "appendonlydir")
        assert entries and all((tmp_path / "appendonlydir" / e["file"]).is_file() for e in entries)
    finally:
        Purger.finish_all(timeout=60)  # the round a redaction or an opening started, before the store closes
        store.close()
    store = open_store(url)
    try:
        page = ConversationHistory(store, project_id="kept", agent_id="a").list_events("t")
        assert [e.payload for e in page.events] == [REDACTED, "stays"]
    finally:
        Purger.finish_all(timeout=60)  # the round a redaction or an opening started, before the store closes
        store.close()
