"""Removing what a store's files still hold after a redaction or deletion.

* FalkorDB (embedded or a server): ``BGREWRITEAOF``, awaited until the
  server's count of finished rewrites moves on with status ``ok`` (a server
  without an append-only file: ``BGSAVE``, awaited the same way). Redis 7+
  deletes the AOF files the rewrite replaced; for the embedded store the
  files in the append-only directory that its manifest no longer names, and
  RDB files in the data directory (the embedded server runs with
  ``save ""``, so none is needed), are deleted as well. A server's RDB
  snapshots (if its operator configured ``save``) are not reachable from
  here: they are named in the README.
* Neo4j: ``CALL db.checkpoint()``. Transaction logs are pruned at a
  checkpoint by ``db.tx_log.rotation.retention_policy``; the current log
  file is kept until it rotates (``db.tx_log.rotation.size``). Event bodies
  on Neo4j are only ever written encrypted (``core.stores.keystore``), so what the
  logs and freed records keep is ciphertext whose key is gone.

What each returns says what it verified: ``rewritten`` is True only when
the store's files were rewritten and the server said the rewrite succeeded
(FalkorDB); on Neo4j nothing removes the bytes on demand, so it is False and
``tx_log`` holds the two settings that bound how long the transaction log
keeps them, as the server reported them.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

from .base import GraphStore, GraphStoreError
from .embedded import _pid_alive

REWRITE_TIMEOUT_S = 3600.0


def purge_files(store: GraphStore, *, timeout: float = REWRITE_TIMEOUT_S) -> dict[str, Any]:
    """Rewrite or checkpoint the store's files. Raises GraphStoreError when
    the rewrite fails or does not finish in ``timeout`` seconds."""
    with store.unhurried():  # a rewrite of a big file is long on purpose
        if store.backend == "falkordb":
            return _falkordb(store, timeout)
        if store.backend == "neo4j":
            return _neo4j(store)
    raise GraphStoreError(f"no disk purge for backend {store.backend!r}")


def _neo4j(store: Any) -> dict[str, Any]:
    """A checkpoint where the server offers the procedure (Enterprise); on
    Community the server's own periodic checkpoint
    (``db.checkpoint.interval.time``, 15 minutes by default) prunes the logs,
    and what they keep of an event body is ciphertext whose key is gone."""
    from neo4j import exceptions as neo4j_errors

    try:
        with store._session(write=True) as session:
            session.run("CALL db.checkpoint()").consume()
        checkpoint = True
    except neo4j_errors.ClientError as exc:
        if "ProcedureNotFound" not in (exc.code or ""):
            raise GraphStoreError(f"Neo4j checkpoint failed: {exc.code}: {exc.message}") from exc
        checkpoint = False
    except (neo4j_errors.Neo4jError, neo4j_errors.DriverError, OSError) as exc:
        raise GraphStoreError(f"Neo4j checkpoint failed: {exc}") from exc
    return {"backend": "neo4j", "checkpoint": checkpoint, "rewritten": False, "tx_log": _tx_log_settings(store)}


#: The settings that bound how long Neo4j's transaction log keeps what a
#: redaction removed: the log rotates at ``size``, and rotated files beyond
#: ``retention_policy`` are pruned at the next checkpoint.
TX_LOG_SETTINGS = ("db.tx_log.rotation.size", "db.tx_log.rotation.retention_policy")


def _tx_log_settings(store: Any) -> dict[str, str]:
    """The server's values of ``TX_LOG_SETTINGS`` (empty where it will not
    say: a user without the privilege to show settings)."""
    from neo4j import exceptions as neo4j_errors

    try:
        with store._session(write=False) as session:
            rows = session.run(
                "SHOW SETTINGS YIELD name, value WHERE name IN $names RETURN name, value", names=list(TX_LOG_SETTINGS)
            ).data()
    except (neo4j_errors.Neo4jError, neo4j_errors.DriverError, OSError):
        return {}
    return {r["name"]: str(r["value"]) for r in rows}


def _falkordb(store: Any, timeout: float) -> dict[str, Any]:
    import redis

    client = store._redis
    deadline = time.monotonic() + timeout
    try:
        if not client.info("persistence").get("aof_enabled"):
            return _rdb_only(client, lambda: client.info("persistence"), deadline)
        size = rewrite_append_only_file(client, deadline)
    except redis.RedisError as exc:
        raise GraphStoreError(f"the append-only file rewrite failed: {exc}") from exc
    removed = _stray_files(store)
    return {"backend": "falkordb", "aof_size": size, "removed": removed, "rewritten": True}


def rewrite_append_only_file(client: Any, deadline: float) -> int:
    """Rewrite the server's append-only file and wait (until ``deadline``,
    a ``time.monotonic()``) until a rewrite that began after this call
    finished; its size. Raises GraphStoreError when the rewrite failed or
    did not finish in time (redis errors are the caller's)."""
    import redis

    def info() -> dict[str, Any]:
        return client.info("persistence")

    # a rewrite that began before this call may predate what it must cover
    while (now := info())["aof_rewrite_in_progress"] or now["aof_rewrite_scheduled"]:
        _wait(deadline)
    before = now["aof_rewrites"]
    try:
        client.execute_command("BGREWRITEAOF")
    except redis.ResponseError as exc:  # one started in between: it began after our read too
        if "already in progress" not in str(exc):
            raise
    while True:
        now = info()
        if now["aof_rewrites"] > before and not now["aof_rewrite_in_progress"] and not now["aof_rewrite_scheduled"]:
            break
        _wait(deadline)
    if now["aof_last_bgrewrite_status"] != "ok":
        raise GraphStoreError("the append-only file rewrite failed; see the server's log")
    return int(now.get("aof_current_size", 0))


def manifest_entries(aof_dir: Path) -> list[dict[str, str]] | None:
    """The files an append-only directory's manifest names, each as its
    fields (``file``, ``seq``, ``type``: ``b`` base, ``i`` increment, ``h``
    history); None when there is not exactly one manifest."""
    manifests = list(aof_dir.glob("*.manifest"))
    if len(manifests) != 1:
        return None
    entries = []
    for line in manifests[0].read_text().splitlines():
        words = line.split()
        entry = dict(zip(words[::2], words[1::2]))
        if "file" in entry:
            entries.append(entry)
    return entries


def _rdb_only(client: Any, info: Any, deadline: float) -> dict[str, Any]:
    """A server persisting only snapshots: a new one replaces the last."""
    while info()["rdb_bgsave_in_progress"]:
        _wait(deadline)
    before = info()["rdb_saves"]
    client.execute_command("BGSAVE")
    while (now := info())["rdb_saves"] <= before or now["rdb_bgsave_in_progress"]:
        _wait(deadline)
    if now["rdb_last_bgsave_status"] != "ok":
        raise GraphStoreError("the snapshot (BGSAVE) failed; see the server's log")
    return {"backend": "falkordb", "rdb": True, "rewritten": True}


def _wait(deadline: float) -> None:
    if time.monotonic() > deadline:
        raise GraphStoreError("the append-only file rewrite did not finish in time")
    time.sleep(0.05)


#: what a rewrite or a snapshot writes while it runs, named by the child's pid
_TEMP_FILE = re.compile(r"^temp-(?:rewriteaof-(?:bg-)?)?(\d+)\.(?:aof|rdb)$")


def _stray_files(store: Any) -> list[str]:
    """For the embedded store: AOF files its manifest no longer names, RDB
    files, and the temporary files of a rewrite or snapshot whose process is
    gone (a rewrite killed mid-way leaves one: it holds the whole graph as it
    was) are deleted (they may hold what was redacted). A running rewrite's
    temporary file is its child's, alive, and stays."""
    server = getattr(store, "embedded_server", None)
    if server is None:
        return []
    data_dir = Path(server.data_dir)
    removed: list[str] = []
    aof_dir = data_dir / "appendonlydir"
    entries = manifest_entries(aof_dir)
    if entries is not None:
        named = {p.name for p in aof_dir.glob("*.manifest")} | {e["file"] for e in entries}
        for path in aof_dir.iterdir():
            if path.name not in named and path.is_file():
                path.unlink()
                removed.append(path.name)
    for path in data_dir.glob("*.rdb"):
        if _TEMP_FILE.match(path.name):
            continue  # below: a live snapshot's stays
        path.unlink()
        removed.append(path.name)
    for folder in (data_dir, aof_dir):
        for path in folder.glob("temp-*"):
            found = _TEMP_FILE.match(path.name)
            if found and path.is_file() and not _pid_alive(int(found.group(1))):
                path.unlink(missing_ok=True)
                removed.append(path.name)
    return removed
