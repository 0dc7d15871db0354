"""The queue as a workbench (issue 15): act and move on to the next decision
of the group, a note on reaffirm, group actions with a preview, and the task
filter matching like the Tasks page."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pytest

from core.decisions import DecisionTraces
from core.history import ConversationHistory
from core.knowledge import Graph
from core.models import DecisionStatus, ReviewState
from core.retention import ActivityLog
from reviewer.store import get_store

from .conftest import Story

RUNBOOK = "\n\n".join(f"Rule {i}: the pager is answered by team {i}." for i in range(1, 6))
CAUSE = "document:runbook:2"


@dataclass
class Group:
    """Five decisions flagged by one change of the runbook, in queue order;
    four cite passages that only moved, ``changed`` a passage that changed."""

    ids: list[str]
    changed: str
    cause: str = CAUSE

    @property
    def unchanged(self) -> list[str]:
        return [d for d in self.ids if d != self.changed]


@pytest.fixture
def group(story: Story) -> Group:
    store = get_store()
    graph = Graph(store, project_id=story.project, agent_id="ingest")
    traces = DecisionTraces(store, project_id=story.project, agent_id="planner")
    ConversationHistory(store, project_id=story.project, agent_id="planner").create_task(
        "pager-duty", goal="Own the pager"
    )
    graph.add("runbook", RUNBOOK)
    ids = []
    for i in range(1, 6):
        passage = f"Rule {i}: the pager is answered by team {i}."
        start = RUNBOOK.index(passage)
        evidence = graph.span_evidence_id("runbook", start, start + len(passage))
        d = traces.record_decision(
            "pager-duty",
            choice_key=f"rule-{i}",
            conclusion=f"Team {i} answers",
            rationale="runbook",
            supports=[{"kind": "document", "evidence_id": evidence}],
            fetched=[graph.fetch(evidence)],
        ).decision
        ids.append(str(d.id))
    graph.update("runbook", "Preface.\n\n" + RUNBOOK.replace("answered by team 5", "answered by nobody"))
    queue = traces.list_decisions_for_review(root_cause=CAUSE).decisions
    assert sorted(str(d.id) for d in queue) == sorted(ids)
    return Group([str(d.id) for d in queue], changed=ids[4])


def flow(client: Any, story: Story, did: str, action: str, group_total: int = 5, **data: str) -> Any:
    return client.post(
        f"/p/{story.project}/review/{did}/{action}",
        {"request_id": f"flow-{did}-{action}", "cause": CAUSE, "group_total": str(group_total), "filters": "", **data},
        HTTP_HX_REQUEST="true",
    )


def state(story: Story, did: str) -> Any:
    d = DecisionTraces(get_store(), project_id=story.project, agent_id="t").get_decision(did).decision
    return d.status, d.review_state


def test_the_queue_shows_the_group_with_and_next_forms(story: Story, group: Group, as_: Any) -> None:
    body = as_("reviewer").get(f"/p/{story.project}/review/").content.decode()
    assert "Document “runbook” changed (version 2)" in body
    # every card can be rejected and moved on from; only those whose reaffirm can succeed offer it
    assert body.count("Reject and next</button>") == 7
    for did in group.ids:
        offered = f'action="/p/{story.project}/review/{did}/reaffirm"' in body
        assert offered == (did != group.changed), did
    assert 'name="group_total" value="5"' in body
    assert f"?cause={CAUSE.replace(':', '%3A')}&amp;action=reaffirm" in body


def test_reaffirm_and_next_lands_on_the_next_of_the_group_and_updates_in_place(
    story: Story, group: Group, as_: Any
) -> None:
    did = group.unchanged[0]  # first or second in the queue: a decision of the group follows it
    after = group.ids[group.ids.index(did) + 1]
    response = flow(as_("reviewer"), story, did, "reaffirm", explanation="")
    body = response.content.decode()
    assert response.status_code == 200
    assert state(story, did) == (DecisionStatus.active, ReviewState.clear)
    settled = re.search(r'<article class="card settled" id="d-([^"]+)"\s+data-next="([^"]*)"', body)
    assert settled and settled.group(1) == did and settled.group(2) == f"d-{after}"
    progress = re.search(r'<p id="progress"[^>]*hx-swap-oob="true"\s*>([^<]*)</p>', body)
    position = group.ids.index(after) + 1  # the next one, where it stood in the group
    assert progress and " ".join(progress.group(1).split()) == f"{position} of 5 in this group, 6 left in the queue."
    assert re.search(r'<span id="queue-count" class="muted" hx-swap-oob="true"\s*>6 decisions', body)
    assert "<strong>6</strong> need review" in body  # counters too


def test_a_note_is_the_recorded_explanation(story: Story, group: Group, as_: Any) -> None:
    did = group.unchanged[0]
    flow(as_("reviewer"), story, did, "reaffirm", explanation="Moved under a preface, same rule.")
    history = DecisionTraces(get_store(), project_id=story.project, agent_id="t").list_support_history(did)
    assert history.supports[0].review_explanation == "Moved under a preface, same rule."


def test_and_next_without_javascript_returns_to_the_queue_at_the_next_decision(
    story: Story, group: Group, as_: Any
) -> None:
    response = as_("reviewer").post(
        f"/p/{story.project}/review/{group.ids[0]}/reject",
        {
            "request_id": "nojs",
            "reason": "obsolete",
            "cause": CAUSE,
            "group_total": "5",
            "filters": "state=needs_review",
        },
    )
    assert response.status_code == 302
    assert response["Location"] == f"/p/{story.project}/review/?state=needs_review#d-{group.ids[1]}"
    assert state(story, group.ids[0])[0] is DecisionStatus.rejected


def test_a_refused_and_next_keeps_the_card_and_says_why(story: Story, group: Group, as_: Any) -> None:
    response = flow(as_("reviewer"), story, group.changed, "reaffirm", explanation="I think it holds")
    body = response.content.decode()
    assert f'id="d-{group.changed}"' in body and 'data-refused="true"' in body and "cannot be reaffirmed" in body
    # the card now offers only what can succeed: no reaffirm form, and the reason why
    assert f'action="/p/{story.project}/review/{group.changed}/reaffirm"' not in body
    assert "the cited passage of runbook changed" in body
    assert state(story, group.changed) == (DecisionStatus.active, ReviewState.needs_review)


def test_the_group_preview_names_exactly_which_decisions(story: Story, group: Group, as_: Any) -> None:
    body = (
        as_("reviewer").get(f"/p/{story.project}/review/group", {"cause": CAUSE, "action": "reaffirm"}).content.decode()
    )
    assert "Reaffirm the 4 whose cited passage is unchanged" in body
    assert re.findall(r'name="decision" value="([^"]+)"', body) == group.unchanged
    assert "the cited passage of runbook changed (version 1 → 2)" in body
    reject = as_("reviewer").get(f"/p/{story.project}/review/group", {"cause": CAUSE, "action": "reject"})
    assert re.findall(r'name="decision" value="([^"]+)"', reject.content.decode()) == group.ids
    assert all(state(story, d)[1] is ReviewState.needs_review for d in group.ids)  # a preview changes nothing


def test_the_group_action_acts_on_each_and_reports_what_was_refused(story: Story, group: Group, as_: Any) -> None:
    traces = DecisionTraces(get_store(), project_id=story.project, agent_id="carol")
    first, rejected, *rest = group.unchanged
    assert traces.reject_decision(rejected, reason="duplicate", request_id="carol").recorded  # after the preview
    data = {
        "cause": CAUSE,
        "action": "reaffirm",
        "confirm": "on",
        "note": "Same rules, new preface.",
        "request_id": "group-1",
        "decision": group.unchanged,
    }
    client = as_("reviewer")
    body = client.post(f"/p/{story.project}/review/group", data).content.decode()
    assert "Done: 3" in body and "Refused: 1" in body
    refused = body.split("Refused: 1", 1)[1]
    rejected_key = DecisionTraces(get_store(), project_id=story.project, agent_id="t").get_decision(rejected)
    assert rejected_key.decision.choice_key in refused and "carol rejected it: duplicate" in refused
    for did in (first, *rest):
        assert state(story, did) == (DecisionStatus.active, ReviewState.clear)
    again = client.post(f"/p/{story.project}/review/group", data).content.decode()  # a resubmit acts once
    assert "Done: 3" in again
    reaffirms = [
        e for e in ActivityLog(get_store(), project_id=story.project).list(action="reaffirm") if e.target_id == first
    ]
    assert len(reaffirms) == 1 and reaffirms[0].reason == "Same rules, new preface."


def test_a_group_action_needs_confirmation_and_a_reason_to_reject(story: Story, group: Group, as_: Any) -> None:
    client = as_("reviewer")
    url = f"/p/{story.project}/review/group"
    unconfirmed = client.post(
        url, {"cause": CAUSE, "action": "reject", "note": "x", "request_id": "g1", "decision": group.ids}
    )
    no_reason = client.post(
        url, {"cause": CAUSE, "action": "reject", "confirm": "on", "request_id": "g2", "decision": group.ids}
    )
    assert unconfirmed.status_code == no_reason.status_code == 400
    assert all(state(story, d)[0] is DecisionStatus.active for d in group.ids)


def test_the_task_filter_matches_like_the_tasks_page(story: Story, group: Group, as_: Any) -> None:
    body = as_("viewer").get(f"/p/{story.project}/review/", {"task": "CALL"}).content.decode()
    assert body.count('class="card decision-card') == 1  # "on-call", any case
    assert re.search(r">1\s+decision\s+matches<", body)
    body = as_("viewer").get(f"/p/{story.project}/review/", {"task": "pager"}).content.decode()
    assert body.count('class="card decision-card') == 5


def test_a_refused_card_shows_what_the_person_typed_when_its_form_is_gone(story: Story, group: Group, as_: Any) -> None:
    client = as_("reviewer")
    # the reaffirm form is gone from a card that cannot be reaffirmed: the note is shown beside it
    body = flow(client, story, group.changed, "reaffirm", explanation="I think <it> holds").content.decode()
    assert 'data-refused="true"' in body
    assert "Your note, not recorded:" in body and "I think &lt;it&gt; holds" in body
    # someone else rejected it first: no form at all, the reason typed is kept on the card
    DecisionTraces(get_store(), project_id=story.project, agent_id="t").reject_decision(
        group.ids[0], reason="first", request_id="other-reviewer"
    )
    body = flow(client, story, group.ids[0], "reject", reason="Team 1 left").content.decode()
    assert "Your reason, not recorded:" in body and "Team 1 left" in body
    # without JavaScript, the message says it
    page = client.post(
        f"/p/{story.project}/review/{group.changed}/reaffirm",
        {"request_id": "flow-nojs", "cause": CAUSE, "group_total": "5", "filters": "", "explanation": "still true"},
        follow=True,
    ).content.decode()
    assert "Your note, not recorded: “still true”" in page
    assert state(story, group.changed) == (DecisionStatus.active, ReviewState.needs_review)


def test_a_refused_card_whose_form_is_still_there_keeps_the_text_in_the_form(
    story: Story, group: Group, as_: Any
) -> None:
    body = flow(as_("reviewer"), story, group.ids[1], "reject", reason="   ").content.decode()
    assert "Say why the decision is rejected." in body
    assert f'id="reason-{group.ids[1]}"' in body and "not recorded" not in body
    body = flow(as_("reviewer"), story, group.changed, "reject", reason="x" * 20001).content.decode()
    assert 'data-refused="true"' in body and 'value="' + "x" * 20001 + '"' in body  # kept in the form
    assert "not recorded" not in body


def test_a_flag_reason_ending_in_a_period_is_not_given_a_second_one(story: Story, as_: Any) -> None:
    body = as_("reviewer").get(f"/p/{story.project}/review/").content.decode()
    assert "→ a day." in body  # the changed words end with the document's own period
    assert ".." not in re.sub(r"\.\.\.|…", "", body.split("<main", 1)[1])
