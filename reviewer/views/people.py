"""Who holds which role in a project: stewards see the project's people and
change their roles here; staff also add people to the project.

A steward changes grants of this project only, and never their own (so no
steward locks themselves out by mistake; another steward or staff can). Staff
accounts are stewards in every project without a grant, so they are listed
apart and cannot be changed here.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.db.models import Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods

from .. import access
from ..models import ProjectGrant
from .activity import team_progress
from .base import _project


class GrantForm(forms.Form):
    username = forms.CharField(max_length=150)
    role = forms.ChoiceField(choices=ProjectGrant.ROLES, required=False)
    remove = forms.BooleanField(required=False)

    def clean(self) -> dict:
        data = super().clean()
        if not data.get("remove") and not data.get("role"):
            raise forms.ValidationError("Choose a role, or remove the person from the project.")
        return data


def _staff() -> list:
    users = get_user_model()
    return list(users.objects.filter(Q(is_staff=True) | Q(is_superuser=True), is_active=True).order_by("username"))


@never_cache
@require_http_methods(["GET", "POST"])
@login_required
def people(request: HttpRequest, project: str) -> HttpResponse:
    p = _project(request, project)
    access.require(request.user, access.STEWARD, project)
    form = GrantForm(request.POST or None)
    if request.method == "POST":
        refusal = _change(request, project, form)
        if refusal is None:
            return redirect("people", project=project)
        form.add_error(None, refusal)
    grants = (
        ProjectGrant.objects.filter(project_id=project, user__is_staff=False, user__is_superuser=False)
        .select_related("user", "user__oidc_identity")  # single sign-on people are marked
        .order_by("user__username")
    )
    context = {
        "form": form,
        "grants": grants,
        "staff": _staff(),
        "roles": ProjectGrant.ROLES,
        "may_add": access.is_staff(request.user),
        "progress": team_progress(p),
    }
    return render(request, "reviewer/people.html", context, status=400 if form.errors else 200)


def _change(request: HttpRequest, project: str, form: GrantForm) -> str | None:
    """Apply one change; a sentence saying why not, or None when done."""
    if not form.is_valid():
        return "Nothing was changed."
    username, role, remove = form.cleaned_data["username"], form.cleaned_data["role"], form.cleaned_data["remove"]
    person = get_user_model().objects.filter(username=username).first()
    granted = person is not None and ProjectGrant.objects.filter(user=person, project_id=project).exists()
    if person is None or (not granted and not access.is_staff(request.user)):
        # a steward may change only people already in the project (and so
        # learns nothing about other accounts); staff may add anyone
        return f"{username} is not in this project. Nothing was changed." + (
            "" if access.is_staff(request.user) else " Ask an administrator to add them."
        )
    if person.pk == request.user.pk:
        return "You cannot change your own role. Ask another steward or an administrator."
    if person.is_staff or person.is_superuser:
        return f"{username} is staff, a steward in every project; a grant here changes nothing."
    if remove:
        access.revoke(person, project)
        messages.success(request, f"{username} was removed from this project; only an administrator can add them back.")
    else:
        access.grant(person, project, role)
        messages.success(request, f"{username} is now {role} in this project.")
    return None
