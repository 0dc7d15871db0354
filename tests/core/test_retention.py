"""HistoryRetention: redaction and task deletion, and the activity they leave."""

from __future__ import annotations

from typing import Any

import pytest

from core import _common as c
from core.models import RetentionErrorCode, ReviewReason, ReviewState
from core.retention import REDACTED, ActivityLog
from tests.core.test_decisions import World, dep, state, world  # noqa: F401  (the shared fixture)


def event(world: World, task: str, seq: int) -> str:
    return c.event_id(c.task_id(world.project_id, task), seq)


def cites_event(world: World, task: str, key: str, seq: int = 1, **kw: Any) -> Any:
    return world.record(
        task, key, f"{key} decided", supports=[{"kind": "event", "task_name": "pick-db", "seq": seq}], **kw
    ).decision


def test_redaction_keeps_number_and_hash_and_flags_citers(world: World) -> None:
    before = world.history.fetch_event("pick-db", 1).event
    citer = cites_event(world, "billing", "owner")
    child = world.record("billing", "team", "A", supports=[dep(citer)]).decision
    rejected = cites_event(world, "billing", "vendor")  # a citer no longer in force is not reviewed again
    assert world.as_("rita").reject_decision(str(rejected.id), reason="wrong vendor").recorded
    result = world.retention.redact_event(event(world, "pick-db", 1), reason="personal data")
    assert result.recorded and result.affected_decision_ids == [str(citer.id)]
    after = world.history.fetch_event("pick-db", 1).event
    assert after.payload == REDACTED and after.redacted_at is not None
    assert (after.seq, after.payload_sha256, after.id) == (before.seq, before.payload_sha256, before.id)
    assert state(world, citer)[1:] == (ReviewState.needs_review, ReviewReason.source_removed)
    assert state(world, child)[1] is ReviewState.unknown  # its review is queued
    entry = ActivityLog(world.store, project_id=world.project_id).list()[0]
    assert (entry.action, entry.actor, entry.reason, entry.target_id) == (
        "redact",
        "steward",
        "personal data",
        str(after.id),
    )


def test_redaction_errors(world: World) -> None:
    assert world.retention.redact_event(event(world, "pick-db", 9)).error is RetentionErrorCode.event_not_found
    assert world.retention.redact_event("not-an-id").error is RetentionErrorCode.event_not_found
    assert (
        world.retention.redact_event(event(world, "pick-db", 1), request_id="").error
        is RetentionErrorCode.invalid_request_id
    )
    first = world.retention.redact_event(event(world, "pick-db", 1), request_id="rq")
    assert world.retention.redact_event(event(world, "pick-db", 1), request_id="rq") == first
    other = world.retention.redact_event(event(world, "pick-db", 1), reason="x", request_id="rq")
    assert other.error is RetentionErrorCode.request_id_reused


def test_delete_task_removes_everything_and_flags_citers_elsewhere(world: World) -> None:
    world.history.set_step("pick-db", name="s", state="completed")
    own = cites_event(world, "pick-db", "db")
    elsewhere_event = cites_event(world, "billing", "owner")
    elsewhere_decision = world.record("billing", "team", "A", supports=[dep(own)]).decision
    grandchild = world.record("billing", "x", "y", supports=[dep(elsewhere_decision)]).decision
    preview = world.retention.preview_delete_task("pick-db")
    assert (preview.events, preview.steps, preview.decisions) == (1, 1, 1)
    assert preview.flagged_decision_ids == sorted([str(elsewhere_event.id), str(elsewhere_decision.id)])
    result = world.retention.delete_task("pick-db", reason="retention policy")
    assert result.recorded and result.affected_decision_ids == preview.flagged_decision_ids
    assert world.history.get_task("pick-db").found is False
    assert world.history.list_events("pick-db").found is False
    assert world.traces.get_decision(str(own.id)).found is False
    for d in (elsewhere_event, elsewhere_decision):
        assert state(world, d)[1:] == (ReviewState.needs_review, ReviewReason.source_removed)
    assert state(world, grandchild)[1] is ReviewState.clear  # dependants are not flagged by a deletion
    entry = ActivityLog(world.store, project_id=world.project_id).list()[0]
    assert (entry.action, entry.reason) == ("delete_task", "retention policy")
    assert world.retention.delete_task("pick-db").error is RetentionErrorCode.task_not_found


def test_delete_task_can_keep_its_decisions(world: World) -> None:
    own = cites_event(world, "pick-db", "db")
    result = world.retention.delete_task("pick-db", include_decisions=False)
    assert result.recorded and result.affected_decision_ids == []
    kept = world.traces.get_decision(str(own.id)).decision
    assert kept is not None and kept.task_name == "pick-db"
    with pytest.raises(ValueError):
        world.retention.delete_task("billing", include_decisions="yes")  # type: ignore[arg-type]


def test_activity_pages_neither_skip_nor_repeat_entries_written_in_one_instant(world: World) -> None:
    from core import _review

    at = c.iso(c.now())

    def work(tx: Any) -> None:
        tx.read("RETURN 1 AS one", {})
        for n in range(7):
            _review.log_activity(
                tx, world.project_id, "stan", "redact", "event", f"e{n}", f"entry {n}", None, at, actor_kind="person"
            )

    world.store.transact(world.project_id, work)
    log = ActivityLog(world.store, project_id=world.project_id)
    seen: list[str] = []
    before = None
    while True:
        page = log.list(before=before, limit=3)
        seen += [e.target_id for e in page]
        if len(page) < 3:
            break
        before = ActivityLog.cursor(page[-1])
    assert sorted(seen) == [f"e{n}" for n in range(7)]
    assert log.list(before=at) == []  # a time alone: the entries before it


def test_the_activity_log_says_which_decision_each_entry_opens_in_the_same_read(world: World) -> None:
    """A supersede entry opens the revision it recorded, a reject entry the
    decision it rejected; an entry of an event opens no decision."""
    base = world.record("pick-db", "base", "Orders stay").decision
    old = world.record("pick-db", "db", "Postgres").decision
    gone = world.record("billing", "queue", "Kafka").decision
    new = world.traces.supersede_decision(
        str(old.id), conclusion="MySQL", rationale="cost", explanation="cheaper", supports=[dep(base)]
    ).decision
    world.traces.reject_decision(str(gone.id), reason="wrong")
    assert world.retention.redact_event(event(world, "pick-db", 1), reason="pii").recorded
    log = ActivityLog(world.store, project_id=world.project_id)
    entries, links = log.list_with_links(limit=10)
    assert [e.model_dump() for e in entries] == [e.model_dump() for e in log.list(limit=10)]
    by_action = {e.action: e for e in entries}
    assert by_action["supersede"].target_id == str(old.id) and links[by_action["supersede"].id] == str(new.id)
    assert links[by_action["reject"].id] == str(gone.id)
    assert by_action["redact"].id not in links
