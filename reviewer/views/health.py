"""The health check: does the graph store answer?"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from core.stores import GraphStore, GraphStoreError, GraphStoreTimeoutError

from .. import store as shared
from ..store import check_store

#: /healthz answers within this, whatever the store does
HEALTH_TIMEOUT_S = 0.8
#: ... once the store is open; the check that opens it waits this long
OPEN_TIMEOUT_S = 15.0
_pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="healthz")


def _check_within(seconds: float) -> GraphStore:
    """``check_store()``, given up after ``seconds``: a store that hangs
    (its read timeout is longer) or is being reopened holds a worker thread
    here, never the answer. The ping goes on in the background until the
    store's own timeout ends it."""
    future = _pool.submit(check_store)
    try:
        return future.result(timeout=seconds)
    except FutureTimeout:
        raise GraphStoreTimeoutError(f"the graph store did not answer within {seconds:g} s") from None


@require_GET
@never_cache
def healthz(request: HttpRequest) -> HttpResponse:
    """200 when the graph store answers, 503 when not. Only signed-in staff
    learn the backend and, when it is down, the short reason (which names
    its host and port): an anonymous caller (a load balancer, anyone on the
    network) learns nothing about the store but its state."""
    staff = request.user.is_authenticated and request.user.is_staff
    try:
        # a first check opens the store (an embedded server starts): that is
        # bounded by the store itself (a hung server is given up on in 10 s)
        store = _check_within(HEALTH_TIMEOUT_S if shared._store is not None else OPEN_TIMEOUT_S)
    except GraphStoreError as exc:
        body = {"status": "unavailable"}
        if staff:
            body["reason"] = _short(str(exc))
        return JsonResponse(body, status=503)
    return JsonResponse({"status": "ok", "backend": store.backend} if staff else {"status": "ok"})


def _short(text: str, limit: int = 200) -> str:
    line = text.splitlines()[0] if text else "unknown error"
    return line if len(line) <= limit else line[: limit - 1] + "…"
