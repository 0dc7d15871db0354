"""The conflicts page in key order, on every backend: pages equal a direct
sorted read of the flagged choices after every kind of change. FalkorDB reads
them from key-ordered buckets the writers keep (``core._conflict_keys``),
Neo4j from its ordered index; the buckets are checked where kept."""

from __future__ import annotations

from typing import Any

import pytest

from core import _common as c
from core import _conflict_keys
from core.decisions import DecisionTraces
from core.history import ConversationHistory
from core.retention import HistoryRetention
from core.stores import GraphStore

EVENT = {"kind": "event", "task_name": "pick-db", "seq": 1}
#: keys with shared prefixes, spaces, case and characters beyond ASCII
KEYS = [
    "svc",
    "svc/a",
    "svc/a/b",
    "svc/ab",
    "svc/b",
    "Svc",
    "a b",
    "a",
    "ab",
    "é",
    "e",
    "z中",
    "z",
    "zz",
    "m1",
    "m10",
    "m2",
    "q",
]


@pytest.fixture
def small_buckets(monkeypatch: pytest.MonkeyPatch) -> None:
    """Buckets of 2 to 4 keys, so a few dozen conflicts split and merge them."""
    monkeypatch.setattr(_conflict_keys, "BUCKET_MAX", 4)
    monkeypatch.setattr(_conflict_keys, "BUCKET_MIN", 2)
    monkeypatch.setattr(_conflict_keys, "BUCKET_TARGET", 3)


class Project:
    def __init__(self, store: GraphStore, project_id: str) -> None:
        self.store, self.project_id = store, project_id
        self.history = ConversationHistory(store, project_id=project_id, agent_id="planner")
        self.traces = DecisionTraces(store, project_id=project_id, agent_id="planner")
        self.retention = HistoryRetention(store, project_id=project_id, agent_id="steward")
        for task in ("pick-db", "billing", "ops", "wide"):
            self.history.create_task(task, goal=task)
        self.history.record_event("pick-db", kind="message", role="user", payload="Which database?")

    def load(self, task: str, pairs: list[tuple[str, str]]) -> None:
        self.traces.load_decisions(
            [
                {"task_name": task, "choice_key": k, "conclusion": v, "rationale": "r", "supports": [EVENT]}
                for k, v in pairs
            ]
        )

    def record(self, task: str, key: str, conclusion: str) -> Any:
        result = self.traces.record_decision(
            task, choice_key=key, conclusion=conclusion, rationale="r", supports=[EVENT]
        )
        assert result.recorded
        return result.decision

    def active(self, task: str, key: str) -> str:
        rows = self.store.read(
            self.project_id,
            "MATCH (d:Decision {task_id: $tid}) WHERE d.choice_key = $key AND d.status = 'active' RETURN d.id AS id",
            {"tid": c.task_id(self.project_id, task), "key": key},
        )
        assert len(rows) == 1
        return rows[0]["id"]

    def direct(self) -> list[str]:
        rows = self.store.read(
            self.project_id,
            "MATCH (ch:Choice) WHERE ch.conflict = true AND ch.project_id = $p RETURN ch.key AS key",
            {"p": self.project_id},
        )
        return sorted(r["key"] for r in rows)

    def task_direct(self, task: str) -> list[str]:
        rows = self.store.read(
            self.project_id,
            "MATCH (d:Decision {task_id: $tid}) WHERE d.status = 'active' RETURN d.choice_key AS key",
            {"tid": c.task_id(self.project_id, task)},
        )
        mine = {r["key"] for r in rows}
        return [k for k in self.direct() if k in mine]

    def buckets(self) -> tuple[list[str], list[int], list[tuple[str, list[str]]]] | None:
        found = self.store.read(
            self.project_id,
            "MATCH (k:ConflictKeys {id: $id}) RETURN k.lows AS lows, k.sizes AS sizes",
            {"id": _conflict_keys.keys_node_id(self.project_id)},
        )
        if not found:
            return None
        rows = self.store.read(self.project_id, "MATCH (b:ConflictBucket) RETURN b.low AS low, b.keys AS keys")
        return found[0]["lows"], found[0]["sizes"], sorted((r["low"], r["keys"]) for r in rows)

    def check(self, step: str) -> None:
        keys = self.direct()
        assert self.traces.review_counts()["conflicts"] == len(keys), step  # the kept count moves with them
        rows = self.store.read(
            self.project_id,
            "MATCH (ch:Choice) WHERE ch.project_id = $p OPTIONAL MATCH (d:Decision {choice_key: ch.key}) "
            "WHERE d.project_id = $p AND d.status = 'active' "
            "RETURN ch.key AS key, ch.active AS n, count(d) AS direct, collect(DISTINCT d.conclusion_norm) AS norms",
            {"p": self.project_id},
        )
        for r in rows:  # each choice's kept active count, and its flag
            assert (r["n"], r["key"] in keys) == (r["direct"], len(r["norms"]) > 1), (step, r)
        # the first page, and every page in turn by after_key: each key once, in order
        first = self.traces.list_conflicts()
        assert [g.choice_key for g in first.groups] == keys[:50], step
        assert first.truncated == (len(keys) > 50), step
        seen: list[str] = []
        after = None
        while True:
            got = self.traces.list_conflicts(max_groups=3, after_key=after)
            shown = [g.choice_key for g in got.groups]
            assert shown == [k for k in keys if after is None or k > after][:3], (step, after)
            seen += shown
            if not got.truncated:
                break
            after = shown[-1]
        assert seen == keys, step
        # after keys that are not keys: prefixes, between keys, before and after all
        for probe in [
            "",
            "a",
            "m",
            "svc/",
            "svc/a/",
            "s",
            "zzz",
            "\U0010ffff",
            *[k + "\x01" for k in keys[:5]],
            *[k[:-1] for k in keys[-5:]],
        ]:
            shown = [g.choice_key for g in self.traces.list_conflicts(max_groups=3, after_key=probe).groups]
            assert shown == [k for k in keys if k > probe][:3], (step, probe)
        for task in ("pick-db", "billing", "ops", "wide"):
            found = self.history.get_task(task)
            if found.found:
                assert [g.choice_key for g in found.view.conflicts] == self.task_direct(task)[:10], (step, task)
                got = self.traces.list_conflicts(task_name=task, max_groups=2)
                assert [g.choice_key for g in got.groups] == self.task_direct(task)[:2], (step, task)
        kept = self.buckets()
        if not _conflict_keys.kept(self.store):
            assert kept is None, step  # Neo4j reads its index and keeps no buckets
            return
        if kept is None:
            assert keys == [], step  # none kept only while nothing was ever in conflict
            return
        lows, sizes, buckets = kept
        assert lows[0] == "" and lows == sorted(lows), step
        assert sorted(lows) == [b[0] for b in buckets], step
        by_low = dict(buckets)
        assert [k for low in lows for k in by_low[low]] == keys, step  # every key once, in order
        assert sizes == [len(by_low[low]) for low in lows], step
        for low in lows:
            assert all(k >= low for k in by_low[low]), step
            assert len(by_low[low]) <= _conflict_keys.BUCKET_MAX, step
            if len(lows) > 1:
                assert len(by_low[low]) >= _conflict_keys.BUCKET_MIN, step
        marked = self.store.read(self.project_id, "MATCH (ch:Choice {keys_moved: true}) RETURN count(ch) AS n")
        assert marked[0]["n"] == 0, step  # all applied


def test_conflict_pages_follow_every_kind_of_change(store: GraphStore, project_id: str, small_buckets: None) -> None:
    p = Project(store, project_id)
    p.check("empty")
    assert p.buckets() is None  # reading nothing in conflict writes nothing
    # a bulk load: pick-db and billing disagree on the first 12 keys, agree on the rest
    p.load("pick-db", [(k, "Postgres") for k in KEYS])
    p.load("billing", [(k, "MySQL" if i < 12 else "Postgres") for i, k in enumerate(KEYS)])
    # many more decisions in one task than the project has conflicts
    p.load("wide", [(f"w{i:02}", "x") for i in range(30)] + [("svc/a", "Oracle"), ("zz", "Oracle")])
    p.check("loaded")
    # recorded one at a time: a new conflict each, between and around the others
    for key in ["m10", "q", "zz", "0"]:
        p.record("ops", key, "SQLite")
        p.check(f"recorded {key}")
    # superseded into agreement, and out of it again
    for key in ["svc/a/b", "a", "é"]:
        result = p.traces.supersede_decision(
            p.active("billing", key), conclusion="Postgres", rationale="r", explanation="agree", supports=[EVENT]
        )
        assert result.recorded
        p.check(f"superseded {key}")
    result = p.traces.supersede_decision(
        p.active("billing", "a"), conclusion="Cassandra", rationale="r", explanation="disagree", supports=[EVENT]
    )
    assert result.recorded
    p.check("superseded a again")
    # rejected (and the choice's last disagreement with it)
    for key in ["svc", "svc/ab", "Svc", "zz"]:
        assert p.traces.reject_decision(p.active("billing", key), reason="no").recorded
        p.check(f"rejected {key}")
    # a bulk load that moves many keys at once, then one that moves a few
    p.load("ops", [(k, "DuckDB") for k in KEYS if k not in ("m10", "q", "zz")] + [(f"w{i:02}", "y") for i in range(30)])
    p.check("loaded many")
    p.load("pick-db", [("w00a", "x"), ("w05a", "x")])
    p.load("billing", [("w00a", "y"), ("w05a", "y")])
    p.check("loaded a few")
    # one batch of several tasks: a new key it disagrees on, one it agrees on
    # (spelled apart), and then keys with agreeing decisions before it

    def item(task: str, key: str, conclusion: str) -> dict[str, Any]:
        return {"task_name": task, "choice_key": key, "conclusion": conclusion, "rationale": "r", "supports": [EVENT]}

    p.traces.load_decisions(
        [
            item("pick-db", "mix", "x"),
            item("billing", "mix", "y"),
            item("pick-db", "same", "X"),
            item("billing", "same", " x "),
        ]
    )
    p.check("loaded a mixed batch")
    p.traces.load_decisions([item("ops", "same", "x"), item("ops", "mix", "x")])
    p.check("loaded onto agreeing keys")
    p.traces.load_decisions([item("wide", "same", "y")])
    p.check("loaded a disagreement onto agreeing keys")
    # a task deleted with its decisions: the conflicts only it took part in go
    assert p.retention.delete_task("ops", include_decisions=True, reason="gone").recorded
    p.check("ops deleted")
    assert p.retention.delete_task("billing", include_decisions=True, reason="gone").recorded
    p.check("billing deleted")
    assert p.retention.delete_task("wide", include_decisions=True, reason="gone").recorded
    p.check("wide deleted")
    assert p.direct() == ["w00a", "w05a"] or p.direct() == []


def test_a_store_from_before_gets_its_conflict_keys_on_first_read(store: GraphStore, project_id: str) -> None:
    """A store written before the conflicts were kept in key order has no
    buckets and no marks: the first read builds them, once, and every read
    after is the buckets'."""
    p = Project(store, project_id)
    p.load("pick-db", [(f"k{i:03}", "a") for i in range(300)])
    p.load("billing", [(f"k{i:03}", "b" if i % 2 else "a") for i in range(300)])
    assert p.traces.list_conflicts().groups  # (kept from here where kept)
    store.write(project_id, "MATCH (b:ConflictBucket) DELETE b")
    store.write(project_id, "MATCH (k:ConflictKeys) DELETE k")
    store.write(project_id, "MATCH (ch:Choice) SET ch.keys_moved = null")
    assert p.buckets() is None
    keys = p.direct()
    assert len(keys) == 150
    assert [g.choice_key for g in p.traces.list_conflicts().groups] == keys[:50]
    assert [g.choice_key for g in p.traces.list_conflicts(after_key="k150").groups] == [k for k in keys if k > "k150"][
        :50
    ]
    if _conflict_keys.kept(store):
        lows, sizes, buckets = p.buckets() or ([], [], [])
        assert [k for _low, ks in buckets for k in ks] == keys and sum(sizes) == 150
        assert len(lows) > 1  # more than one bucket: 150 keys
    else:
        assert p.buckets() is None
    p.check("first read")
    # the writers keep them from then on
    assert p.traces.reject_decision(p.active("billing", "k001"), reason="no").recorded
    p.record("ops", "k000", "c")
    p.check("changed after")


def test_a_writer_that_does_not_mark_is_seen(store: GraphStore, project_id: str) -> None:
    """The buckets follow the marks the writers leave: a flag changed without
    its mark (as a writer that forgot would) is not on the page where kept,
    which is why every writer marks in the statement that changes it."""
    p = Project(store, project_id)
    p.load("pick-db", [("a", "x"), ("b", "x")])
    p.load("billing", [("a", "y"), ("b", "x")])
    assert [g.choice_key for g in p.traces.list_conflicts().groups] == ["a"]
    store.write(project_id, "MATCH (ch:Choice {key: 'b'}) SET ch.conflict = true")  # no mark
    shown = [g.choice_key for g in p.traces.list_conflicts().groups]
    if _conflict_keys.kept(store):
        assert shown == ["a"]
        store.write(project_id, "MATCH (ch:Choice {key: 'b'}) SET ch.keys_moved = true")
    assert [g.choice_key for g in p.traces.list_conflicts().groups] == ["a", "b"]


def test_a_page_read_answers_when_settling_keeps_losing(
    store: GraphStore, project_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Settling the buckets is a write a page read makes; when busy writers
    keep winning it (the unit gives up), the conflicts page and a task's
    conflicts answer from the choices directly, never with an error."""
    from core.stores.base import GraphStoreWriteConflictError

    p = Project(store, project_id)
    p.load("pick-db", [(k, "x") for k in KEYS])
    p.load("billing", [(k, "y" if i % 3 else "x") for i, k in enumerate(KEYS)])
    assert [g.choice_key for g in p.traces.list_conflicts().groups] == p.direct()
    p.record("ops", "svc", "z")  # marks a key where kept: the next read would settle

    def busy(*a: Any, **kw: Any) -> None:
        raise GraphStoreWriteConflictError("writers kept winning")

    monkeypatch.setattr(_conflict_keys, "settle", busy)
    keys = p.direct()
    assert "svc" in keys
    assert [g.choice_key for g in p.traces.list_conflicts().groups] == keys
    assert [g.choice_key for g in p.traces.list_conflicts(after_key="m").groups] == [k for k in keys if k > "m"]
    found = p.history.get_task("billing")  # more active decisions than conflicts: the walk in key order
    assert found.view is not None
    assert [g.choice_key for g in found.view.conflicts] == p.task_direct("billing")[:10]
