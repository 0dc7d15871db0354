"""Request middleware: security headers, and a clear page when the store is down
(or any view fails: an error page is never a project page, see reviewer.context)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.utils.cache import add_never_cache_headers

from core.stores import GraphStoreError, GraphStoreTimeoutError, redact_url

from .context import PROJECT_ATTRIBUTE
from .store import SAFE_METHODS, reset_store

log = logging.getLogger(__name__)

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'self'; object-src 'none'"
)


class ContentSecurityPolicyMiddleware:
    """Only the app's own scripts and styles may run."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        response.headers.setdefault("Content-Security-Policy", CSP)
        return response


class NoStoreForSignedInMiddleware:
    """A page shown to a signed-in person (decisions, events, tokens) is kept
    by no cache: not the browser's (back after logout on a shared machine),
    not a proxy's. Static files are left to their own cache headers."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        from django.conf import settings

        response = self.get_response(request)
        user = getattr(request, "user", None)
        static = "/" + settings.STATIC_URL.lstrip("/")
        if user is not None and user.is_authenticated and not request.path.startswith(static):
            add_never_cache_headers(response)  # Cache-Control: max-age=0, no-cache, no-store, must-revalidate, private
        return response


class AppNotFoundMiddleware:
    """With DEBUG on, Django answers a 404 with its technical page (unstyled,
    and naming the URL patterns); a person sees the app's own page instead.
    JSON answers (the agents' API) are left as they are."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        from django.conf import settings

        response = self.get_response(request)
        if settings.DEBUG and response.status_code == 404 and response.get("Content-Type", "").startswith("text/html"):
            request.__dict__.pop(PROJECT_ATTRIBUTE, None)
            body = render_to_string("404.html", {}, request=request)
            response = HttpResponse(body, status=404)
        return response


class StoreUnavailableMiddleware:
    """A store failure becomes a 503 page that says so, never a traceback.

    A page that only reads (GET, HEAD) is not preceded by a ping: when its
    store fails, the store is reopened and the page asked once more, so a
    handle that died between two pages (the store restarted) costs the
    person nothing. An action pinged before it began."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        request.__dict__.pop(PROJECT_ATTRIBUTE, None)  # an error page is not a project page
        if not isinstance(exception, GraphStoreError):
            return None
        log.warning("graph store unavailable: %s", exception)
        if isinstance(exception, GraphStoreTimeoutError):
            # a store that hangs: asking again (or reopening it) would only
            # wait as long once more; the same handle answers when it is back
            return store_unavailable_response(request)
        reset_store()  # reconnects: for this page's second asking, or the next request
        match = request.resolver_match
        if request.method in SAFE_METHODS and match is not None and not getattr(request, _ASKED_AGAIN, False):
            setattr(request, _ASKED_AGAIN, True)
            try:
                return match.func(request, *match.args, **match.kwargs)
            except GraphStoreError as again:
                request.__dict__.pop(PROJECT_ATTRIBUTE, None)
                log.warning("graph store unavailable: %s", again)
                reset_store()
        return store_unavailable_response(request)


#: set on a request once its view was asked a second time
_ASKED_AGAIN = "_reviewer_store_asked_again"


def store_unavailable_response(request: HttpRequest) -> HttpResponse:
    from django.conf import settings

    from .inbox import unread_unknown

    unread_unknown(request)  # the top bar's count would wait for the store once more
    # where the store is helps whoever runs the service, and nobody else
    user = getattr(request, "user", None)
    where = redact_url(settings.REVIEWER_STORE_URL) if user is not None and user.is_staff else ""
    body = render_to_string(
        "reviewer/store_unavailable.html",
        {"store": where},
        request=request,
    )
    response = HttpResponse(body, status=503)
    response["Retry-After"] = "5"
    return response
