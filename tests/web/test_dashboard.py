"""Every dashboard page and action, for each role: allowed, forbidden,
refused with a sentence, escaped, acting once."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client

from core.decisions import DecisionTraces
from core.history import ConversationHistory
from core.knowledge import Graph
from core.models import DecisionStatus, ReviewState
from core.retention import ActivityLog
from reviewer.store import get_store

from .conftest import Story


def traces(story: Story) -> DecisionTraces:
    return DecisionTraces(get_store(), project_id=story.project, agent_id="test")


def decision(story: Story, did: str) -> Any:
    return traces(story).get_decision(did).decision


def pages(story: Story) -> list[str]:
    p = f"/p/{story.project}"
    return [
        f"{p}/",
        f"{p}/review/",
        f"{p}/review/?state=unknown&reason=bogus&page=-3",
        f"{p}/decisions/{story.moved}/",
        f"{p}/decisions/{story.changed}/",
        f"{p}/conflicts/",
        f"{p}/tasks/",
        f"{p}/tasks/?q=call",
        f"{p}/task/?name=choose-db",
        f"{p}/events/?task=choose-db",
        f"{p}/document/?key=adr",
        f"{p}/activity/",
    ]


def test_every_page_renders_for_a_viewer_without_action_buttons(story: Story, as_: Any) -> None:
    client = as_("viewer")
    for url in pages(story):
        response = client.get(url)
        assert response.status_code == 200, url
        assert b"Reaffirm</button>" not in response.content, url
        assert b"and next</button>" not in response.content, url
        assert b"redact\xe2\x80\xa6" not in response.content, url


def test_the_queue_groups_flags_by_root_cause_and_shows_counts(story: Story, as_: Any) -> None:
    body = as_("reviewer").get(f"/p/{story.project}/review/").content.decode()
    assert "Document “adr” changed (version 2)" in body and "Document “oncall” changed (version 2)" in body
    assert body.count('class="card decision-card') == 2
    assert "Reaffirm and next</button>" in body
    overview = as_("reviewer").get(f"/p/{story.project}/").content.decode()
    assert "<strong>2</strong> need review" in overview and "<strong>1</strong> conflict group</a>" in overview


def test_the_decision_page_shows_recorded_against_current_text(story: Story, as_: Any) -> None:
    body = as_("reviewer").get(f"/p/{story.project}/decisions/{story.changed}/").content.decode()
    assert "<del>hour.</del>" in body.replace("an ", "") or "<del>" in body
    assert "<ins>" in body and "the passage changed" in body
    moved = as_("reviewer").get(f"/p/{story.project}/decisions/{story.moved}/").content.decode()
    assert "reaffirming can work" in moved


@pytest.mark.parametrize("role", ["anonymous", "outsider"])
def test_strangers_get_login_or_404(story: Story, as_: Any, role: str) -> None:
    client = Client() if role == "anonymous" else as_(role)
    for url in pages(story):
        response = client.get(url)
        if role == "anonymous":
            assert response.status_code == 302 and "/login/" in response["Location"], url
        else:
            assert response.status_code == 404, url
    action = client.post(
        f"/p/{story.project}/decisions/{story.moved}/reaffirm", {"request_id": "r", "explanation": "x"}
    )
    assert action.status_code == (302 if role == "anonymous" else 404)
    assert decision(story, story.moved).review_state is ReviewState.needs_review


def test_unknown_ids_answer_404(story: Story, as_: Any) -> None:
    client = as_("steward")
    p = f"/p/{story.project}"
    for url in (
        f"{p}/decisions/00000000-0000-4000-8000-000000000000/",
        f"{p}/task/?name=nope",
        f"{p}/events/?task=nope",
        f"{p}/document/?key=nope",
        f"{p}/events/redact?event_id=zzz",
        f"{p}/decisions/not-a-uuid/",
    ):
        assert client.get(url).status_code == 404, url


@pytest.mark.parametrize("action", ["reaffirm", "reject", "supersede"])
def test_a_viewer_cannot_act(story: Story, as_: Any, action: str) -> None:
    data = {"request_id": "v1", "explanation": "x", "reason": "x", "conclusion": "c", "rationale": "r", "keep": []}
    response = as_("viewer").post(f"/p/{story.project}/decisions/{story.moved}/{action}", data)
    assert response.status_code == 403
    d = decision(story, story.moved)
    assert (d.status, d.review_state) == (DecisionStatus.active, ReviewState.needs_review)


def test_stewardship_needs_the_steward_role(story: Story, as_: Any) -> None:
    p = f"/p/{story.project}"
    for role in ("viewer", "reviewer"):
        client = as_(role)
        assert client.get(f"{p}/events/redact?event_id={story.event_id}").status_code == 403
        assert (
            client.post(
                f"{p}/events/redact", {"event_id": story.event_id, "reason": "x", "confirm": "on", "request_id": "q"}
            ).status_code
            == 403
        )
        assert (
            client.post(
                f"{p}/task/delete", {"name": "on-call", "reason": "x", "confirm": "on", "request_id": "q"}
            ).status_code
            == 403
        )
        assert client.post(f"{p}/review/sweep").status_code == 403
    history = ConversationHistory(get_store(), project_id=story.project, agent_id="t")
    assert history.fetch_event("choose-db", 1).event.redacted_at is None
    assert history.get_task("on-call").found


def test_reviewer_reaffirms_and_the_queue_shrinks(story: Story, as_: Any) -> None:
    client = as_("reviewer")
    url = f"/p/{story.project}/decisions/{story.moved}/reaffirm"
    response = client.post(url, {"request_id": "once", "explanation": "Still true after the preface."})
    assert response.status_code == 302
    d = decision(story, story.moved)
    assert d.review_state is ReviewState.clear
    history = traces(story).list_support_history(story.moved).supports
    assert history[0].reviewed_by == "rita" and history[0].review_explanation == "Still true after the preface."
    assert as_("reviewer").get(f"/p/{story.project}/review/").content.decode().count("decision-card") == 1


def test_reaffirm_with_htmx_returns_the_card_and_counters(story: Story, as_: Any) -> None:
    response = as_("reviewer").post(
        f"/p/{story.project}/decisions/{story.moved}/reaffirm",
        {"request_id": "hx", "explanation": "ok"},
        HTTP_HX_REQUEST="true",
    )
    body = response.content.decode()
    assert response.status_code == 200 and f'id="d-{story.moved}"' in body and "Reaffirmed" in body
    assert 'hx-swap-oob="true"' in body and "<strong>1</strong> needs review" in body


def test_a_refused_reaffirm_says_why_in_a_sentence(story: Story, as_: Any) -> None:
    response = as_("reviewer").post(
        f"/p/{story.project}/decisions/{story.changed}/reaffirm",
        {"request_id": "no", "explanation": "I think it holds"},
    )
    body = response.content.decode()
    assert response.status_code == 400 and "cannot be reaffirmed" in body and "cannot_revalidate" not in body
    assert "I think it holds" in body  # what they typed is kept


def test_reject_needs_a_reason_and_keeps_the_record(story: Story, as_: Any) -> None:
    client = as_("reviewer")
    url = f"/p/{story.project}/decisions/{story.changed}/reject"
    refused = client.post(url, {"request_id": "r1", "reason": "   "})
    assert refused.status_code == 400 and "Say why the decision is rejected." in refused.content.decode()
    assert decision(story, story.changed).status is DecisionStatus.active
    assert client.post(url, {"request_id": "r2", "reason": "Policy moved to a day"}).status_code == 302
    d = decision(story, story.changed)
    assert (d.status, d.rejected_by, d.rejection_reason) == (DecisionStatus.rejected, "rita", "Policy moved to a day")


def test_a_double_submitted_form_acts_once(story: Story, as_: Any) -> None:
    client = as_("reviewer")
    url = f"/p/{story.project}/decisions/{story.changed}/reject"
    first = client.post(url, {"request_id": "dbl", "reason": "twice"})
    second = client.post(url, {"request_id": "dbl", "reason": "twice"})
    assert first.status_code == second.status_code == 302
    entries = [e for e in ActivityLog(get_store(), project_id=story.project).list() if e.action == "reject"]
    assert len(entries) == 1


def test_supersede_records_the_next_revision_or_keeps_the_input(story: Story, as_: Any) -> None:
    client = as_("reviewer")
    url = f"/p/{story.project}/decisions/{story.changed}/supersede"
    page = client.get(f"/p/{story.project}/decisions/{story.changed}/").content.decode()
    assert 'name="add"' in page
    refused = client.post(
        url,
        {
            "request_id": "s1",
            "conclusion": "One day",
            "rationale": "policy changed",
            "explanation": "",
            "add": "event choose-db 1",
        },
    )
    body = refused.content.decode()
    assert refused.status_code == 400 and "One day" in body and "Explain why" in body
    # the on-call document's passage is picked or dropped on purpose (issue 15: never silently)
    drop = {"doc-0": "drop", "confirm_drop": "on"}
    bad_support = client.post(
        url,
        {
            "request_id": "s2",
            "conclusion": "One day",
            "rationale": "r",
            "explanation": "policy moved",
            "add": "nonsense here",
            **drop,
        },
    )
    assert bad_support.status_code == 400 and "is not an evidence id" in bad_support.content.decode()
    done = client.post(
        url,
        {
            "request_id": "s3",
            "conclusion": "One day",
            "rationale": "policy changed",
            "explanation": "The on-call policy now says a day",
            "add": "event choose-db 1",
            **drop,
        },
    )
    assert done.status_code == 302
    old = decision(story, story.changed)
    assert old.status is DecisionStatus.superseded
    revisions = traces(story).list_revisions(story.changed)
    assert [r.decision.conclusion for r in revisions] == ["One hour", "One day"]
    assert revisions[1].decision.author == "rita"


def test_agent_text_is_escaped_everywhere(story: Story, as_: Any) -> None:
    client = as_("reviewer")
    for url in (
        f"/p/{story.project}/decisions/{story.xss}/",
        f"/p/{story.project}/conflicts/",
        f"/p/{story.project}/task/?name=on-call",
        f"/p/{story.project}/events/?task=choose-db",
    ):
        body = client.get(url).content.decode()
        assert "<script>alert" not in body and "<b onmouseover" not in body and '"><img' not in body, url
    body = client.get(f"/p/{story.project}/decisions/{story.xss}/").content.decode()
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in body


def test_steward_redacts_after_confirming(story: Story, as_: Any) -> None:
    client = as_("steward")
    p = f"/p/{story.project}"
    assert client.get(f"{p}/events/redact?event_id={story.event_id}").status_code == 200
    unconfirmed = client.post(f"{p}/events/redact", {"event_id": story.event_id, "reason": "PII", "request_id": "x1"})
    assert unconfirmed.status_code == 400 and "Tick the box" in unconfirmed.content.decode()
    done = client.post(
        f"{p}/events/redact", {"event_id": story.event_id, "reason": "PII", "confirm": "on", "request_id": "x2"}
    )
    assert done.status_code == 302
    event = ConversationHistory(get_store(), project_id=story.project, agent_id="t").fetch_event("choose-db", 1).event
    assert event.payload == "[REDACTED]"
    assert ActivityLog(get_store(), project_id=story.project).list()[0].actor == "stan"
    log = client.get(f"{p}/events/?task=choose-db").content.decode()
    assert "redacted" in log and "[REDACTED]" in log


def test_steward_deletes_a_task_after_a_preview(story: Story, as_: Any) -> None:
    client = as_("steward")
    p = f"/p/{story.project}"
    preview = client.get(f"{p}/task/delete?name=choose-db").content.decode()
    assert "1 event" in preview and "decision" in preview
    done = client.post(
        f"{p}/task/delete",
        {"name": "choose-db", "include_decisions": "on", "reason": "retention", "confirm": "on", "request_id": "d1"},
    )
    assert done.status_code == 302
    assert client.get(f"{p}/task/?name=choose-db").status_code == 404


def test_csrf_is_enforced(story: Story, people: Any) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(people["reviewer"])
    response = client.post(
        f"/p/{story.project}/decisions/{story.moved}/reaffirm", {"request_id": "c", "explanation": "x"}
    )
    assert response.status_code == 403
    assert decision(story, story.moved).review_state is ReviewState.needs_review


def test_security_headers(story: Story, as_: Any) -> None:
    response = as_("viewer").get(f"/p/{story.project}/")
    assert "script-src 'self'" in response["Content-Security-Policy"]
    assert response["X-Frame-Options"] == "DENY"


def test_create_user_command_gives_a_role_and_projects(db: None, tmp_path: Any) -> None:
    secret = tmp_path / "pw"
    secret.write_text("correct horse battery staple\n")
    call_command("create_user", "nora", role="reviewer", project=["acme", "globex"], password_file=secret)
    from django.contrib.auth.models import User

    from reviewer.access import role_of

    nora = User.objects.get(username="nora")
    assert role_of(nora, "acme") == role_of(nora, "globex") == "reviewer"
    assert role_of(nora, "initech") is None and nora.check_password("correct horse battery staple")
    assert sorted(nora.project_grants.values_list("project_id", flat=True)) == ["acme", "globex"]


def test_each_card_carries_its_own_request_id(story: Story, as_: Any) -> None:
    import re

    client = as_("reviewer")
    page = client.get(f"/p/{story.project}/review/").content.decode()
    ids = re.findall(r'name="request_id" value="([0-9a-f]{32})"', page)
    # two cards: reaffirm and reject on the moved one, reject only on the changed one (it cannot be reaffirmed)
    assert len(ids) == 3 and len(set(ids)) == 3
    # acting on both cards with the ids from the one page: both apply
    first = client.post(
        f"/p/{story.project}/decisions/{story.moved}/reaffirm",
        {"request_id": ids[0], "explanation": "ok"},
        HTTP_HX_REQUEST="true",
    )
    second = client.post(
        f"/p/{story.project}/decisions/{story.changed}/reject",
        {"request_id": ids[2], "reason": "policy moved"},
        HTTP_HX_REQUEST="true",
    )
    assert "Reaffirmed" in first.content.decode() and "Rejected" in second.content.decode()


def test_acting_on_a_decision_someone_else_settled_says_so_and_shows_their_act(story: Story, as_: Any) -> None:
    first, second = as_("reviewer"), as_("steward")
    url = f"/p/{story.project}/decisions/{story.moved}/reject"
    assert first.post(url, {"request_id": "first", "reason": "Wrong database."}).status_code == 302
    stale = second.post(url, {"request_id": "second", "reason": "Too slow."})  # from a tab opened earlier
    body = stale.content.decode()
    assert stale.status_code == 400
    # the refusal names who did what, when (issue 15), and the page shows their act
    assert re.search(r"rita rejected this at \d\d:\d\d: Wrong database\.", body)
    assert "Too slow." in body  # what they typed is kept
    hx = second.post(url, {"request_id": "third", "reason": "Too slow."}, HTTP_HX_REQUEST="true")
    assert re.search(r"rita rejected this at \d\d:\d\d: Wrong database\.", hx.content.decode())
    assert len([e for e in ActivityLog(get_store(), project_id=story.project).list() if e.action == "reject"]) == 1


def test_a_repeated_action_draws_the_card_as_the_decision_is_now(story: Story, as_: Any) -> None:
    """The same request sent again (a retry, a double click) is answered
    with its first result, but the card shows the decision as it is now:
    flagged again since, it reads as needing review."""
    client = as_("reviewer")
    url = f"/p/{story.project}/decisions/{story.moved}/reaffirm"
    first = client.post(url, {"request_id": "again", "explanation": "ok"}, HTTP_HX_REQUEST="true")
    assert first.status_code == 200 and "Reaffirmed" in first.content.decode()
    assert "decision-card state-clear" in first.content.decode()
    graph = Graph(get_store(), project_id=story.project, agent_id="ingest")
    graph.update("adr", "Second preface.\n\n" + graph.current_text("adr"))  # the passage moved again
    assert decision(story, story.moved).review_state is ReviewState.needs_review
    repeated = client.post(url, {"request_id": "again", "explanation": "ok"}, HTTP_HX_REQUEST="true")
    assert repeated.status_code == 200
    assert "decision-card state-needs_review" in repeated.content.decode()


@pytest.mark.parametrize(
    ("lease", "says"),
    [
        ("2999-01-01T00:00:00.000000Z", "still being flagged after its last change"),
        ("2000-01-01T00:00:00.000000Z", "stopped before it finished"),
    ],
)
def test_the_document_page_says_what_pending_and_failed_mean(story: Story, as_: Any, lease: str, says: str) -> None:
    # a change's flagging runs in units under a lease (core._flag_jobs): while
    # a job holds one the document reads pending, once it has run out failed
    from core._evidence import document_node_id

    get_store().write(
        story.project,
        "CREATE (:FlagJob {id: $id, project_id: $p, key: 'adr', lease_until: $lease})",
        {"id": document_node_id(story.project, "adr"), "p": story.project, "lease": lease},
    )
    page = as_("viewer").get(f"/p/{story.project}/document/", {"key": "adr"}).content.decode()
    state = "pending" if "2999" in lease else "failed"
    assert f'<span class="badge {state}">{state}</span>' in page
    assert says in page
    if state == "failed":
        assert "manage.py review_sweep" in page
    clean = as_("viewer").get(f"/p/{story.project}/document/", {"key": "oncall"}).content.decode()
    assert "still being flagged" not in clean and "stopped before it finished" not in clean
