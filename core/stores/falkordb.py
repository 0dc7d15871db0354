"""FalkorDB store: one graph per project, units of work under WATCH/MULTI/EXEC.

FalkorDB runs each query atomically but has no multi-statement transaction.
A unit of work therefore reads on a connection that ``WATCH``es the project's
graph key, folds its writes into one statement (``w1 WITH count(*) AS _w0 w2``;
one FalkorDB query is applied whole or, on any error, not at all), and sends
it in ``MULTI``/``EXEC``. If any other client wrote to the graph in between,
``EXEC`` aborts with nothing applied and the unit runs again.
"""

from __future__ import annotations

import random
import re
import threading
import time
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
    def __init__(self, store: FalkorDBStore, pipe: Any, graph: Any) -> None:
        super().__init__(serializable=True)
        self._store = store
        self._pipe = pipe
        self._graph = graph

    def _run_read(self, query: str, params: dict[str, Any]) -> list[Row]:
        return self._store._run(self._pipe.execute_command, self._graph, query, params, read_only=True)

    def _lock(self, label: str, node_id: str) -> None:
        # WATCH on the graph key already serializes every unit of the project.
        return None


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

    def execute(self, project_id: str, query: str, params: Mapping[str, Any] | None = None) -> list[Row]:
        graph = self._graph(project_id)
        return self._run(self._redis.execute_command, graph, query, params or {}, read_only=False)

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
            try:
                with self._gate.query(key), self._redis.pipeline(transaction=True) as pipe:
                    pipe.watch(key)
                    tx = _FalkorTx(self, pipe, graph)
                    result = work(tx)
                    if not tx.writes:
                        # A unit that writes nothing answers from what it read:
                        # valid only if nothing it watched changed meanwhile
                        # (an empty MULTI/EXEC raises WatchError otherwise),
                        # or a retry racing its first call reads the request
                        # as new and the first call's decision as a refusal.
                        pipe.multi()
                        pipe.execute()
                        return result
                    query, params = combine_writes(tx.writes)
                    text = params_header(params) + query if params else query
                    pipe.multi()
                    pipe.execute_command("GRAPH.QUERY", key, text, "--compact")
                    (reply,) = pipe.execute(raise_on_error=False)
                if isinstance(reply, Exception):
                    raise self._translate(reply, query)
                self._after_write(graph, reply)
                return result
            except redis.WatchError:
                # another writer touched the graph: nothing was applied, run again
                time.sleep(random.uniform(0, min(0.002 * (attempt + 1), 0.05)))
                continue
            except GraphStoreConstraintViolationError:
                constraint_failures += 1
                if constraint_failures > CONSTRAINT_RETRIES:
                    raise
                continue
            except redis.TimeoutError as exc:
                raise self._timed_out(exc) from exc
            except redis.ConnectionError as exc:
                raise GraphStoreError(f"FalkorDB at {redact_url(self.url)} is unreachable: {exc}") from exc
            except redis.RedisError as exc:
                raise GraphStoreError(f"FalkorDB at {redact_url(self.url)} failed: {exc}") from exc
        raise GraphStoreWriteConflictError(
            f"gave up after {max_attempts} attempts: other writers kept changing project {project_id!r}"
        )

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

    def close(self) -> None:
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
