"""What the screen says is true (issue 15): one test per sentence that was
seen wrong, each through Django's test client on the dashboard's own store."""

from __future__ import annotations

import re
from typing import Any

from core import _common as c
from core.decisions import DecisionTraces
from core.history import ConversationHistory
from core.knowledge import Graph
from core.retention import HistoryRetention
from reviewer.store import get_store

from .conftest import Story


def services(story: Story, agent: str = "carol") -> tuple[DecisionTraces, ConversationHistory, Graph]:
    store = get_store()
    return (
        DecisionTraces(store, project_id=story.project, agent_id=agent),
        ConversationHistory(store, project_id=story.project, agent_id=agent),
        Graph(store, project_id=story.project, agent_id=agent),
    )


def cite(graph: Graph, key: str, passage: str) -> tuple[list[Any], list[Any]]:
    text = graph.current_text(key)
    start = text.index(passage)
    evidence = graph.span_evidence_id(key, start, start + len(passage))
    return [{"kind": "document", "evidence_id": evidence}], [graph.fetch(evidence)]


def section(body: str, start: str, end: str) -> str:
    return body.split(start, 1)[1].split(end, 1)[0]


def test_activity_and_overview_links_to_revision_2_open_revision_2(story: Story, as_: Any) -> None:
    traces, _, _ = services(story)
    new = traces.supersede_decision(
        story.changed,
        conclusion="A day",
        rationale="policy moved",
        explanation="The document says a day now.",
        supports=[{"kind": "event", "task_name": "choose-db", "seq": 1}],
        request_id="rev2",
    ).decision
    assert new is not None and new.revision == 2
    client = as_("viewer")
    for url in (f"/p/{story.project}/activity/", f"/p/{story.project}/"):
        body = client.get(url).content.decode()
        link = re.search(r'<a href="([^"]+)"\s*><bdi>pager: revision 2</bdi></a>', body)
        assert link, url
        assert link.group(1) == f"/p/{story.project}/decisions/{new.id}/", url
        assert "revision 2" in client.get(link.group(1)).content.decode()


def test_the_overview_says_as_many_decisions_read_unknown_as_its_counter(story: Story, as_: Any) -> None:
    traces, _, graph = services(story)
    graph.add("base", "The base rule holds.")
    graph.add("own", "Its own rule holds.")
    s, f = cite(graph, "base", "The base rule holds.")
    root = traces.record_decision(
        "on-call", choice_key="base", conclusion="base", rationale="r", supports=s, fetched=f
    ).decision
    s, f = cite(graph, "own", "Its own rule holds.")
    on_both = traces.record_decision(
        "on-call",
        choice_key="both",
        conclusion="both",
        rationale="r",
        fetched=f,
        supports=[*s, {"kind": "decision", "decision_id": str(root.id)}],
    ).decision
    traces.record_decision(
        "on-call",
        choice_key="below",
        conclusion="below",
        rationale="r",
        supports=[{"kind": "decision", "decision_id": str(root.id)}],
    )
    graph.update("own", "Its own rule changed.")  # "both" needs review for itself
    graph.update("base", "The base rule changed.")  # "base" flagged; "both" and "below" queued beneath it
    counts = traces.review_counts()
    assert counts["queued"] == 2 and counts["unknown"] == 1 and on_both is not None  # the two differ
    body = as_("viewer").get(f"/p/{story.project}/").content.decode()
    counter = re.search(r"<strong>(\d+)</strong> read unknown", body)
    sentence = re.search(r"Review is incomplete: (\d+) decision", body)
    assert counter and sentence
    assert sentence.group(1) == counter.group(1) == "1"


def test_counters_refresh_after_a_refused_action(story: Story, as_: Any) -> None:
    client = as_("reviewer")
    queue = client.get(f"/p/{story.project}/review/").content.decode()
    assert "<strong>2</strong> need review" in queue
    traces, _, _ = services(story)
    assert traces.reject_decision(story.changed, reason="duplicate", request_id="carol-1").recorded  # Carol first
    response = client.post(
        f"/p/{story.project}/review/{story.changed}/reject",
        {"request_id": "rita-1", "reason": "wrong", "cause": "document:oncall:2", "filters": ""},
        HTTP_HX_REQUEST="true",
    )
    body = response.content.decode()
    assert response.status_code == 200 and 'role="alert"' in body  # refused, and says who acted first
    assert "Nothing done: carol rejected it: duplicate." in body
    counts = section(body, '<div id="counts"', "</div>")
    assert 'hx-swap-oob="true"' in counts and "<strong>1</strong> needs review" in counts


def test_two_redactions_are_two_groups_each_naming_its_event(story: Story, as_: Any) -> None:
    traces, history, _ = services(story)
    history.record_event("choose-db", kind="message", role="user", payload="second")
    traces.record_decision(
        "choose-db",
        choice_key="second",
        conclusion="from #2",
        rationale="r",
        supports=[{"kind": "event", "task_name": "choose-db", "seq": 2}],
    )
    retention = HistoryRetention(get_store(), project_id=story.project, agent_id="dana")
    tid = c.task_id(story.project, "choose-db")
    assert retention.redact_event(c.event_id(tid, 1), reason="personal", request_id="red-1").recorded
    assert retention.redact_event(c.event_id(tid, 2), reason="personal", request_id="red-2").recorded
    body = as_("viewer").get(f"/p/{story.project}/review/").content.decode()
    heads = re.findall(r'<h2 class="cause"><bdi>([^<]*)</bdi>([^<]*)', body)
    heads = [label + rest for label, rest in heads]
    assert "Event #1 of choose-db redacted by dana " in heads
    assert "Event #2 of choose-db redacted by dana " in heads
    overview = as_("viewer").get(f"/p/{story.project}/").content.decode()
    assert "Event #1 of choose-db redacted by dana" in overview and "Event #2 of choose-db redacted by dana" in overview


def test_the_document_page_shows_each_citing_decisions_revision_and_status(story: Story, as_: Any) -> None:
    traces, _, graph = services(story)
    s, f = cite(graph, "oncall", "within a day")
    new = traces.supersede_decision(
        story.changed,
        conclusion="A day",
        rationale="r",
        explanation="changed",
        supports=s,
        fetched=f,
        request_id="doc-rev2",
    ).decision
    assert new is not None
    body = as_("viewer").get(f"/p/{story.project}/document/?key=oncall").content.decode()
    v2 = section(body, "Version 2", "Version 1")
    assert "revision 2" in v2 and '<span class="badge active">active</span>' in v2
    v1 = section(body, "Version 1", "Current text")
    assert "revision 1" in v1 and '<span class="badge superseded">superseded</span>' in v1


def test_a_decision_support_that_is_merely_flagged_is_not_badged_changed(story: Story, as_: Any) -> None:
    traces, _, _ = services(story)
    # "moved" is active and needs review (its document changed): nothing about it changed yet
    dependant = traces.record_decision(
        "on-call",
        choice_key="follows",
        conclusion="Follow it",
        rationale="r",
        supports=[{"kind": "decision", "decision_id": story.moved}],
    ).decision
    assert dependant is not None
    body = as_("viewer").get(f"/p/{story.project}/decisions/{dependant.id}/").content.decode()
    supports = section(body, "<h2>Supports</h2>", "</section>")
    assert "badge changed" not in supports
    assert '<span class="badge flagged">flagged</span>' in supports


def test_a_task_view_lists_an_unknown_decision_with_its_conclusion(story: Story, as_: Any) -> None:
    traces, _, graph = services(story)
    graph.add("rule", "The rule holds.")
    s, f = cite(graph, "rule", "The rule holds.")
    root = traces.record_decision(
        "choose-db", choice_key="rule", conclusion="rule", rationale="r", supports=s, fetched=f
    ).decision
    below = traces.record_decision(
        "on-call",
        choice_key="beneath",
        conclusion="Page the second line",
        rationale="r",
        supports=[{"kind": "decision", "decision_id": str(root.id)}],
    ).decision
    graph.update("rule", "The rule changed.")
    assert traces.get_decision(str(below.id)).decision.review_state.value == "unknown"
    body = as_("viewer").get(f"/p/{story.project}/task/?name=on-call").content.decode()
    review = section(body, "<h2>Need review</h2>", "<h2>Conflicts</h2>")
    assert "beneath" in review and "Page the second line" in review and "badge unknown" in review


def test_plurals(story: Story, as_: Any) -> None:
    overview = as_("viewer").get(f"/p/{story.project}/").content.decode()
    assert "<strong>1</strong> conflict group</a>" in overview
    assert "<strong>2</strong> need review</a>" in overview and "<strong>2</strong> open tasks</a>" in overview
    client = as_("steward")
    response = client.post(
        f"/p/{story.project}/task/delete",
        {"name": "choose-db", "reason": "done", "include_decisions": "on", "confirm": "on", "request_id": "del-1"},
        follow=True,
    )
    body = response.content.decode()
    assert "1 decision removed" in body, body[body.find("messages") :][:400]
    assert "decision(s)" not in body


def test_the_document_page_says_how_many_cite_each_version_and_pages_through_them(
    story: Story, as_: Any, monkeypatch: Any
) -> None:
    from core.review_views import ReviewViews

    monkeypatch.setattr(ReviewViews, "VERSION_CITERS", 2)
    monkeypatch.setattr(ReviewViews, "CITERS_PAGE", 2)
    traces, _, graph = services(story)
    keys = ["first", "second", "<script>alert('k')</script>"]
    for key in keys:
        s, f = cite(graph, "oncall", "within a day")
        assert traces.record_decision(
            "on-call", choice_key=key, conclusion="A day", rationale="r", supports=s, fetched=f
        )
    client = as_("viewer")
    page = f"/p/{story.project}/document/?key=oncall"
    body = client.get(page).content.decode()
    assert "<script>alert" not in body and "&lt;script&gt;alert(&#x27;k&#x27;)&lt;/script&gt;" in body
    v2 = section(body, "Version 2", "Version 1")
    assert re.sub(r"\s+", " ", v2).count("3 decisions cite this version now: the newest 2 shown.") == 1
    assert re.findall(r"<bdi>([^<]*)</bdi></a>", v2)[:2] == [
        "&lt;script&gt;alert(&#x27;k&#x27;)&lt;/script&gt;",
        "second",
    ]
    link = re.search(r'<a href="([^"]+)">All 3, 2 a page</a>', v2)
    assert link and link.group(1) == f"{page}&amp;version=2"
    v1 = section(body, "Version 1", "Current text")
    assert "1 decision cites this version now." in v1 and "All " not in v1 and "pager" in v1
    # the version's own pages, newest first, then the older ones
    first = client.get(f"{page}&version=2").content.decode()
    assert "Version 1" not in first and "Current text" not in first
    assert "3 decisions cite this version now, newest first: 2 shown." in re.sub(r"\s+", " ", first)
    older = re.search(r'<a rel="next" href="([^"]+)">Older 2 →</a>', first)
    assert older and "Newest" not in first
    rest = client.get(older.group(1).replace("&amp;", "&")).content.decode()
    assert re.findall(r"<bdi>([^<]*)</bdi></a>", rest)[:1] == ["first"] and "second" not in rest
    assert "older ones, 1 shown." in re.sub(r"\s+", " ", rest) and "Older 2" not in rest
    assert re.search(r'<a href="[^"]+version=2">Newest</a>', rest)
    assert client.get(f"{page}&version=9").status_code == 404
    assert client.get(f"{page}&version=x&before=y").status_code == 200  # read as no version
