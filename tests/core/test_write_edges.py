"""Three of the seeds' rules at their edges, on every backend: deleting a
task whose events another task's decision cites while keeping its
decisions, a rejection without a reason, and a step result with more than
20 supports."""

from __future__ import annotations

from core import limits
from core.models import ReviewReason, ReviewState, StepResultValidity, WriteErrorCode
from tests.core.test_decisions import World, state, world  # noqa: F401  (the shared fixture)


def test_delete_task_keeping_decisions_flags_the_citers_elsewhere_in_one_unit(world: World) -> None:
    # a decision in another task cites an event of pick-db
    citer = world.record("billing", "db", "Postgres", supports=[{"kind": "event", "task_name": "pick-db", "seq": 1}])
    assert citer.recorded, citer.error
    own = world.record("pick-db", "orm", "SQLAlchemy").decision

    result = world.retention.delete_task("pick-db", include_decisions=False, reason="cleanup")

    assert result.recorded and result.error is None
    assert result.affected_decision_ids == [str(citer.decision.id)]
    assert not world.history.get_task("pick-db").found
    assert world.history.list_events("pick-db").found is False
    # the citer is flagged source_removed; the task's own decision is kept, detached
    assert state(world, citer.decision)[1:] == (ReviewState.needs_review, ReviewReason.source_removed)
    kept = world.traces.get_decision(str(own.id)).decision
    assert kept is not None and kept.status.value == "active" and kept.task_name == "pick-db"
    assert world.traces.review_counts()["needs_review"] >= 1


def test_delete_task_keeping_decisions_when_a_citer_cites_a_decision_of_the_task(world: World) -> None:
    # a decision elsewhere depending on one of the task's (kept) decisions is not flagged
    own = world.record("pick-db", "orm", "SQLAlchemy").decision
    dependant = world.record(
        "billing", "orm", "SQLAlchemy", supports=[{"kind": "decision", "decision_id": str(own.id)}]
    )
    assert dependant.recorded, dependant.error
    citer = world.record("billing", "db", "Postgres", supports=[{"kind": "event", "task_name": "pick-db", "seq": 1}])
    result = world.retention.delete_task("pick-db", include_decisions=False)
    assert result.recorded, result.error
    assert result.affected_decision_ids == [str(citer.decision.id)]
    assert state(world, dependant.decision)[1] is ReviewState.clear


def test_reject_with_a_blank_reason_is_refused_with_a_code(world: World) -> None:
    made = world.record("pick-db", "db", "Postgres").decision
    for blank in ("", "   ", "\n\t"):
        result = world.traces.reject_decision(str(made.id), reason=blank)
        assert (result.recorded, result.error) == (False, WriteErrorCode.explanation_required)
    assert state(world, made)[0].value == "active"
    assert world.traces.reject_decision(str(made.id), reason="wrong").recorded


def _event_supports(world: World, n: int) -> list[dict]:
    for _ in range(n - 1):  # the world has one event already
        world.history.record_event("pick-db", kind="note", payload="x")
    return [{"kind": "event", "task_name": "pick-db", "seq": s} for s in range(1, n + 1)]


def test_a_step_result_takes_more_than_twenty_supports_up_to_its_limit(world: World) -> None:
    supports = _event_supports(world, limits.STEP_SUPPORTS_MAX + 1)
    ok = world.history.set_step(
        "pick-db", name="read", state="completed", result_basis="supported", result_supports=supports[:21]
    )
    assert ok.recorded, ok.error
    assert len(ok.step.result_supports) == 21
    at_limit = world.history.set_step(
        "pick-db",
        name="read",
        state="completed",
        result_basis="supported",
        result_supports=supports[: limits.STEP_SUPPORTS_MAX],
    )
    assert at_limit.recorded, at_limit.error
    (summary,) = world.history.list_steps("pick-db").steps
    assert len(summary.result_supports) == limits.STEP_SUPPORTS_MAX
    assert summary.result_validity is StepResultValidity.reusable

    over = world.history.set_step(
        "pick-db", name="read2", state="completed", result_basis="supported", result_supports=supports
    )
    assert (over.recorded, over.error) == (False, WriteErrorCode.too_many_supports)
    assert [s.name for s in world.history.list_steps("pick-db").steps] == ["read"]
