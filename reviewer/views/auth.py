"""Logging in and out, and the home page: the projects this person may open."""

from __future__ import annotations

import ipaddress
import logging
from typing import Any

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.contrib.auth.forms import AuthenticationForm
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET

from .. import access
from ..oidc import LoginView, provider_name
from ..store import check_store

login = LoginView.as_view()
logout = auth_views.LogoutView.as_view()
log = logging.getLogger("reviewer.login")


def client_address(request: HttpRequest) -> str | None:
    """The address login failures are counted against: the connection's, or,
    when ``REVIEWER_CLIENT_IP_HEADER`` names a header the proxy in front sets
    (``X-Real-IP``, ``X-Forwarded-For``), the last entry of that header, the
    one the proxy wrote (entries before it are the client's to invent). A
    request without the header, or with a value that is no address, counts
    from the connection's address."""
    name = settings.REVIEWER_CLIENT_IP_HEADER
    if name:
        value = request.META.get("HTTP_" + name.upper().replace("-", "_"), "")
        entries = [entry.strip() for entry in value.split(",") if entry.strip()]
        if entries:
            candidate = entries[-1].removeprefix("[").split("]")[0]
            try:
                return str(ipaddress.ip_address(candidate))
            except ValueError:
                log.warning("%s holds no address (%r): counting the connection's address", name, entries[-1][:64])
    return request.META.get("REMOTE_ADDR")


def locked_out(request: HttpRequest, response: HttpResponse | None = None, credentials: Any = None) -> HttpResponse:
    """The login page, refusing: too many failed logins for this account or
    from this address (django-axes calls this; 429 Too Many Requests)."""
    minutes = int(settings.AXES_COOLOFF_TIME.total_seconds() // 60)
    username = (request.POST.get("username") or "")[:150]
    log.warning("login refused during a cool-off: account %r from %s", username, client_address(request))
    form = AuthenticationForm(request, initial={"username": username})
    message = (
        f"Too many failed logins for this account from this address. "
        f"Logging in is paused for {minutes} minute{'s' if minutes != 1 else ''}; "
        "each further attempt starts the pause again. Ask an administrator if you are locked out."
    )
    return render(
        request, "reviewer/login.html", {"form": form, "locked": message, "sso_name": provider_name()}, status=429
    )


@require_GET
@login_required
def home(request: HttpRequest) -> HttpResponse:
    store = check_store()
    projects = access.projects_for(request.user, store)
    if len(projects) == 1:
        return redirect("overview", project=projects[0])
    # each project with the person's role there (roles are per project)
    rows = [(p, access.role_of(request.user, p)) for p in projects]
    return render(request, "reviewer/home.html", {"projects": rows, "backend": store.backend})
