"""The health check: does the graph store answer?"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from core.stores import GraphStoreError

from ..store import check_store


@require_GET
@never_cache
def healthz(request: HttpRequest) -> HttpResponse:
    """200 when the graph store answers, 503 when not. Only signed-in staff
    learn the backend and, when it is down, the short reason (which names
    its host and port): an anonymous caller (a load balancer, anyone on the
    network) learns nothing about the store but its state."""
    staff = request.user.is_authenticated and request.user.is_staff
    try:
        store = check_store()
    except GraphStoreError as exc:
        body = {"status": "unavailable"}
        if staff:
            body["reason"] = _short(str(exc))
        return JsonResponse(body, status=503)
    return JsonResponse({"status": "ok", "backend": store.backend} if staff else {"status": "ok"})


def _short(text: str, limit: int = 200) -> str:
    line = text.splitlines()[0] if text else "unknown error"
    return line if len(line) <= limit else line[: limit - 1] + "…"
