"""Logging in and out, and the home page: the projects this person may open."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET

from .. import access
from ..oidc import LoginView
from ..store import check_store

login = LoginView.as_view()
logout = auth_views.LogoutView.as_view()


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
