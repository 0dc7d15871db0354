"""The task view and the decision page read what they show once (issue 18):
on Neo4j every statement is a round trip of a few milliseconds, so a read
model that reads the same node twice, or in two statements what one can
carry, makes the page slower. These count the statements each read model
sends, on every backend, and check what they answer."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from core.decisions import DecisionTraces
from core.history import ConversationHistory
from core.review_views import ReviewViews
from core.stores import GraphStore

from .test_citations import kept_right
from .test_concurrency import _direct
from .test_decisions import ADR, World, dep
from .test_review_views import world  # noqa: F401  (the fixture)

EVENT = {"kind": "event", "task_name": "pick-db", "seq": 1}


class Counting:
    """The store, keeping every read statement sent through it."""

    def __init__(self, store: GraphStore) -> None:
        self._store = store
        self.reads: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def read(self, project_id: str, query: str, params: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
        self.reads.append(query)
        return self._store.read(project_id, query, params)

    def transact(self, project_id: str, work: Any, **kwargs: Any) -> Any:
        """A unit whose reads are kept too."""

        def counted(tx: Any) -> Any:
            run = tx._run_read

            def read(query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
                self.reads.append(query)
                return run(query, params)

            tx._run_read = read
            return work(tx)

        return self._store.transact(project_id, counted, **kwargs)

    def reading(self, text: str) -> list[str]:
        return [q for q in self.reads if text in q]


def test_the_task_view_reads_its_counters_once(world: World) -> None:
    flagged = world.record("pick-db", "db", "Postgres").decision
    world.record("pick-db", "cache", "Redis", supports=[EVENT])
    world.record("billing", "db", "MySQL", supports=[EVENT])  # a conflict with pick-db's "db"
    world.graph.update("adr", ADR.replace("Postgres stays", "MySQL stays"))  # flags pick-db's "db"
    world.history.get_task("pick-db")  # the first read counts what was never counted
    counting = Counting(world.store)
    history = ConversationHistory(counting, project_id=world.project_id, agent_id="reviewer")  # type: ignore[arg-type]
    view = history.get_task("pick-db").view
    assert view is not None
    assert view.decision_count == 2 and [d.choice_key for d in view.decisions] == ["cache", "db"]
    assert [d.id for d in view.review_decisions] == [flagged.id]
    assert [g.choice_key for g in view.conflicts] == ["db"] and len(view.conflicts[0].decisions) == 2
    # the task's kept counters and the project's count of conflicts come
    # with the task itself: no statement of their own, and none twice
    assert len(counting.reading("TaskDecisions")) == 1, counting.reads
    assert len(counting.reading("ReviewQueue")) == 1, counting.reads
    assert counting.reading("TaskDecisions") == counting.reading("MATCH (t:Task {id: $id})")
    # the task, its newest active decisions, its part of the queue, its
    # conflicts' keys and their decisions (FalkorDB reads the keys from its
    # kept buckets: whether they are kept, then the walk)
    assert len(counting.reads) <= (6 if world.store.graph_per_project else 5), counting.reads


def test_the_task_view_of_a_task_without_decisions_reads_the_task_alone(world: World) -> None:
    counting = Counting(world.store)
    history = ConversationHistory(counting, project_id=world.project_id, agent_id="reviewer")  # type: ignore[arg-type]
    view = history.get_task("billing").view
    assert view is not None and view.decision_count == 0 and view.conflicts == []
    assert len(counting.reads) == 1, counting.reads


def test_the_decision_page_reads_the_decision_and_each_document_once(world: World) -> None:
    d = world.record("pick-db", "db", "Postgres").decision
    world.graph.update("adr", ADR.replace("Postgres stays", "MySQL stays"))
    counting = Counting(world.store)
    views = ReviewViews(counting, project_id=world.project_id)  # type: ignore[arg-type]
    review = views.decision_review_of(str(d.id))
    assert review is not None and review.decision.id == d.id
    assert review.actions.blocked == ["the cited passage of adr changed: Postgres → MySQL"]
    assert review.actions.cause == "document:adr:2"
    assert [s.state for s in review.supports] == ["changed"] and review.supports[0].current_version == 2
    assert [r.decision.id for r in review.revisions] == [d.id]
    # the decision once, with what its actions need (not again for its
    # revisions, nor for its review bookkeeping), the cited document once
    assert (
        len(counting.reading("MATCH (d:Decision {id:")) + len(counting.reading("UNWIND $ids AS id MATCH (d:Decision"))
        == 1
    )
    assert len(counting.reading(":Document {id:")) == 1, counting.reads
    # the decision with its support history, revisions and dependants; the
    # document; both versions' texts
    assert len(counting.reads) <= 3, counting.reads
    # the same review from a decision already read
    assert views.decision_review(d).actions == review.actions
    assert views.decision_review_of("not-an-id") is None
    assert views.decision_review_of("00000000-0000-4000-8000-000000000000") is None


def test_the_decision_page_read_in_one_round_trip_is_the_one_read_part_by_part(world: World) -> None:
    """Revisions, dependants (newest first, at most 50 each) and support
    history (a page of 50) read with the decision answer as their own
    reads do, for a decision with each and for one with none."""
    base = world.record("pick-db", "base", "Postgres").decision
    for n in range(3):
        world.record("billing", f"uses-{n}", "on base", supports=[dep(base), EVENT])
    doc, got = world.cite("adr", "Postgres stays the system of record")
    new = world.traces.supersede_decision(
        str(base.id), conclusion="Postgres 16", rationale="r", explanation="newer", supports=[doc], fetched=[got]
    ).decision
    assert new is not None
    world.traces.reject_decision(str(new.id), reason="not yet")
    bare = world.record("billing", "bare", "nothing cited", supports=[EVENT]).decision
    views = ReviewViews(world.store, project_id=world.project_id)
    for d in (base, new, bare):
        one = views.decision_review_of(d.id)  # a UUID as the page's URL gives it
        assert one is not None
        parts = views.decision_review(world.traces.get_decision(str(d.id)).decision)
        assert one == parts
        assert one.history == world.traces.list_support_history(str(d.id), limit=50)
        assert one.revisions == world.traces.list_revisions(str(d.id))
        assert one.dependants == world.traces.list_dependants(str(d.id))
    review = views.decision_review_of(base.id)
    assert [r.decision.revision for r in review.revisions] == [1, 2] and review.revisions[1].explanation == "newer"
    assert len(review.dependants) == 3 and len(review.history.supports) == len(base.supports)
    assert views.decision_review_of(new.id).actions.settled.startswith("planner rejected this")
    assert views.decision_review_of(bare.id).dependants == []


def test_a_page_of_events_is_one_round_trip(world: World) -> None:
    """The supersede form's task log (and the events page): the task and
    its page of events in one statement, as exact as before."""
    for n in range(4):
        world.history.record_event("pick-db", kind="message", role="user", payload=f"message {n}")
    counting = Counting(world.store)
    history = ConversationHistory(counting, project_id=world.project_id, agent_id="reviewer")  # type: ignore[arg-type]
    page = history.list_events("pick-db", limit=3)
    assert len(counting.reads) == 1, counting.reads
    assert [e.seq for e in page.events] == [1, 2, 3] and page.truncated and page.next_after_seq == 3
    assert page.events[0].payload == "Which database?"
    rest = history.list_events("pick-db", after_seq=3, limit=3)
    assert [e.payload for e in rest.events] == ["message 2", "message 3"] and not rest.truncated
    assert rest.events == [history.fetch_event("pick-db", s).event for s in (4, 5)]
    assert (
        history.list_events("pick-db", after_seq=5).found and history.list_events("pick-db", after_seq=5).events == []
    )
    assert not history.list_events("no-such-task").found
    assert history.list_events("billing").found and history.list_events("billing").events == []


def test_a_review_action_reads_its_decision_and_each_cited_version_once(world: World) -> None:
    """A reaffirmation counts the decision it read first (the kept counters
    need no second read of it) and numbers its new citation from the
    versions it read to confirm the passage; a rejection counts it too."""
    d = world.record("pick-db", "db", "Postgres").decision
    other = world.record("billing", "db", "Postgres", supports=[EVENT]).decision
    world.graph.update("adr", ADR + " Amended.")  # flags d; its passage still stands
    counting = Counting(world.store)
    traces = DecisionTraces(counting, project_id=world.project_id, agent_id="reviewer")  # type: ignore[arg-type]
    reaffirmed = traces.reaffirm_decision(str(d.id))
    assert reaffirmed.recorded, reaffirmed.error
    assert len(counting.reading("MATCH (d:Decision")) == 1, counting.reads
    assert len(counting.reading(":DocVersion")) == 1, counting.reads
    counting.reads.clear()
    assert traces.reject_decision(str(other.id), reason="not needed").recorded
    assert len(counting.reading("MATCH (d:Decision {id: id})")) == 0, counting.reads
    # what they counted and numbered is what a direct count finds
    assert world.traces.review_counts()["needs_review"] == _direct(world.store, world.project_id)["needs_review"] == 0
    kept_right(world)


def test_the_supersede_forms_passage_reads_its_document_and_both_texts_at_once(world: World) -> None:
    """Each cited document, its current text and the recorded one, for the
    supersede form (and its post): one statement, the same choices."""
    d = world.record("pick-db", "db", "Postgres").decision
    world.graph.update("adr", "Preface.\n\n" + ADR)
    d = world.traces.get_decision(str(d.id)).decision
    counting = Counting(world.store)
    views = ReviewViews(counting, project_id=world.project_id, agent_id="reviewer")  # type: ignore[arg-type]
    [pick] = views.supersede_choices(d).documents
    assert (pick.state, pick.version, pick.text) == ("moved", 2, "Preface.\n\n" + ADR)
    assert pick.passage == pick.candidate and pick.candidate in ADR
    assert len(counting.reading("DocVersion")) == 1, counting.reads
    assert len(counting.reading(":Document {id:")) == 1, counting.reads
    assert views.supersede_choices(d) == ReviewViews(world.store, project_id=world.project_id).supersede_choices(d)
    # the decision page: its review and its supersede form read the document once between them
    counting.reads.clear()
    with views.remembering():
        review = views.decision_review(d)
        [again] = views.supersede_choices(d).documents
    assert review.supports[0].current_version == again.version == 2
    assert len(counting.reading(":Document {id:")) == 1, counting.reads
