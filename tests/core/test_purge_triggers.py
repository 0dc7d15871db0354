"""Nothing stays pending: whoever redacts or deletes starts the disk purge,
a process finishes the purges it started before it exits, and a server
finishes within 30 s what a process that died left pending. And a rewrite
killed mid-way leaves no temporary file behind the next purge."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from core._purge import Purger, event_purge_states
from core.history import ConversationHistory
from core.retention import HistoryRetention
from core.stores import GraphStore, open_store
from core.stores.purge import purge_files

ROOT = Path(__file__).resolve().parents[2]
#: the promise: while a server runs, no redaction stays pending longer
PENDING_AT_MOST_S = 30.0


def _event(store: GraphStore, project_id: str, task: str = "t") -> str:
    history = ConversationHistory(store, project_id=project_id, agent_id="agent")
    history.create_task(task, goal="g")
    return str(history.record_event(task, kind="note", payload="secret " + uuid.uuid4().hex).event.id)


def _purged_at(store: GraphStore, project_id: str, event_id: str) -> str | None:
    """When a purge round covered the event (None while it is pending)."""
    return event_purge_states(store, project_id, [event_id])[event_id]["at"]


def _purged_within(store: GraphStore, project_id: str, event_id: str, seconds: float) -> float | None:
    """Seconds until the event's purge is done, or None when it was not."""
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        if _purged_at(store, project_id, event_id):
            return time.monotonic() - start
        time.sleep(0.2)
    return None


def _activity_done(store: GraphStore, project_id: str, action: str, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        rows = store.read(
            project_id,
            "MATCH (a:Activity) WHERE a.project_id = $p AND a.action = $action RETURN a.purge AS purge",
            {"p": project_id, "action": action},
        )
        if rows and all(r["purge"] == "done" for r in rows):
            return True
        time.sleep(0.2)
    return False


def _run(store: GraphStore, code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    script = f"from core.stores import open_store\nstore = open_store({store.url!r})\n" + textwrap.dedent(code)
    return subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)


def test_a_library_redaction_and_deletion_start_the_purge(store: GraphStore, project_id: str) -> None:
    Purger.finish_all()  # another test's purge must not be what covers this one
    eid = _event(store, project_id)
    assert HistoryRetention(store, project_id=project_id, agent_id="steward").redact_event(eid).recorded
    assert _purged_within(store, project_id, eid, PENDING_AT_MOST_S) is not None
    Purger.finish_all()
    _event(store, project_id, task="gone")
    assert HistoryRetention(store, project_id=project_id, agent_id="steward").delete_task("gone").recorded
    assert _activity_done(store, project_id, "delete_task", PENDING_AT_MOST_S)


def test_a_process_that_redacts_and_exits_leaves_nothing_pending(store: GraphStore, project_id: str) -> None:
    eid = _event(store, project_id)
    done = _run(
        store,
        f"""
        from core.retention import HistoryRetention
        assert HistoryRetention(store, project_id={project_id!r}, agent_id="script").redact_event({eid!r}).recorded
        """,
    )
    assert done.returncode == 0, done.stderr
    assert _purged_at(store, project_id, eid) is not None  # done before the script ended


def test_a_server_finishes_within_30_s_what_a_dead_process_left_pending(store: GraphStore, project_id: str) -> None:
    eid = _event(store, project_id)
    Purger.watch(store)  # as every web worker does once it has opened its store
    try:
        died = _run(
            store,
            f"""
            import os
            from core.retention import HistoryRetention
            assert HistoryRetention(store, project_id={project_id!r}, agent_id="script").redact_event({eid!r}).recorded
            os._exit(0)  # dies before its own purge: no exit handler runs
            """,
        )
        assert died.returncode == 0, died.stderr
        assert _purged_at(store, project_id, eid) is None  # left pending
        took = _purged_within(store, project_id, eid, PENDING_AT_MOST_S + 5)
    finally:
        Purger.unwatch(store)
    assert took is not None and took < PENDING_AT_MOST_S, took


def test_the_purge_removes_the_temporary_file_of_a_killed_rewrite(falkordb_store: GraphStore, tmp_path: Path) -> None:
    data_dir = Path(falkordb_store.embedded_server.data_dir)  # type: ignore[attr-defined]
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # a pid that was a process and is no more, as a killed rewrite's child
    canary = b"REDACTED-LATER-" + uuid.uuid4().hex.encode()
    leftovers = [data_dir / f"temp-rewriteaof-bg-{gone.pid}.aof", data_dir / "appendonlydir" / f"temp-{gone.pid}.rdb"]
    running = data_dir / f"temp-rewriteaof-bg-{os.getpid()}.aof"  # a live process's: a rewrite under way
    for path in [*leftovers, running]:
        path.write_bytes(b"graph as it was " + canary)
    try:
        report = purge_files(falkordb_store)
        assert {p.name for p in leftovers} <= set(report["removed"])
        assert not any(p.exists() for p in leftovers)
        assert running.exists()
    finally:
        running.unlink(missing_ok=True)


def _redacted_on_a_store_of_its_own(store: GraphStore, project_id: str) -> tuple[GraphStore, str, Purger]:
    """A second store on the same graph (the shared one stays open), an
    event redacted through it, and that store's purger, held by ``purges_held``."""
    own = open_store(store.url)
    eid = _event(own, project_id)
    assert HistoryRetention(own, project_id=project_id, agent_id="steward").redact_event(eid).recorded
    purger = Purger._running[id(own)]
    assert purger.thread is not None and purger.thread.is_alive() and _purged_at(store, project_id, eid) is None
    return own, eid, purger


def test_closing_a_store_finishes_its_purge_and_stops_its_thread(
    store: GraphStore, project_id: str, purges_held: None, caplog: pytest.LogCaptureFixture
) -> None:
    own, eid, purger = _redacted_on_a_store_of_its_own(store, project_id)
    with caplog.at_level(logging.DEBUG, logger="reviewer"):
        own.close()
        time.sleep(0.2)  # what a thread left running would try on the closed store
    assert purger.thread is not None and not purger.thread.is_alive()
    assert _purged_at(store, project_id, eid) is not None  # done before the store closed
    failed = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING or "stopped" in r.getMessage()]
    assert failed == []
    assert Purger.kick(own).thread is None  # a closed store starts no round


def test_a_purge_abandoned_at_close_stays_pending_for_the_next_opener(
    store: GraphStore, project_id: str, purges_held: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    own, eid, purger = _redacted_on_a_store_of_its_own(store, project_id)
    monkeypatch.setattr(Purger, "EXIT_WAIT_S", 0.0)  # no time to finish
    own.close()
    purger.wait(5)
    assert purger.thread is not None and not purger.thread.is_alive()
    assert _purged_at(store, project_id, eid) is None  # not marked done: nothing was purged
    Purger.kick(store, now=True).wait(60)  # as the next process that opens the store does
    assert _purged_at(store, project_id, eid) is not None


@pytest.fixture(autouse=True)
def _no_purge_left_running() -> None:
    yield
    Purger.finish_all(timeout=60)
