"""The production server (``manage.py serve``: gunicorn's workers, WhiteNoise,
the auth database from ``DATABASE_URL``), the data files' modes, and SIGTERM
to ``serve`` and ``up`` leaving no FalkorDB server behind.

Each test runs the real command in its own process with the production
settings, on a data directory of its own."""

from __future__ import annotations

import http.client
import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.benchmarks.load import Browser

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "a-long-serve-test-password"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def production_env(data: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "REVIEWER_", "DATABASE_URL"))}
    env.update(
        DJANGO_SETTINGS_MODULE="reviewer.settings",
        DJANGO_SECRET_KEY="serve-test-" + uuid.uuid4().hex * 2,
        DJANGO_SECURE_SSL_REDIRECT="0",
        REVIEWER_DATA_DIR=str(data),
        REVIEWER_LOG_LEVEL="WARNING",
        **extra,
    )
    return env


def manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def get(port: int, path: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", path, headers=headers or {})
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def wait_until_answering(port: int, process: subprocess.Popen[str], log: Path, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the server exited ({process.returncode}): {log.read_text()[-2000:]}")
        try:
            if get(port, "/healthz")[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)
    pytest.fail(f"the server did not answer in {timeout} s: {log.read_text()[-2000:]}")


def children(pid: int, expect: int = 0, timeout: float = 60) -> list[int]:
    """The process's children (waiting until there are ``expect`` of them)."""
    deadline = time.monotonic() + timeout
    while True:
        found = [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
        if len(found) >= expect or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purposes
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[-1].split()[0] != "Z"
    except OSError:
        return False


def stop(process: subprocess.Popen[str], timeout: float = 60, log: Path | None = None) -> int:
    process.send_signal(signal.SIGTERM)
    try:
        return process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        said = log.read_text()[-6000:] if log is not None and log.exists() else ""
        pytest.fail(f"the server did not stop within a minute of SIGTERM; its output (stacks after 20 s):\n{said}")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def database(request: pytest.FixtureRequest) -> Iterator[str | None]:
    """None for the default SQLite file, or the url of a throwaway PostgreSQL."""
    if request.param == "sqlite":
        yield None
        return
    from tests.postgres import PostgresError, running

    try:
        with running() as url:
            yield url
    except PostgresError as exc:
        pytest.fail(f"PostgreSQL could not start: {exc}", pytrace=False)


@pytest.mark.parametrize("database", ["sqlite", "postgresql"], indirect=True)
def test_serve_runs_workers_serves_pages_and_hashed_static_files_and_stops_its_store_on_sigterm(
    tmp_path: Path, database: str | None
) -> None:
    data = tmp_path / "data"
    env = production_env(data, REVIEWER_API_RATE="5", **({"DATABASE_URL": database} if database else {}))
    project = "serve-" + uuid.uuid4().hex[:6]
    manage(env, "migrate", "-v", "0")
    (tmp_path / "password").write_text(PASSWORD + "\n")
    manage(
        env,
        "create_user",
        "rita",
        "--role",
        "reviewer",
        "--project",
        project,
        "--password-file",
        str(tmp_path / "password"),
    )
    token = (
        manage(env, "api_token", "create", "--project", project, "--name", "bot", "--agent-id", "bot")
        .strip()
        .split()[-1]
    )
    port = free_port()
    log = tmp_path / "serve.log"
    with log.open("w") as out:
        server = subprocess.Popen(
            [sys.executable, "manage.py", "serve", f"127.0.0.1:{port}", "--workers", "3"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
        )
    try:
        wait_until_answering(port, server, log)
        assert "3 workers" in log.read_text()
        workers = children(server.pid, expect=3)
        assert len(workers) == 3, log.read_text()
        store_pid = int((data / "graph" / "falkordb.pid").read_text())
        assert alive(store_pid)

        # The API's rate limit counts once for every worker: 5 a minute, then 429,
        # however the connections were spread over the three workers.
        minute = int(time.time() // 60)
        answers = []
        for n in range(9):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            body = json.dumps({"name": "t", "goal": "g"}) if n == 0 else None
            conn.request(
                "POST" if n == 0 else "GET",
                f"/api/v1/projects/{project}/tasks",
                body=body,
                headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
            )
            answers.append(conn.getresponse().status)
            conn.close()
        if int(time.time() // 60) == minute:  # not split over two minutes' counts
            assert answers == [200] * 5 + [429] * 4, answers

        # A person signs in and works: pages from the workers, on this database.
        browser = Browser(f"http://127.0.0.1:{port}", "rita", PASSWORD)
        browser.login()
        assert browser.request("GET", "/")[0] in (200, 302)
        status, page, _ms = browser.request("GET", f"/p/{project}/review/")
        assert status == 200 and "rita" in page
        status, page, _ms = browser.request("GET", f"/p/{project}/tasks/")
        assert status == 200 and ">t<" in page
        # Static files under their hashed names, cached for a year, compressed.
        css = re.search(r'href="(/static/css/reviewer\.[0-9a-f]{12}\.css)"', page)
        assert css, page[:2000]
        status, headers, body = get(port, css.group(1))
        assert status == 200 and headers["content-type"].startswith("text/css") and b"{" in body
        assert "max-age=315360000" in headers["cache-control"] and "immutable" in headers["cache-control"]
        status, headers, _body = get(port, css.group(1), {"Accept-Encoding": "gzip"})
        assert status == 200 and headers.get("content-encoding") == "gzip"
        assert get(port, "/static/css/reviewer.css")[1]["cache-control"] == "max-age=60, public"
        assert get(port, "/static/no-such-file.css")[0] == 404

        # Where the auth tables are.
        if database:
            assert not (data / "auth.sqlite3").exists()
            import dj_database_url
            import psycopg

            cfg = dj_database_url.parse(database)
            with psycopg.connect(host=cfg["HOST"], user=cfg["USER"], dbname=cfg["NAME"]) as conn_pg:
                assert conn_pg.execute("SELECT count(*) FROM auth_user WHERE username = 'rita'").fetchone() == (1,)
                assert conn_pg.execute("SELECT count(*) FROM django_session").fetchone()[0] >= 1
        else:
            assert mode(data / "auth.sqlite3") == 0o600

        # The data files are the owner's alone.
        graph = data / "graph"
        assert mode(data) == 0o700 and mode(graph) == 0o700 and mode(graph / "appendonlydir") == 0o700
        assert mode(graph / "falkordb.log") == 0o600 and mode(graph / "keys") == 0o700
        for f in [*(graph / "appendonlydir").iterdir(), *(graph / "keys").iterdir()]:
            assert mode(f) == 0o600, f
    finally:
        code = stop(server)
    assert code == 0, log.read_text()[-2000:]
    assert not any(alive(pid) for pid in workers)
    assert not alive(store_pid), "the embedded FalkorDB server outlived serve"
    assert not (data / "graph" / "falkordb.pid").exists()
    assert "Shutting down: Master" in log.read_text()


def test_workers_that_die_or_are_replaced_do_not_stop_the_store_of_the_others(tmp_path: Path) -> None:
    data = tmp_path / "data"
    env = production_env(data)
    port = free_port()
    log = tmp_path / "serve.log"
    with log.open("w") as out:
        server = subprocess.Popen(
            [sys.executable, "manage.py", "serve", f"127.0.0.1:{port}", "--workers", "2"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
        )

    def replaced(old: list[int]) -> list[int]:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            now = children(server.pid)
            if len(now) == 2 and not set(now) & set(old):
                return now
            time.sleep(0.1)
        pytest.fail(f"the workers were not replaced: {log.read_text()[-2000:]}")

    try:
        wait_until_answering(port, server, log)
        store_pid = int((data / "graph" / "falkordb.pid").read_text())
        workers = children(server.pid, expect=2)
        for _ in range(6):  # both workers open the store
            assert get(port, "/healthz")[0] == 200
        for worker in workers:
            os.kill(worker, signal.SIGKILL)  # gunicorn starts new ones
        workers = replaced(workers)
        for _ in range(6):
            assert get(port, "/healthz")[0] == 200
        server.send_signal(signal.SIGHUP)  # a graceful reload: new workers, the old ones close their stores
        replaced(workers)
        for _ in range(6):
            assert get(port, "/healthz")[0] == 200
        assert alive(store_pid), "a worker's exit stopped the store the others use"
        assert int((data / "graph" / "falkordb.pid").read_text()) == store_pid
    finally:
        code = stop(server)
    assert code == 0 and not alive(store_pid)


def test_serve_refuses_a_worker_count_below_one(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "manage.py", "serve", "--workers", "0", "--no-migrate"],
        cwd=ROOT,
        env=production_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0 and "--workers must be at least 1" in done.stderr
    assert not (tmp_path / "graph").exists()  # refused before anything started


@pytest.mark.parametrize("raw", ["0", "abc", "-2"])
def test_gunicorns_own_command_line_refuses_a_bad_worker_count(tmp_path: Path, raw: str) -> None:
    done = subprocess.run(
        [str(Path(sys.executable).parent / "gunicorn"), "-c", "python:reviewer.gunicorn_conf", "--check-config"],
        cwd=ROOT,
        env={**production_env(tmp_path), "REVIEWER_WORKERS": raw},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert f"REVIEWER_WORKERS must be a whole number of at least 1, not {raw!r}" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("when", ["while setting up", "while serving"])
def test_sigterm_to_up_stops_the_embedded_store(tmp_path: Path, when: str) -> None:
    data = tmp_path / "data"
    port = free_port()
    log = tmp_path / "up.log"
    with log.open("w") as out:
        up = subprocess.Popen(
            [sys.executable, "manage.py", "up", f"127.0.0.1:{port}"],
            cwd=ROOT,
            env=production_env(data, DJANGO_DEBUG="1"),
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
        )
    try:
        if when == "while setting up":  # the demo projects are being loaded: the store is open
            deadline = time.monotonic() + 90
            while "Loading the demo projects" not in log.read_text():
                assert up.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.05)
        else:
            wait_until_answering(port, up, log)
        store_pid = int((data / "graph" / "falkordb.pid").read_text())
        assert alive(store_pid)
    finally:
        stop(up, log=log)
    deadline = time.monotonic() + 30
    while alive(store_pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(store_pid), f"SIGTERM to up {when} left the FalkorDB server running"


def test_wider_modes_left_by_an_older_version_are_narrowed_on_start(tmp_path: Path) -> None:
    data = tmp_path / "data"
    graph = data / "graph"
    (graph / "appendonlydir").mkdir(parents=True)
    for path in (data, graph, graph / "appendonlydir"):
        path.chmod(0o755)
    (graph / "falkordb.log").write_text("an old log\n")
    (graph / "falkordb.log").chmod(0o644)
    env = production_env(data)
    manage(env, "migrate", "-v", "0")
    (data / "auth.sqlite3").chmod(0o644)
    out = manage(env, "up", "--no-run")
    assert "Reviewer is at" in out
    assert mode(data) == 0o700 and mode(data / "auth.sqlite3") == 0o600
    assert mode(graph) == 0o700 and mode(graph / "appendonlydir") == 0o700 and mode(graph / "falkordb.log") == 0o600
    assert all(mode(f) == 0o600 for f in (graph / "appendonlydir").iterdir())
    assert not (graph / "falkordb.pid").exists()  # up --no-run closed its store: the server stopped


def test_database_url_picks_the_auth_database(tmp_path: Path) -> None:
    script = (
        "from django.conf import settings; import json; print(json.dumps(settings.DATABASES['default'], default=str))"
    )

    def databases(**extra: str) -> dict[str, Any]:
        env = production_env(tmp_path, **extra)
        done = subprocess.run(
            [sys.executable, "-c", f"import django; django.setup(); {script}"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    pg = databases(DATABASE_URL="postgres://app:s%40cret@db.internal:5433/reviewer")
    assert pg["ENGINE"] == "django.db.backends.postgresql"
    assert (pg["HOST"], pg["PORT"], pg["USER"], pg["PASSWORD"], pg["NAME"]) == (
        "db.internal",
        5433,
        "app",
        "s@cret",
        "reviewer",
    )
    assert pg["CONN_MAX_AGE"] == 60 and pg["CONN_HEALTH_CHECKS"] is True
    default = databases()
    assert default["ENGINE"] == "django.db.backends.sqlite3" and default["NAME"] == str(tmp_path / "auth.sqlite3")
    # the SQLite file is kept open by each worker thread too (not opened again for each page's session)
    assert default["CONN_MAX_AGE"] == 60 and default["CONN_HEALTH_CHECKS"] is True
    assert databases(REVIEWER_DB_CONN_MAX_AGE="0")["CONN_MAX_AGE"] == 0
    bad = subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {script}"],
        cwd=ROOT,
        env=production_env(tmp_path, DATABASE_URL="mongo://nowhere/x"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode != 0 and "DATABASE_URL is not a database url" in bad.stderr


def _count_up(location: str, times: int) -> None:
    from reviewer.cache import SharedFileCache

    cache = SharedFileCache(location, {})
    for _ in range(times):
        cache.add("hits", 0, 90)
        cache.incr("hits")
        cache.count("counted", 90)


def test_the_shared_cache_loses_no_count_between_processes(tmp_path: Path) -> None:
    """The API's per-token count (reviewer/api/limits.py) is exact however
    many worker processes count at once."""
    import multiprocessing

    from reviewer.cache import SharedFileCache

    location = str(tmp_path / "cache")
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_count_up, args=(location, 150)) for _ in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
        assert w.exitcode == 0
    cache = SharedFileCache(location, {})
    assert cache.get("hits") == 600 and cache.get("counted") == 600
    assert mode(Path(location)) == 0o700 and all(mode(f) == 0o600 for f in Path(location).iterdir())


def test_gunicorn_command_line_with_the_projects_config_serves_and_stops_the_store(tmp_path: Path) -> None:
    """The README's other way to run it: gunicorn's own command line. No
    process holds the embedded store for the workers; the last to exit stops it."""
    data = tmp_path / "data"
    env = production_env(data, REVIEWER_WORKERS="2")
    manage(env, "migrate", "-v", "0")
    manage(env, "collectstatic", "--noinput", "-v", "0")
    port = free_port()
    log = tmp_path / "gunicorn.log"
    gunicorn = str(Path(sys.executable).with_name("gunicorn"))
    with log.open("w") as out:
        server = subprocess.Popen(
            [gunicorn, "-c", "python:reviewer.gunicorn_conf", "--bind", f"127.0.0.1:{port}", "reviewer.wsgi"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            text=True,
        )
    try:
        wait_until_answering(port, server, log)
        assert len(children(server.pid, expect=2)) == 2
        for _ in range(4):
            assert get(port, "/healthz")[0] == 200
        store_pid = int((data / "graph" / "falkordb.pid").read_text())
        status, _headers, page = get(port, "/login/")
        css = re.search(rb'href="(/static/css/reviewer\.[0-9a-f]{12}\.css)"', page)
        assert status == 200 and css
        assert "immutable" in get(port, css.group(1).decode())[1]["cache-control"]
    finally:
        code = stop(server)
    assert code == 0, log.read_text()[-2000:]
    assert not alive(store_pid), "the last worker to exit did not stop the embedded FalkorDB server"
