"""The kept counters (core/_counters.py), on every backend: queue positions
never repeat and never go back, whatever the clock says; the creation numbers
of a task's decisions are unique and in creation order, however the counters
were lost."""

from __future__ import annotations

import time
from typing import Any

from core import _counters
from core._counters import Positions, queue_node_id, task_state

from .test_decisions import ADR, World
from .test_review_views import world  # noqa: F401  (the fixture)

# -- queue positions ------------------------------------------------------------


def test_positions_start_past_the_floor_when_the_floor_is_ahead_of_the_clock() -> None:
    clock = int(time.time() * 1000) << 20
    for floor in (clock + (10**6 << 20), Positions.horizon() * 2):  # a clock set back; far ahead
        first = Positions(floor)
        taken = first.take(3)
        assert taken == [floor + 1, floor + 2, floor + 3]
        assert first.last == floor + 3
        nxt = Positions(first.last)  # the next unit, from the floor the first one left
        assert nxt.take(1)[0] == floor + 4 and nxt.last == floor + 4


def test_positions_follow_the_clock_when_the_floor_is_behind_it() -> None:
    for floor in (None, 0, 5):
        before = int(time.time() * 1000) << 20
        p = Positions(floor)
        after = int(time.time() * 1000) << 20
        assert p.last is None
        taken = p.take(2)
        assert before <= taken[0] <= after and taken[1] == taken[0] + 1
        assert taken[0] < Positions.horizon()


def _pos(w: World, decision: Any) -> int:
    rows = w.store.read(w.project_id, "MATCH (d:Decision {id: $id}) RETURN d.queue_pos AS p", {"id": str(decision.id)})
    return rows[0]["p"]


def _last_pos(w: World) -> int | None:
    rows = w.store.read(
        w.project_id, "MATCH (q:ReviewQueue {id: $id}) RETURN q.last_pos AS p", {"id": queue_node_id(w.project_id)}
    )
    return rows[0]["p"] if rows else None


def test_units_after_a_clock_set_back_queue_after_the_last_position_each_once(world: World) -> None:
    w = world
    w.graph.add("two", "Reviews happen weekly.\n\nSecond passage.")
    w.graph.add("three", "Third passage.")
    one = w.record("pick-db", "db", "Postgres").decision

    def cite(key: str, passage: str, choice: str) -> Any:
        doc, got = w.cite(key, passage)
        return w.record("billing", choice, choice, supports=[doc], fetched=[got]).decision

    two, three = cite("two", "Second passage.", "two"), cite("three", "Third passage.", "three")
    ahead = Positions.horizon() * 2  # positions given by a host whose clock ran far ahead
    w.store.write(
        w.project_id,
        "MERGE (q:ReviewQueue {id: $id}) ON CREATE SET q.project_id = $p SET q.last_pos = $pos",
        {"id": queue_node_id(w.project_id), "p": w.project_id, "pos": ahead},
    )
    seen = []
    for key, text, d in (
        ("adr", ADR.replace("Postgres stays", "MySQL stays"), one),
        ("two", "Changed.", two),
        ("three", "Changed too.", three),
    ):
        assert w.graph.update(key, text).recorded  # one unit each flags its citer
        seen.append(_pos(w, d))
        assert _last_pos(w) == seen[-1]
    assert seen[0] > ahead and seen == sorted(set(seen)), seen  # after the floor, each once, in order
    order = [d.id for d in w.traces.list_decisions_for_review().decisions]
    assert order == [one.id, two.id, three.id]


# -- creation numbers -------------------------------------------------------------


def _numbers(w: World, task: str = "pick-db") -> list[int | None]:
    """The creation numbers of the task's active decisions, in creation order."""
    rows = w.store.read(
        w.project_id,
        "MATCH (d:Decision {task_id: $t}) WHERE d.status = 'active' "
        "RETURN d.active_seq AS n, d.created_at AS at, d.id AS id",
        {"t": _tid(w, task)},
    )
    return [r["n"] for r in sorted(rows, key=lambda r: (r["at"], r["id"]))]


def _tid(w: World, task: str) -> str:
    from core import _common as c

    return c.task_id(w.project_id, task)


def _lose_counters(w: World, task: str, unnumber: list[int]) -> None:
    """The task's kept counters gone (as before they were kept), and the
    numbers of the decisions at ``unnumber`` (indexes in creation order) too."""
    tid = _tid(w, task)
    w.store.write(w.project_id, "MATCH (k:TaskDecisions {id: $id}) DELETE k", {"id": tid})
    rows = w.store.read(
        w.project_id, "MATCH (d:Decision {task_id: $t}) RETURN d.id AS id, d.created_at AS at", {"t": tid}
    )
    ids = [r["id"] for r in sorted(rows, key=lambda r: (r["at"], r["id"]))]
    w.store.write(
        w.project_id,
        "UNWIND $ids AS id MATCH (d:Decision {id: id}) REMOVE d.active_seq",
        {"ids": [ids[i] for i in unnumber]},
    )


def test_decisions_are_numbered_one_by_one_in_creation_order(world: World) -> None:
    w = world
    for n in range(3):
        w.record("pick-db", f"c{n}", f"answer {n}")
    assert _numbers(w) == [1, 2, 3]
    assert task_state(w.store, w.project_id, _tid(w, "pick-db"))["seq"] == 3


def test_numbers_rebuilt_after_the_counters_were_lost_are_unique_in_creation_order(world: World) -> None:
    """Some decisions numbered and some not, the counters deleted: the first
    read numbers the rest after the highest number, each once."""
    w = world
    for n in range(4):
        w.record("pick-db", f"c{n}", f"answer {n}")
    for unnumber, expected in (
        ([0, 1, 2, 3], [1, 2, 3, 4]),  # none numbered: from 1
        ([2, 3], [1, 2, 3, 4]),  # the last ones lost theirs
        ([0, 3], [4, 2, 3, 5]),  # the first and the last: after the highest kept, in creation order
    ):
        _lose_counters(w, "pick-db", unnumber)
        state = task_state(w.store, w.project_id, _tid(w, "pick-db"))
        numbers = _numbers(w)
        assert numbers == expected, (unnumber, numbers)
        assert state == {"seq": max(expected), "active": 4, "open": 0}
        w.store.write(  # back to 1..4 for the next case
            w.project_id,
            "MATCH (d:Decision {task_id: $t}) WITH d ORDER BY d.created_at, d.id WITH collect(d) AS ds "
            "UNWIND range(0, size(ds) - 1) AS i WITH ds[i] AS d, i SET d.active_seq = i + 1",
            {"t": _tid(w, "pick-db")},
        )
    # a decision recorded after the rebuild takes the next number
    _lose_counters(w, "pick-db", [2, 3])
    assert _counters.task_view_state(w.store, w.project_id, _tid(w, "pick-db"))["seq"] == 4
    w.record("pick-db", "c9", "answer 9")
    assert _numbers(w) == [1, 2, 3, 4, 5]
    assert task_state(w.store, w.project_id, _tid(w, "pick-db")) == {"seq": 5, "active": 5, "open": 0}


def test_counts_rebuilt_after_the_counters_were_lost_are_the_ones_kept(world: World) -> None:
    """A task's active and open counts rebuilt from its decisions are what
    the counters kept: a rejected decision is neither active nor open."""
    w = world
    made = [w.record("pick-db", f"c{n}", f"answer {n}").decision for n in range(3)]
    assert w.as_("rita").reject_decision(str(made[1].id), reason="looks wrong").recorded
    tid = _tid(w, "pick-db")
    kept = task_state(w.store, w.project_id, tid)
    assert kept["active"] == 2
    _lose_counters(w, "pick-db", [])
    assert task_state(w.store, w.project_id, tid) == kept
