"""Request records, on both backends: a request id belongs to its project and
its agent; a retry seals nothing and leaves no key behind; a replay of a
redacted or deleted write tells no guess of its text from another; the
Neo4j driver logs no statement parameters, even at DEBUG."""

from __future__ import annotations

import hashlib
import json
import logging
import uuid

import pytest

from core import _common as c
from core._purge import _scrub_requests
from core.decisions import DecisionTraces
from core.history import ConversationHistory
from core.retention import REDACTED, HistoryRetention
from core.stores import GraphStore
from core.stores.keystore import SLOT, keys_of
from core.traces_io import import_lines
from tests.core.test_decisions import World, world  # noqa: F401  (the shared fixture)
from tests.core.test_request_reuse import CASES, _call

REUSED = "request_id_reused"


def _services(w: World, agent: str) -> World:
    """The world's services, written as another agent."""
    return World(
        w.store,
        w.project_id,
        ConversationHistory(w.store, project_id=w.project_id, agent_id=agent),
        type(w.graph)(w.store, project_id=w.project_id, agent_id=agent),
        DecisionTraces(w.store, project_id=w.project_id, agent_id=agent),
        HistoryRetention(w.store, project_id=w.project_id, agent_id=agent),
    )


def _code(result: object) -> str | None:
    error = getattr(result, "error", None)
    return getattr(error, "value", error)


def _requests(store: GraphStore, project_id: str) -> list[dict]:
    return [
        r["r"]
        for r in store.read(
            project_id, "MATCH (r:Request) WHERE r.project_id = $p RETURN properties(r) AS r", {"p": project_id}
        )
    ]


# -- a request id is its agent's --------------------------------------------------


def test_another_agent_with_the_same_id_and_arguments_gets_its_own_write(world: World) -> None:
    other = _services(world, "intruder")
    first = world.history.record_event("pick-db", kind="message", payload="planner's words", request_id="rq-1")
    assert first.recorded and first.event is not None
    theirs = other.history.record_event("pick-db", kind="message", payload="planner's words", request_id="rq-1")
    # not the planner's stored result: a write of its own, as its author
    assert theirs.recorded and theirs.event is not None
    assert (theirs.event.seq, theirs.event.author) == (first.event.seq + 1, "intruder")
    assert world.history.record_event("pick-db", kind="message", payload="planner's words", request_id="rq-1") == first

    decision = {
        "choice_key": "db",
        "conclusion": "Postgres",
        "rationale": "r",
        "supports": [{"kind": "event", "task_name": "pick-db", "seq": 1}],
    }
    mine = world.traces.record_decision("pick-db", **decision, request_id="rq-2")
    assert mine.recorded
    # the same id and arguments as another agent: answered for itself (the
    # choice is taken), never with the planner's stored result
    assert _code(other.traces.record_decision("pick-db", **decision, request_id="rq-2")) == "choice_exists"
    assert world.traces.record_decision("pick-db", **decision, request_id="rq-2") == mine
    agents = sorted((r["request_id"], r["agent_id"]) for r in _requests(world.store, world.project_id))
    assert agents == [("rq-1", "intruder"), ("rq-1", "planner"), ("rq-2", "planner")]


@pytest.mark.parametrize(("service", "method"), sorted(CASES), ids=[f"{s}.{m}" for s, m in sorted(CASES)])
def test_another_agent_cannot_spoil_a_request_id(world: World, service: str, method: str) -> None:
    """Every write: another agent uses the id first, with other arguments;
    the owner's write with it is still its own, and so are both retries."""
    world.history.record_event("billing", kind="message", payload="billing question")
    first_args, others = CASES[(service, method)](world)
    other = _services(world, "intruder")
    theirs = _call(other, service, method, others, "rq-1")
    assert _code(theirs) != REUSED
    mine = _call(world, service, method, first_args, "rq-1")
    assert mine.recorded and _code(mine) is None, mine
    assert _call(world, service, method, first_args, "rq-1") == mine
    assert _call(other, service, method, others, "rq-1") == theirs
    # and each agent's id still refuses that agent's other arguments
    assert _code(_call(world, service, method, others, "rq-1")) == REUSED


def test_the_importer_scopes_a_request_id_to_the_lines_agent(store: GraphStore, project_id: str) -> None:
    lines = [
        {"op": "create_task", "agent": "a", "task": "t", "goal": "g"},
        {"op": "record_event", "agent": "a", "task": "t", "kind": "note", "payload": "same", "request_id": "x"},
        {"op": "record_event", "agent": "b", "task": "t", "kind": "note", "payload": "same", "request_id": "x"},
    ]
    for _ in range(2):  # and importing again changes nothing
        outcomes = list(import_lines(store, [json.dumps(line) for line in lines], project=project_id))
        assert all(not isinstance(o, Exception) for _, o in outcomes), outcomes
        events = [o.result.event for _, o in outcomes if o.op == "record_event"]
        assert [(e.seq, e.author) for e in events] == [(1, "a"), (2, "b")]


# -- no key without its event ------------------------------------------------------------


def _made(store: GraphStore) -> int:
    """How many keys were ever made (slots written, destroyed or not)."""
    return keys_of(store).path.stat().st_size // SLOT


def test_retries_of_redacted_and_deleted_writes_leave_no_key(store: GraphStore, project_id: str) -> None:
    keys = keys_of(store)
    history = ConversationHistory(store, project_id=project_id, agent_id="a")  # keeps its per-task hint
    retention = HistoryRetention(store, project_id=project_id, agent_id="s")
    history.create_task("t", goal="g")
    history.load_events("t", [{"kind": "note", "payload": f"SECRET {n}"} for n in range(3)])
    first = history.record_event("t", kind="message", payload="SECRET one", request_id="r1").event
    second = history.record_event("t", kind="message", payload="SECRET two", request_id="r2").event
    assert first is not None and second is not None
    assert retention.redact_event(str(first.id)).recorded

    def retries(name: str) -> list:
        return [
            h.record_event("t", kind="message", payload=f"SECRET {name}", request_id="r1" if name == "one" else "r2")
            for h in (history, ConversationHistory(store, project_id=project_id, agent_id="a"))  # hint, then none
        ]

    live, made = keys.live_keys(), _made(store)
    for again in retries("one"):  # the redacted write, retried by the fast path and by a unit
        assert again.recorded and again.event is not None and again.event.payload == REDACTED
    assert (keys.live_keys(), _made(store)) == (live, made)  # a replay seals nothing
    assert retention.delete_task("t").recorded
    live, made = keys.live_keys(), _made(store)
    for name in ("one", "two"):  # the deleted writes
        for again in retries(name):
            assert again.recorded and again.event is not None and again.event.payload == ""
    assert (keys.live_keys(), _made(store)) == (live, made)
    # writes that are refused after their keys were made: none is kept
    assert _code(history.record_event("t", kind="message", payload="no task")) == "task_not_found"
    with pytest.raises(ValueError, match="task_not_found"):
        history.load_events("t", [{"kind": "note", "payload": f"no task {n}"} for n in range(5)])
    assert keys.live_keys() == live
    # and a write that goes through keeps its key
    history.create_task("u", goal="g")
    assert history.record_event("u", kind="message", payload="kept").recorded
    assert history.load_events("u", [{"kind": "note", "payload": "kept too"}]) == 2
    assert keys.live_keys() == live + 2
    assert [e.payload for e in history.list_events("u").events] == ["kept", "kept too"]


def test_an_import_retried_after_a_redaction_and_a_deletion_leaves_no_key(store: GraphStore, project_id: str) -> None:
    lines = [json.dumps({"op": "create_task", "task": "t", "goal": "g"})] + [
        json.dumps({"op": "record_event", "task": "t", "kind": "note", "payload": f"SECRET {n}"}) for n in range(4)
    ]
    assert all(not isinstance(o, Exception) for _, o in import_lines(store, lines, project=project_id))
    retention = HistoryRetention(store, project_id=project_id, agent_id="s")
    assert retention.redact_event(c.event_id(c.task_id(project_id, "t"), 2)).recorded
    keys = keys_of(store)
    live, made = keys.live_keys(), _made(store)
    again = list(import_lines(store, lines, project=project_id))
    assert [o.result.event.seq for _, o in again if o.op == "record_event"] == [1, 2, 3, 4]
    assert (keys.live_keys(), _made(store)) == (live, made)
    assert retention.delete_task("t").recorded
    live, made = keys.live_keys(), _made(store)
    list(import_lines(store, lines[1:], project=project_id))
    assert (keys.live_keys(), _made(store)) == (live, made)


# -- a redacted body cannot be guessed through a replay ------------------------------------


def test_a_replay_of_a_redacted_or_deleted_write_tells_no_guess_from_another(
    store: GraphStore, project_id: str
) -> None:
    history = ConversationHistory(store, project_id=project_id, agent_id="a")
    retention = HistoryRetention(store, project_id=project_id, agent_id="s")
    history.create_task("t", goal="g")
    pin = "PIN " + uuid.uuid4().hex[:4]

    def replay(text: str) -> object:
        return history.record_event("t", kind="message", role="user", payload=text, request_id="r1")

    ev = replay(pin).event
    assert ev is not None
    assert _code(replay("PIN 0000")) == REUSED  # while the text is there, another text is another request
    assert retention.redact_event(str(ev.id)).recorded
    right, wrong = replay(pin), replay("PIN 0000")
    assert right == wrong and right.recorded and right.event.payload == REDACTED and right.event.seq == 1
    # the request record keeps nothing that a guess could be checked against
    sha = hashlib.sha256(pin.encode()).hexdigest()
    assert sha not in json.dumps(_requests(store, project_id))
    assert retention.delete_task("t").recorded
    right, wrong = replay(pin), replay("PIN 0000")
    assert right == wrong and right.recorded and right.event.payload == "" and right.event.payload_sha256 is None


def test_a_task_made_again_does_not_answer_a_retry_with_the_new_event(store: GraphStore, project_id: str) -> None:
    history = ConversationHistory(store, project_id=project_id, agent_id="a")
    history.create_task("t", goal="g")
    assert history.record_event("t", kind="note", payload="old", request_id="r1").recorded
    assert HistoryRetention(store, project_id=project_id, agent_id="s").delete_task("t").recorded
    other = ConversationHistory(store, project_id=project_id, agent_id="b")
    other.create_task("t", goal="g")
    assert other.record_event("t", kind="note", payload="NEW TEXT of b").event.seq == 1  # the same event id
    again = history.record_event("t", kind="note", payload="old", request_id="r1")
    assert again.recorded and again.event is not None
    assert (again.event.payload, again.event.author) == ("", "a")


# -- the Neo4j driver's logs -----------------------------------------------------------------


def test_no_log_record_holds_a_body_or_its_ciphertext_at_debug(
    store: GraphStore, project_id: str, caplog: pytest.LogCaptureFixture
) -> None:
    history = ConversationHistory(store, project_id=project_id, agent_id="a")
    history.create_task("t", goal="g")
    canary = "CANARY-" + uuid.uuid4().hex
    caplog.set_level(logging.DEBUG)
    for name in ("neo4j", "neo4j.io", "neo4j.pool"):
        caplog.set_level(logging.DEBUG, logger=name)
    history.record_event("t", kind="message", payload=canary, request_id="r1")
    history.record_event("t", kind="message", payload=canary + " again")
    history.load_events("t", [{"kind": "note", "payload": canary + " batch"}])
    assert [e.payload for e in history.list_events("t").events] == [canary, canary + " again", canary + " batch"]
    sealed = [
        r["ct"]
        for r in store.read(
            project_id, "MATCH (e:Event {task_id: $t}) RETURN e.payload_ct AS ct", {"t": c.task_id(project_id, "t")}
        )
    ]
    assert len(sealed) == 3
    logged = "\n".join(f"{r.name} {r.getMessage()}" for r in caplog.records)
    if store.backend == "neo4j":
        assert "C: RUN" in logged and "C: COMMIT" in logged  # the driver did log its messages
    assert canary not in logged
    for ct in sealed:
        assert ct not in logged and ct[:24] not in logged


def test_the_purge_removes_request_records_from_before_agents(store: GraphStore, project_id: str) -> None:
    history = ConversationHistory(store, project_id=project_id, agent_id="a")
    history.create_task("t", goal="g")
    assert history.record_event("t", kind="note", payload="new", request_id="r-new").recorded
    old = json.dumps({"recorded": True, "event": {"payload": "OLD BODY", "payload_sha256": "abc"}})
    store.write(
        project_id,
        "CREATE (:Request {project_id: $p, id: $id, request_id: 'r-old', fingerprint: 'f', result: $result})",
        {"p": project_id, "id": str(uuid.uuid4()), "result": old},
    )
    assert _scrub_requests(store, project_id) == 1
    assert [r["request_id"] for r in _requests(store, project_id)] == ["r-new"]
    assert _scrub_requests(store, project_id) == 0
