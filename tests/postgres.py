"""A throwaway PostgreSQL cluster for the tests: Debian's ``postgresql`` package,
``initdb`` into a temporary directory, ``pg_ctl start`` listening only on a unix
socket in that directory (no TCP port to collide with anything), trust
authentication for the one database user. PostgreSQL refuses to run as root,
so under root (CI) the cluster is owned by and run as the ``postgres`` user
(or ``nobody``) through ``runuser``.

    with running() as url:      # postgres://reviewer@%2Ftmp%2F...%2Fsocket/reviewer
        ...

``REVIEWER_TEST_DATABASE=postgresql`` makes ``tests/settings.py`` start one for
the test run; a cluster that cannot start fails the run (never a skip).
"""

from __future__ import annotations

import atexit
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

USER = "reviewer"
DATABASE = "reviewer"


class PostgresError(RuntimeError):
    pass


def bindir() -> Path:
    """Debian keeps initdb and pg_ctl out of PATH, under /usr/lib/postgresql/N/bin."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(Path(p).parts[-3]))
    if found:
        return Path(found[-1]).parent
    pg_ctl = shutil.which("pg_ctl")
    if pg_ctl:
        return Path(pg_ctl).resolve().parent
    raise PostgresError("PostgreSQL is not installed: apt-get install postgresql (.ci/run does)")


def _runner() -> tuple[list[str], int | None, int | None]:
    """The prefix that runs a server command, and the uid/gid to own its files."""
    if os.geteuid() != 0:
        return [], None, None
    for name in ("postgres", "nobody"):
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            continue
        return ["runuser", "-u", name, "--"], entry.pw_uid, entry.pw_gid
    raise PostgresError("running as root and there is no postgres or nobody user to run PostgreSQL as")


class Cluster:
    def __init__(self) -> None:
        self.bin = bindir()
        self.prefix, uid, gid = _runner()
        self.root = Path(tempfile.mkdtemp(prefix="reviewer-pg-"))
        self.data = self.root / "data"
        self.socket_dir = self.root / "socket"
        self.socket_dir.mkdir()
        if uid is not None:
            for path in (self.root, self.socket_dir):
                os.chown(path, uid, gid)  # type: ignore[arg-type]
        self.started = False

    def _run(self, *args: str) -> None:
        done = subprocess.run([*self.prefix, *args], capture_output=True, text=True, timeout=120, cwd=self.root)
        if done.returncode != 0:
            raise PostgresError(f"{Path(args[0]).name} failed: {(done.stderr or done.stdout).strip()[-800:]}")

    def start(self) -> str:
        self._run(
            str(self.bin / "initdb"),
            "-D",
            str(self.data),
            "-U",
            USER,
            "--auth=trust",
            "--encoding=UTF8",
            "--locale=C",
            "--no-sync",
        )
        options = f"-c listen_addresses='' -c unix_socket_directories='{self.socket_dir}' -c fsync=off"
        self._run(
            str(self.bin / "pg_ctl"),
            "-D",
            str(self.data),
            "-o",
            options,
            "-l",
            str(self.root / "postgres.log"),
            "-w",
            "-t",
            "60",
            "start",
        )
        self.started = True
        atexit.register(self.stop)
        self._run(str(self.bin / "createdb"), "-h", str(self.socket_dir), "-U", USER, DATABASE)
        return self.url

    @property
    def url(self) -> str:
        return f"postgres://{USER}@{quote(str(self.socket_dir), safe='')}/{DATABASE}"

    def stop(self) -> None:
        if self.started:
            self.started = False
            try:
                self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")
            except (PostgresError, subprocess.TimeoutExpired):
                pass
        shutil.rmtree(self.root, ignore_errors=True)


@contextmanager
def running() -> Iterator[str]:
    cluster = Cluster()
    try:
        yield cluster.start()
    finally:
        cluster.stop()
