"""The overview, the review queue, the sweep that runs the review on, and the
conflict groups."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from core.models import Decision, ReviewReason, ReviewState

from .. import access
from ..presenters import REASON_LABELS
from .base import CONFLICT_PAGE, PAGE, Project, _ctx, _int, _param, _project


@require_GET
@login_required
def overview(request: HttpRequest, project: str) -> HttpResponse:
    p = _project(request, project)
    counts, causes = p.traces.review_summary(causes=10)
    return render(request, "reviewer/overview.html", _ctx(
        request, p, counts=counts, open_tasks=p.history.count_tasks("open"), causes=causes,
        recent=p.activity.list(limit=10),
    ))


# -- the review queue -----------------------------------------------------------------


@require_GET
@login_required
def queue(request: HttpRequest, project: str) -> HttpResponse:
    p = _project(request, project)
    task = _param(request.GET, "task") or None
    reason = _param(request.GET, "reason") or None
    state = _param(request.GET, "state") or None
    cause = _param(request.GET, "cause") or None
    if reason not in (None, *[r.value for r in ReviewReason]):
        reason = None
    if state not in (None, ReviewState.needs_review.value, ReviewState.unknown.value):
        state = None
    page = _int(request.GET.get("page"), 1, minimum=1, maximum=10**6)
    result = p.traces.list_decisions_for_review(
        task, limit=PAGE, offset=(page - 1) * PAGE, reason=reason, state=state, root_cause=cause
    )
    groups: list[tuple[str, list[Decision]]] = []
    causes = _causes_of(p, result.decisions)
    for d in result.decisions:
        key = causes.get(str(d.id), "")
        if groups and groups[-1][0] == key:
            groups[-1][1].append(d)
        else:
            groups.append((key, [d]))
    filters = {k: v for k, v in (("task", task), ("reason", reason), ("state", state), ("cause", cause)) if v}
    pages = max(1, -(-result.count // PAGE))
    return render(request, "reviewer/queue.html", _ctx(
        request, p, result=result, groups=groups, filters=filters, page=page, pages=pages,
        prev_url=_qs(filters, page - 1) if page > 1 else None,
        next_url=_qs(filters, page + 1) if page < pages else None,
        reasons=[(r.value, REASON_LABELS[r.value]) for r in ReviewReason],
        counts=p.traces.review_counts(),
    ))


def _causes_of(p: Project, decisions: list[Decision]) -> dict[str, str]:
    if not decisions:
        return {}
    rows = p.store.read(
        p.id,
        "UNWIND $ids AS id MATCH (d:Decision {id: id}) RETURN d.id AS id, d.root_cause AS cause",
        {"ids": [str(d.id) for d in decisions]},
    )
    return {r["id"]: r["cause"] or "" for r in rows}


def _qs(filters: dict[str, str], page: int) -> str:
    return "?" + urlencode({**filters, "page": page})




@require_POST
@login_required
def sweep(request: HttpRequest, project: str) -> HttpResponse:
    """Run the review on (stewards): up to 50 batches of 100."""
    p = _project(request, project)
    access.require(request.user, access.STEWARD)
    moved = 0
    for _ in range(50):
        step = p.traces.continue_decision_review()
        moved += step.moved
        if not step.moved or not step.more:
            break
    messages.success(request, f"Review moved {moved} queued decisions on.")
    return redirect("overview", project=p.id)



@require_GET
@login_required
def conflicts(request: HttpRequest, project: str) -> HttpResponse:
    p = _project(request, project)
    after = _param(request.GET, "after", 500) or None
    found = p.traces.list_conflicts(max_groups=CONFLICT_PAGE, after_key=after)
    next_url = "?" + urlencode({"after": found.groups[-1].choice_key}) if found.truncated and found.groups else None
    return render(request, "reviewer/conflicts.html", _ctx(request, p, conflicts=found, next_url=next_url))
