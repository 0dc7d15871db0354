"""A project's API tokens: stewards make them (the token is shown once, on
the answer to the form, and kept only as a hash) and revoke them."""

from __future__ import annotations

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from .. import access
from ..api.tokens import TokenError, create_token, revoke
from ..models import ApiToken
from .base import _project


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="What the token is for, e.g. “nightly planner”.")
    agent_id = forms.CharField(
        max_length=100, label="Agent id", help_text="The author of what the token writes; one token per agent id."
    )
    role = forms.ChoiceField(choices=ApiToken.ROLES, initial=ApiToken.AGENT)


@never_cache
@require_http_methods(["GET", "POST"])
@login_required
def tokens(request: HttpRequest, project: str) -> HttpResponse:
    _project(request, project)
    access.require(request.user, access.STEWARD, project)
    new_token, made = None, None
    form = TokenForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            made, new_token = create_token(project_id=project, created_by=request.user, **form.cleaned_data)
        except TokenError as exc:
            form.add_error(None, str(exc))
        else:
            form = TokenForm()
    context = {
        "form": form,
        "new_token": new_token,
        "made": made,
        "tokens": ApiToken.objects.filter(project_id=project).order_by("revoked_at", "name"),
    }
    return render(request, "reviewer/tokens.html", context, status=400 if form.errors else 200)


@require_POST
@login_required
def revoke_token(request: HttpRequest, project: str, token_id: int) -> HttpResponse:
    _project(request, project)
    access.require(request.user, access.STEWARD, project)
    record = ApiToken.objects.filter(project_id=project, pk=token_id).first()
    if record is None:
        raise Http404("no such token")
    revoke(record)
    return redirect("tokens", project=project)
