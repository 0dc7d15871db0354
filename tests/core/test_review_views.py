"""The read models the review screens show (core/review_views.py), the root
cause format (core/_causes.py) and the one review loop (core/review_sweep.py),
on every backend."""

from __future__ import annotations

import uuid

import pytest

from core import _causes
from core.decisions import DecisionTraces
from core.history import ConversationHistory
from core.knowledge import Graph
from core.models import ReviewState
from core.retention import HistoryRetention
from core.review_sweep import review_until_done
from core.review_views import ReviewViews, describe_cause
from core.stores import GraphStore

from .test_decisions import ADR, World, dep, state

PASSAGE = "Postgres stays the system of record"


@pytest.fixture
def world(store: GraphStore, project_id: str) -> World:
    """The world of test_decisions: a task with one event, and the ADR."""
    w = World(
        store,
        project_id,
        ConversationHistory(store, project_id=project_id, agent_id="planner"),
        Graph(store, project_id=project_id, agent_id="ingest"),
        DecisionTraces(store, project_id=project_id, agent_id="planner"),
        HistoryRetention(store, project_id=project_id, agent_id="steward"),
    )
    w.history.create_task("pick-db", goal="Choose the database")
    w.history.create_task("billing", goal="Own the billing service")
    w.history.record_event("pick-db", kind="message", role="user", payload="Which database?")
    w.graph.add("adr", ADR)
    return w


def views(w: World) -> ReviewViews:
    return ReviewViews(w.store, project_id=w.project_id)


def chunk_support(w: World, index: int) -> tuple[dict[str, str], object]:
    evidence = w.graph.chunk_evidence_ids("adr")[index]
    got = w.graph.fetch(evidence)
    assert got.text
    return {"kind": "document", "evidence_id": evidence}, got


def test_a_chunk_support_shows_its_passage_even_once_the_document_is_deleted(world: World) -> None:
    s, got = chunk_support(world, 0)
    d = world.record("pick-db", "db", "Postgres", supports=[s], fetched=[got]).decision
    assert [(v.state, v.passage) for v in views(world).decision_review(d).supports] == [("current", got.text)]
    world.graph.delete("adr")
    d = world.traces.get_decision(str(d.id)).decision
    [v] = views(world).decision_review(d).supports
    assert (v.state, v.passage, v.kind, v.document_key) == ("removed", got.text, "document", "adr")
    assert views(world).support_choices(d) == []  # a deleted document is not offered


def test_a_chunk_support_is_offered_at_the_current_text_after_a_change(world: World) -> None:
    s, got = chunk_support(world, 0)
    d = world.record("pick-db", "db", "Postgres", supports=[s], fetched=[got]).decision
    world.graph.update("adr", "Preface added.\n\n" + ADR)
    d = world.traces.get_decision(str(d.id)).decision
    review = views(world).decision_review(d)
    [v] = review.supports
    assert v.state == "moved" and v.passage == got.text and v.current_version == 2
    assert v.recorded_text == ADR and v.current_text == "Preface added.\n\n" + ADR
    assert review.can_reaffirm
    [choice] = review.choices
    again = world.graph.fetch(choice.token)
    assert (again.text, again.activation_seq, choice.passage) == (got.text, 2, got.text)


def test_supersede_choices_find_a_passage_where_reaffirming_does(world: World) -> None:
    """The passage appears twice in the new text, first at the very start:
    the choice cites the copy nearest the old place (not the first one), the
    same one reaffirming records."""
    d = world.record("pick-db", "db", "Postgres").decision
    new = f"{PASSAGE}.\n\n" + ADR.split("\n\n", 1)[1]
    world.graph.update("adr", new)
    d = world.traces.get_decision(str(d.id)).decision
    [choice] = views(world).support_choices(d)
    assert world.as_("alice").reaffirm_decision(str(d.id)).recorded
    reaffirmed = world.traces.get_decision(str(d.id)).decision.supports[0]
    assert choice.token == reaffirmed.evidence_id
    assert world.graph.fetch(choice.token).char_start == new.rindex(PASSAGE) > 0


def test_a_changed_passage_is_not_offered_and_blocks_reaffirming(world: World) -> None:
    d = world.record("pick-db", "db", "Postgres").decision
    world.graph.update("adr", ADR.replace("Postgres", "MySQL"))
    d = world.traces.get_decision(str(d.id)).decision
    review = views(world).decision_review(d)
    assert [v.state for v in review.supports] == ["changed"] and not review.can_reaffirm
    assert review.choices == []
    assert not world.as_("alice").reaffirm_decision(str(d.id)).recorded  # the core agrees


def test_event_and_decision_supports_show_their_state(world: World) -> None:
    base = world.record("pick-db", "base", "Postgres").decision
    d = world.record(
        "billing",
        "db",
        "Billing on Postgres",
        supports=[{"kind": "event", "task_name": "pick-db", "seq": 1}, dep(base)],
    ).decision
    review = views(world).decision_review(d)
    assert [v.state for v in review.supports] == ["current", "current"]
    assert review.supports[0].event.payload == "Which database?" and review.supports[1].decision.id == base.id
    assert [x.id for x in review.depends_on] == [base.id]
    assert [c.token for c in review.choices] == ["event pick-db 1", f"decision {base.id}"]
    event_id = review.supports[0].event.id
    assert world.retention.redact_event(str(event_id), reason="pii").recorded
    world.traces.reject_decision(str(base.id), reason="no")
    review = views(world).decision_review(world.traces.get_decision(str(d.id)).decision)
    assert [v.state for v in review.supports] == ["redacted", "changed"]


def test_the_queue_page_groups_by_root_cause_and_ignores_unknown_filters(world: World) -> None:
    a = world.record("pick-db", "a", "Postgres").decision
    b = world.record("billing", "b", "Postgres too").decision
    world.graph.update("adr", "Preface.\n\n" + ADR)
    page = views(world).queue_page(reason="nonsense", state="clear", page_size=20)
    assert page.filters == {} and page.result.count == 2 and page.pages == 1
    assert [(key, sorted(str(d.id) for d in ds)) for key, ds in page.groups] == [
        ("document:adr:2", sorted([str(a.id), str(b.id)]))
    ]
    assert page.counts["needs_review"] == 2
    # each card's row, read with the page, carries the root cause it is grouped under
    assert {i: (r["root_cause"], r["cause"]) for i, r in page.review_rows.items()} == {
        str(a.id): ("document:adr:2", "document:adr:2"),
        str(b.id): ("document:adr:2", "document:adr:2"),
    }
    one = views(world).queue_page(cause="document:adr:2", page=2, page_size=1)
    assert (one.page, one.pages, one.filters, len(one.result.decisions)) == (2, 2, {"cause": "document:adr:2"}, 1)


def test_a_page_of_the_queue_reads_its_counters_and_group_sizes_with_its_page(world: World) -> None:
    """The whole queue's page: its decisions, the counters and each group's
    size, as the separate reads give them, in at most three round trips (two
    on Neo4j, whose page needs no count first); and past its end, empty with
    the queue's count."""
    from .test_query_plans import Recording

    world.record("pick-db", "a", "Postgres")
    b = world.record("billing", "b", "Postgres too").decision
    world.graph.update("adr", "Preface.\n\n" + ADR)
    world.record("billing", "c", "Kafka", supports=[dep(b)])
    views(world).queue_page(page_size=1)  # a queue never counted is counted first (kept from then on)
    recording = Recording(world.store)
    page = ReviewViews(recording, project_id=world.project_id, agent_id="r").queue_page(page_size=1)  # type: ignore[arg-type]
    assert len(recording.reads) <= (2 if world.store.backend == "neo4j" else 3)
    v = views(world)
    assert page.counts == v.traces.review_counts()
    assert (page.result.count, page.pages, page.result.truncated) == (
        page.counts["needs_review"] + page.counts["unknown"],
        page.result.count,
        True,
    )
    [(cause, [first])] = page.groups
    assert page.sizes == v.group_sizes([cause]) and page.sizes[cause] >= 1
    assert page.review_rows[str(first.id)]["root_cause"] == cause
    assert str(first.id) in [str(i.decision.id) for i in v.group_review(cause).items]  # the group holds it
    # the cards' actions from the rows the page read, as from reading the decisions again
    recording.reads.clear()
    reading = ReviewViews(recording, project_id=world.project_id, agent_id="r")  # type: ignore[arg-type]
    actions = reading.review_actions_many(page.result.decisions, rows=page.review_rows)
    assert not [q for q, _ in recording.reads if "MATCH (d:Decision {id: id})" in q]
    assert actions == v.review_actions_many(page.result.decisions)
    # one task's: its kept count, in as many round trips
    views(world).queue_page(task="billing", page_size=1)
    recording.reads.clear()
    task = ReviewViews(recording, project_id=world.project_id, agent_id="r").queue_page(task="billing", page_size=1)  # type: ignore[arg-type]
    assert len(recording.reads) <= (2 if world.store.backend == "neo4j" else 4)
    everything = v.traces.list_decisions_for_review("billing", limit=100)
    assert task.result.count == everything.count == len(everything.decisions) == 2 and task.result.truncated
    assert [d.id for d in task.result.decisions] == [everything.decisions[0].id] and task.pages == 2
    beyond = v.queue_page(page=50, page_size=1)
    assert (beyond.result.decisions, beyond.result.count, beyond.result.truncated) == ([], page.result.count, False)
    assert beyond.groups == [] and beyond.sizes == {}
    # the overview's counters and largest causes, one round trip, as the separate reads give them
    recording.reads.clear()
    summary = ReviewViews(recording, project_id=world.project_id, agent_id="r").traces.review_summary(causes=10)  # type: ignore[arg-type]
    assert len(recording.reads) == 1
    assert summary == (v.traces.review_counts(), v.traces.review_root_causes(limit=10))


def test_the_document_page_lists_who_cites_each_version(world: World) -> None:
    d = world.record("pick-db", "db", "Postgres").decision
    assert views(world).document_page("nope") is None and views(world).document_page("") is None
    world.graph.update("adr", "Preface.\n\n" + ADR)
    page = views(world).document_page("adr")
    assert [s.version.activation_seq for s in page.versions] == [2, 1]
    assert [[c.id for c in s.citing] for s in page.versions] == [[], [str(d.id)]]
    assert [(s.count, s.older) for s in page.versions] == [(0, None), (1, None)]
    assert page.versions[1].citing[0].state == ReviewState.needs_review.value
    assert page.text == "Preface.\n\n" + ADR
    world.graph.delete("adr")
    assert views(world).document_page("adr").text is None


def test_the_redaction_preview_finds_an_event_of_this_project_only(world: World) -> None:
    event = world.history.fetch_event("pick-db", 1).event
    preview = views(world).redaction_preview(str(event.id).upper())
    assert (preview.task_name, preview.seq, preview.event.payload) == ("pick-db", 1, "Which database?")
    assert views(world).redaction_preview("not-a-uuid") is None
    assert views(world).redaction_preview(str(uuid.uuid4())) is None
    other = ReviewViews(world.store, project_id=world.project_id + "-other")
    assert other.redaction_preview(str(event.id)) is None


def test_every_root_cause_the_core_writes_reads_as_a_sentence(world: World) -> None:
    d = world.record("pick-db", "db", "Postgres").decision
    world.graph.update("adr", "Preface.\n\n" + ADR)
    [(written, _n)] = world.traces.review_root_causes()
    assert written == _causes.document_cause("adr", 2)
    assert describe_cause(written) == "Document “adr” changed (version 2)"
    assert describe_cause(_causes.document_cause("a:b", 3)) == "Document “a:b” changed (version 3)"
    assert describe_cause(_causes.document_deleted_cause("a:b", 3)) == "Document “a:b” was deleted"
    assert describe_cause(_causes.deletion_cause("t")) == "Task “t” was deleted"
    assert describe_cause(_causes.redaction_cause(d.id)) == "An event was redacted"
    assert describe_cause(_causes.superseded_cause(d.id)) == "A decision it depends on was superseded"
    assert describe_cause(_causes.rejected_cause(d.id)) == "A decision it depends on was rejected"
    assert describe_cause(_causes.recording_cause(d.id)) == "Flagged when it was recorded"
    assert describe_cause("") == describe_cause("what:ever") == "Other"


def test_review_until_done_spreads_a_flag_down_a_chain(world: World) -> None:
    chain = [world.record("pick-db", "c0", "Postgres").decision]
    for i in range(1, 4):
        chain.append(world.record("billing", f"c{i}", f"step {i}", supports=[dep(chain[-1])]).decision)
    world.graph.update("adr", ADR.replace("Postgres", "MySQL"))
    first = review_until_done(world.traces, max_steps=1)
    assert (first.steps, first.done) == (1, False) and first.moved == 1
    run = review_until_done(world.traces)
    assert run.done and run.flagged == 2 and run.cleared == 0
    assert [state(world, d)[1] for d in chain] == [ReviewState.needs_review] * 4
    assert world.traces.review_counts()["queued"] == 0
    assert review_until_done(world.traces) == review_until_done(world.traces, max_moved=5)
    assert review_until_done(world.traces).model_dump() == {
        "moved": 0,
        "flagged": 0,
        "cleared": 0,
        "steps": 1,
        "sources_flagged": 0,
        "done": True,
    }


def test_review_until_done_stops_after_max_moved(world: World) -> None:
    base = world.record("pick-db", "base", "Postgres").decision
    for i in range(5):
        world.record("billing", f"d{i}", f"step {i}", supports=[dep(base)])
    world.graph.update("adr", ADR.replace("Postgres", "MySQL"))
    run = review_until_done(world.traces, max_moved=3)
    assert (run.moved, run.done) == (3, False)
    assert world.traces.review_counts()["queued"] == 2
    assert review_until_done(world.traces).moved == 2


def test_a_root_cause_group_counts_the_decisions_still_in_the_queue(world: World) -> None:
    """The queue's group sizes: a decision that leaves the queue (reaffirmed,
    rejected, superseded) no longer counts in its group."""
    made = [world.record(t, f"k{i}", "Postgres").decision for i, t in enumerate(["pick-db", "billing", "pick-db"])]
    world.graph.update("adr", "Preface.\n\n" + ADR)  # the passage moved: all three flagged
    [(cause, n)] = world.traces.review_root_causes()
    assert n == 3
    assert views(world).group_sizes([cause, "nothing:here"]) == {cause: 3, "nothing:here": 0}
    assert world.traces.reaffirm_decision(str(made[0].id), explanation="still holds").recorded
    assert world.traces.reject_decision(str(made[1].id), reason="wrong").recorded
    assert views(world).group_sizes([cause]) == {cause: 1}
    assert world.traces.review_root_causes() == [(cause, 1)]
