"""Every source of a role against every other (reviewer/access.py and
reviewer/oidc.py): a grant in the project, staff, superuser, an inactive
account, a grant elsewhere, and the roles single sign-on gives; the highest
that applies wins, in the core checks and in the pages."""

from __future__ import annotations

import itertools

import pytest
from django.contrib.auth.models import User
from django.test import Client

from reviewer import access
from reviewer.models import ProjectGrant
from reviewer.oidc import roles_from_groups, sync_grants

from .conftest import Story

RANK = {None: -1, "viewer": 0, "reviewer": 1, "steward": 2}


def test_each_role_source_against_every_other(story: Story) -> None:
    n = 0
    for grant, elsewhere, staff, superuser, active in itertools.product(
        (None, "viewer", "reviewer", "steward"), (None, "steward"), (False, True), (False, True), (True, False)
    ):
        n += 1
        user = User.objects.create_user(f"u{n}", password="x-long-password-1", is_staff=staff, is_superuser=superuser)
        user.is_active = active
        user.save()
        if grant:
            ProjectGrant.objects.create(user=user, project_id=story.project, role=grant)
        if elsewhere:
            ProjectGrant.objects.create(user=user, project_id="elsewhere", role=elsewhere)
        expected = None if not active else "steward" if (staff or superuser) else grant
        case = (grant, elsewhere, staff, superuser, active)
        assert access.role_of(user, story.project) == expected, case
        for role in access.ROLES:
            assert access.can(user, role, story.project) is (RANK[expected] >= RANK[role]), (case, role)
        if not active:
            continue
        client = Client()
        client.force_login(user)
        pages = {"viewer": f"/p/{story.project}/review/", "steward": f"/p/{story.project}/tokens/"}
        for role, url in pages.items():
            status = client.get(url).status_code
            want = 404 if expected is None else 200 if RANK[expected] >= RANK[role] else 403
            assert status == want, (case, url, status)


@pytest.mark.parametrize(
    "changes",
    [
        ["reviewer", "steward", "viewer", None],  # up, up, down, gone
        ["steward", "viewer", "steward"],
        [None, "viewer", "viewer", "reviewer"],
    ],
)
def test_single_sign_on_roles_follow_the_groups_at_every_sign_in(db: None, changes: list[str | None]) -> None:
    """Each sign-in makes the person's grants exactly what their groups give
    now: raised, lowered, moved or taken away; the highest of several groups."""
    user = User.objects.create_user("sso-person")
    mapping = {
        "eng": {"p1": "viewer"},
        "leads": {"p1": "reviewer", "p2": "viewer"},
        "admins": {"p1": "steward"},
    }
    groups_for = {None: [], "viewer": ["eng"], "reviewer": ["eng", "leads"], "steward": ["eng", "admins"]}
    for role in changes:
        roles = roles_from_groups(groups_for[role], mapping)
        sync_grants(user, roles)
        assert access.role_of(user, "p1") == role
        assert dict(ProjectGrant.objects.filter(user=user).values_list("project_id", "role")) == roles
        fresh = User.objects.get(pk=user.pk)
        assert access.role_of(fresh, "p1") == role
        assert access.role_of(fresh, "p2") == ("viewer" if role == "reviewer" else None)


def test_grants_revocations_and_the_projects_a_person_may_open(story: Story) -> None:
    """What the people page and the commands change, and what every page
    checks first: a grant replaces the role (seen at once by the same user
    object), refuses a role or project id that cannot be; a revocation says
    whether there was a grant; a project id that cannot be, or (for staff) a
    project the store does not hold, is 404 like one the person may not open."""
    from django.core.exceptions import PermissionDenied
    from django.http import Http404

    from reviewer.store import get_store

    pat = User.objects.create_user("pat", password="x-long-password-1")
    access.grant(pat, f" {story.project} ", "viewer")  # the id as typed, trimmed
    assert access.role_of(pat, story.project) == "viewer" and access.projects_for(pat, get_store()) == [story.project]
    access.grant(pat, story.project, "steward")
    assert access.role_of(pat, story.project) == "steward"  # replaced, and the same object knows it
    assert ProjectGrant.objects.filter(user=pat).count() == 1
    for project, role in [
        (story.project, "admin"),
        ("", "viewer"),
        (" ", "viewer"),
        ("p" * 201, "viewer"),
        ("a\x00b", "viewer"),
    ]:
        with pytest.raises(ValueError):
            access.grant(pat, project, role)
    access.grant(pat, "p" * 200, "viewer")  # at the limit
    assert access.projects_for(pat, get_store()) == sorted([story.project, "p" * 200])
    assert access.require_project(pat, "p" * 200) is None  # an id at the limit opens
    assert access.require_project(pat, story.project) is None
    for bad in ("", "p" * 201, "a\x00b", "elsewhere"):
        with pytest.raises(Http404):
            access.require_project(pat, bad)
    assert access.revoke(pat, story.project) is True and access.revoke(pat, story.project) is False
    assert access.role_of(pat, story.project) is None  # forgotten by the same object too
    with pytest.raises(PermissionDenied, match="viewer"):
        access.require(pat, "viewer", story.project)
    with pytest.raises(Http404):
        access.require_project(pat, story.project)
    pat.is_active = False
    assert access.projects_for(pat, get_store()) == [] and access.roles_of(pat) == {}
    staff = User.objects.create_user("stan-staff", password="x-long-password-1", is_staff=True)
    assert access.projects_for(staff, get_store()) == get_store().list_projects()
    access.require_project(staff, story.project)  # held by the store: no 404
    for bad in ("", "p" * 201, "a\x00b", story.project + "-not-in-the-store"):
        with pytest.raises(Http404):
            access.require_project(staff, bad)
