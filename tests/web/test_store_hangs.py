"""A store that hangs (its server stopped with SIGSTOP: it keeps its socket,
answers nothing) gives a 503 page within about two seconds and /healthz
within one, and the same store answers again once the server resumes."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.test import Client

from core.history import ConversationHistory
from core.stores import GraphStore, open_store
from reviewer import store as shared

from .conftest import make_user

#: the store's read timeout (the default, 1.5 s, gives a 503 page within 2 s;
#: 2.5 here so that the pages before the pause answer on a loaded machine)
TIMEOUT_S = 2.5
#: one timeout, never asked again: the rest is headroom for a loaded machine
PAGE_BOUND_S = TIMEOUT_S + 2.0
HEALTH_BOUND_S = 1.5  # the health check gives up after 0.8 s whatever the timeout


@pytest.fixture
def own_store(tmp_path: Path) -> Iterator[GraphStore]:
    store = open_store(f"falkordb+embedded://{tmp_path / 'graph'}?timeout={TIMEOUT_S}")
    before = shared._store
    shared._store = store
    ConversationHistory(store, project_id="acme", agent_id="a").create_task("t", goal="g")
    yield store
    pid = store.embedded_server.server_pid()  # type: ignore[attr-defined]
    if pid:
        os.kill(pid, signal.SIGCONT)
    shared._store = before
    store.close()


def _timed(client: Client, path: str) -> tuple[int, float]:
    start = time.monotonic()
    status = client.get(path).status_code
    return status, time.monotonic() - start


def test_a_hung_embedded_server_gives_a_503_in_bounded_time_and_the_store_recovers(
    own_store: GraphStore, db: None
) -> None:

    client = Client()
    client.force_login(make_user("vera", "viewer", ["acme"]))
    assert client.get("/healthz").status_code == 200
    page = "/p/acme/tasks/"
    assert _timed(client, page)[0] == 200
    pid = own_store.embedded_server.server_pid()  # type: ignore[attr-defined]
    os.kill(pid, signal.SIGSTOP)
    try:
        status, took = _timed(client, page)
        assert status == 503 and took < PAGE_BOUND_S, (status, took)
        status, took = _timed(client, "/healthz")
        assert status == 503 and took < HEALTH_BOUND_S, (status, took)
    finally:
        os.kill(pid, signal.SIGCONT)
    time.sleep(TIMEOUT_S + 0.2)  # the health check's ping still waiting in the background ends
    assert _timed(client, "/healthz")[0] == 200
    assert _timed(client, page)[0] == 200
    assert own_store is shared._store  # the same handle: not reopened
