"""A task's event log and redacting an event (stewards)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from core.retention import disk_purge_states, purge_disk_soon

from .. import access
from ..converters import task_from_query, task_query
from ..forms import RETENTION_ERRORS, RedactForm, new_request_id
from .base import _int, _param, _project


@require_GET
@login_required
def events(request: HttpRequest, project: str) -> HttpResponse:
    p = _project(request, project)
    name = task_from_query(p.history, request.GET, "task")
    after = _int(request.GET.get("after"), 0, maximum=10**12)
    page = p.history.list_events(name, after_seq=after, limit=50)
    if not page.found:
        raise Http404("no such task")
    next_url = f"?{task_query(p.id, name, 'task')}&after={page.next_after_seq}" if page.truncated else None
    redacted = [str(e.id) for e in page.events if e.redacted_at is not None]
    purged = disk_purge_states(p.store, p.id, redacted) if redacted else {}
    context = {"page": page, "name": name, "next_url": next_url, "purged": purged}
    return render(request, "reviewer/events.html", context)


@require_http_methods(["GET", "POST"])
@login_required
def redact(request: HttpRequest, project: str) -> HttpResponse:
    p = _project(request, project)
    access.require(request.user, access.STEWARD, project)
    source = request.POST if request.method == "POST" else request.GET
    event_id = _param(source, "event_id", 100)
    preview = p.views.redaction_preview(event_id)
    if preview is None:
        raise Http404("no such event")
    task_name, seq, event = preview.task_name, preview.seq, preview.event
    if request.method == "GET":
        form = RedactForm(initial={"request_id": new_request_id(), "event_id": event_id})
        return render(
            request,
            "reviewer/redact.html",
            {"form": form, "event": event, "task_name": task_name, "flags": p.views.redaction_flags(event_id)},
        )
    form = RedactForm(request.POST)
    error = None
    if form.is_valid():
        result = p.retention.redact_event(
            str(form.cleaned_data["event_id"]),
            reason=form.cleaned_data["reason"],
            request_id=form.cleaned_data["request_id"],
        )
        if result.recorded:
            flagged = len(result.affected_decision_ids)
            purge_disk_soon(p.store)  # the files are purged in the background; the pages say when
            messages.success(
                request,
                f"Event {seq} redacted; {flagged} citing decision{'' if flagged == 1 else 's'} "
                "flagged for review. Removal from disk is pending.",
            )
            events_page = reverse("events", kwargs={"project": p.id})
            return redirect(events_page + "?" + task_query(p.id, task_name, "task"))
        error = RETENTION_ERRORS[result.error]
    context = {
        "form": form,
        "event": event,
        "task_name": task_name,
        "error": error or "Check the form.",
        "flags": p.views.redaction_flags(event_id),
    }
    return render(request, "reviewer/redact.html", context, status=400)
