"""FalkorDB store: one graph per project, units of work under WATCH/MULTI/EXEC.

FalkorDB runs each query atomically but has no multi-statement transaction.
A unit of work folds its writes into one statement (``w1 WITH count(*) AS
_w0 w2``; one FalkorDB query is applied whole or, on any error, not at all)
and sends it in ``MULTI``/``EXEC``. What serializes read-decide-write units
is the locks they take (``tx.lock``, ``tx.lock_kept``) before their reads,
as on Neo4j: a Redis key per locked node (``SET NX PX``, a lease), held
until the unit's ``EXEC`` has run. The commit ``WATCH``es the unit's lock
keys and checks they are still its own, so a unit whose lease ran out
(a unit stalled longer than ``LOCK_LEASE_MS``) applies nothing and runs
again. A unit does not watch the project's graph: writers of other tasks
and decisions never make it run again (docs/stores.md).
"""

from __future__ import annotations

import random
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from .base import (
    CONNECT_TIMEOUT_S,
    CONSTRAINT_RETRIES,
    DEFAULT_MAX_ATTEMPTS,
    LONG_TIMEOUT_S,
    READ_TIMEOUT_S,
    GraphStore,
    GraphStoreConstraintViolationError,
    GraphStoreError,
    GraphStoreMissingExtraError,
    GraphStoreTimeoutError,
    GraphStoreWriteConflictError,
    Row,
    Schema,
    T,
    Tx,
    check_identifier,
    redact_url,
)

try:  # the client packages are declared dependencies, but say so clearly if absent
    import redis
    from falkordb import FalkorDB
    from falkordb.query_result import QueryResult
    from redis.backoff import NoBackoff
    from redis.retry import Retry
except ImportError as exc:  # pragma: no cover - exercised only without the package
    redis = None  # type: ignore[assignment]
    _IMPORT_ERROR: ImportError | None = exc
else:
    _IMPORT_ERROR = None

GRAPH_PREFIX = "reviewer:"
#: store-wide properties are plain keys beside the graphs (never a graph, so never a project)
STORE_PROPERTY_PREFIX = "reviewer-store:"
_CONSTRAINT_WAIT_S = 30.0
#: After this many nodes made in a graph, the store reads one node's labels
#: (``_fold_labels``). FalkorDB keeps the labels it gives new nodes in a
#: delta of its node-label matrix, and only a read of some node's labels
#: folds that delta into the matrix (once it holds the server's
#: ``DELTA_MAX_PENDING_CHANGES``, 10,000 by default, so about every second
#: such read folds); writes never do, and the core never reads labels.
#: Until something folds it (an append-only file rewrite does too), every
#: write that changes an indexed node assembles the whole delta first: a
#: write after a million nodes were made took 11 ms, after two million
#: 34 ms; with these reads 0.1-0.3 ms, a delta of at most about 15,000
#: (tests/benchmarks/falkordb_writes.py). The read that folds is itself a
#: pass over the graph's nodes (about 20 ms at a million, more in a larger
#: graph), paid by the request whose write crossed the mark.
FOLD_LABELS_EVERY = 5_000

#: The lock keys: ``reviewer-lock:<graph key>:<label>:<node id>``.
LOCK_PREFIX = "reviewer-lock:"
#: How long a lock lasts unless renewed: a process that died holding one
#: holds it no longer. A unit renews its locks on each read once a third of
#: this has passed, so only a unit that stalls this long loses them (its
#: commit then applies nothing and it runs again).
LOCK_LEASE_MS = 10_000
#: How long a unit that holds no lock waits for one held by another unit
#: (a live holder finishes in milliseconds; a dead one's lease ends first),
#: then ``GraphStoreWriteConflictError``.
LOCK_WAIT_S = 20.0
#: How long a unit that already holds locks waits for another one before
#: it lets go of them all and runs again: two units each waiting for the
#: other's lock (taken in another order) cannot wait on each other for
#: longer than this.
LOCK_WAIT_HOLDING_S = 1.0
#: Waiters for a lock take it in the order they came (a queue beside the
#: lock key): one polling faster cannot overtake one that waits, so no
#: unit waits while others keep taking the lock. A waiter that stopped
#: polling for this long (its process died) loses its place.
LOCK_WAITER_MS = 1_000
# Lock keys are not written to the append-only file (``REPL_NONE``): a
# server started again holds no locks, and no process of before holds a
# connection its commit could use.
_TAKE = """redis.set_repl(redis.REPL_NONE)
local lock, queue, token = KEYS[1], KEYS[2], ARGV[1]
local live = lock .. ':w:'
local now = redis.call('TIME')
local place = 0
for _, waiter in ipairs(redis.call('ZRANGE', queue, 0, -1)) do
  if waiter == token then break end
  if redis.call('EXISTS', live .. waiter) == 1 then place = place + 1
  else redis.call('ZREM', queue, waiter) end
end
if place == 0 and redis.call('SET', lock, token, 'NX', 'PX', ARGV[2]) then
  redis.call('ZREM', queue, token)
  redis.call('DEL', live .. token)
  return -1
end
redis.call('ZADD', queue, 'NX', tonumber(now[1]) * 1000000 + tonumber(now[2]), token)
redis.call('PEXPIRE', queue, ARGV[2])
redis.call('SET', live .. token, 1, 'PX', ARGV[3])
return place"""
_LEAVE = """redis.set_repl(redis.REPL_NONE)
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('DEL', KEYS[1] .. ':w:' .. ARGV[1])
return 0"""
_RENEW = """redis.set_repl(redis.REPL_NONE)
local n = 0
for i, k in ipairs(KEYS) do
  if redis.call('GET', k) == ARGV[1] then redis.call('PEXPIRE', k, ARGV[2]); n = n + 1 end
end
return n"""
_RELEASE = """redis.set_repl(redis.REPL_NONE)
local n = 0
for i, k in ipairs(KEYS) do
  if redis.call('GET', k) == ARGV[1] then redis.call('DEL', k); n = n + 1 end
end
return n"""


def lock_key(graph_name: str, label: str, node_id: str) -> str:
    return f"{LOCK_PREFIX}{graph_name}:{label}:{node_id}"


class _LetGo(Exception):
    """A unit holding locks waited too long for another: it lets go of
    them and runs again."""


class _LeaseLost(Exception):
    """A unit's lock was no longer its own at commit: nothing applied."""


_FOLD_LABELS = "MATCH (n) RETURN labels(n) AS labels LIMIT 1"


def graph_key(project_id: str) -> str:
    return GRAPH_PREFIX + project_id


def _require_client() -> None:
    if _IMPORT_ERROR is not None:
        raise GraphStoreMissingExtraError(
            f"the FalkorDB store needs the 'falkordb' package: pip install falkordb ({_IMPORT_ERROR})"
        )


class _SchemaGate:
    """Queries of a graph wait while this process changes its schema, and a
    change waits for the queries already running. FalkorDB 4.16 can crash
    (SIGSEGV in ``GraphContext_GetLabelID``) when a read is planned on a
    graph while another connection creates an index on it: seen with the
    purge sweep reading every project as a new project made its indexes.
    A thread that changes a schema may query the same graph itself."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._running: dict[str, int] = {}
        self._changing: dict[str, int] = {}  # graph -> the thread changing it
        self._mine = threading.local()

    def _held(self) -> dict[str, int]:
        held = getattr(self._mine, "held", None)
        if held is None:
            held = self._mine.held = {}
        return held

    @contextmanager
    def query(self, key: str) -> Iterator[None]:
        me = threading.get_ident()
        held = self._held()
        with self._cond:
            # a thread already querying the graph (a unit's reads) goes on:
            # the change waits for it
            while not held.get(key) and self._changing.get(key, me) != me:
                self._cond.wait()
            self._running[key] = self._running.get(key, 0) + 1
        held[key] = held.get(key, 0) + 1
        try:
            yield
        finally:
            held[key] -= 1
            with self._cond:
                self._running[key] -= 1
                if not self._running[key]:
                    del self._running[key]
                self._cond.notify_all()

    @contextmanager
    def change(self, key: str) -> Iterator[None]:
        me = threading.get_ident()
        mine = self._held().get(key, 0)
        with self._cond:
            while self._changing.get(key, me) != me:
                self._cond.wait()
            self._changing[key] = me
            while self._running.get(key, 0) > mine:
                self._cond.wait()
        try:
            yield
        finally:
            with self._cond:
                del self._changing[key]
                self._cond.notify_all()


def _is_constraint_error(message: str) -> bool:
    lowered = message.lower()
    return "unique constraint" in lowered or "constraint violation" in lowered


class _FalkorTx(Tx):
    def __init__(self, store: FalkorDBStore, graph: Any) -> None:
        super().__init__()
        self._store = store
        self._graph = graph
        self.token = uuid.uuid4().hex
        #: the lock keys this unit holds, in the order taken
        self.held: list[str] = []
        self.renewed = 0.0  # when they were last taken or renewed (monotonic)

    def _run_read(self, query: str, params: dict[str, Any]) -> list[Row]:
        self._store._renew(self)
        return self._store._run(self._store._redis.execute_command, self._graph, query, params, read_only=True)

    def _lock(self, label: str, node_id: str) -> None:
        self._store._take(self, lock_key(self._graph.name, label, node_id))

    def _lock_kept(self, label: str, node_id: str, project_id: str) -> None:
        # a key, not a node: the node is made by the first write that keeps a counter
        self._store._take(self, lock_key(self._graph.name, label, node_id))


class FalkorDBStore(GraphStore):
    backend = "falkordb"
    graph_per_project = True

    def __init__(
        self,
        url: str,
        *,
        host: str | None = None,
        port: int | None = None,
        unix_socket_path: str | None = None,
        username: str | None = None,
        password: str | None = None,
        on_close: Callable[[], None] | None = None,
        timeout: float = READ_TIMEOUT_S,
        connect_timeout: float = CONNECT_TIMEOUT_S,
    ) -> None:
        _require_client()
        self.url = url
        self._on_close = on_close
        self.timeout, self.connect_timeout = timeout, connect_timeout
        # A dropped connection (the server restarted) is tried once more at
        # once; a timeout is not: a server that did not answer in ``timeout``
        # is not asked again and again (redis-py's default retries each
        # timeout three times with backoff).
        retry = Retry(NoBackoff(), 1, supported_errors=(redis.ConnectionError,))
        kwargs: dict[str, Any] = {
            "username": username,
            "password": password,
            "socket_timeout": timeout,
            "socket_connect_timeout": connect_timeout,
            "retry": retry,
        }
        if unix_socket_path:
            kwargs["unix_socket_path"] = unix_socket_path
        else:
            kwargs["host"] = host or "localhost"
            kwargs["port"] = port or 6379
        self._kwargs = kwargs
        try:
            self._db = FalkorDB(**kwargs)
        except Exception as exc:  # the client connects eagerly
            raise GraphStoreError(f"cannot connect to {redact_url(url)}: {exc}") from exc
        self._short: redis.Redis = self._db.connection
        #: the client of ``unhurried()``: its own connections, each waiting up
        #: to LONG_TIMEOUT_S for an answer (made on first use)
        self._long: redis.Redis | None = None
        self._patience = threading.local()
        self._long_lock = threading.Lock()
        self._graphs: dict[str, Any] = {}
        self._schema_done: set[tuple[str, Schema]] = set()
        self._lock = threading.Lock()
        self._gate = _SchemaGate()
        self._made_lock = threading.Lock()
        self._made: dict[str, int] = {}  # nodes made in each graph since this process last folded its labels
        self.label_reads = 0  # how many of those reads it sent
        #: units run again (a lease lost, locks let go of), and locks that
        #: were waited for, with the seconds waited: for benchmarks
        self.unit_retries = 0
        self.lock_waits = 0
        self.lock_wait_s = 0.0
        self._take_lock = self._redis.register_script(_TAKE)
        self._leave_queue = self._redis.register_script(_LEAVE)
        self._renew_locks = self._redis.register_script(_RENEW)
        self._release_locks = self._redis.register_script(_RELEASE)
        self.ping()

    # -- plumbing ---------------------------------------------------------

    @property
    def _redis(self) -> redis.Redis:
        """This thread's client: the short read timeout's, or inside
        ``unhurried()`` the long one's."""
        if not getattr(self._patience, "depth", 0):
            return self._short
        with self._long_lock:
            if self._long is None:
                self._long = redis.Redis(**{**self._kwargs, "socket_timeout": LONG_TIMEOUT_S, "decode_responses": True})
            return self._long

    @contextmanager
    def unhurried(self) -> Iterator[None]:
        self._patience.depth = getattr(self._patience, "depth", 0) + 1
        try:
            yield
        finally:
            self._patience.depth -= 1

    def _timed_out(self, exc: Exception) -> GraphStoreTimeoutError:
        return GraphStoreTimeoutError(
            f"FalkorDB at {redact_url(self.url)} did not answer within {self.timeout:g} s "
            f"(the store url's timeout=): {exc}"
        )

    def _graph(self, project_id: str) -> Any:
        graph = self._graphs.get(project_id)
        if graph is None:
            graph = self._db.select_graph(graph_key(project_id))
            self._graphs[project_id] = graph
        return graph

    def _run(
        self,
        execute: Callable[..., Any],
        graph: Any,
        query: str,
        params: Mapping[str, Any],
        *,
        read_only: bool,
    ) -> list[Row]:
        text = params_header(params) + query if params else query
        command = "GRAPH.RO_QUERY" if read_only else "GRAPH.QUERY"
        try:
            with self._gate.query(graph.name):
                raw = execute(command, graph.name, text, "--compact")
        except redis.TimeoutError as exc:
            raise self._timed_out(exc) from exc
        except redis.ConnectionError as exc:
            raise GraphStoreError(f"FalkorDB at {redact_url(self.url)} is unreachable: {exc}") from exc
        except redis.ResponseError as exc:
            raise self._translate(exc, query) from exc
        except redis.RedisError as exc:
            raise GraphStoreError(f"FalkorDB at {redact_url(self.url)} failed: {exc}") from exc
        if not read_only:
            self._after_write(graph, raw)
        return self._rows(graph, raw, query)

    def _after_write(self, graph: Any, raw: Any) -> None:
        """Count the nodes a write made; fold the graph's node labels after
        every ``FOLD_LABELS_EVERY``."""
        made = _nodes_created(raw)
        if not made:
            return
        with self._made_lock:
            total = self._made.get(graph.name, 0) + made
            fold = total >= FOLD_LABELS_EVERY
            self._made[graph.name] = 0 if fold else total
        if fold:
            self._fold_labels(graph)

    def _fold_labels(self, graph: Any) -> None:
        """Read one node's labels, which makes FalkorDB fold the labels of
        the nodes made since into its node-label matrix (see
        ``FOLD_LABELS_EVERY``). The write before it is acknowledged already:
        a failure here only leaves the next writes slower."""
        try:
            with self._gate.query(graph.name):
                self._redis.execute_command("GRAPH.RO_QUERY", graph.name, _FOLD_LABELS, "--compact")
        except redis.RedisError:
            return
        self.label_reads += 1

    def _rows(self, graph: Any, raw: Any, query: str) -> list[Row]:
        if isinstance(raw, Exception):
            raise self._translate(raw, query)
        try:
            return _compact_rows(raw)
        except _NotScalar:
            pass  # nodes, edges, paths, temporal values: the client's parser
        try:
            result = QueryResult(graph, raw)
        except redis.ResponseError as exc:
            raise self._translate(exc, query) from exc
        header = [col[1] if isinstance(col, (list, tuple)) else col for col in result.header]
        names = [h.decode() if isinstance(h, bytes) else str(h) for h in header]
        return [dict(zip(names, (_plain(v) for v in record))) for record in result.result_set]

    def _translate(self, exc: Exception, query: str) -> GraphStoreError:
        message = str(exc)
        if _is_constraint_error(message):
            return GraphStoreConstraintViolationError(message)
        first_line = query.strip().splitlines()[0][:120] if query.strip() else ""
        return GraphStoreError(f"FalkorDB query failed: {message} (query: {first_line})")

    # -- the contract -----------------------------------------------------

    def read(self, project_id: str, query: str, params: Mapping[str, Any] | None = None) -> list[Row]:
        graph = self._graph(project_id)
        return self._run(self._redis.execute_command, graph, query, params or {}, read_only=True)

    def execute(
        self,
        project_id: str,
        query: str,
        params: Mapping[str, Any] | None = None,
        *,
        guard: tuple[str, str] | None = None,
    ) -> list[Row]:
        graph = self._graph(project_id)
        if guard is None:
            return self._run(self._redis.execute_command, graph, query, params or {}, read_only=False)
        # not while a unit holds the guard's lock (it read what this compares):
        # watched, so a unit taking it meanwhile makes EXEC apply nothing
        lock = lock_key(graph.name, check_identifier(guard[0]), guard[1])
        text = params_header(params) + query if params else query
        try:
            with self._gate.query(graph.name), self._redis.pipeline(transaction=True) as pipe:
                pipe.watch(lock)
                if pipe.exists(lock):
                    return []
                pipe.multi()
                pipe.execute_command("GRAPH.QUERY", graph.name, text, "--compact")
                (reply,) = pipe.execute(raise_on_error=False)
        except redis.WatchError:
            return []
        except redis.ConnectionError as exc:
            raise GraphStoreError(f"FalkorDB at {redact_url(self.url)} is unreachable: {exc}") from exc
        except redis.RedisError as exc:
            raise GraphStoreError(f"FalkorDB at {redact_url(self.url)} failed: {exc}") from exc
        if isinstance(reply, Exception):
            raise self._translate(reply, query)
        self._after_write(graph, reply)
        return self._rows(graph, reply, query)

    def transact(
        self,
        project_id: str,
        work: Callable[[Tx], T],
        *,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    ) -> T:
        graph = self._graph(project_id)
        key = graph.name
        constraint_failures = 0
        for attempt in range(max_attempts):
            tx = _FalkorTx(self, graph)
            try:
                with self._gate.query(key):
                    result = work(tx)
                    reply = self._commit(tx, key)
                if reply is not None:
                    self._after_write(graph, reply)
                return result
            except (_LetGo, _LeaseLost, redis.WatchError):
                # nothing was applied: let go of the locks and run again
                self._release(tx)
                self.unit_retries += 1
                time.sleep(random.uniform(0, min(0.002 * (attempt + 1), 0.05)))
                continue
            except GraphStoreConstraintViolationError:
                constraint_failures += 1
                if constraint_failures > CONSTRAINT_RETRIES:
                    raise
                self.unit_retries += 1
                continue
            except redis.TimeoutError as exc:
                raise self._timed_out(exc) from exc
            except redis.ConnectionError as exc:
                raise GraphStoreError(f"FalkorDB at {redact_url(self.url)} is unreachable: {exc}") from exc
            except redis.RedisError as exc:
                raise GraphStoreError(f"FalkorDB at {redact_url(self.url)} failed: {exc}") from exc
            finally:
                self._release(tx)
        raise GraphStoreWriteConflictError(
            f"gave up after {max_attempts} attempts: locks of project {project_id!r} kept being lost or contended"
        )

    def _commit(self, tx: _FalkorTx, key: str) -> Any:
        """Send the unit's writes in MULTI/EXEC, watching its lock keys and
        checking they are still its own; the reply, None when the unit
        wrote nothing. A unit that holds no lock and writes nothing sends
        nothing: what it read was read in one statement or needs no lock
        (as on Neo4j, where such a unit reads committed data)."""
        if not tx.writes and not tx.held:
            return None
        with self._redis.pipeline(transaction=True) as pipe:
            if tx.held:
                pipe.watch(*tx.held)
                owners = pipe.mget(tx.held)
                if any((o.decode() if isinstance(o, bytes) else o) != tx.token for o in owners):
                    raise _LeaseLost
            pipe.multi()
            query = ""
            if tx.writes:
                query, params = combine_writes(tx.writes)
                text = params_header(params) + query if params else query
                pipe.execute_command("GRAPH.QUERY", key, text, "--compact")
            # the locks let go of in the same EXEC, after the write: no round
            # trip of their own (a refusal or a replay, answered from reads
            # made under its locks, sends this alone: they held to the end)
            if tx.held:
                self._release_locks(keys=tx.held, args=[tx.token], client=pipe)
            replies = pipe.execute(raise_on_error=False)
        tx.held = []
        if not tx.writes:
            return None
        reply = replies[0]
        if isinstance(reply, Exception):
            raise self._translate(reply, query)
        return reply

    def _take(self, tx: _FalkorTx, lock: str) -> None:
        """Take one lock for the unit, waiting in turn while other units
        hold it or wait for it first (see ``LOCK_WAIT_S``,
        ``LOCK_WAIT_HOLDING_S`` and ``LOCK_WAITER_MS``)."""
        if lock in tx.held:
            return
        started = time.monotonic()
        deadline = started + (LOCK_WAIT_HOLDING_S if tx.held else LOCK_WAIT_S)
        keys = [lock, lock + ":q"]
        waited = False
        try:
            while True:
                place = self._take_lock(keys=keys, args=[tx.token, LOCK_LEASE_MS, LOCK_WAITER_MS])
                if place < 0:
                    break
                waited = True
                if time.monotonic() > deadline:
                    self._leave_queue(keys=keys, args=[tx.token])
                    if tx.held:
                        raise _LetGo(lock)
                    raise GraphStoreWriteConflictError(
                        f"a lock of FalkorDB at {redact_url(self.url)} stayed taken for {LOCK_WAIT_S:.0f} s ({lock})"
                    )
                # the next in line looks often; the others as their place says
                time.sleep(random.uniform(0.0005, 0.001) * (1 + min(place, 20) * 2))
        except redis.ConnectionError as exc:
            raise GraphStoreError(f"FalkorDB at {redact_url(self.url)} is unreachable: {exc}") from exc
        finally:
            if waited:
                self.lock_waits += 1
                self.lock_wait_s += time.monotonic() - started
        if not tx.held:
            tx.renewed = time.monotonic()
        tx.held.append(lock)

    def _renew(self, tx: _FalkorTx) -> None:
        """Renew the unit's leases once a third of one has passed."""
        if tx.held and time.monotonic() - tx.renewed > LOCK_LEASE_MS / 3000:
            self._renew_locks(keys=tx.held, args=[tx.token, LOCK_LEASE_MS])
            tx.renewed = time.monotonic()

    def _release(self, tx: _FalkorTx) -> None:
        if not tx.held:
            return
        held, tx.held = tx.held, []
        try:
            self._release_locks(keys=held, args=[tx.token])
        except redis.RedisError:
            pass  # their leases end them

    def ensure_schema(self, project_id: str, schema: Schema) -> None:
        if (project_id, schema) in self._schema_done:
            return
        with self.unhurried():  # indexes of a big graph take their time
            self._ensure_schema(project_id, schema)

    def _ensure_schema(self, project_id: str, schema: Schema) -> None:
        graph = self._graph(project_id)
        # the gate first: a unit waited for may itself set up another project
        with self._gate.change(graph.name), self._lock:
            if (project_id, schema) in self._schema_done:
                return
            existing = self._existing_indexes(graph)
            for index in schema.indexes:
                if index.ordered:
                    continue
                for prop in index.properties:
                    if (index.label, prop) not in existing:
                        self._exec_schema(graph, f"CREATE INDEX FOR (n:{index.label}) ON (n.{prop})")
                        existing.add((index.label, prop))
            for rel in schema.relationships:
                for prop in rel.properties:
                    if (rel.rel_type, prop) not in existing:
                        self._exec_schema(graph, f"CREATE INDEX FOR ()-[r:{rel.rel_type}]-() ON (r.{prop})")
                        existing.add((rel.rel_type, prop))
            for index in schema.fulltext:
                if (index.label, "__fulltext__") not in existing:
                    props = ", ".join(f"'{p}'" for p in index.properties)
                    self._exec_schema(graph, f"CALL db.idx.fulltext.createNodeIndex('{index.label}', {props})")
            made = self._constraint_statuses(graph)  # asked once: each made only when missing
            for index in schema.indexes:
                if index.unique:
                    self._ensure_unique(graph, index.label, index.properties, made.get((index.label, index.properties)))
            self._schema_done.add((project_id, schema))

    def _exec_schema(self, graph: Any, query: str) -> None:
        try:
            self._redis.execute_command("GRAPH.QUERY", graph.name, query, "--compact")
        except redis.ResponseError as exc:
            if "already indexed" in str(exc).lower() or "already exists" in str(exc).lower():
                return
            raise GraphStoreError(f"FalkorDB schema setup failed: {exc} ({query})") from exc

    def _existing_indexes(self, graph: Any) -> set[tuple[str, str]]:
        try:
            rows = self._run(
                self._redis.execute_command,
                graph,
                "CALL db.indexes() YIELD label, properties, types RETURN label, properties, types",
                {},
                read_only=True,
            )
        except GraphStoreError:
            return set()
        found: set[tuple[str, str]] = set()
        for row in rows:
            types = row.get("types") or {}
            for prop in row.get("properties") or []:
                kinds = types.get(prop, []) if isinstance(types, dict) else []
                if "RANGE" in kinds or not kinds:
                    found.add((row["label"], prop))
                if "FULLTEXT" in kinds:
                    found.add((row["label"], "__fulltext__"))
        return found

    def _ensure_unique(self, graph: Any, label: str, properties: tuple[str, ...], status: str | None) -> None:
        """Make the unique constraint when ``status`` (its status as last
        read) says there is none, and wait until it is operational."""
        if status is None:
            args = [
                "GRAPH.CONSTRAINT",
                "CREATE",
                graph.name,
                "UNIQUE",
                "NODE",
                label,
                "PROPERTIES",
                len(properties),
                *properties,
            ]
            try:
                self._redis.execute_command(*args)
            except redis.ResponseError as exc:
                if "already exists" not in str(exc).lower():  # another process made it meanwhile
                    raise GraphStoreError(f"FalkorDB constraint setup failed on {label}: {exc}") from exc
            status = self._constraint_statuses(graph).get((label, properties))
        # Constraints are built asynchronously: wait until operational.
        deadline = time.monotonic() + _CONSTRAINT_WAIT_S
        while status != "OPERATIONAL":
            if status == "FAILED":
                raise GraphStoreConstraintViolationError(
                    f"uniqueness constraint on {label}{list(properties)} failed: existing data violates it"
                )
            if time.monotonic() > deadline:
                raise GraphStoreError(f"uniqueness constraint on {label} did not become operational")
            time.sleep(0.02)
            status = self._constraint_statuses(graph).get((label, properties))

    def _constraint_statuses(self, graph: Any) -> dict[tuple[str, tuple[str, ...]], str]:
        """The graph's unique constraints, (label, properties) -> status
        (``OPERATIONAL``, ``UNDER CONSTRUCTION``, ``FAILED``); none for a
        graph not made yet."""
        try:
            rows = self._run(
                self._redis.execute_command,
                graph,
                "CALL db.constraints() YIELD type, label, properties, status "
                "WHERE type = 'UNIQUE' RETURN label, properties, status",
                {},
                read_only=True,
            )
        except GraphStoreError as exc:
            if "empty key" in str(exc).lower():
                return {}
            raise
        return {(r["label"], tuple(r["properties"])): r["status"] for r in rows}

    def fulltext_query(self, label: str, var: str) -> str:
        return f"CALL db.idx.fulltext.queryNodes('{label}', $q) YIELD node AS {var}, score"

    def fulltext_expression(self, words: list[str]) -> str:
        # RediSearch: space-separated terms must all match
        return " ".join(words)

    def ping(self) -> None:
        try:
            self._redis.ping()
        except redis.TimeoutError as exc:
            raise self._timed_out(exc) from exc
        except redis.RedisError as exc:
            raise GraphStoreError(f"FalkorDB at {redact_url(self.url)} does not answer: {exc}") from exc

    def list_projects(self) -> list[str]:
        try:
            names = self._redis.execute_command("GRAPH.LIST")
        except redis.RedisError as exc:
            raise GraphStoreError(f"FalkorDB at {redact_url(self.url)} failed: {exc}") from exc
        names = [n.decode() if isinstance(n, bytes) else n for n in names]
        return sorted(n[len(GRAPH_PREFIX) :] for n in names if n.startswith(GRAPH_PREFIX))

    def drop_project(self, project_id: str) -> None:
        try:
            with self.unhurried():
                self._redis.delete(graph_key(project_id))
        except redis.RedisError as exc:
            raise GraphStoreError(f"cannot drop project {project_id!r}: {exc}") from exc
        self._graphs.pop(project_id, None)
        self._schema_done = {item for item in self._schema_done if item[0] != project_id}

    def store_property(self, name: str) -> str | None:
        try:
            found = self._redis.get(STORE_PROPERTY_PREFIX + check_identifier(name))
        except redis.RedisError as exc:
            raise GraphStoreError(f"FalkorDB at {redact_url(self.url)} failed: {exc}") from exc
        return found.decode() if isinstance(found, bytes) else found

    def claim_store_property(self, name: str, value: str) -> str:
        try:
            self._redis.set(STORE_PROPERTY_PREFIX + check_identifier(name), value, nx=True)
        except redis.RedisError as exc:
            raise GraphStoreError(f"FalkorDB at {redact_url(self.url)} failed: {exc}") from exc
        return self.store_property(name) or value

    def close(self) -> None:
        self._before_close()
        try:
            self._short.close()
            if self._long is not None:
                self._long.close()
        finally:
            if self._on_close is not None:
                callback, self._on_close = self._on_close, None
                callback()


def combine_writes(writes: list[tuple[str, dict[str, Any]]]) -> tuple[str, dict[str, Any]]:
    """Fold a unit's writes into one statement, which FalkorDB applies whole
    or (on any error) not at all: ``w1 WITH count(*) AS _w0 w2 ... RETURN 1``.

    The aggregation between two writes ends the first one's scope and makes
    it complete before the next begins, so a later write sees what an earlier
    one created, as in a Neo4j transaction (FalkorDB's ``CALL {}`` subqueries
    do not see each other's writes). A write that matches nothing does not
    stop the next. Parameters are renamed ``$wN_name`` so they cannot
    collide. A write must not end in ``RETURN``."""
    if len(writes) == 1:
        return writes[0]
    parts: list[str] = []
    merged: dict[str, Any] = {}
    for i, (query, params) in enumerate(writes):
        text = query
        for name in sorted(params, key=len, reverse=True):
            text = re.sub(rf"\${re.escape(name)}\b", f"$w{i}_{name}", text)
            merged[f"w{i}_{name}"] = params[name]
        parts.append(text)
    return " ".join(f"{part} WITH count(*) AS _w{i}" for i, part in enumerate(parts)) + " RETURN 1", merged


def params_header(params: Mapping[str, Any]) -> str:
    """The ``CYPHER name=value ...`` header that carries a query's parameters,
    as the client builds it, but without its per-value checks: a flag of ten
    thousand decisions sends ten thousand ids. Names come from our own code."""
    return "CYPHER " + "".join(f"`{name}`={_literal(value)} " for name, value in params.items())


def _literal(value: Any) -> str:
    kind = type(value)
    if kind is str:
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if value is None:
        return "null"
    if kind is bool:
        return "true" if value else "false"
    if kind is int or kind is float:
        return repr(value)
    if kind is list or kind is tuple:
        return "[" + ",".join([_literal(v) for v in value]) + "]"
    if kind is dict:
        return "{" + ",".join([f"`{k}`:{_literal(v)}" for k, v in value.items()]) + "}"
    from falkordb.helpers import stringify_param_value

    return stringify_param_value(value)


class _NotScalar(Exception):
    """A compact reply holds a value the fast parser leaves to the client."""


def _compact_value(cell: Any) -> Any:
    kind, value = cell[0], cell[1]
    if kind == 2:  # string
        return value.decode() if isinstance(value, bytes) else value
    if kind == 3:  # integer
        return int(value)
    if kind == 1:  # null
        return None
    if kind == 4:  # boolean
        return value in ("true", b"true")
    if kind == 5:  # double
        return float(value)
    if kind == 6:  # array
        return [_compact_value(v) for v in value]
    if kind == 10:  # map: key, value, key, value ...
        return {
            (value[i].decode() if isinstance(value[i], bytes) else value[i]): _compact_value(value[i + 1])
            for i in range(0, len(value), 2)
        }
    raise _NotScalar


def reply_statistic(raw: Any, name: str) -> str | None:
    """One statistic of a reply (its last part: "Nodes created: 3", "Query
    internal execution time: 0.1 milliseconds"): the text after the name,
    or None when the reply does not give it."""
    if not isinstance(raw, list) or not raw or not isinstance(raw[-1], list):
        return None
    prefix = name + ":"
    for line in raw[-1]:
        text = line.decode() if isinstance(line, bytes) else str(line)
        if text.startswith(prefix):
            return text[len(prefix) :].strip()
    return None


def _nodes_created(raw: Any) -> int:
    """The "Nodes created" of a write's statistics."""
    return int(reply_statistic(raw, "Nodes created") or 0)


def _compact_rows(raw: Any) -> list[Row]:
    """Rows of a ``--compact`` reply holding only scalars, lists and maps:
    several times faster than the client's general parser."""
    if len(raw) < 3:  # a write without RETURN: statistics only
        return []
    names = [col[1].decode() if isinstance(col[1], bytes) else col[1] for col in raw[0]]
    # strings (2) and integers (3) are most cells: no call for them
    return [dict(zip(names, [v if t == 2 or t == 3 else _compact_value((t, v)) for t, v in row])) for row in raw[1]]


def _plain(value: Any) -> Any:
    """Rows hold plain values: dicts instead of OrderedDicts, lists of plain."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, bytes):
        return value.decode()
    return value
