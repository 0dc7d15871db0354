"""The task list, one task's view, and deleting a task (stewards)."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from core.models import StepState
from core.retention import disk_pending, purge_disk_soon

from .. import access
from ..converters import task_from_query
from ..forms import RETENTION_ERRORS, DeleteTaskForm, new_request_id
from ..presenters import AFTER_REDACTION
from .base import _param, _project


@require_GET
@login_required
def tasks(request: HttpRequest, project: str) -> HttpResponse:
    p = _project(request, project)
    q = _param(request.GET, "q", 200).strip() or None
    after = _param(request.GET, "after") or None
    found, more = p.history.list_tasks(search=q, after_name=after, limit=50)
    search = {"q": q} if q else {}
    next_url = "?" + urlencode({**search, "after": found[-1].name}) if more and found else None
    return render(request, "reviewer/tasks.html", {"tasks": found, "q": q or "", "next_url": next_url})


@require_GET
@login_required
def task(request: HttpRequest, project: str) -> HttpResponse:
    p = _project(request, project)
    name = task_from_query(p.history, request.GET)
    found = p.history.get_task(name)
    if not found.found or found.view is None:
        raise Http404("no such task")
    view = found.view
    states = [(state.value, view.steps[state], view.step_counts[state]) for state in StepState]
    return render(request, "reviewer/task.html", {"v": view, "states": states, "name": name})


@require_http_methods(["GET", "POST"])
@login_required
def delete_task(request: HttpRequest, project: str) -> HttpResponse:
    p = _project(request, project)
    access.require(request.user, access.STEWARD, project)
    # by id (a name too long for a URL) in the page's query, also when its form posts
    name = task_from_query(p.history, request.GET if request.GET.get("id") or request.method == "GET" else request.POST)
    include = request.POST.get("include_decisions") == "on" if request.method == "POST" else True
    preview = p.retention.preview_delete_task(name, include_decisions=include)
    if not preview.found:
        raise Http404("no such task")
    keep_preview = p.retention.preview_delete_task(name, include_decisions=False)
    if request.method == "GET":
        form = DeleteTaskForm(initial={"request_id": new_request_id(), "include_decisions": True})
        context = {
            "form": form,
            "name": name,
            "preview": preview,
            "keep_preview": keep_preview,
            "disk": disk_pending(p.store),
        }
        return render(request, "reviewer/delete_task.html", context)
    form = DeleteTaskForm(request.POST)
    error = None
    if form.is_valid():
        result = p.retention.delete_task(
            name,
            include_decisions=form.cleaned_data["include_decisions"],
            reason=form.cleaned_data["reason"],
            request_id=form.cleaned_data["request_id"],
        )
        if result.recorded:
            purge_disk_soon(p.store)
            flagged, removed = len(result.affected_decision_ids), preview.decisions
            gone = f"{removed} decision{'' if removed == 1 else 's'} removed; " if include else ""
            elsewhere = f"{flagged} decision{'' if flagged == 1 else 's'} elsewhere flagged for review."
            after = AFTER_REDACTION[disk_pending(p.store).state]
            messages.success(request, f"Task “{name}” deleted: {gone}{elsewhere} {after}")
            return redirect("tasks", project=p.id)
        error = RETENTION_ERRORS[result.error]
    context = {
        "form": form,
        "name": name,
        "preview": preview,
        "keep_preview": keep_preview,
        "error": error or "Check the form.",
        "disk": disk_pending(p.store),
    }
    return render(request, "reviewer/delete_task.html", context, status=400)
