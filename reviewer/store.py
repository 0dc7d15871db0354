"""The process's one graph store, opened on first use.

A store that stops answering is closed and opened again on the next request,
so the dashboard recovers by itself when the store comes back (for the
embedded store, reopening restarts its server on the same data directory).
"""

from __future__ import annotations

import faulthandler
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from django.conf import settings

from core._purge import Purger
from core.retention import purge_disk_soon
from core.stores import GraphStore, GraphStoreError, GraphStoreTimeoutError, open_store

T = TypeVar("T")

_lock = threading.Lock()
_store: GraphStore | None = None

#: A project the store was seen to hold is taken as still there for this
#: many seconds: a staff member's every page asked the store whether its
#: project exists, a round trip each (a project goes away only when an
#: operator drops it; its pages then read empty until this runs out).
PROJECT_KNOWN_S = 30.0
#: requests that only read: their pages skip the ping, and
#: ``StoreUnavailableMiddleware`` may ask them twice
SAFE_METHODS = ("GET", "HEAD")
_known: dict[str, float] = {}


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
            Purger.watch(_store)  # and what other processes leave pending while this one runs
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
    except GraphStoreTimeoutError:
        raise  # a store that hangs is not reopened: that would wait as long again
    except GraphStoreError:
        reset_store()
        store = get_store()
        return store, question(store)


def project_exists(project_id: str) -> tuple[GraphStore | None, bool]:
    """Whether the store holds ``project_id``, and the store when it was
    asked (None when a yes from the last ``PROJECT_KNOWN_S`` seconds was
    remembered instead). Asking reopens a dead handle, as ``ask_store`` does."""
    until = _known.get(project_id)
    if until is not None and until > time.monotonic():
        return None, True
    store, exists = ask_store(lambda store: store.has_project(project_id))
    if exists:
        if len(_known) >= 10_000:  # ids are checked, but bounded all the same
            _known.clear()
        _known[project_id] = time.monotonic() + PROJECT_KNOWN_S
    return store, exists


def reset_store() -> None:
    global _store
    _known.clear()
    with _lock:
        old, _store = _store, None
    if old is not None:
        # a dead handle: its purge is abandoned at once (the request waits on
        # nothing), left pending for the new handle, which runs it on opening
        Purger.detach(old, timeout=0)
        try:
            old.close()
        except GraphStoreError:
            pass


def stop_on_sigterm() -> None:
    """Make SIGTERM end this process as ``sys.exit`` does, so ``finally``
    blocks and exit handlers run and the store is closed (the embedded server
    stops when this was its last user). Python's default for SIGTERM ends the
    process on the spot, leaving the embedded server running. A shutdown
    still running 20 s later prints every thread's stack to standard error,
    to show what it waits on."""

    def _exit(signum: int, frame: object) -> None:
        faulthandler.dump_traceback_later(20)
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, _exit)
