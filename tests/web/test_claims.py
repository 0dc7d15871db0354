"""Claims and assignment on the dashboard: every role × action, a claim
shown to everyone, "act anyway?" before settling someone else's claim (with
and without htmx), two people racing for one claim, My queue and the
assignee filter, bad input beside its form, other projects' ids, CSRF."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from core.claims import Claims
from core.models import ReviewState, TargetKind
from core.retention import ActivityLog, HistoryRetention
from reviewer.store import get_store

from .conftest import Story, make_user
from .test_dashboard import decision

HX = {"HTTP_HX_REQUEST": "true"}


def _claims(story: Story, who: str = "t") -> Claims:
    return Claims(get_store(), project_id=story.project, agent_id=who)


def _post(client: Client, story: Story, action: str, target: str, **data: Any) -> Any:
    kind = data.pop("kind", "decision")
    return client.post(
        f"/p/{story.project}/claims/{action}", {"kind": kind, "target": target, **data}, **data.pop("hx", {})
    )


def _flag_more(story: Story) -> None:
    """The xss and clear decisions into the queue too (the event they cite redacted)."""
    retention = HistoryRetention(get_store(), project_id=story.project, agent_id="stan")
    assert retention.redact_event(story.event_id, reason="pii").recorded


def _holder(story: Story, did: str) -> str | None:
    mark = _claims(story).marks([did]).get(did)
    return mark.claim.holder if mark and mark.claim else None


def test_every_role_and_action(story: Story, as_: Any, people: dict[str, User]) -> None:
    d = story.moved
    # a viewer sees claims but cannot claim; an outsider finds no project
    for role, code in (("viewer", 403), ("outsider", 404)):
        client = as_(role)
        for action in ("claim", "release", "take_over", "renew", "assign", "unassign"):
            assert _post(client, story, action, d, reason="x", assignee="rita").status_code == code, (role, action)
        assert client.post(f"/p/{story.project}/claims/lease", {"minutes": "5"}).status_code == code
    shown = as_("viewer").get(f"/p/{story.project}/claims/?kind=decision&target={d}")
    assert shown.status_code == 200 and "take-over-form" not in shown.content.decode()
    rita, stan = as_("reviewer"), as_("steward")
    # a reviewer claims, renews and releases their own; cannot assign nor set the lease
    assert _post(rita, story, "claim", d).status_code == 302 and _holder(story, d) == "rita"
    assert _post(rita, story, "renew", d).status_code == 302
    assert _post(rita, story, "assign", d, assignee="rita").status_code == 403
    assert _post(rita, story, "unassign", d).status_code == 403
    assert rita.post(f"/p/{story.project}/claims/lease", {"minutes": "5"}).status_code == 403
    # the viewer sees it; a steward cannot claim it from under her
    page = as_("viewer").get(f"/p/{story.project}/review/").content.decode()
    assert "Claimed by rita, just now" in page and "Take over" not in page and 'name="assignee"' not in page
    assert _post(stan, story, "claim", d).status_code == 302 and _holder(story, d) == "rita"
    # a reviewer cannot release someone else's claim; a steward can, and rita is told
    sam = Client()
    sam.force_login(make_user("sam", "reviewer", [story.project]))
    response = _post(sam, story, "release", d, hx=HX)
    assert response.status_code == 200 and "Not done: claimed by rita, just now." in response.content.decode()
    assert _holder(story, d) == "rita"
    assert _post(stan, story, "release", d).status_code == 302 and _holder(story, d) is None
    assert ActivityLog(get_store(), project_id=story.project).list(limit=1, action="release")[0].notify == ["rita"]
    # a steward assigns to a person of the project, and sets the lease
    assert _post(stan, story, "assign", d, assignee="vera").status_code == 302
    assert _claims(story).marks([d])[d].assignment.assignee == "vera"
    assert _post(stan, story, "unassign", d).status_code == 302
    assert _claims(story).marks([d])[d].assignment is None
    assert stan.post(f"/p/{story.project}/claims/lease", {"minutes": "7"}).status_code == 302
    assert _claims(story).lease_minutes() == 7
    # take over: with a reason, told; a claim of another project's decision is not found
    _post(rita, story, "claim", d)
    assert _post(sam, story, "take_over", d, reason="rita is away").status_code == 302 and _holder(story, d) == "sam"
    entry = ActivityLog(get_store(), project_id=story.project).list(limit=1, action="take_over")[0]
    assert entry.notify == ["rita"] and entry.actor == "sam"
    other = make_user("olga", "reviewer", ["elsewhere-p"])
    client = Client()
    client.force_login(other)
    assert _post(client, story, "claim", d).status_code == 404
    assert _post(rita, story, "claim", "00000000-0000-4000-8000-000000000000").status_code == 404


def test_act_anyway_asks_first_with_and_without_htmx(story: Story, as_: Any) -> None:
    _flag_more(story)
    rita, stan = as_("reviewer"), as_("steward")
    _post(rita, story, "claim", story.moved)
    base = f"/p/{story.project}"
    page = stan.get(f"{base}/decisions/{story.moved}/").content.decode()
    assert "Claimed by rita, just now" in page and "Take over…" in page
    data = {"request_id": "stan-1", "explanation": "still holds"}
    asked = stan.post(f"{base}/decisions/{story.moved}/reaffirm", data)
    body = asked.content.decode()
    assert asked.status_code == 409 and "rita claimed this just now: act anyway?" in body
    assert 'name="explanation" value="still holds"' in body and 'name="claim_ok" value="rita"' in body
    assert decision(story, story.moved).review_state is ReviewState.needs_review  # nothing done yet
    done = stan.post(f"{base}/decisions/{story.moved}/reaffirm", {**data, "claim_ok": "rita"})
    assert done.status_code == 302 and decision(story, story.moved).review_state is ReviewState.clear
    assert _holder(story, story.moved) is None  # settling ended her claim
    # the queue's card (htmx): the question replaces the card, the answer acts
    _post(rita, story, "claim", story.changed)
    flow = {"request_id": "stan-2", "reason": "wrong", "cause": "", "group_total": "1", "filters": ""}
    asked = stan.post(f"{base}/review/{story.changed}/reject", flow, **HX)
    assert asked.status_code == 200 and f'id="d-{story.changed}"' in asked.content.decode()
    assert "act anyway?" in asked.content.decode()
    done = stan.post(f"{base}/review/{story.changed}/reject", {**flow, "claim_ok": "rita"}, **HX)
    assert done.status_code == 200 and "Rejected" in done.content.decode()
    # the claimer herself is never asked
    _post(stan, story, "claim", story.xss)
    assert _post(rita, story, "claim", story.xss).status_code == 302 and _holder(story, story.xss) == "stan"


@pytest.mark.django_db(transaction=True)
def test_two_reviewers_racing_for_one_claim(story: Story) -> None:
    racers = [make_user(f"racer{i}", "reviewer", [story.project]) for i in range(3)]
    clients = []
    for user in racers:
        client = Client()
        client.force_login(user)
        clients.append(client)
    answers: dict[int, str] = {}
    gate = threading.Barrier(len(clients))

    def go(i: int) -> None:
        gate.wait()
        answers[i] = _post(clients[i], story, "claim", story.moved, hx=HX).content.decode()

    threads = [threading.Thread(target=go, args=(i,)) for i in range(len(clients))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winner = _holder(story, story.moved)
    assert winner in {u.username for u in racers}
    won = [i for i, body in answers.items() if "Claimed: others see you are on it." in body]
    assert len(won) == 1 and racers[won[0]].username == winner
    for i, body in answers.items():
        if i != won[0]:
            assert f"Not done: claimed by {winner}, just now." in body


def test_my_queue_the_assignee_filter_and_bad_input(story: Story, as_: Any) -> None:
    _flag_more(story)
    rita, stan = as_("reviewer"), as_("steward")
    base = f"/p/{story.project}"
    _post(rita, story, "claim", story.changed)
    _post(stan, story, "assign", story.xss, assignee="rita")
    page = rita.get(f"{base}/").content.decode()
    assert f'href="{base}/review/?who=mine"' in page and "Who is on what" in page and "pager" in page
    mine = rita.get(f"{base}/review/?who=mine").content.decode()
    assert "My queue" in mine and f'id="d-{story.changed}"' in mine and f'id="d-{story.xss}"' in mine
    assert f'id="d-{story.moved}"' not in mine
    assert "assigned to <strong><bdi>rita</bdi></strong>" in mine
    unassigned = rita.get(f"{base}/review/?who=unassigned").content.decode()
    assert f'id="d-{story.xss}"' not in unassigned and f'id="d-{story.moved}"' in unassigned
    assert f'id="d-{story.changed}"' in rita.get(f"{base}/review/?who=").content.decode()
    # a card someone else claimed is marked for j/k to pass over
    assert 'data-claimed="other"' in stan.get(f"{base}/review/").content.decode()
    # bad input: beside the form, typed text kept
    blank = _post(stan, story, "take_over", story.changed, reason="   ")
    assert blank.status_code == 400 and "Say why you take it over" in blank.content.decode()
    hostile = "<b>x</b>" + "y" * 1_200
    long = _post(stan, story, "take_over", story.changed, reason=hostile)
    body = long.content.decode()
    assert long.status_code == 400 and "At most 1,000 characters" in body
    assert "&lt;b&gt;x&lt;/b&gt;" + "y" * 1_200 in body and "<b>x</b>" not in body
    assert _holder(story, story.changed) == "rita"
    nobody = _post(stan, story, "assign", story.moved, assignee="mallory")
    assert nobody.status_code == 400 and "“mallory” is not a person of this project." in nobody.content.decode()
    lease = stan.post(f"{base}/claims/lease", {"minutes": "9999"}, follow=True).content.decode()
    assert "A claim lasts 1 to 120 minutes. You typed “9999”." in lease
    # CSRF: a post without the token is refused
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(User.objects.get(username="rita"))
    assert _post(strict, story, "release", story.changed).status_code == 403
    assert _holder(story, story.changed) == "rita"
    assert _claims(story).marks([story.xss])[story.xss].assignment.target_kind is TargetKind.decision
