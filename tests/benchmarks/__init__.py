"""Benchmarks: commands that print each figure beside a floor measured in
the same run (see docs/benchmarks.md)."""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Iterator
from typing import Any

#: a benchmark store waits this long for an answer (the default is for a store
#: that hangs; seeding a million decisions sends statements that take longer)
SEEDING_TIMEOUT_S = 120

TITLES = {
    "falkordb": "embedded FalkorDB (appendfsync everysec)",
    "neo4j": "Neo4j 5.26 Community (in-process, Bolt on loopback)",
}


def each_store(
    backends: str,
    *,
    prefix: str = "reviewer-bench-",
    keep: str | None = None,
    neo4j_pagecache: str = "256m",
    neo4j_heap: str = "1g",
) -> Iterator[tuple[str, Any, str]]:
    """Each backend named in ``backends`` ("falkordb,neo4j") in turn, as
    (title, open store, its url): a fresh embedded FalkorDB directory, or the
    in-process Neo4j test server. Each is closed before the next opens.

    With ``keep`` (a directory) the stores live in ``keep/falkordb`` and
    ``keep/neo4j`` and are kept: a later run with the same directory opens
    what an earlier one wrote (the Neo4j event keys are kept beside its
    data, in ``keep/neo4j/events.keys``)."""
    import shutil

    from core.stores import open_store

    for backend in [b.strip() for b in backends.split(",") if b.strip()]:
        if backend == "falkordb":
            where = os.path.join(keep, "falkordb") if keep else tempfile.mkdtemp(prefix=prefix)
            url = f"falkordb+embedded://{os.path.abspath(where)}?appendfsync=everysec&timeout={SEEDING_TIMEOUT_S}"
            with open_store(url) as store:  # a large kept store: waited for while it loads
                yield TITLES[backend], store, url
        elif backend == "neo4j":
            from tests.neo4j_server.launcher import running

            home = os.path.abspath(os.path.join(keep, "neo4j")) if keep else tempfile.mkdtemp(prefix=prefix)
            os.makedirs(home, exist_ok=True)
            try:
                with running(
                    data_dir=os.path.join(home, "server"), pagecache=neo4j_pagecache, heap=neo4j_heap
                ) as server:
                    url = f"{server.url}?keys={os.path.join(home, 'events.keys')}&timeout={SEEDING_TIMEOUT_S}"
                    with open_store(url) as store:
                        _SERVER_PIDS[id(store)] = server.proc.pid
                        _SERVER_HOMES[id(store)] = os.path.join(home, "server")
                        yield TITLES[backend], store, url
                        _SERVER_PIDS.pop(id(store), None)
                        _SERVER_HOMES.pop(id(store), None)
            finally:
                if not keep:
                    shutil.rmtree(home, ignore_errors=True)
        else:
            raise SystemExit(f"unknown backend {backend!r}")


def server_pid(store: Any) -> int | None:
    """The process id of the store's server (the embedded redis-server, or
    the Neo4j test server's JVM), where this process started it."""
    embedded = getattr(store, "embedded_server", None)
    return embedded.server_pid() if embedded is not None else _SERVER_PIDS.get(id(store))


def server_home(store: Any) -> str | None:
    """The Neo4j test server's data directory, where this process started it."""
    return _SERVER_HOMES.get(id(store))


_SERVER_HOMES: dict[int, str] = {}
_SERVER_PIDS: dict[int, int] = {}


def _cpu_ms(pid: int) -> float:
    """CPU time (user + system, every thread) a process has used, in ms."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) * 1000 / os.sysconf("SC_CLK_TCK")


class Timer:
    """Times requests made in ``with timer:`` blocks: each block's wall time,
    and the CPU time the work took in this process and in the store's server
    (the embedded redis-server, or the Neo4j test server's JVM), which does
    not grow when other work shares the machine. The store's CPU comes from
    /proc in clock ticks (10 ms), so only its mean over the samples is given."""

    def __init__(self, store: Any) -> None:
        self.server = server_pid(store)
        self.walls: list[float] = []
        self.cpu = 0.0

    def _now(self) -> tuple[float, float]:
        server = _cpu_ms(self.server) if self.server else 0.0
        return time.perf_counter() * 1000, time.process_time() * 1000 + server

    def __enter__(self) -> Timer:
        self._start = self._now()
        return self

    def __exit__(self, *exc: object) -> None:
        wall, cpu = self._now()
        self.walls.append(wall - self._start[0])
        self.cpu += cpu - self._start[1]

    def figures(self) -> tuple[float, float, float]:
        """Wall p50, wall p95 and the mean CPU per request, in ms."""
        ordered = sorted(self.walls)
        p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
        return statistics.median(ordered), p95, self.cpu / max(1, len(self.walls))
