"""A document's versions and the decisions that cite each one (the newest
few of each; ``version=N``: that version's, a page at a time, older ones
from ``before=``)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from ..converters import document_from_query
from .base import _int, _project


@require_GET
@login_required
def document(request: HttpRequest, project: str) -> HttpResponse:
    p = _project(request, project)
    key = document_from_query(p.graph, request.GET)  # by id: a key too long for a URL
    version = _int(request.GET.get("version"), 0, minimum=0) or None
    before = _int(request.GET.get("before"), 0, minimum=0) or None
    text_from = _int(request.GET.get("from"), 0, minimum=0)
    page = p.views.document_page(key, version=version, before=before, text_from=text_from)
    if page is None:
        raise Http404("no such document")
    context = {
        "info": page.info,
        "versions": page.versions,
        "text": page.text,
        "paged": page.paged,
        "before": page.before,
        "page_size": p.views.CITERS_PAGE,
        "text_from": page.text_from,
        "text_to": page.text_from + len(page.text or ""),
        "text_length": page.text_length,
        "text_earlier": max(0, page.text_from - p.views.TEXT_WINDOW) if page.text_from else None,
    }
    return render(request, "reviewer/document.html", context)
