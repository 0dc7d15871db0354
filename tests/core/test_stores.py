"""The store contract, on every backend."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest

from core.stores import (
    GraphStore,
    GraphStoreConstraintViolationError,
    GraphStoreError,
    Tx,
    open_store,
)
from core.stores.base import NodeIndex, Schema

SCHEMA = Schema((NodeIndex("Item", ("id",), unique=True), NodeIndex("Item", ("group",))))


@pytest.fixture
def items(store: GraphStore, project_id: str) -> str:
    store.ensure_schema(project_id, SCHEMA)
    return project_id


def count(store: GraphStore, project_id: str) -> int:
    return store.read(project_id, "MATCH (n:Item {project_id: $p}) RETURN count(n) AS c", {"p": project_id})[0]["c"]


def test_unit_commits_every_write_together(store: GraphStore, items: str) -> None:
    def work(tx: Tx) -> str:
        tx.write("CREATE (:Item {project_id: $p, id: $id})", {"p": items, "id": "a"})
        tx.write("UNWIND $ids AS i CREATE (:Item {project_id: $p, id: i})", {"p": items, "ids": ["b", "c"]})
        tx.write("MATCH (n:Item {project_id: $p, id: $id}) SET n.label = $label", {"p": items, "id": "a", "label": "x"})
        return "done"

    assert store.transact(items, work) == "done"
    rows = store.read(
        items, "MATCH (n:Item {project_id: $p}) RETURN n.id AS id, n.label AS label ORDER BY id", {"p": items}
    )
    assert rows == [{"id": "a", "label": "x"}, {"id": "b", "label": None}, {"id": "c", "label": None}]


def test_later_writes_of_a_unit_see_earlier_ones(store: GraphStore, items: str) -> None:
    # decisions are created, then linked to what they cite, in one unit
    def work(tx: Tx) -> None:
        tx.write("CREATE (:Item {project_id: $p, id: 'parent'})", {"p": items})
        tx.write("MATCH (n:Item {project_id: $p, id: 'nothing'}) SET n.label = 'never'", {"p": items})
        tx.write(
            "MATCH (a:Item {project_id: $p, id: 'parent'}) UNWIND $kids AS k "
            "CREATE (a)-[:HAS]->(:Item {project_id: $p, id: k})",
            {"p": items, "kids": ["k1", "k2"]},
        )
        tx.write("MATCH (a:Item {project_id: $p, id: 'parent'}) SET a.label = 'seen'", {"p": items})

    store.transact(items, work)
    rows = store.read(
        items,
        "MATCH (a:Item {project_id: $p, id: 'parent'})-[:HAS]->(k:Item) RETURN a.label AS label, k.id AS kid ORDER BY kid",
        {"p": items},
    )
    assert rows == [{"label": "seen", "kid": "k1"}, {"label": "seen", "kid": "k2"}]


def test_execute_applies_one_statement_and_returns_its_rows(store: GraphStore, items: str) -> None:
    store.write(items, "CREATE (:Item {project_id: $p, id: 'c', n: 1})", {"p": items})
    swap = "MATCH (n:Item {project_id: $p, id: 'c'}) WHERE n.n = $old SET n.n = $new RETURN n.n AS n"
    assert store.execute(items, swap, {"p": items, "old": 1, "new": 2}) == [{"n": 2}]
    assert store.execute(items, swap, {"p": items, "old": 1, "new": 3}) == []  # precondition no longer holds
    with pytest.raises(GraphStoreConstraintViolationError):
        store.execute(items, "CREATE (:Item {project_id: $p, id: 'c'})", {"p": items})
    assert count(store, items) == 1


def test_projects_are_listed_once_they_hold_data(store: GraphStore, project_id: str) -> None:
    from core.history import ConversationHistory

    assert project_id not in store.list_projects() and not store.has_project(project_id)
    ConversationHistory(store, project_id=project_id, agent_id="a").create_task("t", goal="g")
    assert project_id in store.list_projects() and store.has_project(project_id)
    assert not store.has_project(project_id + "-other") and not store.has_project(project_id[:-1])


def test_a_project_holding_only_documents_is_a_project(store: GraphStore, project_id: str) -> None:
    from core.knowledge import Graph

    Graph(store, project_id=project_id, agent_id="a").add("policy", "text")
    assert project_id in store.list_projects() and store.has_project(project_id)


def test_a_units_writes_each_see_the_values_the_ones_before_wrote(store: GraphStore, items: str) -> None:
    """Writes that share parameter names with other values, start with
    ``WITH``, read what an earlier write set, or look for what an earlier
    one deleted (Neo4j sends a unit's writes as one statement)."""

    def work(tx: Tx) -> None:
        tx.write("CREATE (:Item {project_id: $p, id: $id, n: $n})", {"p": items, "id": "a", "n": 1})
        tx.write("CREATE (:Item {project_id: $p, id: $id, n: $n})", {"p": items, "id": "gone", "n": 5})
        tx.write(
            "WITH $by AS by MATCH (t:Item {project_id: $p, id: $id}) SET t.n = t.n + by",
            {"p": items, "id": "a", "by": 2},
        )
        tx.write("MATCH (t:Item {project_id: $p, id: $id}) DETACH DELETE t", {"p": items, "id": "gone"})
        tx.write(
            "MATCH (t:Item {project_id: $p, id: $id}) OPTIONAL MATCH (g:Item {project_id: $p, id: 'gone'}) "
            "CREATE (:Item {project_id: $p, id: $id + '-copy', n: t.n * 10, saw_gone: g IS NOT NULL})",
            {"p": items, "id": "a"},
        )

    store.transact(items, work)
    rows = store.read(
        items,
        "MATCH (t:Item {project_id: $p}) RETURN t.id AS id, t.n AS n, t.saw_gone AS saw ORDER BY id",
        {"p": items},
    )
    assert rows == [{"id": "a", "n": 3, "saw": None}, {"id": "a-copy", "n": 30, "saw": False}]


def test_unit_whose_later_write_fails_applies_nothing(store: GraphStore, items: str) -> None:
    store.write(items, "CREATE (:Item {project_id: $p, id: 'taken'})", {"p": items})

    def work(tx: Tx) -> None:
        tx.write("CREATE (:Item {project_id: $p, id: 'fresh'})", {"p": items})
        tx.write("CREATE (:Item {project_id: $p, id: 'taken'})", {"p": items})

    with pytest.raises(GraphStoreConstraintViolationError):
        store.transact(items, work)
    assert count(store, items) == 1  # 'fresh' was not kept


def test_unit_that_raises_writes_nothing(store: GraphStore, items: str) -> None:
    def work(tx: Tx) -> None:
        tx.write("CREATE (:Item {project_id: $p, id: 'x'})", {"p": items})
        raise ValueError("changed my mind")

    with pytest.raises(ValueError):
        store.transact(items, work)
    assert count(store, items) == 0


def test_reads_after_a_write_are_refused(store: GraphStore, items: str) -> None:
    def work(tx: Tx) -> None:
        tx.write("CREATE (:Item {project_id: $p, id: 'x'})", {"p": items})
        tx.read("MATCH (n) RETURN n")

    with pytest.raises(RuntimeError):
        store.transact(items, work)
    assert count(store, items) == 0


@pytest.mark.parametrize("guard", [("Item", "counter"), ("Guard", "g")], ids=["lock-the-counter", "lock-another-node"])
def test_racing_units_do_not_lose_an_update(store: GraphStore, items: str, guard: tuple[str, str]) -> None:
    # Neo4j sends a lock with the unit's next statement: the read after it
    # must still wait for the lock, also when it reads another node (a read
    # run before the lock would see 0 in both units)
    store.write(items, "CREATE (:Item {project_id: $p, id: 'counter', value: 0})", {"p": items})
    store.write(items, "CREATE (:Guard {project_id: $p, id: 'g'})", {"p": items})
    first_read = threading.Event()
    attempts: list[int] = []

    def increment(pause: float) -> None:
        def work(tx: Tx) -> int:
            tx.lock(*guard)
            value = tx.read("MATCH (n:Item {project_id: $p, id: 'counter'}) RETURN n.value AS v", {"p": items})[0]["v"]
            attempts.append(value)
            first_read.set()
            time.sleep(pause)  # let the other unit commit in between
            tx.write("MATCH (n:Item {project_id: $p, id: 'counter'}) SET n.value = $v", {"p": items, "v": value + 1})
            return value

        store.transact(items, work)

    slow = threading.Thread(target=increment, args=(0.3,))
    slow.start()
    first_read.wait(5)
    increment(0.0)
    slow.join()
    final = store.read(items, "MATCH (n:Item {project_id: $p, id: 'counter'}) RETURN n.value AS v", {"p": items})
    assert final[0]["v"] == 2
    # the loser ran again (FalkorDB) or waited for the lock (Neo4j): either way it saw 1
    assert 1 in attempts


def test_reads_after_locks_answer_as_without_them(store: GraphStore, items: str) -> None:
    # a lock on a node that is not there, several locks, a union after a
    # lock, and a lock no read follows: each read answers, the writes land
    store.write(items, "CREATE (:Item {project_id: $p, id: 'a', value: 1})", {"p": items})

    def work(tx: Tx) -> list[Any]:
        tx.lock("Item", "missing")
        first = tx.read("MATCH (n:Item {project_id: $p}) RETURN n.id AS id", {"p": items})
        tx.lock("Item", "a")
        tx.lock("Item", "missing")
        second = tx.read("UNWIND [1, 2] AS x RETURN x")
        tx.lock("Item", "a")
        both = tx.read("MATCH (n:Item {project_id: $p, id: 'a'}) RETURN n.value AS v UNION RETURN 7 AS v", {"p": items})
        tx.lock("Item", "a")
        tx.write("MATCH (n:Item {project_id: $p, id: 'a'}) SET n.value = 2", {"p": items})
        return [first, second, sorted(r["v"] for r in both)]

    first, second, both = store.transact(items, work)
    assert first == [{"id": "a"}]
    assert second == [{"x": 1}, {"x": 2}]
    assert both == [1, 7]
    assert store.read(items, "MATCH (n:Item {project_id: $p, id: 'a'}) RETURN n.value AS v", {"p": items}) == [{"v": 2}]
    # the locks left no property behind
    rows = store.read(items, "MATCH (n:Item {project_id: $p, id: 'a'}) RETURN keys(n) AS k", {"p": items})
    assert "_lock" not in rows[0]["k"]


def test_uniqueness_violation_is_reported(store: GraphStore, items: str) -> None:
    store.write(items, "CREATE (:Item {project_id: $p, id: 'one'})", {"p": items})
    with pytest.raises(GraphStoreConstraintViolationError):
        store.write(items, "CREATE (:Item {project_id: $p, id: 'one'})", {"p": items})
    assert count(store, items) == 1


def test_schema_setup_is_idempotent(store: GraphStore, items: str) -> None:
    store.ensure_schema(items, SCHEMA)
    fresh = Schema(SCHEMA.indexes)  # an equal schema object: not served from the cache
    store._schema_done.clear()  # type: ignore[attr-defined]
    store.ensure_schema(items, fresh)
    store.write(items, "CREATE (:Item {project_id: $p, id: 'a'})", {"p": items})
    with pytest.raises(GraphStoreConstraintViolationError):
        store.write(items, "CREATE (:Item {project_id: $p, id: 'a'})", {"p": items})


def test_text_round_trips_exactly(store: GraphStore, items: str) -> None:
    samples = [
        'quote " and \\ backslash',
        "line\nbreak\ttab\r",
        "émoji 😀 𝄞",
        "<script>alert(1)</script>",
        "",
        "}{CYPHER x=1",
    ]
    for i, text in enumerate(samples):
        store.write(items, "CREATE (:Item {project_id: $p, id: $id, text: $t})", {"p": items, "id": str(i), "t": text})
    rows = store.read(items, "MATCH (n:Item {project_id: $p}) RETURN n.id AS id, n.text AS t", {"p": items})
    assert {int(r["id"]): r["t"] for r in rows} == dict(enumerate(samples))


def test_ping_and_rows_are_plain(store: GraphStore, items: str) -> None:
    store.ping()
    rows = store.read(items, "RETURN 1 AS one, 'x' AS s, [1, 2] AS l, {k: 'v'} AS m, null AS n")
    assert rows == [{"one": 1, "s": "x", "l": [1, 2], "m": {"k": "v"}, "n": None}]
    assert type(rows[0]["m"]) is dict


# -- urls and connection errors ----------------------------------------------


@pytest.mark.parametrize(
    "url, fragment",
    [
        ("", "empty"),
        ("mysql://localhost/db", "unknown scheme"),
        ("falkordb+embedded://host/dir", "no host"),
        ("falkordb+embedded:///tmp/x?appendfsync=sometimes", "appendfsync"),
        ("falkordb+embedded:///tmp/x?colour=blue", "unknown option"),
        ("neo4j://", "no host"),
        ("falkordb://localhost:notaport", "bad store url"),
    ],
)
def test_bad_urls_are_refused_clearly(url: str, fragment: str) -> None:
    with pytest.raises(GraphStoreError) as info:
        open_store(url)
    assert fragment in str(info.value)


def test_unreachable_falkordb_names_the_url_without_password() -> None:
    with pytest.raises(GraphStoreError) as info:
        open_store("falkordb://alice:s3cret-pw@127.0.0.1:1")
    message = str(info.value)
    assert "127.0.0.1:1" in message and "alice" in message
    assert "s3cret-pw" not in message


def test_unreachable_neo4j_names_the_url_without_password() -> None:
    with pytest.raises(GraphStoreError) as info:
        open_store("bolt://bob:hunter2-pw@127.0.0.1:1")
    message = str(info.value)
    assert "127.0.0.1:1" in message
    assert "hunter2-pw" not in message


def test_reads_while_new_projects_are_set_up_leave_the_server_up(store: GraphStore) -> None:
    # FalkorDB 4.16 crashed (SIGSEGV) planning a read of a graph while an
    # index was made on it: the purge sweep reads every project as new ones
    # are set up. Readers in three threads, projects set up meanwhile.
    from core._schema import CORE_SCHEMA

    made: list[str] = []
    current = ["t-none"]
    stop = threading.Event()
    failures: list[str] = []

    def reader() -> None:
        while not stop.is_set():
            p = current[0]
            try:
                store.read(p, "MATCH (a:Activity) WHERE a.project_id = $p RETURN count(a) AS n", {"p": p})
            except GraphStoreError as exc:
                if "empty key" not in str(exc):  # a graph not made yet
                    failures.append(str(exc))

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        # at most 60 projects: Neo4j's schema is made once, so it would make
        # thousands in the time, and each drop below scans the store
        deadline = time.monotonic() + 4
        while time.monotonic() < deadline and len(made) < 60 and not failures:
            current[0] = "t-" + uuid.uuid4().hex[:12]
            made.append(current[0])
            store.ensure_schema(current[0], CORE_SCHEMA)
    finally:
        stop.set()
        for t in threads:
            t.join()
        for p in made:
            store.drop_project(p)
    assert failures == []
    store.ping()


def test_a_read_waits_while_this_process_sets_up_the_graph(falkordb_store: GraphStore) -> None:
    # the gate behind the test above, exactly: a read of a graph whose
    # indexes this process is making waits until they are made
    from core._schema import CORE_SCHEMA

    store = falkordb_store
    project = "t-" + uuid.uuid4().hex[:12]
    store.write(project, "CREATE (:Item {project_id: $p, id: 'a'})", {"p": project})
    real = store._exec_schema  # type: ignore[attr-defined]
    began, done = threading.Event(), threading.Event()

    def slow(graph: Any, query: str) -> None:
        if not began.is_set():  # the first index takes a while
            began.set()
            time.sleep(0.3)
        real(graph, query)

    store._exec_schema = slow  # type: ignore[attr-defined]
    try:
        setup = threading.Thread(target=lambda: (store.ensure_schema(project, CORE_SCHEMA), done.set()))
        setup.start()
        assert began.wait(5)
        rows = store.read(project, "MATCH (n:Item) RETURN n.id AS id")
        finished_first = done.is_set()
        setup.join()
    finally:
        del store._exec_schema  # type: ignore[attr-defined]
        store.drop_project(project)
    assert rows == [{"id": "a"}]
    assert finished_first, "the read ran while the indexes were being made"


def test_falkordb_folds_the_labels_of_new_nodes_every_few_thousand(
    falkordb_store: GraphStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # FalkorDB keeps the labels of new nodes in a delta that only a read of
    # labels folds; unfolded, every write that changes an indexed node
    # assembles all of it first (tests/benchmarks/falkordb_writes.py). The
    # store reads one node's labels after every FOLD_LABELS_EVERY nodes made.
    from core.stores import falkordb as falkordb_module

    store = falkordb_store
    project = "t-" + uuid.uuid4().hex[:12]
    store.ensure_schema(project, SCHEMA)
    monkeypatch.setattr(falkordb_module, "FOLD_LABELS_EVERY", 1000)
    conn = store._redis  # type: ignore[attr-defined]
    real = conn.execute_command
    folds: list[str] = []

    def recording(*args: Any, **kwargs: Any) -> Any:
        if args[0] == "GRAPH.RO_QUERY" and "labels(" in args[2]:
            folds.append(args[1])
        return real(*args, **kwargs)

    monkeypatch.setattr(conn, "execute_command", recording)
    make = "UNWIND range(1, $n) AS i CREATE (:Item {project_id: $p, id: $tag + toString(i)})"

    def unit(n: int, tag: str) -> None:
        store.transact(project, lambda tx: tx.write(make, {"n": n, "p": project, "tag": tag}))

    folded = store.label_reads  # type: ignore[attr-defined]
    try:
        # one statement outside a unit (as record_event writes), its reply rows and statistics
        rows = store.execute(project, make + " RETURN count(*) AS made", {"n": 600, "p": project, "tag": "a"})
        assert rows == [{"made": 600}]
        assert folds == []
        unit(600, "b")  # 1,200 made since the last fold
        assert folds == [f"reviewer:{project}"]
        store.write(project, "MATCH (n:Item {project_id: $p}) SET n.seen = true", {"p": project})
        count(store, project)
        unit(999, "c")
        assert len(folds) == 1, "writes that make no nodes, reads, and 999 nodes fold nothing"
        unit(1, "d")
        assert len(folds) == 2

        # a fold that fails leaves the write acknowledged and its nodes there
        def refusing(*args: Any, **kwargs: Any) -> Any:
            if args[0] == "GRAPH.RO_QUERY" and "labels(" in args[2]:
                raise falkordb_module.redis.ConnectionError("gone")
            return real(*args, **kwargs)

        monkeypatch.setattr(conn, "execute_command", refusing)
        unit(1000, "e")
        monkeypatch.setattr(conn, "execute_command", recording)
        assert count(store, project) == 600 + 600 + 999 + 1 + 1000
        assert store.label_reads == folded + 2  # type: ignore[attr-defined]  # the failed one not counted
    finally:
        monkeypatch.setattr(conn, "execute_command", real)
        store.drop_project(project)
