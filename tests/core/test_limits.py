"""Every field an agent or a person writes has a limit (``core.limits``), on
every backend: one character (or item) over it is refused with its code and
writes nothing; exactly at it is accepted. The payload is the seed's
exception: cut, never refused."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from core import limits as L
from core.decisions import DecisionTraces
from core.history import ConversationHistory
from core.knowledge import Graph
from core.models import RetentionErrorCode, WriteErrorCode
from core.models.knowledge import DocumentErrorCode
from core.retention import HistoryRetention
from core.traces_io import LineError, import_lines
from tests.core.test_decisions import World, world  # noqa: F401  (the shared fixture)

TOO_LONG = {WriteErrorCode.value_too_long, DocumentErrorCode.value_too_long, RetentionErrorCode.value_too_long}


def nodes(world: World) -> int:
    """Every node of the project: a refused write leaves the count alone."""
    return world.store.read(
        world.project_id, "MATCH (n) WHERE n.project_id = $p RETURN count(n) AS n", {"p": world.project_id}
    )[0]["n"]


def holds(world: World, write: Callable[[int], Any], limit: int, what: str) -> Any:
    """``write(n)`` with a value of ``limit + 1`` is refused ``value_too_long``
    and writes nothing; with ``limit`` it is recorded (its result returned)."""
    before = nodes(world)
    refused = write(limit + 1)
    assert (refused.recorded, refused.error in TOO_LONG) == (False, True), (what, refused.error)
    assert nodes(world) == before, what
    accepted = write(limit)
    assert accepted.recorded, (what, accepted.error)
    return accepted


def test_task_event_and_step_fields(world: World) -> None:
    h = world.history
    holds(world, lambda n: h.create_task("t" * n, goal="g"), L.TASK_NAME_MAX, "task name")
    holds(world, lambda n: h.create_task(f"goal-{n}", goal="g" * n), L.GOAL_MAX, "goal")
    event = holds(
        world, lambda n: h.record_event("pick-db", kind="message", role="r" * n, payload="p"), L.LABEL_MAX, "role"
    )
    assert event.event.role == "r" * L.LABEL_MAX
    holds(world, lambda n: h.record_event("pick-db", kind="tool_call", name="n" * n, payload="p"), L.LABEL_MAX, "name")
    step = holds(world, lambda n: h.set_step("pick-db", name="s" * n, state="not_started"), L.STEP_NAME_MAX, "step")
    assert step.step.name == "s" * L.STEP_NAME_MAX
    # the seed's payload rule: cut, not refused, whatever its size
    cut = h.record_event("pick-db", kind="note", payload="x" * (L.PAYLOAD_MAX * 30))
    assert cut.recorded and cut.event.truncated and len(cut.event.payload) == L.PAYLOAD_MAX


def test_a_task_name_only_looked_up_is_not_refused_for_its_length(world: World) -> None:
    long = "t" * (L.TASK_NAME_MAX * 50)
    assert world.history.record_event(long, kind="note", payload="p").error is WriteErrorCode.task_not_found
    assert world.retention.delete_task(long).error is RetentionErrorCode.task_not_found
    assert not world.history.get_task(long).found


def test_decision_fields(world: World) -> None:
    doc, got = world.cite("adr", "Postgres stays the system of record")

    def record(n: int, field: str, key: str | None = None) -> Any:
        args: dict[str, Any] = {"choice_key": key or f"{field}-{n}", "conclusion": "c", "rationale": "r"}
        if field == "assumption":
            args["assumptions"] = ["a" * n]
        elif field == "assumptions":
            args["assumptions"] = ["a"] * n
        elif field == "question":
            args["open_questions"] = ["q" * n]
        elif field == "questions":
            args["open_questions"] = ["q"] * n
        elif field == "fetched":
            args["fetched"] = [got] * n
        elif field in ("conclusion", "rationale"):
            args[field] = "x" * n
        return world.traces.record_decision("pick-db", supports=[doc], fetched=args.pop("fetched", [got]), **args)

    holds(world, lambda n: record(n, "key", "k" * n), L.CHOICE_KEY_MAX, "choice key")
    holds(world, lambda n: record(n, "conclusion"), L.CONCLUSION_MAX, "conclusion")
    holds(world, lambda n: record(n, "rationale"), L.RATIONALE_MAX, "rationale")
    holds(world, lambda n: record(n, "assumption"), L.ITEM_MAX, "an assumption")
    holds(world, lambda n: record(n, "assumptions"), L.ITEMS_MAX, "assumptions")
    holds(world, lambda n: record(n, "question"), L.ITEM_MAX, "an open question")
    holds(world, lambda n: record(n, "questions"), L.ITEMS_MAX, "open questions")
    holds(world, lambda n: record(n, "fetched"), L.FETCHED_MAX, "fetched")

    target = str(world.record("pick-db", "review-me", "Postgres").decision.id)
    t = world.traces
    holds(
        world,
        lambda n: t.supersede_decision(
            target, conclusion="c", rationale="r", explanation="e" * n, supports=[doc], fetched=[got]
        ),
        L.EXPLANATION_MAX,
        "supersede explanation",
    )
    target = str(world.record("pick-db", "reaffirm-me", "Postgres").decision.id)
    holds(world, lambda n: t.reaffirm_decision(target, explanation="e" * n), L.EXPLANATION_MAX, "reaffirm")
    holds(world, lambda n: t.reject_decision(target, reason="e" * n), L.EXPLANATION_MAX, "reject reason")


def test_a_cited_passage(world: World) -> None:
    text = "word " * (L.PASSAGE_MAX // 5 + 10)
    world.graph.add("long", text)

    def cite(n: int) -> Any:
        evidence = world.graph.span_evidence_id("long", 0, n)
        return world.traces.record_decision(
            "pick-db",
            choice_key=f"passage-{n}",
            conclusion="c",
            rationale="r",
            supports=[{"kind": "document", "evidence_id": evidence}],
            fetched=[world.graph.fetch(evidence)],
        )

    holds(world, cite, L.PASSAGE_MAX, "passage")


def test_document_key_and_text(world: World) -> None:
    g = world.graph
    holds(world, lambda n: g.add("k" * n, "text"), L.DOCUMENT_KEY_MAX, "document key")
    holds(world, lambda n: g.add(f"doc-{n}", "a" * n), L.DOCUMENT_MAX, "document text")
    holds(world, lambda n: g.update("adr", "b" * n), L.DOCUMENT_MAX, "document update")


def test_retention_reasons(world: World) -> None:
    r = world.retention
    eid = world.history.fetch_event("pick-db", 1).event.id
    holds(world, lambda n: r.redact_event(eid, reason="r" * n), L.EXPLANATION_MAX, "redaction reason")
    holds(world, lambda n: r.delete_task("billing", reason="r" * n), L.EXPLANATION_MAX, "deletion reason")


def test_project_and_agent_ids(world: World) -> None:
    store, pid = world.store, world.project_id
    holds(
        world,
        lambda n: ConversationHistory(store, project_id=pid, agent_id="a" * n).create_task(f"by-{n}", goal="g"),
        L.AGENT_ID_MAX,
        "agent id",
    )
    over = "p" * (L.PROJECT_ID_MAX + 1)
    count = "MATCH (n) RETURN count(n) AS n"
    try:
        services = (
            ConversationHistory(store, project_id=over, agent_id="a"),
            DecisionTraces(store, project_id=over, agent_id="a"),
            Graph(store, project_id=over, agent_id="a"),
        )
        before = store.read(over, count, {})[0]["n"]
        for result in (
            services[0].create_task("t", goal="g"),
            services[1].reject_decision("00000000-0000-0000-0000-000000000000", reason="r"),
            services[2].add("k", "t"),
        ):
            assert result.error in TOO_LONG
        assert store.read(over, count, {})[0]["n"] == before
    finally:
        store.drop_project(over)
    at = "p" * (L.PROJECT_ID_MAX - 8) + pid[-8:]
    try:
        assert ConversationHistory(store, project_id=at, agent_id="a").create_task("t", goal="g").recorded
        assert HistoryRetention(store, project_id=at, agent_id="a").delete_task("t").recorded
    finally:
        store.drop_project(at)


def test_the_importer_refuses_the_line_with_the_code_and_goes_on(world: World) -> None:
    lines = [
        '{"op": "create_task", "task": "%s", "goal": "g"}' % ("t" * (L.TASK_NAME_MAX + 1)),
        '{"op": "create_task", "task": "fine", "goal": "g"}',
        '{"op": "add_document", "key": "k", "text": "%s"}' % ("a" * (L.DOCUMENT_MAX + 1)),
        '{"op": "record_event", "task": "fine", "kind": "note", "name": "%s", "payload": "p"}' % ("n" * 101),
        '{"op": "record_event", "task": "fine", "kind": "note", "payload": "p"}',
    ]
    out = dict(import_lines(world.store, lines, project=world.project_id))
    assert [isinstance(out[n], LineError) and out[n].code for n in (1, 2, 3, 4, 5)] == [
        "value_too_long",
        False,
        "value_too_long",
        "value_too_long",
        False,
    ]
    assert world.history.get_task("fine").view.last_event_seq == 1
    assert world.graph.get_document("k") is None


def test_every_limit_is_in_the_docs() -> None:
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    for doc in ("docs/api.md", "docs/library.md"):
        text = root.joinpath(doc).read_text()
        for what, limit in L.TABLE.items():
            assert f"| {what} | {limit:,} |" in text, (doc, what)
