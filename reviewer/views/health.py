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
    """200 when the graph store answers, 503 with a short reason when not."""
    try:
        store = check_store()
    except GraphStoreError as exc:
        return JsonResponse({"status": "unavailable", "reason": _short(str(exc))}, status=503)
    return JsonResponse({"status": "ok", "backend": store.backend})


def _short(text: str, limit: int = 200) -> str:
    line = text.splitlines()[0] if text else "unknown error"
    return line if len(line) <= limit else line[: limit - 1] + "…"
