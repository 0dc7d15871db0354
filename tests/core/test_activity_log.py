"""The activity log read by filter (person, action, task, decision, time
range, combined), page by page and whole, and the team's progress; on
every backend."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from core import _activity, _review
from core import _common as c
from core.models import ActivityFilter, ActorKind
from core.retention import ActivityLog
from tests.core.test_decisions import World, world  # noqa: F401  (the shared fixture)

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)  # a Monday


def entry(world: World, actor: str, action: str, target: str, at: datetime, *, kind: str = "decision") -> None:
    """One entry as the services write it (``log_activity``, in a unit)."""
    world.store.transact(
        world.project_id,
        lambda tx: _review.log_activity(
            tx,
            world.project_id,
            actor,
            action,
            kind,
            target,
            f"{action} by {actor}",
            None,
            c.iso(at),
            actor_kind="person",
        ),
    )


def pages(log: ActivityLog, where: ActivityFilter, size: int) -> list[str]:
    seen, before = [], None
    while True:
        page = log.list(before=before, limit=size, where=where)
        seen += [e.id for e in page]
        if len(page) < size:
            return seen
        before = ActivityLog.cursor(page[-1])


def test_the_filters_combine_and_page_by_the_cursor(world: World) -> None:
    a = world.record("pick-db", "db", "Postgres").decision
    b = world.record("billing", "ledger", "Postgres").decision
    rita = world.as_("rita")
    assert rita.reject_decision(str(b.id), reason="not ours").recorded  # a real action: its task from its decision
    for n in range(12):  # two instants hold several entries each: ties broken by id
        entry(
            world, ("rita", "stan")[n % 2], ("reaffirm", "claim")[n % 3 == 0], str(a.id), T0 + timedelta(hours=n // 3)
        )
    log = ActivityLog(world.store, project_id=world.project_id)
    everything = log.list(limit=200)
    assert len(everything) == 13
    real = next(e for e in everything if e.action == "reject")
    assert real.task_id == c.task_id(world.project_id, "billing") and real.actor == "rita"

    def ids(**kw: object) -> set[str]:
        return {e.id for e in log.list(limit=200, where=ActivityFilter(**kw))}

    assert ids(actor="rita") == {e.id for e in everything if e.actor == "rita"}
    assert len(ids(action="claim")) == 4
    assert ids(task="billing") == {real.id}
    assert ids(task="pick-db") == {e.id for e in everything if e.target_id == str(a.id)}
    assert ids(task="no such task") == set() and ids(decision=str(uuid.uuid4())) == set()
    assert ids(decision=str(b.id)) == {real.id}
    since, until = T0 + timedelta(hours=1), T0 + timedelta(hours=3)  # since inclusive, until exclusive
    assert ids(since=since, until=until) == {e.id for e in everything if since <= e.at < until}
    assert len(ids(since=since, until=until)) == 6
    combined = ids(actor="stan", action="reaffirm", task="pick-db", since=since)
    assert combined == {
        e.id for e in everything if e.actor == "stan" and e.action == "reaffirm" and e.at >= since and e.task_id
    }
    assert combined
    # pages of the filter, by the cursor: every match once, newest first
    where = ActivityFilter(task="pick-db", until=T0 + timedelta(hours=4))
    expected = [e.id for e in log.list(limit=200, where=where)]
    assert pages(log, where, 2) == expected and len(expected) == 12
    assert [e.id for e in log.every(where=where)] == expected


def test_a_long_read_goes_window_by_window_in_order(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    """``every`` reads a window of time per statement (a few entries here):
    dense spells and long gaps, ties in one instant, the filter kept."""
    monkeypatch.setattr(ActivityLog, "EVERY_PAGE", 3)
    monkeypatch.setattr(ActivityLog, "FIRST_WINDOW_US", 60_000_000)
    target = str(uuid.uuid4())
    moments = [T0 - timedelta(days=400)] + [T0 + timedelta(seconds=s) for s in (0, 0, 0, 0, 1, 2, 3, 5, 8)]
    moments += [T0 + timedelta(days=30, microseconds=m) for m in range(7)]
    for n, at in enumerate(moments):
        entry(world, "rita" if n % 4 else "stan", "reaffirm", target, at)
    log = ActivityLog(world.store, project_id=world.project_id)
    newest_first = [e.id for e in log.list(limit=200)]
    assert [e.id for e in log.every()] == newest_first and len(newest_first) == len(moments)
    ritas = [e.id for e in log.list(limit=200, where=ActivityFilter(actor="rita"))]
    assert [e.id for e in log.every(where=ActivityFilter(actor="rita"))] == ritas
    assert list(log.every(where=ActivityFilter(actor="nobody"))) == []


def test_older_entries_are_given_their_task_and_deleted_ones_keep_working(world: World) -> None:
    d = world.record("pick-db", "db", "Postgres").decision
    gone = str(uuid.uuid4())  # a decision deleted since
    for target in (str(d.id), gone):  # as entries were written before they named their task
        world.store.write(
            world.project_id,
            "CREATE (:Activity {id: $id, project_id: $p, at: $at, actor: 'old', action: 'reaffirm', "
            "target_kind: 'decision', target_id: $t, summary: 's'})",
            {"id": str(uuid.uuid4()), "p": world.project_id, "at": c.iso(T0), "t": target},
        )
    _activity._NAMED.clear()
    log = ActivityLog(world.store, project_id=world.project_id)
    (found,) = log.list(where=ActivityFilter(task="pick-db"))
    assert len(list(log.every())) == 2  # a long read's windows find them too (given their at_us)
    assert found.target_id == str(d.id) and found.task_id == c.task_id(world.project_id, "pick-db")
    orphan = next(e for e in log.list() if e.target_id == gone)
    assert orphan.task_id is None  # nobody can tell: kept, listed, in no task
    # an entry written now keeps its task after the task and its decisions are deleted
    assert world.as_("rita").reaffirm_decision(str(d.id), explanation="holds").recorded
    assert world.retention.delete_task("pick-db", reason="policy", include_decisions=True).recorded
    actions = sorted(e.action for e in log.list(where=ActivityFilter(task="pick-db")))
    assert actions == ["delete_task", "reaffirm", "reaffirm"]


def test_progress_counts_settled_today_and_this_week_by_person_and_action(world: World) -> None:
    target = str(uuid.uuid4())
    today, week = T0 + timedelta(days=2), T0  # Wednesday; the week began on Monday
    for actor, action, at in [
        ("rita", "reaffirm", today + timedelta(hours=1)),
        ("rita", "reaffirm", today + timedelta(hours=2)),
        ("rita", "reject", today - timedelta(hours=1)),  # yesterday: this week only
        ("rita", "claim", today + timedelta(hours=1)),  # not a settling action
        ("stan", "supersede", week),  # the week's first instant counts
        ("stan", "supersede", week - timedelta(microseconds=1)),  # last week
    ]:
        entry(world, actor, action, target, at)
    rita, stan = ActivityLog(world.store, project_id=world.project_id).progress(today=today, week=week)
    assert (rita.actor, rita.actor_kind) == ("rita", ActorKind.person)
    assert rita.today == {"reaffirm": 2} and rita.week == {"reaffirm": 2, "reject": 1}
    assert stan.actor == "stan" and stan.today == {} and stan.week == {"supersede": 1}


def test_hostile_filters_are_refused_before_reading(world: World) -> None:
    log = ActivityLog(world.store, project_id=world.project_id)
    for hostile in (
        {"actor": "r" * 100_000},
        {"task": "t" * 10_000},
        {"action": "a" * 1_000},
        {"decision": "d" * 37},
        {"actor": ""},
        {"since": datetime(2026, 1, 1)},  # naive: whose midnight?
    ):
        with pytest.raises(ValueError):
            log.list(where=ActivityFilter(**hostile))
