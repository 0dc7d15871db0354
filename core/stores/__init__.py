"""Graph stores and ``open_store(url)``.

Urls:

* ``falkordb+embedded:///abs/dir`` — the embedded FalkorDB server owned by a
  data directory (``falkordb+embedded://`` alone uses ``$REVIEWER_DATA_DIR``
  or ``./var``). ``?appendfsync=always|everysec|no`` (default ``always``).
  Its event-key store is ``<dir>/keys/events.keys``.
* ``falkordb://[user:password@]host:port`` — a FalkorDB server over TCP.
* ``falkordb+unix:///path/to.sock`` — a FalkorDB server on a unix socket.
* ``neo4j://``, ``neo4j+s://``, ``bolt://``, ``bolt+s://``
  ``[user:password@]host:port[/database]`` (or ``?database=name``).

Every store has an event-key store (``core.stores.keystore``): event bodies are
encrypted with a key per event kept there, outside the graph. For a server
url, ``?keys=`` names it: an absolute path of a key file (one host), or a
``redis://[:password@]host:port[/db]``, ``rediss://`` or ``unix:///path.sock``
url of a Redis-compatible server with an append-only file (several hosts;
percent-encode it inside the store url); ``keys_sync=always|everysec|no``,
default ``always``. Without it the default is
``$REVIEWER_DATA_DIR/keys/<backend>-<hash of host, port and database>.keys``
(``REVIEWER_DATA_DIR`` unset: the ``var`` directory of this checkout, never
the working directory). A graph and its key store are bound to each other on
first use (``keystore.bind_keys``): opening a graph with a key store that is
not its own raises :class:`KeyStoreMismatchError`, which says which and how to
fix it.
"""

from __future__ import annotations

import atexit
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from .base import (
    GraphStore,
    GraphStoreConstraintViolationError,
    GraphStoreError,
    GraphStoreMissingExtraError,
    GraphStoreTimeoutError,
    GraphStoreWriteConflictError,
    Schema,
    Tx,
    redact_url,
)
from .keystore import KeyStoreMismatchError

__all__ = [
    "GraphStore",
    "GraphStoreConstraintViolationError",
    "GraphStoreError",
    "GraphStoreMissingExtraError",
    "GraphStoreTimeoutError",
    "GraphStoreWriteConflictError",
    "KeyStoreMismatchError",
    "Schema",
    "Tx",
    "open_store",
    "redact_url",
]

NEO4J_SCHEMES = ("neo4j", "neo4j+s", "neo4j+ssc", "bolt", "bolt+s", "bolt+ssc")


def _bad(url: str, why: str) -> GraphStoreError:
    return GraphStoreError(f"bad store url {redact_url(url)}: {why}")


def open_store(url: str) -> GraphStore:
    """Open the store a url names. Raises :class:`GraphStoreError` (naming the
    url without its password, and the cause) when it cannot."""
    if not isinstance(url, str) or not url.strip():
        raise GraphStoreError("bad store url: it is empty")
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError as exc:
        raise _bad(url, str(exc)) from exc
    scheme = parts.scheme.lower()
    query = {k: v[-1] for k, v in parse_qs(parts.query).items()}

    timeouts = _timeouts(url, query)
    if scheme == "falkordb+embedded":
        return _open_embedded(url, parts.netloc, unquote(parts.path), query, timeouts)
    store = _open_server(url, parts, scheme, port, query, timeouts)
    try:
        _attach_keys(store, url, parts, query)
    except BaseException:
        store.close()
        raise
    return store


def _timeouts(url: str, query: dict[str, str]) -> dict[str, float]:
    """``timeout=`` (seconds to wait for an answer) and ``connect_timeout=``
    (seconds to make a connection) of a store url, as the stores take them."""
    found: dict[str, float] = {}
    for name in ("timeout", "connect_timeout"):
        if name in query:
            try:
                value = float(query[name])
            except ValueError:
                value = 0.0
            if not 0 < value <= 86400:
                raise _bad(url, f"{name} must be a number of seconds above 0")
            found[name] = value
    return found


def _attach_keys(store: GraphStore, url: str, parts: object, query: dict[str, str]) -> None:
    import hashlib

    from .embedded import default_data_dir
    from .keystore import REDIS_SCHEMES, SYNC_CHOICES, bind_keys, open_keystore

    sync = query.get("keys_sync", "always")
    if sync not in SYNC_CHOICES:
        raise _bad(url, f"keys_sync must be one of {', '.join(SYNC_CHOICES)}")
    spec = query.get("keys")
    if spec:
        if urlsplit(spec).scheme.lower() not in REDIS_SCHEMES and not Path(spec).is_absolute():
            raise _bad(url, "keys= must be an absolute path or a redis://, rediss:// or unix:// url")
    else:
        where = f"{parts.hostname}:{parts.port}{parts.path}?{query.get('database', '')}"  # type: ignore[attr-defined]
        digest = hashlib.sha256(where.encode()).hexdigest()[:16]
        spec = str(default_data_dir() / "keys" / f"{store.backend}-{digest}.keys")
    store.keystore = open_keystore(spec, sync=sync)  # type: ignore[attr-defined]
    bind_keys(store, store.keystore)  # type: ignore[attr-defined]


def _open_server(
    url: str, parts: object, scheme: str, port: int | None, query: dict[str, str], timeouts: dict[str, float]
) -> GraphStore:
    if scheme == "falkordb+unix":
        from .falkordb import FalkorDBStore

        if not parts.path:
            raise _bad(url, "it names no socket path")
        return FalkorDBStore(
            url,
            unix_socket_path=unquote(parts.path),
            username=unquote(parts.username) if parts.username else None,
            password=unquote(parts.password) if parts.password else None,
            **timeouts,
        )
    if scheme in ("falkordb", "redis"):
        from .falkordb import FalkorDBStore

        if not parts.hostname:
            raise _bad(url, "it names no host")
        return FalkorDBStore(
            url,
            host=parts.hostname,
            port=port or 6379,
            username=unquote(parts.username) if parts.username else None,
            password=unquote(parts.password) if parts.password else None,
            **timeouts,
        )
    if scheme in NEO4J_SCHEMES:
        from .neo4j import Neo4jStore

        if not parts.hostname:
            raise _bad(url, "it names no host")
        database = query.get("database") or parts.path.strip("/") or None
        host = parts.hostname if port is None else f"{parts.hostname}:{port}"
        return Neo4jStore(
            url,
            uri=f"{scheme}://{host}",
            user=unquote(parts.username) if parts.username else None,
            password=unquote(parts.password) if parts.password else None,
            database=database,
            **timeouts,
        )
    raise _bad(
        url,
        "unknown scheme; use falkordb+embedded:///dir, falkordb://host:port, "
        "falkordb+unix:///path.sock, neo4j://host:port or bolt://host:port",
    )


def _open_embedded(url: str, netloc: str, path: str, query: dict[str, str], timeouts: dict[str, float]) -> GraphStore:
    from .embedded import EmbeddedServer, default_data_dir
    from .falkordb import FalkorDBStore
    from .keystore import bind_keys, open_keystore

    if netloc:
        raise _bad(url, "an embedded url has no host: write falkordb+embedded:///absolute/path")
    unknown = set(query) - {"appendfsync", "timeout", "connect_timeout"}  # the key store lives in the data directory
    if unknown:
        raise _bad(url, f"unknown option {sorted(unknown)[0]!r}")
    data_dir = Path(path) if path else default_data_dir()
    server = EmbeddedServer(data_dir, appendfsync=query.get("appendfsync", "always"))
    socket = server.acquire()
    try:
        store = FalkorDBStore(url, unix_socket_path=socket, on_close=server.release, **timeouts)
    except BaseException:
        server.release()
        raise
    store.embedded_server = server  # type: ignore[attr-defined]
    try:
        keys = data_dir.resolve() / "keys" / "events.keys"
        store.keystore = open_keystore(keys, sync=server.appendfsync)  # type: ignore[attr-defined]
        bind_keys(store, store.keystore)  # type: ignore[attr-defined]
    except BaseException:
        store.close()
        raise
    atexit.register(store.close)
    return store
