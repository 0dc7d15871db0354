"""A task's event log and redacting an event (stewards)."""

from __future__ import annotations

import hashlib
import uuid
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods

from core.models import DiskState
from core.retention import disk_purge_states, purge_disk_soon
from core.review_views import COPIES_SHOWN as SHOWN
from core.review_views import RedactionPreview

from .. import access
from ..converters import task_from_query, task_query
from ..forms import RETENTION_ERRORS, RedactForm, new_request_id
from ..presenters import AFTER_REDACTION
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
    """The confirmation page lists the other events that hold the text
    (``copies``); the ones ticked are redacted in the same action, each as
    a redaction of its own (its activity entry, its citers flagged), under
    a request id derived from the form's, so a retry acts once."""
    p = _project(request, project)
    access.require(request.user, access.STEWARD, project)
    source = request.POST if request.method == "POST" else request.GET
    event_id = _param(source, "event_id", 100)
    preview = p.views.redaction_preview(event_id, copies=request.method == "GET")
    if preview is None:
        raise Http404("no such event")
    if request.method == "GET":
        form = RedactForm(initial={"request_id": new_request_id(), "event_id": event_id})
        return _page(request, p, form, preview, picked=[])
    form = RedactForm(request.POST)
    picked = request.POST.getlist("copy")[: SHOWN + 1]
    error = None
    if len(picked) > SHOWN or not all(_is_uuid(e) for e in picked):
        error = f"Pick at most {SHOWN} of the copies listed."
    elif form.is_valid():
        reason, request_id = form.cleaned_data["reason"], form.cleaned_data["request_id"]
        result = p.retention.redact_event(str(form.cleaned_data["event_id"]), reason=reason, request_id=request_id)
        if result.recorded:
            flagged = set(result.affected_decision_ids)
            done, missing = 0, 0
            for eid in dict.fromkeys(e.lower() for e in picked if e.lower() != preview.event_id.lower()):
                copy = p.retention.redact_event(eid, reason=reason, request_id=copy_request_id(request_id, eid))
                done, missing = (done + 1, missing) if copy.recorded else (done, missing + 1)
                flagged.update(copy.affected_decision_ids)
            purge_disk_soon(p.store)  # the files are purged in the background; the pages say when
            messages.success(request, _redacted(preview.seq, done, missing, len(flagged), preview.disk.state))
            events_page = reverse("events", kwargs={"project": p.id})
            return redirect(events_page + "?" + task_query(p.id, preview.task_name, "task"))
        error = RETENTION_ERRORS[result.error]
    preview = p.views.redaction_preview(event_id)  # the copies again, for the form shown once more
    assert preview is not None
    return _page(request, p, form, preview, picked=picked, error=error or "Check the form.", status=400)


def _is_uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return len(text) == 36


def copy_request_id(request_id: str, event_id: str) -> str:
    """The request id of one copy's redaction: the same on a retry of the
    form, different for each copy."""
    return "copy-" + hashlib.sha256(f"{request_id}\x00{event_id}".encode()).hexdigest()[:40]


def _page(
    request: HttpRequest,
    p: Any,
    form: RedactForm,
    preview: RedactionPreview,
    *,
    picked: list[str],
    error: str | None = None,
    status: int = 200,
) -> HttpResponse:
    context = {
        "form": form,
        "event": preview.event,
        "task_name": preview.task_name,
        "disk": preview.disk,
        "found": preview.copies,
        "picked": {e.lower() for e in picked},
        "flags": p.views.redaction_flags(preview.event_id),
        "error": error,
    }
    return render(request, "reviewer/redact.html", context, status=status)


def _redacted(seq: int, copies: int, missing: int, flagged: int, disk: DiskState) -> str:
    also = f" and {copies} cop{'y' if copies == 1 else 'ies'}" if copies else ""
    gone = f" ({missing} cop{'y was' if missing == 1 else 'ies were'} no longer there)" if missing else ""
    return (
        f"Event {seq}{also} redacted{gone}; {flagged} citing decision{'' if flagged == 1 else 's'} "
        f"flagged for review. {AFTER_REDACTION[disk]}"
    )
