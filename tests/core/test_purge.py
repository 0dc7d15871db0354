"""The disk purge's timing (core/_purge.py) and the rewrite it waits for
(core/stores/purge.py): a purge under steady redactions still runs within its
maximum wait, and a rewrite that began before the purge asked never counts
as the purge's own."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

from core import _common as c
from core._purge import Purger, pending_count
from core.history import ConversationHistory
from core.retention import ActivityLog, HistoryRetention
from core.stores import GraphStore, open_store
from core.stores.purge import rewrite_append_only_file


def _redacted(store: GraphStore, project_id: str, n: int = 1) -> HistoryRetention:
    history = ConversationHistory(store, project_id=project_id, agent_id="a")
    history.create_task("t", goal="g")
    history.load_events("t", [{"kind": "note", "payload": f"n{i}"} for i in range(n)])
    retention = HistoryRetention(store, project_id=project_id, agent_id="s")
    tid = c.task_id(project_id, "t")
    for i in range(1, n + 1):
        assert retention.redact_event(c.event_id(tid, i)).recorded
    return retention


def _states(store: GraphStore, project_id: str) -> set[str | None]:
    return {e.disk_purge for e in ActivityLog(store, project_id=project_id).list()}


def test_a_purge_under_steady_kicks_runs_within_its_maximum_wait(
    store: GraphStore, project_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kicks every 50 ms never leave a quiet spell; the round still starts
    once the first kick is MAX_WAIT_S old (here 1 s; the quiet spell 1 h)."""
    Purger.kick(store, now=True).wait(120)  # nothing left from earlier tests
    monkeypatch.setattr(Purger, "QUIET_S", 3600.0)
    monkeypatch.setattr(Purger, "MAX_WAIT_S", 1.0)
    _redacted(store, project_id)  # kicks too (not now)
    assert _states(store, project_id) == {"pending"}
    began = time.monotonic()
    while _states(store, project_id) != {"done"}:
        assert time.monotonic() - began < 60, "no purge round under steady kicks"
        Purger.kick(store)
        time.sleep(0.05)
    assert time.monotonic() - began >= 0.5  # it did wait for the spell it was given
    Purger.kick(store, now=True).wait(120)


def test_a_purge_waits_for_a_quiet_spell_when_kicks_stop(
    store: GraphStore, project_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    Purger.kick(store, now=True).wait(120)
    monkeypatch.setattr(Purger, "QUIET_S", 0.5)
    monkeypatch.setattr(Purger, "MAX_WAIT_S", 3600.0)
    _redacted(store, project_id)
    began = time.monotonic()
    purger = Purger.kick(store)
    assert _states(store, project_id) == {"pending"}  # not at once
    assert purger.wait(120)
    assert time.monotonic() - began >= 0.4 and _states(store, project_id) == {"done"}
    assert pending_count(store) == 0


@pytest.fixture
def slow_rewrites(tmp_path: Path) -> GraphStore:
    """An embedded FalkorDB of its own whose rewrites take seconds (the
    server waits ``rdb-key-save-delay`` microseconds after each key)."""
    store = open_store(f"falkordb+embedded://{tmp_path}?appendfsync=everysec")
    yield store
    store.close()


def test_a_rewrite_under_way_before_the_call_is_not_the_one_it_waits_for(slow_rewrites: GraphStore) -> None:
    """Text written and deleted while an earlier rewrite runs is in that
    rewrite's increment file: only a rewrite begun after the call folds it
    away, and the call returns after that one."""
    store = slow_rewrites
    client = store._redis  # type: ignore[attr-defined]
    aof = Path(store.embedded_server.data_dir) / "appendonlydir"  # type: ignore[attr-defined]
    for n in range(3):
        client.set(f"filler:{n}", "x")
    marker = "WRITTEN-DURING-AN-EARLIER-REWRITE-" + uuid.uuid4().hex
    before = client.info("persistence")["aof_rewrites"]
    client.config_set("rdb-key-save-delay", 400_000)  # 0.4 s a key: the rewrite below takes over a second
    client.execute_command("BGREWRITEAOF")
    client.config_set("rdb-key-save-delay", 0)  # the rewrite under way keeps its delay; later ones are quick
    assert client.info("persistence")["aof_rewrite_in_progress"]
    client.set("secret", marker)
    client.delete("secret")

    def on_disk() -> bool:
        return any(marker.encode() in p.read_bytes() for p in aof.iterdir() if p.is_file())

    assert on_disk()
    rewrite_append_only_file(client, time.monotonic() + 60)  # raises if none finishes in time
    now = client.info("persistence")
    assert now["aof_rewrites"] >= before + 2 and not now["aof_rewrite_in_progress"]
    assert not on_disk()
