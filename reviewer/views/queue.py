"""The overview, the review queue, the sweep that runs the review on, and the
conflict groups."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_POST

from core.models import ReviewReason
from core.review_sweep import review_until_done

from .. import access
from ..presenters import REASON_LABELS
from .base import CONFLICT_PAGE, PAGE, _int, _param, _project


@require_GET
@login_required
def overview(request: HttpRequest, project: str) -> HttpResponse:
    p = _project(request, project)
    counts, causes = p.traces.review_summary(causes=10)
    return render(
        request,
        "reviewer/overview.html",
        {
            "counts": counts,
            "open_tasks": p.history.count_tasks("open"),
            "causes": causes,
            "recent": p.activity.list(limit=10),
        },
    )


# -- the review queue -----------------------------------------------------------------


@require_GET
@login_required
def queue(request: HttpRequest, project: str) -> HttpResponse:
    p = _project(request, project)
    q = p.views.queue_page(
        task=_param(request.GET, "task") or None,
        reason=_param(request.GET, "reason") or None,
        state=_param(request.GET, "state") or None,
        cause=_param(request.GET, "cause") or None,
        page=_int(request.GET.get("page"), 1, minimum=1, maximum=10**6),
        page_size=PAGE,
    )
    return render(
        request,
        "reviewer/queue.html",
        {
            "result": q.result,
            "groups": q.groups,
            "filters": q.filters,
            "page": q.page,
            "pages": q.pages,
            "prev_url": _qs(q.filters, q.page - 1) if q.page > 1 else None,
            "next_url": _qs(q.filters, q.page + 1) if q.page < q.pages else None,
            "reasons": [(r.value, REASON_LABELS[r.value]) for r in ReviewReason],
            "counts": q.counts,
        },
    )


def _qs(filters: dict[str, str], page: int) -> str:
    return "?" + urlencode({**filters, "page": page})


@require_POST
@login_required
def sweep(request: HttpRequest, project: str) -> HttpResponse:
    """Run the review on (stewards): up to 50 batches of 100."""
    p = _project(request, project)
    access.require(request.user, access.STEWARD)
    moved = review_until_done(p.traces, max_steps=50).moved
    messages.success(request, f"Review moved {moved} queued decisions on.")
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
