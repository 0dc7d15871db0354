"""The activity page's filters (person, action, task, decision, dates), its
downloads (CSV, JSON Lines: every row of the filter, injection-safe), the
team's progress on the overview and the people page, for every role."""

from __future__ import annotations

import csv
import io
import json
import re
import uuid
from datetime import timedelta
from typing import Any

from django.test import Client
from django.utils import timezone

from core import _common as c
from core import _review
from core.decisions import DecisionTraces
from reviewer.store import get_store
from tests.web.conftest import Story

HOSTILE = '=HYPERLINK("http://x")<script>alert(1)</script>'


def entry(story: Story, actor: str, action: str, target: str, summary: str, *, days_ago: int = 0) -> None:
    """An entry as a team action writes it (``log_activity``, in a unit)."""
    at = c.iso(timezone.now() - timedelta(days=days_ago))
    get_store().transact(
        story.project,
        lambda tx: _review.log_activity(
            tx, story.project, actor, action, "decision", target, summary, None, at, actor_kind="person"
        ),
    )


def rows(page: str) -> list[str]:
    return [r for r in re.findall(r"<tr>(.*?)</tr>", page, re.S) if "data-label" in r]


def test_the_filters_combine_and_the_next_page_keeps_them(story: Story, as_: Any) -> None:
    assert (
        as_("reviewer")
        .post(f"/p/{story.project}/decisions/{story.moved}/reaffirm", {"request_id": "a1", "explanation": "checked"})
        .status_code
        == 302
    )
    entry(story, "stan", "claim", story.changed, "claimed One hour")
    entry(story, "stan", "comment", story.changed, "commented on One hour", days_ago=3)
    base = f"/p/{story.project}/activity/"
    viewer = as_("viewer")

    def found(**query: str) -> list[str]:
        response = viewer.get(base, query)
        assert response.status_code == 200, response.content[:500]
        return [
            re.search(r'data-label="What">\s*([\w ]+)', r).group(1).strip() for r in rows(response.content.decode())
        ]

    assert sorted(found()) == ["claim", "comment", "reaffirm"]
    assert found(actor="rita") == ["reaffirm"]
    assert found(action="claim") == ["claim"]
    assert found(task="on-call") == ["claim", "comment"] and found(task="choose-db") == ["reaffirm"]
    assert found(decision=story.changed) == ["claim", "comment"]
    today = timezone.localdate().isoformat()
    assert sorted(found(since=today, until=today)) == ["claim", "reaffirm"]
    before = (timezone.localdate() - timedelta(days=1)).isoformat()
    assert found(until=before) == ["comment"]
    assert found(actor="stan", task="on-call", since=today) == ["claim"]
    assert found(actor="nobody") == []
    # the offered actions include the team's
    page = viewer.get(base).content.decode()
    assert all(f'<option value="{a}">' in page for a in ("claim", "take_over", "comment_redact", "reaffirm"))
    # more than a page: the next link keeps the filter and goes on where the page ended
    for n in range(52):
        entry(story, "stan", "claim", story.changed, f"claim {n}")
    first = viewer.get(base, {"actor": "stan", "action": "claim"}).content.decode()
    assert len(rows(first)) == 50
    nxt = re.search(r'href="(\?[^"]+)" rel="next"', first).group(1).replace("&amp;", "&")
    assert "actor=stan" in nxt and "action=claim" in nxt
    second = viewer.get(base + nxt).content.decode()
    assert len(rows(second)) == 3 and "claimed One hour" in rows(second)[-1]  # the oldest claim last


def test_bad_filter_values_are_shown_beside_the_form_with_what_was_typed(story: Story, as_: Any) -> None:
    viewer = as_("viewer")
    bad = {
        "action": "bogus<b>",
        "decision": "not-a-uuid",
        "since": "2026-13-01",
        "task": "t" * 5_000,  # hostile: cut to 1,000 and refused as too long
        "actor": "x" * 100_000,
    }
    response = viewer.get(f"/p/{story.project}/activity/", bad)
    assert response.status_code == 400
    page = response.content.decode()
    assert "Not an action the log records" in page and "Enter a valid UUID" in page
    assert "Enter a valid date" in page and "at most 100 characters" in page
    assert 'value="bogus&lt;b&gt;"' in page and 'value="not-a-uuid"' in page and "<b>" not in page
    assert 'value="' + "t" * 1_000 + '"' in page and "x" * 1_001 not in page
    assert len(page) < 40_000  # the hostile input is cut, not echoed whole
    order = viewer.get(f"/p/{story.project}/activity/", {"since": "2026-05-02", "until": "2026-05-01"})
    assert order.status_code == 400 and "“To” is before “From”" in order.content.decode()
    # a download of a bad filter says why, and streams nothing
    refused = viewer.get(f"/p/{story.project}/activity/download.csv", {"decision": "nope"})
    assert refused.status_code == 400 and b"decision" in refused.content


def _download(client: Client, story: Story, fmt: str, **query: str) -> tuple[Any, str]:
    response = client.get(f"/p/{story.project}/activity/download.{fmt}", query)
    assert response.status_code == 200 and response.streaming
    return response, b"".join(response.streaming_content).decode()


def test_downloads_hold_every_row_of_the_filter_and_neutralise_formulas(story: Story, as_: Any) -> None:
    script = DecisionTraces(get_store(), project_id=story.project, agent_id=HOSTILE)
    assert script.reject_decision(story.xss, reason="+SUM(A1:A9)").recorded
    for n in range(230):  # more than a statement's page
        entry(story, "stan", "claim", story.changed, ("-1+1", "@cmd", "plain")[n % 3])
    entry(story, "rita", "comment", story.moved, "commented")
    viewer = as_("viewer")
    response, text = _download(viewer, story, "csv", actor="stan")
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == f'attachment; filename="activity-{story.project}.csv"'
    table = list(csv.DictReader(io.StringIO(text)))
    assert len(table) == 230 and {r["actor"] for r in table} == {"stan"}
    assert {r["summary"] for r in table} == {"'-1+1", "'@cmd", "plain"}
    assert len({r["id"] for r in table}) == 230
    assert [r["at"] for r in table] == sorted((r["at"] for r in table), reverse=True)
    _, hostile = _download(viewer, story, "csv", action="reject")
    (row,) = list(csv.DictReader(io.StringIO(hostile)))
    assert row["actor"] == "'" + HOSTILE and row["reason"] == "'+SUM(A1:A9)"
    assert row["task_id"] == c.task_id(story.project, "on-call") and row["actor_kind"] == "agent"
    response, lines = _download(viewer, story, "jsonl", task="choose-db")
    assert response["Content-Type"] == "application/jsonl; charset=utf-8"
    assert response["Content-Disposition"] == f'attachment; filename="activity-{story.project}.jsonl"'
    parsed = [json.loads(line) for line in lines.splitlines()]
    assert [(p["actor"], p["action"], p["target_id"]) for p in parsed] == [("rita", "comment", story.moved)]
    _, everything = _download(viewer, story, "jsonl")
    assert any(json.loads(line)["actor"] == HOSTILE for line in everything.splitlines())  # JSON needs no neutralising
    # the page escapes what agents and people wrote
    page = viewer.get(f"/p/{story.project}/activity/", {"action": "reject"}).content.decode()
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;" in page


def test_every_role_reads_the_log_and_its_downloads_and_an_outsider_nothing(story: Story, as_: Any) -> None:
    urls = [f"/p/{story.project}/activity/{tail}" for tail in ("?actor=rita", "download.csv", "download.jsonl")]
    for role in ("viewer", "reviewer", "steward"):
        client = as_(role)
        assert [client.get(u).status_code for u in urls] == [200, 200, 200], role
    assert [as_("outsider").get(u).status_code for u in urls] == [404, 404, 404]
    assert all(Client().get(u).status_code == 302 for u in urls)  # to the login page


def test_the_overview_and_the_people_page_show_who_settled_what(story: Story, as_: Any) -> None:
    rita = as_("reviewer")
    assert (
        rita.post(
            f"/p/{story.project}/decisions/{story.moved}/reaffirm", {"request_id": "p1", "explanation": "checked"}
        ).status_code
        == 302
    )
    assert (
        rita.post(f"/p/{story.project}/decisions/{story.xss}/reject", {"request_id": "p2", "reason": "no"}).status_code
        == 302
    )
    entry(story, "stan", "reject", str(uuid.uuid4()), "old", days_ago=8)  # not this week
    entry(story, HOSTILE, "reaffirm", story.changed, "s")
    page = as_("viewer").get(f"/p/{story.project}/").content.decode()
    table = page[page.index("<h2>Team progress</h2>") : page.index("Recent activity")]
    row = next(r for r in rows(table) if '?actor=rita"' in r)
    today = re.search(r'data-label="Today">(.*?)</td>', row, re.S).group(1)
    assert "1 reaffirmed" in today and "1 rejected" in today
    assert '?actor=stan"' not in table  # last week's only
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in table
    people = as_("steward").get(f"/p/{story.project}/people/").content.decode()
    assert "1 reaffirmed" in people and '?actor=rita"' in people
