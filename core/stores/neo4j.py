"""Neo4j store: units of work in managed write transactions.

Every node carries ``project_id`` (one database holds every project). A unit
runs its reads, then its queued writes, in one transaction; ``tx.lock``
(and ``tx.lock_kept`` for the node of a project's kept counters) takes a
write lock on a node first, so read-decide-write units that lock the same
node run one after the other. Transient errors (deadlocks, leader
switches) are retried by the driver.
"""

from __future__ import annotations

import hashlib
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

try:
    import neo4j
    from neo4j import GraphDatabase
    from neo4j import exceptions as neo4j_errors
    from neo4j._exceptions import SocketDeadlineExceededError as _DeadlineExceeded
except ImportError as exc:  # pragma: no cover - exercised only without the package
    neo4j = None  # type: ignore[assignment]
    _IMPORT_ERROR: ImportError | None = exc
else:
    _IMPORT_ERROR = None
    from .driver_logs import install as _quiet_driver_logs

    _quiet_driver_logs()  # the driver never logs a statement's parameters

#: The failures a managed transaction retries (``Neo4jError.is_retryable``:
#: transient errors, and a cluster member that went away).
_RETRIED: tuple[type[BaseException], ...] = (
    (neo4j_errors.TransientError, neo4j_errors.SessionExpired, neo4j_errors.ServiceUnavailable)
    if _IMPORT_ERROR is None
    else ()
)


class _Neo4jTx(Tx):
    def __init__(self, tx: Any) -> None:
        super().__init__()
        self._tx = tx
        #: locks taken and not yet sent: they go with the unit's next statement
        self._locks: list[tuple[str, str]] = []

    def _run_read(self, query: str, params: dict[str, Any]) -> list[Row]:
        query, params = self._after_locks(query, params)
        return [_plain_row(record) for record in self._tx.run(query, params)]

    def _lock(self, label: str, node_id: str) -> None:
        # Setting and removing a property takes the node's write lock and
        # leaves nothing behind. Sent as the start of the unit's next
        # statement, not alone: a lock is always followed by the reads it
        # guards, and each statement is a round trip.
        self._locks.append((label, node_id))

    def _after_locks(self, query: str, params: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        """``query`` preceded by the locks not yet sent, each in a unit
        subquery: they run, in order, before anything the query reads (the
        racing-units tests fail if a read overtakes its lock). A union runs
        its parts separately, so the locks go alone before it."""
        locks = self.unsent_locks()
        if not locks:
            return query, params
        if _UNION.search(query):
            for statement, args in lock_statements(locks):
                self._tx.run(statement, args).consume()
            return query, params
        prefix = [_LOCK_FIRST.format(label=label, i=i) for i, (label, _) in enumerate(locks)]
        sent = {f"_lk{i}": node_id for i, (_, node_id) in enumerate(locks)}
        return " ".join([*prefix, query]), {**params, **sent}

    def unsent_locks(self) -> list[tuple[str, str]]:
        """The locks not yet sent, now counted as sent."""
        locks, self._locks = self._locks, []
        return locks

    def _lock_kept(self, label: str, node_id: str, project_id: str) -> None:
        # Locked as above: Neo4j's documented way to serialize
        # read-modify-write units ("Lost updates": a write lock taken before
        # the reads). Not by MERGE: a MERGE that finds the node takes a shared
        # lock first, and two units waiting behind a third would then both
        # hold it and deadlock turning it into a write lock. The node is
        # merged only the first time (its uniqueness constraint makes racing
        # merges create one).
        # The statement that locks it reads it too (``kept_found``): a unit
        # that locks the counters to read them needs no second round trip.
        query, params = self._after_locks(
            f"OPTIONAL MATCH (n:{label} {{id: $id}}) SET n._lock = true REMOVE n._lock "
            "RETURN n IS NOT NULL AS found, properties(n) AS props",
            {"id": node_id},
        )
        found = self._tx.run(query, params).single()
        if found and found["found"]:
            self.kept_found = _plain(found["props"])
        else:
            self._tx.run(
                f"MERGE (n:{label} {{id: $id}}) ON CREATE SET n.project_id = $p SET n._lock = true REMOVE n._lock",
                {"id": node_id, "p": project_id},
            ).consume()


def lock_statements(locks: list[tuple[str, str]]) -> list[tuple[str, dict[str, Any]]]:
    """Each lock as a statement of its own."""
    return [(_LOCK.format(label=label), {"id": node_id}) for label, node_id in locks]


#: a node's write lock, as a statement and as the start of another one
_LOCK = "MATCH (n:{label} {{id: $id}}) SET n._lock = true REMOVE n._lock"
_LOCK_FIRST = "CALL {{ MATCH (n:{label} {{id: $_lk{i}}}) SET n._lock = true REMOVE n._lock }}"
_UNION = re.compile(r"\bUNION\b")
_PARAMETER = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
#: a write that returns rows, or holds a subquery or a union, is sent alone
_NOT_A_UNIT = re.compile(r"\b(RETURN|CALL|UNION)\b")


def _as_one(writes: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any]]]:
    """A unit's writes as one statement where Cypher allows it: each in a
    unit subquery (``CALL { ... }``, run in order, each seeing what the
    ones before it wrote), its parameters renamed apart. Each statement is
    a round trip, and a review action writes a dozen; FalkorDB sends a
    unit's writes together anyway (MULTI ... EXEC).

    The ``UNWIND [0] AS _wN`` that opens each subquery is kept on purpose,
    as a guard for older Neo4j 5 servers (any 5.x is supported: README,
    docs/stores.md): a ``CALL { ... }`` body that begins with ``WITH``
    reads as an importing ``WITH``, which may only name outer variables,
    so a write that starts with ``WITH $x AS x`` would be refused
    ("Importing WITH should consist only of simple references to outside
    variables"). The scoped form that says the same without the guard,
    ``CALL () { ... }``, came later in 5.x (5.23) and older servers reject
    it. One row in, so each write runs once; drop the guard only when the
    oldest server supported has the scoped form.

    The statement is never planned again once its plan is cached
    (``replan=skip``): Neo4j replans a statement whose labels' counts have
    moved since, and planning a dozen subqueries takes about 40 ms, which
    every few seconds of writes landed on one review action. Every write in
    it finds its nodes by an indexed property, so the plan made on a small
    store is the one a large store needs (test_query_plans checks the
    review actions', a step's and a bulk load's writes for label scans and
    project-wide index reads)."""
    if len(writes) < 2 or any(_NOT_A_UNIT.search(query) for query, _ in writes):
        return writes
    parts: list[str] = ["CYPHER replan=skip"]
    params: dict[str, Any] = {}
    for i, (query, own) in enumerate(writes):
        renamed = _PARAMETER.sub(f"$w{i}_" + r"\1", query)
        parts.append(f"CALL {{ UNWIND [0] AS _w{i} {renamed} }}")
        params.update({f"w{i}_{name}": value for name, value in own.items()})
    return [(" ".join(parts), params)]


def _plain_row(record: Any) -> Row:
    return {key: _plain(value) for key, value in record.items()}


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if hasattr(value, "to_native"):
        return value.to_native()
    return value


class Neo4jStore(GraphStore):
    backend = "neo4j"
    reconnects = True

    def __init__(
        self,
        url: str,
        *,
        uri: str,
        user: str | None,
        password: str | None,
        database: str | None,
        timeout: float = READ_TIMEOUT_S,
        connect_timeout: float = CONNECT_TIMEOUT_S,
    ) -> None:
        if _IMPORT_ERROR is not None:
            raise GraphStoreMissingExtraError(
                f"the Neo4j store needs the 'neo4j' package: pip install neo4j ({_IMPORT_ERROR})"
            )
        self.url = url
        self._database = database or "neo4j"
        self.timeout, self.connect_timeout = timeout, connect_timeout
        self._uri, self._auth = uri, (user, password or "") if user else None
        self._patience = threading.local()
        self._long_lock = threading.Lock()
        self._long_driver: Any = None
        self._driver = self._make_driver(timeout)
        self._schema_done: set[Schema] = set()
        self._lock = threading.Lock()
        self.ping()

    def _make_driver(self, read_timeout: float) -> Any:
        """A driver whose connections give up on a server that sends
        nothing for ``read_timeout`` seconds. The driver has no setting for
        that, only the server's hint ``connection.recv_timeout_seconds``,
        which it applies to each new connection's socket; the same is done
        here to each new connection the pool opens (the server's hint, 120 s
        from Neo4j 5, is kept only when shorter)."""
        try:
            driver = GraphDatabase.driver(
                self._uri,
                auth=self._auth,
                connection_timeout=self.connect_timeout,
                # a connection from the pool, or a new one made (and greeted) in time
                connection_acquisition_timeout=max(self.connect_timeout, min(read_timeout, 2 * self.connect_timeout)),
                # what the units retry themselves (``_retrying``)
                max_transaction_retry_time=0,
                # "property key does not exist" and the like on a fresh
                # database are not worth a log line per query
                notifications_min_severity="OFF",
            )
        except (neo4j_errors.Neo4jError, neo4j_errors.DriverError, ValueError) as exc:
            raise GraphStoreError(f"bad Neo4j url {redact_url(self.url)}: {exc}") from exc
        pool = driver._pool
        opener = pool.opener

        def open_with_read_timeout(*args: Any, **kwargs: Any) -> Any:
            connection = opener(*args, **kwargs)
            hinted = connection.socket.get_read_timeout()
            if hinted is None or hinted > read_timeout:
                connection.socket.set_read_timeout(read_timeout)
            return connection

        pool.opener = open_with_read_timeout
        return driver

    @contextmanager
    def unhurried(self) -> Iterator[None]:
        self._patience.depth = getattr(self._patience, "depth", 0) + 1
        try:
            yield
        finally:
            self._patience.depth -= 1

    def _patient(self) -> bool:
        return bool(getattr(self._patience, "depth", 0))

    def _current_driver(self) -> Any:
        if not self._patient():
            return self._driver
        with self._long_lock:
            if self._long_driver is None:
                self._long_driver = self._make_driver(LONG_TIMEOUT_S)
            return self._long_driver

    def _tx_timeout(self) -> float:
        """The transaction timeout the server enforces, a backstop: a
        transaction still open after it (its client gone quiet while it holds
        locks others wait for) is ended there. The client's own read timeout
        is what bounds a page; this counts the unit's time in Python too."""
        return LONG_TIMEOUT_S if self._patient() else TX_TIMEOUT_S

    def _session(self, *, write: bool) -> Any:
        return self._current_driver().session(
            database=self._database,
            default_access_mode=neo4j.WRITE_ACCESS if write else neo4j.READ_ACCESS,
        )

    def _retrying(self, attempt: Callable[[], T]) -> T:
        """``attempt()`` run again after what the driver calls retryable
        (a deadlock, a dropped connection, a leader switch), for up to
        ``RETRY_S``, but never after a timeout: a server that did not answer
        in time is not asked again and again."""
        deadline = time.monotonic() + RETRY_S
        delay = 0.02
        while True:
            try:
                return attempt()
            except (neo4j_errors.Neo4jError, neo4j_errors.DriverError) as exc:
                if _is_timeout(exc) or not exc.is_retryable() or time.monotonic() > deadline:
                    raise
            time.sleep(random.uniform(0, delay))
            delay = min(delay * 2, 1.0)

    def _wrap(self, exc: Exception) -> GraphStoreError:
        if _is_timeout(exc):
            return GraphStoreTimeoutError(
                f"Neo4j at {redact_url(self.url)} did not answer within {self.timeout:g} s "
                f"(the store url's timeout=): {exc}"
            )
        if isinstance(exc, neo4j_errors.ConstraintError):
            return GraphStoreConstraintViolationError(str(exc))
        if isinstance(exc, neo4j_errors.AuthError):
            return GraphStoreError(f"Neo4j at {redact_url(self.url)} refused the credentials: {exc.message}")
        if isinstance(exc, (neo4j_errors.ServiceUnavailable, neo4j_errors.SessionExpired, OSError)):
            return GraphStoreError(f"Neo4j at {redact_url(self.url)} is unreachable: {exc}")
        if isinstance(exc, neo4j_errors.Neo4jError):
            return GraphStoreError(f"Neo4j query failed: {exc.code}: {exc.message}")
        return GraphStoreError(f"Neo4j at {redact_url(self.url)} failed: {exc}")

    def read(self, project_id: str, query: str, params: Mapping[str, Any] | None = None) -> list[Row]:
        # One statement is its own transaction: sent as an auto-commit
        # transaction it is one round trip (RUN and PULL together) instead of
        # a managed one's BEGIN, RUN and PULL, then COMMIT. What a managed
        # transaction would retry (a deadlock, a leader switch, a dropped
        # connection) is retried as one, before anything was returned.
        args = dict(params or {})
        timeout = self._tx_timeout()
        try:
            with self._session(write=False) as session:
                try:
                    return [_plain_row(r) for r in session.run(neo4j.Query(query, timeout=timeout), args)]
                except _RETRIED as exc:
                    if _is_timeout(exc):
                        raise
            read = neo4j.unit_of_work(timeout=timeout)(lambda tx: [_plain_row(r) for r in tx.run(query, args)])

            def again() -> list[Row]:
                with self._session(write=False) as session:
                    return session.execute_read(read)

            return self._retrying(again)
        except (neo4j_errors.Neo4jError, neo4j_errors.DriverError, OSError) as exc:
            raise self._wrap(exc) from exc

    def execute(
        self,
        project_id: str,
        query: str,
        params: Mapping[str, Any] | None = None,
        *,
        guard: tuple[str, str] | None = None,  # the statement takes its node's lock itself
    ) -> list[Row]:
        try:
            with self._session(write=True) as session, session.begin_transaction(timeout=self._tx_timeout()) as tx:
                rows = [_plain_row(r) for r in tx.run(query, dict(params or {}))]
                tx.commit()
                return rows
        except neo4j_errors.TransientError as exc:
            raise GraphStoreWriteConflictError(f"Neo4j refused the transaction: {exc.message}") from exc
        except (neo4j_errors.Neo4jError, neo4j_errors.DriverError, OSError) as exc:
            cause = exc.__cause__ or exc.__context__
            if isinstance(cause, neo4j_errors.ConstraintError):
                raise self._wrap(cause) from exc
            raise self._wrap(exc) from exc

    def transact(
        self,
        project_id: str,
        work: Callable[[Tx], T],
        *,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    ) -> T:
        # max_attempts is FalkorDB's bound on WATCH aborts; here the driver
        # retries transient failures (deadlocks) for max_transaction_retry_time.
        def run(tx: Any) -> T:
            unit = _Neo4jTx(tx)
            result = work(unit)
            # locks no read followed go first, with the writes
            for query, params in _as_one(lock_statements(unit.unsent_locks()) + unit.writes):
                tx.run(query, params).consume()
            return result

        unit = neo4j.unit_of_work(timeout=self._tx_timeout())(run)

        def attempt() -> T:
            with self._session(write=True) as session:
                return session.execute_write(unit)

        constraint_failures = 0
        while True:
            try:
                return self._retrying(attempt)
            except neo4j_errors.ConstraintError as exc:
                constraint_failures += 1
                if constraint_failures > CONSTRAINT_RETRIES:
                    raise self._wrap(exc) from exc
            except neo4j_errors.TransientError as exc:
                # the driver's own retries ran out
                raise GraphStoreWriteConflictError(f"Neo4j kept refusing the transaction: {exc.message}") from exc
            except (neo4j_errors.Neo4jError, neo4j_errors.DriverError, OSError) as exc:
                raise self._wrap(exc) from exc

    def ensure_schema(self, project_id: str, schema: Schema) -> None:
        # One database for every project: the schema is per label, not per project.
        if schema in self._schema_done:
            return
        with self._lock:
            if schema in self._schema_done:
                return
            statements: list[str] = []
            for index in schema.indexes:
                props = ", ".join(f"n.{p}" for p in index.properties)
                name = _name("u" if index.unique else "i", index.label, index.properties)
                if index.unique:
                    statements.append(
                        f"CREATE CONSTRAINT {name} IF NOT EXISTS FOR (n:{index.label}) REQUIRE ({props}) IS UNIQUE"
                    )
                else:
                    statements.append(f"CREATE INDEX {name} IF NOT EXISTS FOR (n:{index.label}) ON ({props})")
                if "project_id" not in index.properties:
                    statements.append(
                        f"CREATE INDEX {_name('p', index.label, ('project_id',))} IF NOT EXISTS "
                        f"FOR (n:{index.label}) ON (n.project_id)"
                    )
            for rel in schema.relationships:
                props = ", ".join(f"r.{p}" for p in rel.properties)
                name = _name("r", rel.rel_type, rel.properties)
                statements.append(f"CREATE INDEX {name} IF NOT EXISTS FOR ()-[r:{rel.rel_type}]-() ON ({props})")
            for ft in schema.fulltext:
                props = ", ".join(f"n.{p}" for p in ft.properties)
                statements.append(
                    f"CREATE FULLTEXT INDEX {_fulltext_name(ft.label)} IF NOT EXISTS "
                    f"FOR (n:{ft.label}) ON EACH [{props}]"
                )
            try:
                with self.unhurried(), self._session(write=True) as session:  # indexes of a big store take time
                    for statement in dict.fromkeys(statements):
                        session.run(statement).consume()
                    session.run("CALL db.awaitIndexes(60)").consume()
            except neo4j_errors.Neo4jError as exc:
                raise self._wrap(exc) from exc
            except (neo4j_errors.DriverError, OSError) as exc:
                raise self._wrap(exc) from exc
            self._schema_done.add(schema)

    def fulltext_query(self, label: str, var: str) -> str:
        return f"CALL db.index.fulltext.queryNodes('{_fulltext_name(label)}', $q) YIELD node AS {var}, score"

    def fulltext_expression(self, words: list[str]) -> str:
        # Lucene: every term required
        return " AND ".join(words)

    def ping(self) -> None:
        try:
            self._driver.verify_connectivity()
        except (neo4j_errors.Neo4jError, neo4j_errors.DriverError, OSError) as exc:
            raise self._wrap(exc) from exc
        except ValueError as exc:  # the driver's word for a malformed address
            raise GraphStoreError(f"bad Neo4j url {redact_url(self.url)}: {exc}") from exc

    def list_projects(self) -> list[str]:
        rows = self.read(
            "",
            "CALL { MATCH (t:Task) RETURN DISTINCT t.project_id AS p UNION "
            "MATCH (d:Document) RETURN DISTINCT d.project_id AS p } RETURN p ORDER BY p",
        )
        return [r["p"] for r in rows if r["p"]]

    def has_project(self, project_id: str) -> bool:
        # two index seeks, however many projects and tasks the graph holds
        # (listing them reads every task and document: each staff page asks)
        return bool(
            self.read(
                "",
                "CALL { MATCH (t:Task {project_id: $p}) RETURN 1 AS x LIMIT 1 UNION "
                "MATCH (d:Document {project_id: $p}) RETURN 1 AS x LIMIT 1 } RETURN x LIMIT 1",
                {"p": project_id},
            )
        )

    def drop_project(self, project_id: str) -> None:
        query = "MATCH (n {project_id: $p}) CALL { WITH n DETACH DELETE n } IN TRANSACTIONS OF 5000 ROWS"
        try:
            with self.unhurried(), self._session(write=True) as session:
                session.run(query, {"p": project_id}).consume()
        except (neo4j_errors.Neo4jError, neo4j_errors.DriverError, OSError) as exc:
            raise self._wrap(exc) from exc

    def store_property(self, name: str) -> str | None:
        rows = self.read("", "MATCH (m:ReviewerStore {name: $n}) RETURN m.value AS v", {"n": name})
        return rows[0]["v"] if rows else None

    def claim_store_property(self, name: str, value: str) -> str:
        # one node a name, kept unique by a constraint (two processes' MERGE
        # race: the loser's commit fails on it, and it reads the winner's)
        try:
            with self._session(write=True) as session:
                session.run(
                    "CREATE CONSTRAINT reviewer_store_name IF NOT EXISTS FOR (m:ReviewerStore) REQUIRE m.name IS UNIQUE"
                ).consume()
                session.execute_write(
                    lambda tx: tx.run(
                        "MERGE (m:ReviewerStore {name: $n}) ON CREATE SET m.value = $v", {"n": name, "v": value}
                    ).consume()
                )
        except neo4j_errors.ConstraintError:
            pass
        except (neo4j_errors.Neo4jError, neo4j_errors.DriverError, OSError) as exc:
            raise self._wrap(exc) from exc
        return self.store_property(name) or value

    def close(self) -> None:
        self._before_close()
        self._driver.close()
        if self._long_driver is not None:
            self._long_driver.close()


#: how long a unit is run again after a deadlock or a dropped connection
RETRY_S = 15.0
#: the server-side transaction timeout outside ``unhurried()``
TX_TIMEOUT_S = 60.0


def _is_timeout(exc: BaseException | None) -> bool:
    """Whether a driver error comes from a server that did not answer in
    time: a socket's read timeout, a connection not made in time, or the
    server's own transaction timeout."""
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, (TimeoutError, _DeadlineExceeded)):
            return True
        if isinstance(exc, neo4j_errors.Neo4jError) and "TransactionTimedOut" in (exc.code or ""):
            return True
        if isinstance(exc, neo4j_errors.DriverError) and "timed out" in str(exc).lower():
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


def _name(prefix: str, label: str, properties: tuple[str, ...]) -> str:
    digest = hashlib.sha1("|".join(properties).encode()).hexdigest()[:8]
    return f"reviewer_{prefix}_{label.lower()}_{digest}"


def _fulltext_name(label: str) -> str:
    return f"reviewer_ft_{label.lower()}"
