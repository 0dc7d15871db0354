"""A document's versions and the decisions that cite each one."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from .base import _param, _project


@require_GET
@login_required
def document(request: HttpRequest, project: str) -> HttpResponse:
    p = _project(request, project)
    key = _param(request.GET, "key")
    page = p.views.document_page(key)
    if page is None:
        raise Http404("no such document")
    context = {"info": page.info, "versions": page.versions, "text": page.text}
    return render(request, "reviewer/document.html", context)
