"""A document's versions and the decisions that cite each one."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from .base import _ctx, _param, _project

@require_GET
@login_required
def document(request: HttpRequest, project: str) -> HttpResponse:
    p = _project(request, project)
    key = _param(request.GET, "key")
    info = p.graph.get_document(key) if key else None
    if info is None:
        raise Http404("no such document")
    versions = p.graph.list_versions(key)
    rows = p.store.read(
        p.id,
        "MATCH (doc:Document {id: $id}) WITH doc MATCH (doc)<-[r:CITES_DOC]-(d:Decision) "
        "RETURN r.seq AS seq, d.id AS id, d.choice_key AS key, d.task_name AS task, d.review_state AS state "
        "ORDER BY seq DESC, key LIMIT 200",
        {"id": str(info.node_id)},
    )
    citing: dict[int, list[dict[str, Any]]] = {}
    for r in rows:
        citing.setdefault(r["seq"], []).append(r)
    current = p.graph.version_text(key, info.activation_seq) if info.state.value == "current" else None
    return render(request, "reviewer/document.html", _ctx(
        request, p, info=info, versions=[(v, citing.get(v.activation_seq, [])) for v in versions], text=current,
    ))
