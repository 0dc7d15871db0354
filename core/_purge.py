"""The disk purge that follows a redaction or a task deletion.

A redaction (and ``delete_task``) records, in the same commit, an activity
entry with ``purge: "pending"`` and the key-store slots of the bodies it
removed. A purge round, for the whole store:

1. reads every pending entry of every project (what it will cover);
2. destroys their keys again (idempotent: the redaction already did, unless
   its process died between the commit and that step);
3. deletes request records from before request ids were kept per agent
   (they may hold a body's hash, or the body);
4. rewrites the store's files (``core.stores.purge``), which starts after
   step 1, so it covers everything step 1 read;
5. marks exactly the entries of step 1 (and their events) done, with the
   time and what step 4 verified (``purge_verified``: ``files_rewritten``
   when the store's files were rewritten without them, FalkorDB;
   ``key_destroyed`` when only the key's destruction is certain, Neo4j,
   whose transaction log keeps the ciphertext until it rotates: the
   settings that bound that, as the server reported them, in
   ``purge_bound``). A redaction that arrived during the round stays
   pending and is covered by the next one.

The pending state lives in the graph, so it survives any crash: a round run
after a restart completes it. Who runs rounds, in a background thread of the
process (``Purger.kick``): every redaction and deletion, whoever makes it
(library, importer, API, MCP, dashboard); a process at exit, for the rounds
it started (bounded); a web process when it opens the store, and every
``Purger.CHECK_EVERY_S`` while it runs (``Purger.watch``: what a process that
died left pending); ``manage.py purge_disk`` (for cron). So while a server
runs, no redaction stays pending for more than about 30 s
(``MAX_WAIT_S`` or ``CHECK_EVERY_S``, then the round itself).

Closing a store ends its purges first (``Purger.detach``): the rounds kicked
on it run at once, while it still answers, and its threads stop. A round not
done within ``Purger.EXIT_WAIT_S`` is abandoned: its entries stay pending in
the graph, for the next process that opens the store.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import Any

from . import _common as c
from ._schema import PURGE_SCHEMA
from .stores.base import GraphStore
from .stores.keystore import keys_of, parse_ranges

__all__ = ["PURGE_SCHEMA", "PurgeReport", "Purger", "event_purge_states", "pending_count", "purge_round"]


log = logging.getLogger("reviewer.purge")


@dataclass
class PurgeReport:
    covered: int = 0  # pending entries this round marked done
    slots: int = 0  # key slots overwritten
    requests_scrubbed: int = 0
    seconds: float = 0.0
    at: str | None = None
    files: dict[str, Any] = field(default_factory=dict)
    keys: dict[str, Any] = field(default_factory=dict)  # what the key store did with its files
    #: what the round verified: "files_rewritten" or "key_destroyed"
    verified: str | None = None
    #: Neo4j: the settings that bound how long the transaction log keeps
    #: the ciphertext ("name value; name value")
    bound: str | None = None


def verified_by(files: dict[str, Any]) -> tuple[str, str | None]:
    """What a ``purge_files`` outcome verified, and what bounds the rest."""
    if files.get("rewritten"):
        return "files_rewritten", None
    tx_log = files.get("tx_log") or {}
    return "key_destroyed", "; ".join(f"{k} {v}" for k, v in sorted(tx_log.items(), reverse=True)) or None


def pending_count(store: GraphStore) -> int:
    return sum(
        store.read(
            p, "MATCH (a:Activity) WHERE a.purge = 'pending' AND a.project_id = $p RETURN count(a) AS n", {"p": p}
        )[0]["n"]
        for p in store.list_projects()
    )


def purge_round(store: GraphStore) -> PurgeReport:
    """One purge of the whole store (see the module text)."""
    start = time.perf_counter()
    report = PurgeReport()
    projects = store.list_projects()
    covered: dict[str, list[dict[str, Any]]] = {}
    for p in projects:
        rows = store.read(
            p,
            "MATCH (a:Activity) WHERE a.purge = 'pending' AND a.project_id = $p "
            "RETURN a.id AS id, a.target_kind AS kind, a.target_id AS target, a.purge_slots AS slots",
            {"p": p},
        )
        if rows:
            covered[p] = rows
    ranges = [r for rows in covered.values() for row in rows for r in parse_ranges(row["slots"])]
    keys = keys_of(store)
    if ranges:
        report.slots = keys.destroy(ranges)
        report.keys = keys.purge_files()  # a key server's append-only file loses the destroyed keys
    for p in projects:
        report.requests_scrubbed += _scrub_requests(store, p)
    from .stores.purge import purge_files

    report.files = purge_files(store)
    report.verified, report.bound = verified_by(report.files)
    at = c.iso(c.now())
    said = {"at": at, "v": report.verified, "b": report.bound}
    for p, rows in covered.items():
        store.write(
            p,
            "UNWIND $ids AS id MATCH (a:Activity {id: id}) "
            "SET a.purge = 'done', a.purged_at = $at, a.purge_verified = $v, a.purge_bound = $b",
            {"ids": [r["id"] for r in rows], **said},
        )
        events = [r["target"] for r in rows if r["kind"] == "event"]
        if events:
            store.write(
                p,
                "UNWIND $ids AS id MATCH (e:Event {id: id}) "
                "SET e.purged_at = $at, e.purge_verified = $v, e.purge_bound = $b",
                {"ids": events, **said},
            )
        report.covered += len(rows)
    report.at = at
    report.seconds = time.perf_counter() - start
    log.info(
        "disk purge: %d redactions/deletions covered, %d keys destroyed, %s, in %.1f s",
        report.covered,
        report.slots,
        "the store's files rewritten"
        if report.verified == "files_rewritten"
        else f"the keys destroyed; the transaction log keeps the ciphertext until it rotates ({report.bound})",
        report.seconds,
    )
    return report


def _scrub_requests(store: GraphStore, project_id: str) -> int:
    """Request records from before request ids were kept per agent (they
    have no ``agent_id``) deleted, a batch at a time: no write matches them
    any more (a record's id is now derived with its agent), and they hold
    what a redaction must not leave behind: a body's hash in the fingerprint
    and the result, and in the oldest the body itself."""
    removed = 0
    while True:
        rows = store.execute(
            project_id,
            "MATCH (r:Request) WHERE r.project_id = $p AND r.agent_id IS NULL "
            "WITH r LIMIT 5000 DETACH DELETE r RETURN count(*) AS n",
            {"p": project_id},
        )
        n = rows[0]["n"] if rows else 0
        removed += n
        if n < 5000:
            return removed


def event_purge_states(store: GraphStore, project_id: str, event_ids: list[str]) -> dict[str, dict[str, Any]]:
    """For redacted events: when a purge round covered them (``at``, an ISO
    time, None while pending), what it verified and what bounds the rest
    (``verified``, ``bound``: as on ``PurgeReport``)."""
    if not event_ids:
        return {}
    rows = store.read(
        project_id,
        "UNWIND $ids AS id MATCH (e:Event {id: id}) "
        "RETURN e.id AS id, e.purged_at AS at, e.purge_verified AS verified, e.purge_bound AS bound",
        {"ids": event_ids},
    )
    return {r.pop("id"): r for r in rows}


class Purger:
    """Runs purge rounds in one background thread per store, while anything
    is pending. ``kick`` is cheap and never waits for a round.

    A round starts once no kick came for ``QUIET_S`` seconds, and at the
    latest ``MAX_WAIT_S`` after the first kick it covers: a steward redacting
    a run of events is not slowed by a rewrite after each one, and one
    rewrite covers the run. ``kick(now=True)`` (store opened, the command,
    tests) starts at once."""

    QUIET_S = 5.0
    MAX_WAIT_S = 20.0
    #: how often a watching process looks for entries another process left pending
    CHECK_EVERY_S = 10.0
    #: how long a process at exit waits for the purges it started
    EXIT_WAIT_S = 60.0
    _lock = threading.Lock()
    _running: dict[int, Purger] = {}
    _watched: dict[int, threading.Event] = {}
    #: closed stores (or closing): a kick on one starts nothing
    _detached: weakref.WeakSet[GraphStore] = weakref.WeakSet()
    _exit_hook = False

    def __init__(self, store: GraphStore) -> None:
        self.store = store
        self.again = threading.Event()
        self.thread: threading.Thread | None = None
        self.last: PurgeReport | None = None
        self.error: str | None = None
        self.urgent = False
        self.first_kick: float | None = None
        self.last_kick = 0.0
        #: the store is closing: start no round, and what fails now is the closing, not the purge
        self.closing = False

    @classmethod
    def kick(cls, store: GraphStore, *, now: bool = False) -> Purger:
        with cls._lock:
            if store in cls._detached:
                log.debug("disk purge not started: %r is closed", store)
                return Purger(store)  # never started: its wait returns at once
            purger = cls._running.get(id(store))
            if purger is None or purger.store is not store:
                purger = cls._running[id(store)] = Purger(store)
                store.before_close(lambda: cls.detach(store))
            purger.last_kick = time.monotonic()
            if purger.first_kick is None:
                purger.first_kick = purger.last_kick
            purger.urgent = purger.urgent or now
            purger.again.set()
            if purger.thread is None or not purger.thread.is_alive():
                purger.thread = threading.Thread(target=purger._run, name="reviewer-disk-purge", daemon=True)
                purger.thread.start()
            if not cls._exit_hook:  # registered after the store's own close: runs before it
                atexit.register(cls.finish_all)
                cls._exit_hook = True
        return purger

    @classmethod
    def finish_all(cls, timeout: float | None = None) -> None:
        """Run the rounds this process started now, and wait for them
        (bounded): a script that redacts and exits leaves nothing pending."""
        with cls._lock:
            purgers = [p for p in cls._running.values() if p.thread is not None and p.thread.is_alive()]
            for purger in purgers:
                purger.urgent = True
        deadline = time.monotonic() + (cls.EXIT_WAIT_S if timeout is None else timeout)
        for purger in purgers:
            purger.wait(max(0.0, deadline - time.monotonic()))

    @classmethod
    def detach(cls, store: GraphStore, timeout: float | None = None) -> bool:
        """Before ``store`` closes (its ``before_close``): stop watching it,
        run the round kicked on it now and wait for it (at most
        ``EXIT_WAIT_S``), then stop its thread. Whether nothing was left: a
        round not done in time is abandoned, its entries left pending in the
        graph for the next process that opens the store, and whatever its
        thread still tries fails quietly on the closed store."""
        cls.unwatch(store)
        with cls._lock:
            cls._detached.add(store)
            purger = cls._running.get(id(store))
            if purger is None or purger.store is not store:
                return True
            purger.urgent = True
        done = purger.wait(cls.EXIT_WAIT_S if timeout is None else timeout)
        with cls._lock:
            purger.closing = True
            if cls._running.get(id(store)) is purger:
                del cls._running[id(store)]
        if not done:
            log.warning(
                "disk purge not finished when %r closed: left pending for the next process that opens it", store
            )
        return done

    @classmethod
    def watch(cls, store: GraphStore, *, every: float | None = None) -> None:
        """Check ``store`` for pending entries every ``CHECK_EVERY_S``, in a
        daemon thread, and purge when there are (until ``unwatch``)."""
        with cls._lock:
            if id(store) in cls._watched or store in cls._detached:
                return
            stop = cls._watched[id(store)] = threading.Event()
            store.before_close(lambda: cls.unwatch(store))
        interval = cls.CHECK_EVERY_S if every is None else every

        def loop() -> None:
            while not stop.wait(interval):
                try:
                    if pending_count(store):
                        cls.kick(store, now=True)
                except Exception as exc:  # the store is down or closed: the next tick tries again
                    log.debug("disk purge check failed: %s", exc)

        threading.Thread(target=loop, name="reviewer-disk-purge-watch", daemon=True).start()

    @classmethod
    def unwatch(cls, store: GraphStore) -> None:
        with cls._lock:
            stop = cls._watched.pop(id(store), None)
        if stop is not None:
            stop.set()

    def _quiet(self) -> None:
        while not self.urgent and not self.closing:
            moment = time.monotonic()
            if moment - self.last_kick >= self.QUIET_S or moment - (self.first_kick or moment) >= self.MAX_WAIT_S:
                return
            time.sleep(0.05)

    def _run(self) -> None:
        while self.again.is_set():
            self._quiet()
            with Purger._lock:
                if self.closing:
                    return
                self.again.clear()
                self.urgent = False
                self.first_kick = None
            try:
                if pending_count(self.store):
                    self.last = purge_round(self.store)
                self.error = None
            except Exception as exc:  # the store went away: the next kick or run tries again
                self.error = str(exc) or type(exc).__name__
                if self.closing:  # abandoned by ``detach``: left pending, as it said
                    log.debug("disk purge stopped, the store closed: %s", self.error)
                else:
                    log.warning("disk purge failed: %s", self.error)
                return
        with Purger._lock:
            if self.again.is_set() and not self.closing:  # kicked while we were finishing
                self.thread = threading.Thread(target=self._run, name="reviewer-disk-purge", daemon=True)
                self.thread.start()

    def wait(self, timeout: float = 60.0) -> bool:
        """For tests and commands: wait until no round is running."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            thread = self.thread
            if thread is None or not thread.is_alive():
                return True
            thread.join(0.05)
        return False
