"""The overview, the review queue, the sweep that runs the review on, and the
conflict groups."""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from core.decisions import DEFAULT_REAFFIRM_EXPLANATION
from core.models import ReviewReason, WriteErrorCode
from core.review_sweep import review_until_done
from core.review_views import GroupReview

from .. import access
from ..forms import WRITE_ERRORS, GroupActionForm, ReaffirmForm, RejectForm, new_request_id
from ..inbox import changes, looked, new_cards
from ..presenters import REASON_LABELS
from . import claims as team
from .activity import team_progress
from .base import CONFLICT_PAGE, PAGE, _decision_or_404, _int, _param, _project
from .comments import discussion_of


@require_GET
@login_required
def overview(request: HttpRequest, project: str) -> HttpResponse:
    p = _project(request, project)
    counts, causes = p.traces.review_summary(causes=10)
    labels = p.views.cause_labels([c for c, _ in causes])
    recent, links = p.activity.list_with_links(limit=10)
    return render(
        request,
        "reviewer/overview.html",
        {
            "since": changes(request, p.store, p.id, p.views.cause_labels),
            "counts": counts,
            "open_tasks": p.history.count_tasks("open"),
            "causes": [(c, labels[c], n) for c, n in causes],
            "recent": recent,
            "links": links,
            "progress": team_progress(p),
            **team.overview_claims(p),
        },
    )


# -- the review queue -----------------------------------------------------------------


@require_GET
@login_required
def queue(request: HttpRequest, project: str) -> HttpResponse:
    p = _project(request, project)
    task = _param(request.GET, "task", 200).strip() or None
    filters = {
        "reason": _param(request.GET, "reason") or None,
        "state": _param(request.GET, "state") or None,
        "cause": _param(request.GET, "cause") or None,
        "page": _int(request.GET.get("page"), 1, minimum=1, maximum=10**6),
        "page_size": PAGE,
    }
    who = _param(request.GET, "who", 200).strip()
    if who:  # by assignee (claims.py): the filter stands alone
        return team.queue_by_assignee(request, p, who, filters["page"], PAGE)
    # the task filter matches like the Tasks page: name contains, any case
    q = p.views.queue_page_matching(task=task, **filters) if task else p.views.queue_page(**filters)
    labels, sizes = p.views.cause_labels([key for key, _ in q.groups]), q.sizes
    return render(
        request,
        "reviewer/queue.html",
        {
            "result": q.result,
            "filters": q.filters,
            "page": q.page,
            "pages": q.pages,
            "groups": [(key, labels[key], sizes.get(key, len(ds)), ds) for key, ds in q.groups],
            "prev_url": _qs(q.filters, q.page - 1) if q.page > 1 else None,
            "next_url": _qs(q.filters, q.page + 1) if q.page < q.pages else None,
            "reasons": [(r.value, REASON_LABELS[r.value]) for r in ReviewReason],
            "counts": q.counts,
            "flow": True,
            "filters_qs": urlencode(q.filters),
            # the card's honest actions (decision workbench); a viewer is offered none
            "new_ids": new_cards(request, p.store, p.id, q.result.decisions),
            "actions": p.views.review_actions_many(q.result.decisions, rows=q.review_rows)
            if access.can(request.user, access.REVIEWER, project)
            else {},
            **CARD_QUIET,
            **team.queue_extras(p, q.result.decisions, [key for key, _ in q.groups]),
            # each card's comment count and latest comment's first line, one read for the page
            "comments": discussion_of(p).summaries([str(d.id) for d in q.result.decisions]),
        },
    )


#: what a card shows after an action (a refusal, a note, the form's text),
#: none of it on the page: named, so that each of the page's cards finds it
#: at once (a name missing from the context costs Django a chain of caught
#: exceptions at each of a card's seven lookups)
CARD_QUIET = {"error": None, "note": None, "error_form": None, "oob": False, "comments": {}}


def _qs(filters: dict[str, str], page: int) -> str:
    return "?" + urlencode({**filters, "page": page})


@require_POST
@login_required
def sweep(request: HttpRequest, project: str) -> HttpResponse:
    """Run the review on (stewards): up to 50 batches of 100."""
    p = _project(request, project)
    access.require(request.user, access.STEWARD, project)
    run = review_until_done(p.traces, max_steps=50)
    moved, finished = run.moved, run.sources_flagged
    note = f"Review moved {moved} queued decision{'' if moved == 1 else 's'} on."
    if finished:  # a document write whose writer stopped half way, finished here
        note += f" {finished} decision{'' if finished == 1 else 's'} citing a changed document flagged."
    messages.success(request, note)
    return redirect("overview", project=p.id)


@require_GET
@login_required
def conflicts(request: HttpRequest, project: str) -> HttpResponse:
    p = _project(request, project)
    after = _param(request.GET, "after", 500) or None
    found = p.traces.list_conflicts(max_groups=CONFLICT_PAGE, after_key=after)
    more = found.truncated and found.groups
    next_url = "?" + urlencode({"after": found.groups[-1].choice_key}) if more else None
    return render(request, "reviewer/conflicts.html", {"conflicts": found, "next_url": next_url})


# -- the queue's flow: act and move on, group actions (issue 15) ----------------------

#: the queue's forms that act on one decision and land on the next of its group
FLOW_ACTIONS = {"reaffirm": ReaffirmForm, "reject": RejectForm}


def _flow_filters(source: Any) -> dict[str, str]:
    """The queue's filters, carried by a flow form as the page's query string."""
    carried = QueryDict(_param(source, "filters", 2000))
    return {k: _param(carried, k, 200) for k in ("task", "reason", "state", "cause") if _param(carried, k, 200)}


@require_POST
@login_required
def queue_act(request: HttpRequest, project: str, decision_id: Any, action: str) -> HttpResponse:
    """Reaffirm or reject one decision from the queue, then land on the next
    decision of its group: with htmx, the card becomes a line saying what was
    done (focus moves on, see reviewer.js) and the progress line, heading
    count and counters are replaced in place; without, the queue again at the
    next decision. A refusal keeps the card, says why, and refreshes the
    counters too (the refusal often means someone else acted first)."""
    p = _project(request, project)
    access.require(request.user, access.REVIEWER, project)
    if action not in FLOW_ACTIONS:
        raise Http404("no such action")
    d = _decision_or_404(p, decision_id)
    asked = team.claim_guard(request, p, d.id)  # someone else's claim: act anyway?
    if asked is not None:
        return asked
    cause = _param(request.POST, "cause", 1000)
    group_total = _int(request.POST.get("group_total"), 0)
    filters = _flow_filters(request.POST)
    next_id = team.next_unclaimed(p, p.views.next_after_in_group(str(d.id), cause), cause)
    data = request.POST.copy()
    if action == "reaffirm" and not data.get("explanation", "").strip():
        data["explanation"] = DEFAULT_REAFFIRM_EXPLANATION  # the note is optional
    form = FLOW_ACTIONS[action](data)
    error = None
    if not form.is_valid():
        error = "Say why the decision is rejected." if action == "reject" else "Check the form."
    else:
        if action == "reaffirm":
            result = p.traces.reaffirm_decision(
                str(d.id), explanation=form.cleaned_data["explanation"], request_id=form.cleaned_data["request_id"]
            )
        else:
            result = p.traces.reject_decision(
                str(d.id), reason=form.cleaned_data["reason"], request_id=form.cleaned_data["request_id"]
            )
        if not result.recorded:
            error = WRITE_ERRORS[result.error]
            if result.error is WriteErrorCode.decision_not_active:
                by = p.views.retired_by(str(d.id))
                error = f"Nothing done: {by}." if by else error
    if not error:
        looked(request, p.id)  # a verdict: "since your last visit" starts again here
    done = None if error else ("Reaffirmed" if action == "reaffirm" else "Rejected")
    typed = _typed(request.POST, action)
    if not request.htmx:
        back = reverse("queue", kwargs={"project": p.id}) + ("?" + urlencode(filters) if filters else "")
        if error:
            kept = f" Your {TYPED_LABELS[action]}, not recorded: “{typed}”" if typed else ""
            messages.error(request, f"{d.choice_key}: {error}{kept}")
            return redirect(back + f"#d-{d.id}")
        messages.success(request, f"{done}: {d.choice_key} ({d.task_name}).")
        return redirect(back + (f"#d-{next_id}" if next_id else ""))
    fresh = p.traces.get_decision(str(d.id)).decision or d
    actions = p.views.review_actions_many([fresh]) if error else {}
    counts = p.traces.review_counts()
    progress = p.views.queue_progress(
        cause, group_total=group_total, filters=filters, next_id=None if error else next_id, counts=counts
    )
    context = {
        "d": fresh,
        "done": done,
        "error": error,
        "error_form": action if error else None,
        "forms": {action: form},
        "progress": progress,
        "counts": counts,
        "queue_left": progress.queue_left,
        "oob": True,
        "flow": True,
        "cause": cause,
        "group_total": group_total,
        "filters_qs": urlencode(filters),
        "filters": filters,
        # a refused card keeps only the actions that can still succeed
        "actions": actions,
        # what the person typed, shown beside the card when its form is gone
        "typed": typed if error and not _form_shown(actions.get(str(fresh.id)), action) else "",
        "typed_label": TYPED_LABELS[action],
    }
    return render(request, "reviewer/queue.html#flow-answer", context)


#: what each queue action's text field holds, as a person calls it
TYPED_LABELS = {"reaffirm": "note", "reject": "reason"}


def _typed(data: Any, action: str) -> str:
    """The text the person typed in the action's form ("" when none)."""
    return str(data.get("explanation" if action == "reaffirm" else "reason", "") or "").strip()[:20000]


def _form_shown(actions: Any, action: str) -> bool:
    """Whether a refused card still has the form that was submitted (then
    the form keeps what was typed; else the card shows it beside)."""
    if actions is None or not actions.supersede:
        return False
    return bool(actions.reaffirm) if action == "reaffirm" else True


@require_http_methods(["GET", "POST"])
@login_required
def group(request: HttpRequest, project: str) -> HttpResponse:
    """A root-cause group at once: "reaffirm the N whose cited passage is
    unchanged" or "reject all N". GET previews exactly which decisions; the
    confirmation posts their ids, and each goes through the core with a
    request id of its own (derived from the form's, so a resubmit acts once);
    the answer lists what was done and what was refused, and why."""
    p = _project(request, project)
    access.require(request.user, access.REVIEWER, project)
    source = request.POST if request.method == "POST" else request.GET
    cause = _param(source, "cause", 1000)
    action = _param(source, "action", 20)
    if action not in FLOW_ACTIONS:
        action = "reaffirm"
    context: dict[str, Any] = {"action": action, "cause": cause, "request_id": new_request_id()}
    if request.method == "GET":
        return render(request, "reviewer/group.html", {**context, "g": p.views.group_review(cause, action=action)})
    form = GroupActionForm(request.POST)
    if not form.is_valid():
        context.update(
            form=form,
            error="Tick the box to confirm, and give a reason to reject.",
            g=p.views.group_review(cause, action=action),
        )
        return render(request, "reviewer/group.html", context, status=400)
    ids = [i for i in request.POST.getlist("decision")[: p.views.GROUP_SHOWN] if _is_uuid(i)]
    by_id = p.traces.get_decisions(ids)
    base = form.cleaned_data["request_id"]
    done: list[Any] = []
    refused: list[tuple[Any, str]] = []
    for did in ids:
        d = by_id.get(did)
        if d is None:
            continue
        rid = uuid.uuid5(uuid.NAMESPACE_URL, f"{base}/{did}").hex  # one request id per decision
        if action == "reaffirm":
            note = form.cleaned_data["note"] or DEFAULT_REAFFIRM_EXPLANATION
            result = p.traces.reaffirm_decision(did, explanation=note, request_id=rid)
        else:
            result = p.traces.reject_decision(did, reason=form.cleaned_data["note"], request_id=rid)
        if result.recorded:
            done.append(d)
        else:
            why = None
            if result.error is WriteErrorCode.cannot_revalidate:
                why = p.views.reaffirm_refusal(d)
            elif result.error is WriteErrorCode.decision_not_active:
                why = p.views.retired_by(did)
            refused.append((d, why or WRITE_ERRORS[result.error]))
    if done:
        looked(request, p.id)
    left = p.views.group_sizes([cause])[cause]
    context.update(
        done=done,
        refused=refused,
        acted=True,
        left=left,
        g=GroupReview(
            cause=cause,
            label=p.views.cause_labels([cause])[cause],
            action=action,
            items=[],
            count=left,
            truncated=False,
        ),
    )
    return render(request, "reviewer/group.html", context)


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


@require_POST
@login_required
def mark_seen(request: HttpRequest, project: str) -> HttpResponse:
    """ "Mark all seen": the overview's "since your last visit" starts again now."""
    p = _project(request, project)
    looked(request, p.id)
    messages.success(request, "Marked all seen: the overview now tells what changes after this.")
    return redirect("overview", project=p.id)
