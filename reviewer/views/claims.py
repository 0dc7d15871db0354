"""Claims and assignment on the dashboard (issue 32): claim, release, take
over and renew a claim on a decision or a root-cause group; a steward
assigns them and sets how long a claim lasts; "act anyway?" before settling
a decision someone else has claimed; "and next" past what others hold.

Roles: a viewer sees claims and assignments; a reviewer claims, renews and
releases their own, takes over (with a reason); a steward also releases
anyone's, assigns and sets the lease. The core does the work
(``core.claims``) and refuses what races lost; every answer works as a plain
form post (a redirect back, or a page with the sentence beside the form)
and as htmx (the claim's box swapped in place).
"""

from __future__ import annotations

import hashlib
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.db.models import Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.timesince import timesince
from django.views.decorators.http import require_GET, require_POST

from core import limits
from core.claims import Claims
from core.models import ActorKind, Claim, ClaimErrorCode, TargetKind, TeamMark
from core.models import ReviewReason as ReviewReasonList

from .. import access
from ..models import ProjectGrant
from .base import Project, _param, _project

BOX = "reviewer/_claims.html#claim-box"
CONFIRM = "reviewer/claim_confirm.html"
TAKE_OVER = "reviewer/claim_target.html"
#: the people a steward may choose from at most (grants of the project, and staff)
PEOPLE_SHOWN = 500
#: how often the claimer's open page renews the claim (seconds; the lease is minutes)
RENEW_EVERY_S = 60
#: "and next" passes over at most this many decisions claimed by others
SKIP_CLAIMED = 20

ERRORS = {
    ClaimErrorCode.claim_held: "Someone else holds this claim.",
    ClaimErrorCode.not_claimed: "There is no live claim of yours on this (it may have run out).",
    ClaimErrorCode.reason_required: "Say why you take it over: they will be told.",
    ClaimErrorCode.value_too_long: f"At most {limits.TAKE_OVER_REASON_MAX:,} characters.",
    ClaimErrorCode.decision_not_found: "No such decision.",
    ClaimErrorCode.decision_not_active: "This decision is settled: there is nothing to claim or assign.",
    ClaimErrorCode.group_not_found: "No open decision has this root cause.",
    ClaimErrorCode.invalid_lease: (f"A claim lasts {limits.LEASE_MINUTES_MIN} to {limits.LEASE_MINUTES_MAX} minutes."),
    ClaimErrorCode.not_assigned: "Nobody is assigned to this.",
}


def claims_of(p: Project) -> Claims:
    """The project's claims, written as the signed-in person."""
    found = p.__dict__.get("_claims")
    if found is None:
        found = p.__dict__["_claims"] = Claims(p.store, project_id=p.id, agent_id=p.agent, actor_kind=ActorKind.person)
    return found


def ago(moment: Any) -> str:
    """ "4 minutes ago", "just now"."""
    since = timesince(moment)
    return "just now" if since.startswith("0\xa0minutes") else f"{since} ago"


def held_by(claim: Claim | None, me: str) -> str:
    """ "claimed by rita, 4 minutes ago" (by you, of its group), "" for none."""
    if claim is None:
        return ""
    who = "you" if claim.holder == me else claim.holder
    return f"claimed by {who}, {ago(claim.claimed_at)}"


def act_anyway(claim: Claim) -> str:
    """ "rita claimed this 2 minutes ago: act anyway?"."""
    what = "this group" if claim.target_kind is TargetKind.group else "this"
    return f"{claim.holder} claimed {what} {ago(claim.claimed_at)}: act anyway?"


def project_people(project_id: str) -> list[str]:
    """The people a steward may assign to: those with a grant here, and staff."""
    users = get_user_model()
    granted = ProjectGrant.objects.filter(project_id=project_id, user__is_active=True).values_list(
        "user__username", flat=True
    )
    staff = users.objects.filter(Q(is_staff=True) | Q(is_superuser=True), is_active=True).values_list(
        "username", flat=True
    )
    return sorted(set(granted[:PEOPLE_SHOWN]) | set(staff[:PEOPLE_SHOWN]))


class Box:
    """What a claim box shows and offers, for one target, to this person."""

    def __init__(self, p: Project, kind: TargetKind, target: str, mark: TeamMark | None) -> None:
        self.kind, self.target = kind, target
        self.claim = mark.claim if mark else None
        self.assignment = mark.assignment if mark else None
        self.me = p.agent

    @property
    def mine(self) -> bool:
        return self.claim is not None and self.claim.holder == self.me

    @property
    def theirs(self) -> bool:
        return self.claim is not None and self.claim.holder != self.me

    @property
    def sentence(self) -> str:
        return held_by(self.claim, self.me)

    @property
    def own_claim(self) -> bool:
        """The claim shown is on this very target (a decision's, not its group's)."""
        return self.claim is not None and self.claim.target_kind is self.kind

    @property
    def dom_id(self) -> str:
        if self.kind is TargetKind.decision:
            return f"claim-{self.target}"
        return "claim-g-" + hashlib.sha1(self.target.encode()).hexdigest()[:12]


def box_context(request: HttpRequest, p: Project, kind: TargetKind, target: str, **extra: Any) -> dict[str, Any]:
    """The context of a claim box: the target's mark read now."""
    claims = claims_of(p)
    if kind is TargetKind.decision:
        mark = claims.marks([target]).get(target.lower())
    else:
        mark = claims.group_marks([target]).get(target)
    box = Box(p, kind, target, mark)
    people = project_people(p.id) if access.can(request.user, access.STEWARD, p.id) else []
    return {
        "box": box,
        "people": people,
        "renew_every": RENEW_EVERY_S,
        "reason_max": limits.TAKE_OVER_REASON_MAX,
        **extra,
    }


def decision_claims(request: HttpRequest, p: Project, d: Any) -> dict[str, Any]:
    """What the decision page adds for its claim box (one read): only while
    the decision is in the queue (a settled one has nothing to claim)."""
    if d.status.value != "active" or d.review_state.value == "clear":
        return {}
    return {"claim_box": box_context(request, p, TargetKind.decision, str(d.id))}


def overview_claims(p: Project) -> dict[str, Any]:
    """The overview's "who is on what": live claims by person, and the lease."""
    claims = claims_of(p)
    held = claims.held()
    by_person: dict[str, list[Any]] = {}
    for h in held:
        by_person.setdefault(h.holder, []).append((h, ago(h.claimed_at)))
    groups = [h.target_id for h in held if h.target_kind is TargetKind.group]
    return {
        "held": list(by_person.items()),
        "group_labels": p.views.cause_labels(groups) if groups else {},
        "lease_minutes": claims.lease_minutes(),
        "claim_cap": limits.CLAIM_CAP_MINUTES,
        "lease_min": limits.LEASE_MINUTES_MIN,
        "lease_max": limits.LEASE_MINUTES_MAX,
    }


def claim_urls(p: Project) -> dict[str, str]:
    """The claim actions' links, reversed once for a page of cards."""
    urls = {a: reverse("claim_action", kwargs={"project": p.id, "action": a}) for a in ("claim", "release", "renew")}
    return {**urls, "target": reverse("claim_target", kwargs={"project": p.id})}


def queue_extras(p: Project, decisions: list[Any], causes: list[str]) -> dict[str, Any]:
    """What the queue page adds: each card's claim box, each group's claim
    and assignment, the assignee filter."""
    groups = claims_of(p).group_marks(causes)
    return {
        "marks": card_marks(p, decisions),
        "claim_urls": claim_urls(p),
        "renew_every": RENEW_EVERY_S,
        "group_boxes": {k: Box(p, TargetKind.group, k, m) for k, m in groups.items()},
        "who_choices": WHO_CHOICES,
        "who": "",
        "people_filter": project_people(p.id),
        "reason_max": limits.TAKE_OVER_REASON_MAX,
    }


def queue_by_assignee(request: HttpRequest, p: Project, who: str, page: int, page_size: int) -> HttpResponse:
    """The review queue filtered by assignee ("My queue" is ``who=mine``)."""
    from ..presenters import REASON_LABELS
    from .queue import CARD_QUIET

    found = team_queue(p, who, page, page_size)
    keys = [key for key, _ in found["groups"]]
    labels, sizes = p.views.cause_labels(keys), p.views.group_sizes(keys)
    decisions = found["result"].decisions
    filters = {"who": who}
    return render(
        request,
        "reviewer/queue.html",
        {
            **found,
            "filters": filters,
            "groups": [(key, labels[key], sizes.get(key, len(ds)), ds) for key, ds in found["groups"]],
            "prev_url": "?" + urlencode({**filters, "page": page - 1}) if page > 1 else None,
            "next_url": "?" + urlencode({**filters, "page": page + 1}) if page < found["pages"] else None,
            "reasons": [(r.value, REASON_LABELS[r.value]) for r in ReviewReasonList],
            "counts": p.traces.review_counts(),
            "flow": True,
            "filters_qs": "",
            "actions": p.views.review_actions_many(decisions)
            if access.can(request.user, access.REVIEWER, p.id)
            else {},
            **CARD_QUIET,
            **queue_extras(p, decisions, keys),
            "who": who,
            "my_queue": who == "mine",
        },
    )


# -- the actions ---------------------------------------------------------------------

ACTIONS = ("claim", "release", "take_over", "renew", "assign", "unassign")


def _target(request: HttpRequest) -> tuple[TargetKind, str]:
    kind = _param(request.POST if request.method == "POST" else request.GET, "kind", 20)
    if kind not in ("decision", "group"):
        raise Http404("no such target")
    source = request.POST if request.method == "POST" else request.GET
    return TargetKind(kind), _param(source, "target", limits.GROUP_KEY_MAX + 1)


def _back(request: HttpRequest, p: Project, kind: TargetKind, target: str) -> str:
    """Where a plain form post returns: the page it came from (in this
    project), else the decision's page or the group's queue."""
    here = reverse("overview", kwargs={"project": p.id})
    back = _param(request.POST, "next", 2000)
    if back.startswith(here) and "//" not in back:
        return back
    if kind is TargetKind.decision:
        return reverse("decision", kwargs={"project": p.id, "decision_id": target})
    return reverse("queue", kwargs={"project": p.id}) + "?" + urlencode({"cause": target})


@require_POST
@login_required
def claim_action(request: HttpRequest, project: str, action: str) -> HttpResponse:
    p = _project(request, project)
    if action not in ACTIONS:
        raise Http404("no such action")
    kind, target = _target(request)
    steward = access.can(request.user, access.STEWARD, project)
    access.require(request.user, access.STEWARD if action in ("assign", "unassign") else access.REVIEWER, project)
    claims = claims_of(p)
    if kind is TargetKind.decision and not claims.marks([target]):
        raise Http404("no such decision")  # in this project
    if action == "take_over":
        reason = _param(request.POST, "reason", limits.TAKE_OVER_REASON_MAX * 4)
        result = claims.take_over(kind, target, reason=reason)
        if not result.recorded and result.error in (ClaimErrorCode.reason_required, ClaimErrorCode.value_too_long):
            return _take_over_page(request, p, kind, target, error=ERRORS[result.error], typed=reason, status=400)
    elif action == "assign":
        assignee = _param(request.POST, "assignee", 200).strip()
        if assignee not in project_people(p.id):
            error = f"“{assignee}” is not a person of this project." if assignee else "Choose a person."
            return _answer(request, p, kind, target, error=error, status=400, typed=assignee)
        result = claims.assign(kind, target, assignee=assignee)
    elif action == "unassign":
        result = claims.unassign(kind, target)
    elif action == "release":
        result = claims.release(kind, target, others=steward)
    elif action == "renew":
        result = claims.renew(kind, target)
    else:
        result = claims.claim(kind, target)
    if not result.recorded and result.error is ClaimErrorCode.decision_not_found:
        raise Http404("no such decision")
    if result.recorded:
        return _answer(request, p, kind, target, note=_done(action, result), status=200)
    held = getattr(result, "held", None)
    error = f"Not done: {held_by(held, p.agent)}." if held is not None else ERRORS[result.error]
    return _answer(request, p, kind, target, error=error, status=409)


def _done(action: str, result: Any) -> str:
    if action == "take_over":
        return f"You took over {result.held.holder}'s claim; they will be told." if result.held else "Claimed."
    if action == "assign":
        return f"Assigned to {result.assignment.assignee}."
    return {
        "claim": "Claimed: others see you are on it.",
        "release": "Released.",
        "renew": "",
        "unassign": "Unassigned.",
    }[action]


def _answer(
    request: HttpRequest,
    p: Project,
    kind: TargetKind,
    target: str,
    *,
    note: str = "",
    error: str = "",
    status: int = 200,
    typed: str = "",
) -> HttpResponse:
    """htmx: the box again (a refusal inside it; htmx swaps a 200 only);
    else back where the form was, with the sentence as a message, or (bad
    input) a page with the sentence beside the form and the typed text."""
    if request.htmx:
        return render(request, BOX, box_context(request, p, kind, target, note=note, error=error, typed=typed))
    if status == 400:
        return _take_over_page(request, p, kind, target, error=error, typed=typed, status=400)
    if error:
        messages.error(request, error)
    elif note:
        messages.success(request, note)
    return redirect(_back(request, p, kind, target))


@require_GET
@login_required
def take_over(request: HttpRequest, project: str) -> HttpResponse:
    """A decision's or a group's claim and assignment on a page of its own:
    the take-over form (reviewers: whose claim, since when, the reason to
    give), a group's claim and assignment (the queue's group headings)."""
    p = _project(request, project)
    kind, target = _target(request)
    return _take_over_page(request, p, kind, target)


def _take_over_page(
    request: HttpRequest,
    p: Project,
    kind: TargetKind,
    target: str,
    *,
    error: str = "",
    typed: str = "",
    status: int = 200,
) -> HttpResponse:
    context = box_context(request, p, kind, target, error=error, typed=typed)
    if kind is TargetKind.decision:
        context["d"] = p.traces.get_decision(target).decision
        if context["d"] is None:
            raise Http404("no such decision")
    else:
        context["label"] = p.views.cause_labels([target])[target]
    back = _param(request.GET if request.method == "GET" else request.POST, "next", 2000)
    context["back"] = (
        back if back.startswith(reverse("overview", kwargs={"project": p.id})) else _back(request, p, kind, target)
    )
    return render(request, TAKE_OVER, context, status=status)


@require_POST
@login_required
def lease(request: HttpRequest, project: str) -> HttpResponse:
    """A steward sets how long a claim lasts in this project."""
    p = _project(request, project)
    access.require(request.user, access.STEWARD, project)
    typed = _param(request.POST, "minutes", 200).strip()
    try:
        minutes = int(typed)
    except ValueError:
        minutes = 0
    result = claims_of(p).set_lease_minutes(minutes)
    if result.recorded:
        messages.success(request, f"Claims now last {minutes} minutes.")
    else:
        messages.error(request, f"{ERRORS[result.error]} You typed “{typed}”.")
    return redirect(reverse("overview", kwargs={"project": p.id}) + "#claims")


# -- before settling, and after ----------------------------------------------------------


def claim_guard(request: HttpRequest, p: Project, decision_id: Any) -> HttpResponse | None:
    """Before a settlement: when someone else holds a live claim on the
    decision (or its group), the question "rita claimed this 2 minutes ago:
    act anyway?", a form that posts the same fields again with the answer
    (``claim_ok``); None when the action may go ahead."""
    if request.POST.get("claim_ok"):
        return None
    did = str(decision_id).lower()
    mark = claims_of(p).marks([did]).get(did)
    if mark is None or mark.claim is None or mark.claim.holder == p.agent:
        return None
    fields = [
        (k, v) for k, values in request.POST.lists() if k not in ("csrfmiddlewaretoken", "claim_ok") for v in values
    ]
    d = p.traces.get_decision(did).decision
    verb = request.path.rstrip("/").rpartition("/")[2]
    context = {
        "d": d,
        "verb": verb.capitalize() if verb in ("reaffirm", "reject", "supersede") else "Act",
        "question": act_anyway(mark.claim),
        "claim": mark.claim,
        "fields": fields,
        "action_url": request.get_full_path(),
        "did": did,
        "back": reverse("decision", kwargs={"project": p.id, "decision_id": did}),
    }
    if request.htmx:
        return render(request, f"{CONFIRM}#confirm", context)
    return render(request, CONFIRM, context, status=409)


def next_unclaimed(p: Project, following: str | None, cause: str) -> str | None:
    """Where "and next" lands: ``following`` (the next decision of the
    group), or past it while others hold a claim on it (a few at most)."""
    if not following or not cause:
        return following
    claims = claims_of(p)
    for _ in range(SKIP_CLAIMED):
        mark = claims.marks([following]).get(following)
        if mark is None or mark.claim is None or mark.claim.holder == p.agent:
            return following
        after = p.views.next_after_in_group(following, cause)
        if after is None:
            return None
        following = after
    return following


def card_marks(p: Project, decisions: list[Any]) -> dict[str, Any]:
    """What the queue's cards show of the team, for the page in one read:
    each card's mark and whether someone else holds it (``j``/``k`` skip)."""
    marks = claims_of(p).marks([str(d.id) for d in decisions])
    return {i: Box(p, TargetKind.decision, i, m) for i, m in marks.items()}


#: the queue's assignee filter: its values beside a person's name
WHO_CHOICES = (("", "anyone"), ("unassigned", "unassigned"), ("mine", "mine (assigned to or claimed by me)"))


def team_queue(p: Project, who: str, page: int, page_size: int) -> dict[str, Any]:
    """A page of the queue by assignee (``mine``: assigned to or claimed by
    me; ``unassigned``; else a person's name), grouped by root cause as the
    queue is: the parts of the queue page's context it changes."""
    claims = claims_of(p)
    offset = (page - 1) * page_size
    if who == "mine":
        found = claims.queue(assignee=p.agent, claimed_by=p.agent, offset=offset, limit=page_size)
    elif who == "unassigned":
        found = claims.queue(unassigned=True, offset=offset, limit=page_size)
    else:
        found = claims.queue(assignee=who, offset=offset, limit=page_size)
    groups: list[tuple[str, list[Any]]] = []
    for d in found.result.decisions:
        key = found.causes.get(str(d.id), "")
        if groups and groups[-1][0] == key:
            groups[-1][1].append(d)
        else:
            groups.append((key, [d]))
    count = found.result.count
    result = found.result.model_copy(update={"truncated": offset + len(found.result.decisions) < count})
    return {"result": result, "groups": groups, "pages": max(1, -(-count // page_size)), "page": page}
