"""A server that accepts connections and never answers (a loopback socket
that reads nothing and writes nothing) is given up on in bounded time on
both backends' urls, with GraphStoreError naming it."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from core.stores import GraphStoreError, open_store

#: connect 1 s plus read 1.5 s by default; the rest is headroom
BOUND_S = 5.0


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
