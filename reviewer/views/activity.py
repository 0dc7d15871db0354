"""The project's activity log: who did what, people and agents."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from core.retention import ActivityLog

from .base import _param, _project


@require_GET
@login_required
def activity(request: HttpRequest, project: str) -> HttpResponse:
    p = _project(request, project)
    before = _param(request.GET, "before", 100) or None
    entries, links = p.activity.list_with_links(before=before, limit=50)
    next_url = "?" + urlencode({"before": ActivityLog.cursor(entries[-1])}) if len(entries) == 50 else None
    return render(
        request,
        "reviewer/activity.html",
        {"entries": entries, "next_url": next_url, "links": links},
    )
