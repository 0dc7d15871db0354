"""Start and stop the in-process Neo4j Community test server.

The Java launcher (``src/main/java/reviewer/neo4j/Launcher.java``) is built by
Maven into ``target/``; ``.ci/run`` builds it, and :func:`build` does it on a
developer's machine when it is missing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent
TARGET = HERE / "target"
START_TIMEOUT_S = 180.0


class Neo4jServerError(RuntimeError):
    pass


def built() -> bool:
    """The launcher is compiled, from its current source (a checkout that
    changed ``Launcher.java`` builds it again)."""
    compiled = TARGET / "classes" / "reviewer" / "neo4j" / "Launcher.class"
    source = HERE / "src" / "main" / "java" / "reviewer" / "neo4j" / "Launcher.java"
    if not compiled.exists() or not (TARGET / "lib").is_dir():
        return False
    return (
        compiled.stat().st_mtime >= source.stat().st_mtime
        and compiled.stat().st_mtime >= (HERE / "pom.xml").stat().st_mtime
    )


def build() -> None:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise Neo4jServerError("Maven (mvn) is not installed, so the Neo4j test server cannot be built")
    done = subprocess.run(
        [mvn, "-q", "-B", "package", "-DskipTests"], cwd=HERE, capture_output=True, text=True, timeout=1200
    )
    if done.returncode != 0:
        raise Neo4jServerError(f"building the Neo4j test server failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")


def java_binary() -> str:
    home = os.environ.get("REVIEWER_TEST_JAVA_HOME") or os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    found = shutil.which("java")
    if found is None:
        raise Neo4jServerError("no java on PATH: install a Java 17 runtime to run the Neo4j tests")
    return found


class Neo4jServer:
    """One running server; ``url`` is its Bolt address."""

    def __init__(
        self,
        *,
        port: int = 0,
        data_dir: str | None = None,
        heap: str = "1g",
        pagecache: str = "256m",
        tx_total: str | None = None,
    ) -> None:
        """``tx_total``: ``db.memory.transaction.total.max`` (e.g. ``"64m"``;
        unlimited when None, as the embedded default)."""
        if not built():
            build()
        args = [
            java_binary(),
            # as Neo4j's own neo4j.conf runs it: the G1 collector, the heap
            # its full size from the start (growing it is a full collection)
            f"-Xms{heap}",
            f"-Xmx{heap}",
            f"-Dreviewer.pagecache={pagecache}",
            *([f"-Dreviewer.txtotal={tx_total}"] if tx_total else []),
            "-XX:+UseG1GC",
            "-cp",
            f"{TARGET / 'classes'}{os.pathsep}{TARGET / 'lib'}/*",
            "reviewer.neo4j.Launcher",
            str(port),
        ]
        if data_dir:
            args.append(data_dir)
        self._output: list[str] = []
        self.proc = subprocess.Popen(
            args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        self.url = self._wait_ready()

    def _wait_ready(self) -> str:
        found: list[str] = []
        ready = threading.Event()

        def pump() -> None:
            assert self.proc.stdout is not None
            for line in self.proc.stdout:
                self._output.append(line.rstrip())
                del self._output[:-200]
                if line.startswith("BOLT READY "):
                    found.append(line.split()[-1])
                    ready.set()
            ready.set()

        threading.Thread(target=pump, daemon=True).start()
        ready.wait(START_TIMEOUT_S)
        if not found:
            self.stop()
            tail = "\n".join(self._output[-30:])
            raise Neo4jServerError(f"the Neo4j test server did not start:\n{tail}")
        return found[0]

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()


@contextmanager
def running(**kwargs: object) -> Iterator[Neo4jServer]:
    server = Neo4jServer(**kwargs)  # type: ignore[arg-type]
    try:
        yield server
    finally:
        server.stop()


def serve(message: str = "Neo4j test server on {url}; press Ctrl-C to stop", **kwargs: object) -> None:
    """Run a server until Ctrl-C (or SIGINT), after printing ``message``
    with its ``{url}``: for a person, or a benchmark's other process."""
    with running(**kwargs) as srv:
        print(message.format(url=srv.url), flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":  # python -m tests.neo4j_server.launcher: run one by hand
    serve()
