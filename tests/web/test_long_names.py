"""A task whose name is longer than the limits allow (written before them)
stays reachable: every link to it names it by id, so no URL nears the
server's request line (gunicorn answers 414 past 4,094 bytes), and its
pages, its event log and its deletion work."""

from __future__ import annotations

import re
from html import unescape
from typing import Any

import pytest
from django.test import Client

from core import _common as c
from core import limits
from core.decisions import DecisionTraces
from core.history import ConversationHistory
from reviewer.store import get_store
from tests.web.conftest import Story, as_, people, story  # noqa: F401  (the dashboard's fixtures)

LONG = "legacy-" + "x" * 5_000
URL_BUDGET = 2_000  # bytes: far under gunicorn's 4,094-byte request line


def _links(html: str) -> list[str]:
    return [unescape(h) for h in re.findall(r'(?:href|action|hx-get|hx-post)="([^"]*)"', html)]


def _short_links(page: Any) -> list[str]:
    assert page.status_code == 200, page.status_code
    links = _links(page.content.decode())
    too_long = [h[:80] for h in links if len(h.encode()) > URL_BUDGET]
    assert not too_long, too_long
    return links


@pytest.fixture
def legacy(story: Story, monkeypatch: pytest.MonkeyPatch) -> str:
    """A task of a 5 kB name with an event and a flagged decision, written
    as before the limits (the limit lifted while it is written)."""
    store = get_store()
    with monkeypatch.context() as lifted:
        lifted.setattr(limits, "TASK_NAME_MAX", 10**6)
        history = ConversationHistory(store, project_id=story.project, agent_id="planner")
        assert history.create_task(LONG, goal="An old task").recorded
        assert history.record_event(LONG, kind="note", payload="an old note").recorded
    made = DecisionTraces(store, project_id=story.project, agent_id="planner").record_decision(
        LONG,
        choice_key="old",
        conclusion="kept",
        rationale="r",
        supports=[{"kind": "event", "task_name": LONG, "seq": 1}],
    )
    assert made.recorded, made.error
    return str(made.decision.id)


def test_a_task_with_a_five_kilobyte_name_is_reachable_by_id(story: Story, legacy: str, as_: Any) -> None:
    steward: Client = as_("steward")
    base = f"/p/{story.project}"
    tid = c.task_id(story.project, LONG)

    links = _short_links(steward.get(f"{base}/tasks/"))
    task_link = next(h for h in links if f"id={tid}" in h)
    task_page = steward.get(task_link)
    html = task_page.content.decode()
    assert "An old task" in html and LONG[:150] in html and LONG not in html  # its name clipped where shown
    links = _short_links(task_page)
    events_link = next(h for h in links if "/events/" in h and f"id={tid}" in h)
    events = steward.get(events_link)
    assert "an old note" in events.content.decode()
    _short_links(events)
    _short_links(steward.get(f"{base}/decisions/{legacy}/"))
    _short_links(steward.get(f"{base}/conflicts/"))

    delete_link = next(h for h in links if "/task/delete" in h)
    assert f"id={tid}" in delete_link
    _short_links(steward.get(delete_link))
    form = steward.get(delete_link).content.decode()
    rid = re.search(r'name="request_id" value="([^"]+)"', form).group(1)
    done = steward.post(
        delete_link,
        {"request_id": rid, "name": LONG[:1000], "reason": "old", "confirm": "on", "include_decisions": "on"},
    )
    assert done.status_code == 302, done.status_code
    assert not ConversationHistory(get_store(), project_id=story.project, agent_id="x").get_task(LONG).found
    assert steward.get(task_link).status_code == 404


def test_an_ordinary_name_keeps_its_readable_link(story: Story, as_: Any) -> None:
    links = _short_links(as_("viewer").get(f"/p/{story.project}/tasks/"))
    assert any(h.endswith("?name=choose-db") for h in links)
    assert as_("viewer").get(f"/p/{story.project}/task/?id=not-an-id").status_code == 404


def test_a_reason_over_its_limit_is_shown_beside_the_form_with_the_text_kept(story: Story, as_: Any) -> None:
    reviewer: Client = as_("reviewer")
    typed = "because " + "r" * limits.EXPLANATION_MAX
    page = reviewer.post(
        f"/p/{story.project}/decisions/{story.clear}/reject", {"request_id": "limits-1", "reason": typed}
    )
    assert page.status_code == 400
    html = page.content.decode()
    assert f"at most {limits.EXPLANATION_MAX} characters" in html  # (Django's message, beside the field)
    assert typed in html  # what the person typed is kept
    assert (
        DecisionTraces(get_store(), project_id=story.project, agent_id="x")
        .get_decision(story.clear)
        .decision.status.value
        == "active"
    )


def test_a_document_with_a_five_kilobyte_key_is_reachable_by_id(
    story: Story, as_: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from core._evidence import document_node_id
    from core.knowledge import Graph

    key = "legacy/" + "k" * 5_000
    graph = Graph(get_store(), project_id=story.project, agent_id="ingest")
    with monkeypatch.context() as lifted:
        lifted.setattr(limits, "DOCUMENT_KEY_MAX", 10**6)
        assert graph.add(key, "Old text that a decision cites.").recorded
    evidence = graph.span_evidence_id(key, 0, 8)
    made = DecisionTraces(get_store(), project_id=story.project, agent_id="planner").record_decision(
        "choose-db",
        choice_key="old-doc",
        conclusion="c",
        rationale="r",
        supports=[{"kind": "document", "evidence_id": evidence}],
        fetched=[graph.fetch(evidence)],
    )
    assert made.recorded, made.error
    viewer: Client = as_("viewer")
    links = _short_links(viewer.get(f"/p/{story.project}/decisions/{made.decision.id}/"))
    doc_link = next(h for h in links if "/document/" in h)
    assert f"id={document_node_id(story.project, key)}" in doc_link
    page = viewer.get(doc_link)
    assert "Old text that a decision cites." in page.content.decode()
    _short_links(page)
    assert viewer.get(f"/p/{story.project}/document/?id=00000000-0000-0000-0000-000000000000").status_code == 404
