"""The decision page shows what the core's read model decided: a chunk
support's passage (also once its document is gone), and the supersede form
keeps a passage where reaffirming would find it."""

from __future__ import annotations

from typing import Any

from django.utils.html import escape

from core.decisions import DecisionTraces
from core.history import ConversationHistory
from core.knowledge import Graph
from reviewer.store import get_store

from .conftest import Story

PASSAGE = "Orders stay on Postgres."
REST = "We review the choice every quarter."


def _services(story: Story) -> tuple[Graph, DecisionTraces]:
    store = get_store()
    ConversationHistory(store, project_id=story.project, agent_id="planner").create_task("pick", goal="Pick")
    return (
        Graph(store, project_id=story.project, agent_id="ingest"),
        DecisionTraces(store, project_id=story.project, agent_id="planner"),
    )


def test_a_chunk_support_shows_its_passage_after_its_document_is_deleted(story: Story, as_: Any) -> None:
    graph, traces = _services(story)
    graph.add("memo", "A memo that cites <b>itself</b>.")
    evidence = graph.chunk_evidence_ids("memo")[0]
    d = traces.record_decision(
        "pick",
        choice_key="memo",
        conclusion="c",
        rationale="r",
        supports=[{"kind": "document", "evidence_id": evidence}],
        fetched=[graph.fetch(evidence)],
    ).decision
    graph.delete("memo")
    page = as_("reviewer").get(f"/p/{story.project}/decisions/{d.id}/").content.decode()
    passage = escape("A memo that cites <b>itself</b>.")
    assert f'title="the passage as recorded"><bdi>{passage}</bdi></blockquote>' in page  # agent text isolated
    assert "The document was deleted." in page


def test_the_supersede_form_keeps_the_passage_nearest_where_it_was(story: Story, as_: Any) -> None:
    graph, traces = _services(story)
    text = f"A preface long enough to move.\n\n{PASSAGE}\n\n{REST}"
    graph.add("plan", text)
    start = text.index(PASSAGE)
    evidence = graph.span_evidence_id("plan", start, start + len(PASSAGE))
    d = traces.record_decision(
        "pick",
        choice_key="plan",
        conclusion="c",
        rationale="r",
        supports=[{"kind": "document", "evidence_id": evidence}],
        fetched=[graph.fetch(evidence)],
    ).decision
    new = f"{PASSAGE}\n\n{PASSAGE}\n\n{REST}"  # a copy first, the passage itself still near its old place
    graph.update("plan", new)
    nearest = graph.span_evidence_id("plan", new.rindex(PASSAGE), new.rindex(PASSAGE) + len(PASSAGE))
    first = graph.span_evidence_id("plan", 0, len(PASSAGE))
    page = as_("reviewer").get(f"/p/{story.project}/decisions/{d.id}/").content.decode()
    assert f'value="{nearest}"' in page and f'value="{first}"' not in page
    assert traces.reaffirm_decision(str(d.id)).recorded
    assert traces.get_decision(str(d.id)).decision.supports[0].evidence_id == nearest  # what reaffirming found


def test_an_error_page_inside_a_project_is_not_a_project_page(story: Story, as_: Any) -> None:
    """The project context comes from one context processor once access is
    checked; a 404 or 403 raised after that looks the same as anywhere."""
    client = as_("viewer")
    page = client.get(f"/p/{story.project}/decisions/{story.moved}/").content.decode()
    assert 'class="projectnav"' in page and "vera · viewer" in page
    missing = client.get(f"/p/{story.project}/decisions/00000000-0000-0000-0000-000000000000/")
    forbidden = client.get(f"/p/{story.project}/events/redact?event_id={story.event_id}")
    for response, status in ((missing, 404), (forbidden, 403)):
        assert response.status_code == status
        assert 'class="projectnav"' not in response.content.decode()


def test_the_decision_page_reads_each_cited_document_once(story: Story, as_: Any, monkeypatch: Any) -> None:
    """The review and the supersede choices show the same documents: one
    read of a document's state serves both (each is a round trip, which
    costs most on a networked store)."""
    store = get_store()
    reads: list[str] = []
    real = store.read

    def counted(project_id: str, query: str, params: Any = None) -> Any:
        reads.append(query)
        return real(project_id, query, params)

    monkeypatch.setattr(store, "read", counted)
    page = as_("reviewer").get(f"/p/{story.project}/decisions/{story.moved}/").content.decode()
    assert 'name="conclusion"' in page  # the supersede form is offered, so its choices were read
    state_reads = [q for q in reads if q.startswith("MATCH (d:Document {id: $id})") and "d.key AS key" in q]
    assert len(state_reads) == 1, state_reads
