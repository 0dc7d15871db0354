"""A server that accepts connections and never answers (a loopback socket
that reads nothing and writes nothing) is given up on in bounded time on
both backends' urls, with GraphStoreError naming it; a real server that
stops answering (a proxy in front of it stops passing bytes) is a
GraphStoreTimeoutError in bounded time, and the same store answers again
once it passes them again."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from core.stores import GraphStore, GraphStoreError, GraphStoreTimeoutError, open_store
from core.stores.keystore import keys_of

#: connect 1 s plus read 1.5 s by default; the rest is headroom
BOUND_S = 5.0
PROXIED_TIMEOUT_S = 3.0


@pytest.fixture
def silent() -> Iterator[int]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])  # kept open, never answered
            except TimeoutError:
                continue
            except OSError:
                return

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    server.close()


@pytest.mark.parametrize("scheme", ["falkordb", "bolt", "neo4j"])
def test_a_server_that_never_answers_is_given_up_on_in_bounded_time(silent: int, scheme: str) -> None:
    start = time.monotonic()
    with pytest.raises(GraphStoreError) as caught:
        open_store(f"{scheme}://127.0.0.1:{silent}?keys=/tmp/unused-{silent}.keys")
    took = time.monotonic() - start
    assert took < BOUND_S, took
    assert f"127.0.0.1:{silent}" in str(caught.value)


def test_a_timeout_must_be_a_positive_number() -> None:
    for bad in ("0", "-1", "soon"):
        with pytest.raises(GraphStoreError, match="timeout must be a number"):
            open_store(f"falkordb://127.0.0.1:1?timeout={bad}")


class _PausableProxy:
    """A loopback TCP proxy to a real server that can stop passing bytes
    either way (the server looks hung: connections stay open, nothing comes
    back) and start again."""

    def __init__(self, connect: Callable[[], socket.socket]) -> None:
        self._connect = connect
        self.flowing = threading.Event()
        self.flowing.set()
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.port = self._listener.getsockname()[1]
        self._open: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = self._connect()
            self._open += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                self.flowing.wait()
                target.sendall(data)
        except OSError:
            pass
        for end in (source, target):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        self.flowing.set()
        self._listener.close()
        for end in self._open:
            end.close()


@pytest.fixture
def proxied(
    store: GraphStore, tmp_path: Path, request: pytest.FixtureRequest
) -> Iterator[tuple[GraphStore, _PausableProxy]]:
    """The backend's real server behind a proxy, opened through it."""
    if store.backend == "falkordb":
        path = store.embedded_server.socket  # type: ignore[attr-defined]

        def connect() -> socket.socket:
            upstream = socket.socket(socket.AF_UNIX)
            upstream.connect(str(path))
            return upstream

        proxy = _PausableProxy(connect)
        target = f"falkordb://127.0.0.1:{proxy.port}"
    else:
        parts = urlsplit(request.getfixturevalue("neo4j_url"))
        host, port = parts.hostname, parts.port
        proxy = _PausableProxy(lambda: socket.create_connection((host, port)))
        credentials = f"{parts.username}:{parts.password}@" if parts.username else ""
        target = f"bolt://{credentials}127.0.0.1:{proxy.port}"  # bolt: no routing table to lead around the proxy
    # 3 s rather than the default 1.5: the reads before the pause must answer on a loaded machine
    # the graph's own key store: the graph is bound to it
    opened = open_store(f"{target}?keys={keys_of(store).where}&timeout={PROXIED_TIMEOUT_S}")
    yield opened, proxy
    proxy.close()
    opened.close()


def test_a_server_that_stops_answering_is_a_timeout_in_bounded_time_and_answers_again_after(
    proxied: tuple[GraphStore, _PausableProxy], project_id: str
) -> None:
    store, proxy = proxied
    mine = {"p": project_id}  # Neo4j: one database for every project
    store.write(project_id, "CREATE (:W {i: 1, project_id: $p})", mine)
    query = "MATCH (n:W {project_id: $p}) RETURN n.i AS i"
    assert store.read(project_id, query, mine) == [{"i": 1}]
    proxy.flowing.clear()
    try:
        for attempt in (
            lambda: store.read(project_id, query, mine),
            lambda: store.write(project_id, "CREATE (:W {i: 2, project_id: $p})", mine),
        ):
            started = time.monotonic()
            with pytest.raises(GraphStoreTimeoutError):
                attempt()
            took = time.monotonic() - started
            assert took < PROXIED_TIMEOUT_S + 2.5, took  # one timeout, never retried: the headroom is the machine's
    finally:
        proxy.flowing.set()
    time.sleep(0.2)
    assert {r["i"] for r in store.read(project_id, query, mine)} <= {1, 2}  # the same handle answers again
    store.write(project_id, "CREATE (:W {i: 3, project_id: $p})", mine)
    assert 3 in {r["i"] for r in store.read(project_id, query, mine)}
