"""The process's one graph store, opened on first use.

A store that stops answering is closed and opened again on the next request,
so the dashboard recovers by itself when the store comes back (for the
embedded store, reopening restarts its server on the same data directory).
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable
from typing import TypeVar

from django.conf import settings

from core.retention import purge_disk_soon
from core.stores import GraphStore, GraphStoreError, open_store

T = TypeVar("T")

_lock = threading.Lock()
_store: GraphStore | None = None


def get_store() -> GraphStore:
    """The shared store; raises GraphStoreError when it cannot be reached."""
    global _store
    store = _store
    if store is not None:
        return store
    with _lock:
        if _store is None:
            _store = open_store(settings.REVIEWER_STORE_URL)
            purge_disk_soon(_store, now=True)  # finishes a disk purge an earlier process left pending
        return _store


def check_store() -> GraphStore:
    """Ping the store, reopening it once if the old connection is dead."""
    return ask_store(lambda store: store.ping())[0]


def ask_store(question: Callable[[GraphStore], T]) -> tuple[GraphStore, T]:
    """The store and its answer to ``question``, asked as ``check_store``
    pings: if the old connection is dead, the store is reopened and asked
    once more. A page whose first read is such a question (a staff
    member's page asks whether its project exists) needs no ping before it."""
    store = get_store()
    try:
        return store, question(store)
    except GraphStoreError:
        reset_store()
        store = get_store()
        return store, question(store)


def reset_store() -> None:
    global _store
    with _lock:
        old, _store = _store, None
    if old is not None:
        try:
            old.close()
        except GraphStoreError:
            pass


def stop_on_sigterm() -> None:
    """Make SIGTERM end this process as ``sys.exit`` does, so ``finally``
    blocks and exit handlers run and the store is closed (the embedded server
    stops when this was its last user). Python's default for SIGTERM ends the
    process on the spot, leaving the embedded server running."""

    def _exit(signum: int, frame: object) -> None:
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, _exit)
