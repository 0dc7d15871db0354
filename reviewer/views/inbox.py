"""The person's inbox ("For you"): the entries naming them in every project
they may open, newest first; mark read, one or all; their e-mail
preference. Nothing here is a project page: each project's access is
checked again as it is read (``reviewer.inbox``)."""

from __future__ import annotations

from datetime import UTC, datetime
from urllib.parse import urlencode

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from .. import access, inbox
from ..models import NoticePrefs
from ..store import get_store
from .base import _param


def _scope(request: HttpRequest) -> str | None:
    """The one project asked for (``?project=``), if the person may open it."""
    project = _param(request.GET if request.method == "GET" else request.POST, "project", 200).strip() or None
    if project is not None and access.role_of(request.user, project) is None:
        raise Http404("no such project")
    return project


@require_GET
@login_required
def inbox_page(request: HttpRequest) -> HttpResponse:
    store = get_store()
    project = _scope(request)
    before = _param(request.GET, "before", 200) or None
    items, cursor = inbox.page(request.user, store, project=project, before=before)
    query = {"project": project} if project else {}
    return render(
        request,
        "reviewer/inbox.html",
        {
            "items": items,
            "ending": inbox.ending_claims(request.user, store, project=project) if before is None else [],
            "scope": project,
            "projects": inbox.projects(request.user, store),
            "next_url": "?" + urlencode({**query, "before": cursor}) if cursor else None,
            "first_url": "?" + urlencode(query) if query else reverse("inbox"),
        },
    )


def _back(request: HttpRequest) -> HttpResponse:
    project = _param(request.POST, "project", 200).strip()
    where = reverse("inbox")
    if _param(request.POST, "scope", 10) == "one" and project:
        where += "?" + urlencode({"project": project})
    return redirect(where)


@require_POST
@login_required
def mark_read(request: HttpRequest) -> HttpResponse:
    """One notice read: its project (one the person may open) and its entry
    id; it is stored only if that entry is one of the person's notices
    there, at the time the store gives (the form's ``at`` is not trusted)."""
    project = _scope(request)
    entry_id = _param(request.POST, "entry", 100).strip()
    if (
        project is None
        or not entry_id
        or len(entry_id) > 64
        or not inbox.mark_read(request.user, get_store(), project, entry_id)
    ):
        messages.error(request, "That notice could not be marked read: open the inbox again.")
        return redirect("inbox")
    return _back(request)


@require_POST
@login_required
def mark_all_read(request: HttpRequest) -> HttpResponse:
    """Everything up to now read: in the one project shown, or in all."""
    project = _scope(request)
    ids = [project] if project else inbox.projects(request.user, get_store())
    inbox.mark_all_read(request.user, ids)
    messages.success(request, "Marked all read.")
    return _back(request)


class PreferencesForm(forms.Form):
    email = forms.BooleanField(
        required=False,
        label="E-mail me when I am mentioned or assigned",
        help_text="Held a couple of minutes and combined into one message; not sent if you read it here first. "
        "The message carries links only, never what anyone wrote.",
    )


@require_http_methods(["GET", "POST"])
@login_required
def preferences(request: HttpRequest) -> HttpResponse:
    prefs = NoticePrefs.objects.filter(user=request.user).first()
    on = prefs.email if prefs else settings.REVIEWER_NOTICE_EMAIL_DEFAULT
    form = PreferencesForm(request.POST if request.method == "POST" else None, initial={"email": on})
    if request.method == "POST" and form.is_valid():
        want = form.cleaned_data["email"]
        if prefs is None:
            prefs = NoticePrefs(user=request.user)
        if want and not prefs.email:
            prefs.mailed_until = datetime.now(UTC)  # from now on: what came while it was off is not sent
        prefs.email = want
        prefs.save()
        messages.success(request, "E-mail " + ("on." if want else "off."))
        return redirect("inbox_preferences")
    return render(
        request,
        "reviewer/inbox_preferences.html",
        {"form": form, "address": request.user.email, "sending": settings.REVIEWER_NOTICE_EMAIL},
    )
