"""Benchmarks: commands that print each figure beside a floor measured in
the same run (see docs/benchmarks.md)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from typing import Any

TITLES = {
    "falkordb": "embedded FalkorDB (appendfsync everysec)",
    "neo4j": "Neo4j 5.26 Community (in-process, Bolt on loopback)",
}


def each_store(backends: str, *, prefix: str = "reviewer-bench-") -> Iterator[tuple[str, Any, str]]:
    """Each backend named in ``backends`` ("falkordb,neo4j") in turn, as
    (title, open store, its url): a fresh embedded FalkorDB directory, or the
    in-process Neo4j test server. Each is closed before the next opens."""
    from core.stores import open_store

    for backend in [b.strip() for b in backends.split(",") if b.strip()]:
        if backend == "falkordb":
            url = f"falkordb+embedded://{tempfile.mkdtemp(prefix=prefix)}?appendfsync=everysec"
            with open_store(url) as store:
                yield TITLES[backend], store, url
        elif backend == "neo4j":
            from tests.neo4j_server.launcher import running

            with running() as server, open_store(server.url) as store:
                yield TITLES[backend], store, server.url
        else:
            raise SystemExit(f"unknown backend {backend!r}")
