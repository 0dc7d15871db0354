"""A person's notices (core/notices.py): one indexed node per person an
activity entry names, read newest first and counted after a time; and what
changed since a person last looked. On every backend."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from core import _common as c
from core import _review, limits
from core.notices import Notices, changes_since, flagged_after
from core.stores import GraphStore

from .test_decisions import ADR, World
from .test_review_views import world  # noqa: F401  (the fixture)

T0 = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)


def log(store: GraphStore, project_id: str, action: str, at: datetime, notify: list[str], **kw: str) -> None:
    def work(tx):  # type: ignore[no-untyped-def]
        _review.log_activity(
            tx,
            project_id,
            kw.get("actor", "rita"),
            action,
            "decision",
            kw.get("target", "d-1"),
            kw.get("summary", "commented on Postgres"),
            None,
            c.iso(at),
            actor_kind="person",
            notify=notify,
        )

    store.transact(project_id, work)


def test_a_persons_notices_page_newest_first_and_count_after_a_time(store: GraphStore, project_id: str) -> None:
    for i in range(5):
        log(store, project_id, "comment" if i % 2 else "assign", T0 + timedelta(minutes=i), ["sam", "ana"])
    log(store, project_id, "comment", T0 + timedelta(minutes=9), ["ana"])  # not sam's
    log(store, project_id, "claim", T0 + timedelta(minutes=10), [])  # names nobody
    notices = Notices(store, project_id=project_id)
    first = notices.page("sam", limit=3)
    assert [n.entry.at for n in first] == [T0 + timedelta(minutes=m) for m in (4, 3, 2)]
    assert all(n.opens == "d-1" and n.entry.notify == ["ana", "sam"] for n in first)
    rest = notices.page("sam", before=Notices.cursor(first[-1]), limit=3)
    assert [n.entry.at for n in rest] == [T0 + timedelta(minutes=1), T0]
    assert [n.entry.action for n in notices.page("sam", actions=["assign"])] == ["assign"] * 3
    assert notices.count_after("sam", None) == 5
    assert notices.count_after("sam", T0 + timedelta(minutes=2)) == 2
    assert notices.count_after("ana", T0 + timedelta(minutes=2)) == 3
    assert notices.count_after("nobody", None) == 0
    assert notices.count_after("sam", None, cap=3) == 3  # a badge stops counting at its cap
    assert [n.entry.at for n in notices.page("sam", after=T0 + timedelta(minutes=3))] == [T0 + timedelta(minutes=4)]


def test_hostile_names_are_refused_and_write_nothing(store: GraphStore, project_id: str) -> None:
    for bad in (["x" * (limits.PERSON_MAX + 1)], [""], ["a\x00b"], [f"p{i}" for i in range(limits.NOTIFY_MAX + 1)]):
        with pytest.raises(ValueError):
            log(store, project_id, "comment", T0, bad)
    # a refused entry wrote nothing: neither the entry nor a notice
    assert Notices(store, project_id=project_id).page("p0") == []
    with pytest.raises(ValueError):
        Notices(store, project_id=project_id).page("x" * (limits.PERSON_MAX + 1))


def test_changes_since_counts_flags_verdicts_conflicts_and_comments_of_others(world: World) -> None:
    w, store, pid = world, world.store, world.project_id
    d1 = w.record("pick-db", "db", "Postgres").decision
    d2 = w.record("billing", "ledger", "Postgres").decision
    before = datetime.now(UTC) - timedelta(milliseconds=1)
    w.graph.update("adr", "Preface.\n\n" + ADR)  # the passage moved: both flagged
    assert w.as_("ana").reaffirm_decision(str(d1.id), explanation="still true").recorded
    w.record("billing", "db", "MySQL", supports=[{"kind": "event", "task_name": "pick-db", "seq": 1}])  # a conflict
    log(store, pid, "comment", datetime.now(UTC), ["sam"], actor="ana")
    log(store, pid, "comment", datetime.now(UTC), [], actor="sam")  # sam's own comment is not news to sam
    seen = changes_since(store, pid, "sam", before)
    assert [n for _, n in seen.flags] == [1] and seen.anything and not seen.capped
    assert (seen.settled, seen.comments, seen.conflicts) == (1, 1, 1)
    assert changes_since(store, pid, "ana", before).settled == 0  # her own verdict
    assert flagged_after(store, pid, [str(d1.id), str(d2.id)], before) == {str(d2.id)}
    after = datetime.now(UTC) + timedelta(seconds=1)
    assert not changes_since(store, pid, "sam", after).anything
    assert flagged_after(store, pid, [str(d2.id)], after) == set()


def test_a_reply_in_a_thread_of_many_writers_is_kept_and_tells_the_mentioned_first(
    store: GraphStore, project_id: str
) -> None:
    from core.comments import Discussion
    from core.retention import ActivityLog

    from .test_comments import _decision

    did = _decision(store, project_id)
    first = Discussion(store, project_id=project_id, agent_id="w0").post_comment(did, "why?")
    tid = first.comment.thread_id
    writers = limits.NOTIFY_MAX + 5
    for i in range(1, writers):
        assert (
            Discussion(store, project_id=project_id, agent_id=f"w{i}").post_comment(did, "+1", thread_id=tid).recorded
        )
    mentioned = ["m1", "m2"]
    reply = Discussion(store, project_id=project_id, agent_id="rita").post_comment(
        did, "@m1 @m2 see above", thread_id=tid, mentions=mentioned
    )
    assert reply.recorded, reply  # more writers than a notice names: the reply is kept all the same
    entry = ActivityLog(store, project_id=project_id).list(limit=1, action="comment")[0]
    assert len(entry.notify) == limits.NOTIFY_MAX and set(mentioned) <= set(entry.notify)
    assert "rita" not in entry.notify
