"""The graph store contract shared by every backend.

A store gives the services three things:

* ``read(project_id, query, params)``: one read-only Cypher statement, rows as
  plain ``dict``s of plain values (str, int, float, bool, None, list, dict).
* ``transact(project_id, work)``: a unit of work. ``work(tx)`` reads through
  ``tx.read`` and decides; the writes it queues with ``tx.write`` are committed
  together after it returns, or not at all. If another writer changed the
  project's data between the reads and the commit, the whole unit runs again
  (``work`` must therefore be a pure function of what it read), up to a bound,
  then :class:`GraphStoreWriteConflictError`.
* ``ensure_schema(project_id, schema)``: idempotent indexes and uniqueness
  constraints.

Services write one Cypher dialect; the few differences between FalkorDB and
Neo4j are handled inside the stores.
"""

from __future__ import annotations

import logging
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

T = TypeVar("T")

log = logging.getLogger("reviewer.store")

Row = dict[str, Any]

#: How many times a unit of work is run again after a write conflict before
#: :class:`GraphStoreWriteConflictError` is raised.
DEFAULT_MAX_ATTEMPTS = 64

#: How many times a unit that hit a uniqueness violation is run again (the
#: seed: "History writes retry it up to three times").
CONSTRAINT_RETRIES = 3

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


class GraphStoreError(Exception):
    """A query or transaction failed in the backend."""


class GraphStoreMissingExtraError(GraphStoreError):
    """The Neo4j or FalkorDB client package is not installed."""


class GraphStoreWriteConflictError(GraphStoreError):
    """A unit of work kept meeting concurrent writers and gave up."""


class GraphStoreConstraintViolationError(GraphStoreError):
    """The backend reported a uniqueness violation."""


class GraphStoreTimeoutError(GraphStoreError):
    """The backend did not answer in time (``timeout=`` / ``connect_timeout=``
    of the store url). A write that timed out may or may not have been
    applied: retry it with its request id."""


#: Seconds to make a connection (TCP, handshake) before giving up.
CONNECT_TIMEOUT_S = 1.0
#: Seconds to wait for any answer of the server once a statement was sent:
#: a page of a store that hangs is a 503 after this, not a wait without end.
READ_TIMEOUT_S = 1.5
#: The same, inside ``store.unhurried()``: the operations that are long on
#: purpose (a bulk load, the demo seeding, an import, a disk purge, schema
#: setup on a big store, dropping a project).
LONG_TIMEOUT_S = 3600.0


def check_identifier(name: str) -> str:
    """Return ``name`` if it is safe to place in query text (a label or key)."""
    if not isinstance(name, str) or not _IDENTIFIER.match(name):
        raise ValueError(f"not a safe graph identifier: {name!r}")
    return name


def redact_url(url: str) -> str:
    """The url with any password replaced by ``***``, for messages and logs."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparsable url>"
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, f"{user}:***@{host}", parts.path, parts.query, parts.fragment))


@dataclass(frozen=True)
class NodeIndex:
    """An index on one label; ``unique`` makes it a uniqueness constraint.
    ``ordered``: it is there for the order a composite index is read in
    (Neo4j); a backend whose indexes give no order (FalkorDB) skips it."""

    label: str
    properties: tuple[str, ...]
    unique: bool = False
    ordered: bool = False

    def __post_init__(self) -> None:
        check_identifier(self.label)
        for prop in self.properties:
            check_identifier(prop)


@dataclass(frozen=True)
class FullTextIndex:
    """A full-text index over string properties of one label."""

    label: str
    properties: tuple[str, ...]

    def __post_init__(self) -> None:
        check_identifier(self.label)
        for prop in self.properties:
            check_identifier(prop)


@dataclass(frozen=True)
class RelationshipIndex:
    """A range index on properties of one relationship type: Neo4j reads a
    composite one in its order; FalkorDB indexes each property (one index
    per type, which answers a filter on several at once)."""

    rel_type: str
    properties: tuple[str, ...]

    def __post_init__(self) -> None:
        check_identifier(self.rel_type)
        for prop in self.properties:
            check_identifier(prop)


@dataclass(frozen=True)
class Schema:
    indexes: tuple[NodeIndex, ...] = ()
    fulltext: tuple[FullTextIndex, ...] = ()
    relationships: tuple[RelationshipIndex, ...] = ()

    def __add__(self, other: Schema) -> Schema:
        return Schema(
            self.indexes + other.indexes,
            self.fulltext + other.fulltext,
            self.relationships + other.relationships,
        )


@dataclass
class Tx:
    """What a unit of work sees: reads now, writes at commit.

    Subclasses implement :meth:`_run_read` and :meth:`_lock`. ``write`` only
    queues; nothing is visible to later reads of the same unit, on any backend,
    so a unit behaves the same everywhere.
    """

    writes: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    #: Whether the units of a project already run as if one at a time (no
    #: backend does: on each, :meth:`lock` and :meth:`lock_kept` serialize
    #: the units that need it, and a unit reads committed data).
    serializable: bool = False
    #: reads this unit made (so :meth:`lock_kept` can tell whether any came
    #: before it), and the kept counters' node this unit has locked
    reads_done: int = 0
    kept_locked: str | None = None
    #: the properties of the kept counters' node as the lock found them
    #: (None where the lock reads nothing: FalkorDB, or a node just made);
    #: only units holding the lock change it, so they hold for the unit
    kept_found: dict[str, Any] | None = None
    #: what the services keep for the rest of one run of a unit
    state: dict[str, Any] = field(default_factory=dict)

    def read(self, query: str, params: Mapping[str, Any] | None = None) -> list[Row]:
        if self.writes:
            raise RuntimeError("a unit of work must do all of its reads before its first write")
        self.reads_done += 1
        return self._run_read(query, dict(params or {}))

    def lock_kept(self, label: str, node_id: str, project_id: str) -> bool:
        """Take the write lock of the node of a project's kept counters
        (on Neo4j creating it, with only ``id`` and ``project_id``), once
        per unit.

        Every unit that reads a kept counter or number to rewrite it, or
        changes what one counts, takes this lock before those reads, so such
        units run one after the other on every backend. Returns True when
        this unit read something before the lock: that read may since have
        been overtaken by a unit that committed (every backend reads
        committed data): the caller reads it again. Take it as a unit's first step where possible, so units take
        their locks in one order (this node, then tasks, decisions,
        documents) and rarely deadlock."""
        if self.serializable or self.kept_locked == node_id:
            return False
        if self.writes:
            raise RuntimeError("lock before writing")
        stale = self.reads_done > 0
        self._lock_kept(check_identifier(label), node_id, project_id)
        self.kept_locked = node_id
        return stale

    def lock(self, label: str, node_id: str) -> None:
        """Serialize this unit against others that lock the same node.

        Neo4j takes a write lock on the node, FalkorDB a Redis lock key of
        it, held until the unit commits, so that a read-decide-write unit
        cannot interleave. Call it before the reads that the decision
        depends on.
        """
        if self.writes:
            raise RuntimeError("lock before writing")
        self._lock(check_identifier(label), node_id)

    def write(self, query: str, params: Mapping[str, Any] | None = None) -> None:
        self.writes.append((query, dict(params or {})))

    def _run_read(self, query: str, params: dict[str, Any]) -> list[Row]:  # pragma: no cover
        raise NotImplementedError

    def _lock(self, label: str, node_id: str) -> None:  # pragma: no cover
        raise NotImplementedError

    def _lock_kept(self, label: str, node_id: str, project_id: str) -> None:  # pragma: no cover
        raise NotImplementedError


class GraphStore(ABC):
    """One backend. Thread-safe; share one per process and url."""

    #: "falkordb" or "neo4j"
    backend: str
    url: str
    #: Whether each project is a graph of its own (FalkorDB), so a query need
    #: not filter on ``project_id`` (Neo4j keeps every project in one graph).
    graph_per_project: bool = False
    #: Whether the client finds a dead connection by itself and runs what
    #: failed on a new one (the Neo4j driver's pool and managed
    #: transactions), so an open handle needs no reopening and an action
    #: need not ping before it begins. (A server that is down is retried
    #: for the driver's retry time, as a page's reads are, before the
    #: action fails; a handle closed under a running action fails it.)
    reconnects: bool = False

    @abstractmethod
    def read(self, project_id: str, query: str, params: Mapping[str, Any] | None = None) -> list[Row]:
        """Run one read-only statement in the project's data."""

    @abstractmethod
    def transact(
        self,
        project_id: str,
        work: Callable[[Tx], T],
        *,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    ) -> T:
        """Run a unit of work; see the module docstring."""

    @abstractmethod
    def execute(
        self,
        project_id: str,
        query: str,
        params: Mapping[str, Any] | None = None,
        *,
        guard: tuple[str, str] | None = None,
    ) -> list[Row]:
        """One write statement, applied whole or not at all, with its rows.

        A fast path for writes that can check their own precondition in the
        statement (compare-and-set): no reads before it, one round trip.
        Uniqueness violations raise :class:`GraphStoreConstraintViolationError`
        and are not retried here. ``guard``: the node (label, id) a unit
        locks to write what this statement compares: while a unit holds
        that lock the statement is not applied (no rows, as when its
        precondition fails), so it never takes what a unit read under the
        lock (FalkorDB; Neo4j's statement locks the node itself)."""

    def write(self, project_id: str, query: str, params: Mapping[str, Any] | None = None) -> None:
        """One write statement as a unit of its own."""

        def work(tx: Tx) -> None:
            tx.write(query, params)

        self.transact(project_id, work)

    @abstractmethod
    def ensure_schema(self, project_id: str, schema: Schema) -> None:
        """Create the indexes and constraints; safe to call again."""

    @abstractmethod
    def fulltext_query(self, label: str, var: str) -> str:
        """Cypher text that yields ``var`` (a node) and ``score`` for a
        full-text search over ``label`` with the ``$q`` parameter."""

    @abstractmethod
    def fulltext_expression(self, words: list[str]) -> str:
        """The ``$q`` value that matches nodes containing every word
        (``words`` are ``\\w+`` tokens, so nothing needs escaping)."""

    @abstractmethod
    def ping(self) -> None:
        """Raise :class:`GraphStoreError` unless the backend answers."""

    def unhurried(self) -> AbstractContextManager[None]:
        """Within this, this thread's statements wait up to
        ``LONG_TIMEOUT_S`` for an answer instead of the store's short read
        timeout (a bulk load, an import, a purge). Stores that have no short
        timeout give a context that does nothing."""
        return nullcontext()

    @abstractmethod
    def list_projects(self) -> list[str]:
        """The ids of the projects that hold data, sorted."""

    def has_project(self, project_id: str) -> bool:
        """Whether ``project_id`` holds data (as ``list_projects`` would say,
        without listing every project where the backend can tell sooner)."""
        return project_id in self.list_projects()

    @abstractmethod
    def drop_project(self, project_id: str) -> None:
        """Remove every node of the project (tests and tools)."""

    @abstractmethod
    def store_property(self, name: str) -> str | None:
        """A store-wide property (outside every project, kept by
        ``drop_project``), or None when unset."""

    @abstractmethod
    def claim_store_property(self, name: str, value: str) -> str:
        """Set a store-wide property unless it is set (atomically, against
        every other process); the value it holds now."""

    @abstractmethod
    def close(self) -> None:
        """Release connections (and, for the embedded store, the server).
        Each backend runs ``_before_close`` first."""

    def before_close(self, callback: Callable[[], None]) -> None:
        """Run ``callback`` when the store closes, while it still answers:
        a background user (the disk purge) finishes or stops there rather
        than failing on a closed store later."""
        self.__dict__.setdefault("_close_callbacks", []).append(callback)

    def _before_close(self) -> None:
        """The ``before_close`` callbacks, newest first, once (a second
        close runs none). One that fails does not keep the store open."""
        callbacks = self.__dict__.pop("_close_callbacks", [])
        for callback in reversed(callbacks):
            try:
                callback()
            except Exception as exc:
                log.warning("closing %r: %s", self, exc)

    def __enter__(self) -> GraphStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {redact_url(self.url)}>"
