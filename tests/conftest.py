"""Test harness: every core test runs on the embedded FalkorDB and on Neo4j.

``REVIEWER_TEST_BACKENDS`` (default ``falkordb,neo4j``) picks the backends;
``REVIEWER_TEST_NEO4J_URL`` points at a Neo4j of your own instead of the
in-process test server. A selected backend that cannot start fails the run:
it is never skipped.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

from core.stores import GraphStore, open_store

BACKENDS = [b.strip() for b in os.environ.get("REVIEWER_TEST_BACKENDS", "falkordb,neo4j").split(",") if b.strip()]
_KNOWN = {"falkordb", "neo4j"}
if set(BACKENDS) - _KNOWN:
    raise pytest.UsageError(f"REVIEWER_TEST_BACKENDS names unknown backends: {sorted(set(BACKENDS) - _KNOWN)}")


@pytest.fixture
def purges_held(monkeypatch: pytest.MonkeyPatch) -> None:
    """Background disk purges wait: every redaction starts one after a few
    seconds of quiet, and a test that looks at what is still pending runs
    its purge rounds itself. A kick ``now`` (a store opened, the command)
    still runs at once."""
    from core._purge import Purger

    monkeypatch.setattr(Purger, "QUIET_S", 3600.0)
    monkeypatch.setattr(Purger, "MAX_WAIT_S", 3600.0)


#: the shared test stores wait this long for an answer (the default, 1.5 s, is
#: for a server that hangs; a test machine running several suites at once can
#: take longer than that over a bulk load). tests/core/test_store_timeouts.py
#: and tests/web/test_store_hangs.py open stores with the defaults.
SLOW_MACHINE_TIMEOUT_S = 30


@pytest.fixture(scope="session")
def falkordb_store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[GraphStore]:
    data = tmp_path_factory.mktemp("falkordb")
    store = open_store(f"falkordb+embedded://{data}?appendfsync=everysec&timeout={SLOW_MACHINE_TIMEOUT_S}")
    yield store
    store.close()


@pytest.fixture(scope="session")
def neo4j_url() -> Iterator[str]:
    own = os.environ.get("REVIEWER_TEST_NEO4J_URL")
    if own:
        yield own
        return
    from tests.neo4j_server.launcher import Neo4jServer, Neo4jServerError

    try:
        server = Neo4jServer()
    except Neo4jServerError as exc:
        pytest.fail(f"the Neo4j backend could not start: {exc}", pytrace=False)
    yield server.url
    server.stop()


@pytest.fixture(scope="session")
def neo4j_store(neo4j_url: str) -> Iterator[GraphStore]:
    sep = "&" if "?" in neo4j_url else "?"
    store = open_store(f"{neo4j_url}{sep}timeout={SLOW_MACHINE_TIMEOUT_S}")
    yield store
    store.close()


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest) -> GraphStore:
    """The store of one backend (a test for one backend only uses
    ``falkordb_store`` or ``neo4j_store`` directly)."""
    return request.getfixturevalue(f"{request.param}_store")


@pytest.fixture
def project_id(store: GraphStore) -> Iterator[str]:
    """A project of its own for each test; removed afterwards."""
    pid = "t-" + uuid.uuid4().hex[:12]
    yield pid
    store.drop_project(pid)


# Longer time limits than pyproject.toml's default (300 s), in seconds: a Chromium session, a
# gunicorn serve or a Neo4j start on a loaded two-core machine can take minutes without hanging.
SLOW_MODULES = {
    "test_browser.py": 900,
    "test_browser_flow.py": 900,
    "test_browser_roles.py": 900,
    "test_browser_workbench.py": 900,
    "test_serve.py": 900,
}
NEO4J_TIMEOUT = 600


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Give the browser, serve and Neo4j tests their longer time limit (a test's own
    ``pytest.mark.timeout`` wins)."""
    for item in items:
        if item.get_closest_marker("timeout") is not None:
            continue
        limit = SLOW_MODULES.get(item.path.name)
        callspec = getattr(item, "callspec", None)
        on_neo4j = (callspec is not None and "neo4j" in callspec.params.values()) or any(
            name in getattr(item, "fixturenames", ()) for name in ("neo4j_store", "neo4j_url")
        )
        if on_neo4j:
            limit = max(limit or 0, NEO4J_TIMEOUT)
        if limit:
            item.add_marker(pytest.mark.timeout(limit))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say how many tests ran on each backend, so a CI log shows both."""
    counts = {backend: {"passed": 0, "failed": 0} for backend in BACKENDS}
    for outcome in ("passed", "failed", "error"):
        for report in terminalreporter.stats.get(outcome, []):
            if getattr(report, "when", "call") != "call" and outcome != "error":
                continue
            nodeid = getattr(report, "nodeid", "")
            params = nodeid.rsplit("[", 1)[1].rstrip("]").split("-") if nodeid.endswith("]") else []
            for backend in BACKENDS:
                if backend in params:
                    counts[backend]["passed" if outcome == "passed" else "failed"] += 1
    terminalreporter.write_sep("-", "core tests per backend")
    for backend, c in counts.items():
        terminalreporter.write_line(f"on {backend}: {c['passed']} tests passed and {c['failed']} did not")
