"""Agent identity is not a person: every activity entry says whether a
signed-in person (the dashboard says so) or an agent (a script, the API, an
import) wrote it; services write as an agent unless told otherwise, and an
import is always an agent's, so a script cannot appear as a reviewer."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from core import _common as c
from core.decisions import DecisionTraces
from core.models import ActivityEntry, ActorKind
from core.retention import ActivityLog, HistoryRetention
from tests.core.test_decisions import World, world  # noqa: F401  (the shared fixture)


def _log(world: World) -> list[ActivityEntry]:
    return ActivityLog(world.store, project_id=world.project_id).list()


def test_an_agent_is_an_agent_even_under_a_persons_name(world: World) -> None:
    d = world.record("pick-db", "db", "Postgres").decision
    script = DecisionTraces(world.store, project_id=world.project_id, agent_id="rita")  # a person's name
    assert script.reject_decision(str(d.id), reason="looks wrong").recorded
    (entry,) = _log(world)
    assert (entry.actor, entry.actor_kind, entry.action) == ("rita", ActorKind.agent, "reject")
    assert entry.model_dump(mode="json")["actor_kind"] == "agent"  # what the API sends


def test_a_person_acting_in_the_dashboard_is_a_person(world: World) -> None:
    d = world.record("pick-db", "db", "Postgres").decision
    person = DecisionTraces(world.store, project_id=world.project_id, agent_id="rita", actor_kind=ActorKind.person)
    assert person.reject_decision(str(d.id), reason="superseded by policy").recorded
    steward = HistoryRetention(world.store, project_id=world.project_id, agent_id="stan", actor_kind="person")
    event = c.event_id(c.task_id(world.project_id, "pick-db"), 1)
    assert steward.redact_event(event, reason="personal data").recorded
    assert world.retention.delete_task("billing", reason="policy").recorded  # the fixture's service: an agent
    kinds = {(e.action, e.actor): e.actor_kind for e in _log(world)}
    assert kinds == {
        ("reject", "rita"): ActorKind.person,
        ("redact", "stan"): ActorKind.person,
        ("delete_task", "steward"): ActorKind.agent,
    }


def test_an_import_is_an_agents_write_whoever_asks(world: World) -> None:
    d = world.record("pick-db", "db", "Postgres").decision
    person = DecisionTraces(world.store, project_id=world.project_id, agent_id="rita", actor_kind=ActorKind.person)
    with c.happened_at(datetime(2026, 1, 2, 3, 4, tzinfo=UTC)):
        assert person.reject_decision(str(d.id), reason="imported review").recorded
    (entry,) = _log(world)
    assert entry.actor_kind is ActorKind.agent and entry.imported_at is not None


@pytest.mark.parametrize("bad", ["robot", "", "Person", None, 1])
def test_an_unknown_actor_kind_is_refused_before_writing(world: World, bad: Any) -> None:
    with pytest.raises(ValueError, match="actor_kind"):
        DecisionTraces(world.store, project_id=world.project_id, agent_id="x", actor_kind=bad)
    with pytest.raises(ValueError, match="actor_kind"):
        HistoryRetention(world.store, project_id=world.project_id, agent_id="x", actor_kind=bad)
    assert _log(world) == []


def test_entries_from_before_the_kind_was_kept_say_so(world: World) -> None:
    world.store.transact(
        world.project_id,
        lambda tx: tx.write(
            "CREATE (:Activity {id: 'old', project_id: $p, at: $at, actor: 'stan', action: 'redact', "
            "target_kind: 'event', target_id: 'e1', summary: 'old entry'})",
            {"p": world.project_id, "at": c.iso(c.now())},
        ),
    )
    (entry,) = _log(world)
    assert entry.actor == "stan" and entry.actor_kind is None
