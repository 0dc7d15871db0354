"""Roles and project access, checked in every view.

A role belongs to one project: a person's ``ProjectGrant`` for a project
says whether they are ``viewer`` (reads), ``reviewer`` (also reaffirms,
supersedes and rejects) or ``steward`` (also redacts events, deletes tasks,
runs the review sweep, manages tokens and sees who holds which role) there,
independently of every other project. Staff and superusers act as stewards
in every project. Django groups are not read.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import PermissionDenied
from django.http import Http404

from core.stores import GraphStore

from .models import ProjectGrant

VIEWER, REVIEWER, STEWARD = ProjectGrant.VIEWER, ProjectGrant.REVIEWER, ProjectGrant.STEWARD
ROLES = (VIEWER, REVIEWER, STEWARD)
_RANK = {role: n for n, role in enumerate(ROLES)}
#: where a user object keeps its roles for the request it belongs to
_CACHE = "_reviewer_project_roles"

User = AbstractBaseUser | AnonymousUser


def is_staff(user: User) -> bool:
    return bool(user.is_authenticated and (user.is_staff or user.is_superuser))


def roles_of(user: User) -> dict[str, str]:
    """Each granted project's role for this person (staff: their grants
    only; they are stewards everywhere anyway)."""
    if not user.is_authenticated or not user.is_active:
        return {}
    cached = getattr(user, _CACHE, None)
    if cached is None:
        cached = dict(ProjectGrant.objects.filter(user=user).values_list("project_id", "role"))
        setattr(user, _CACHE, cached)
    return cached


def forget(user: User) -> None:
    """Drop the roles a user object remembers (after its grants change)."""
    if hasattr(user, _CACHE):
        delattr(user, _CACHE)


def role_of(user: User, project_id: str) -> str | None:
    """The person's role in ``project_id``, or None if they may not open it."""
    if not user.is_authenticated or not user.is_active:
        return None
    if is_staff(user):
        return STEWARD
    return roles_of(user).get(project_id)


def can(user: User, role: str, project_id: str) -> bool:
    """Whether the person holds ``role`` or a higher one in ``project_id``."""
    mine = role_of(user, project_id)
    return mine is not None and _RANK[mine] >= _RANK[role]


def require(user: User, role: str, project_id: str) -> None:
    """403 unless the person holds ``role`` or a higher one in ``project_id``."""
    if not can(user, role, project_id):
        raise PermissionDenied(f"this needs the {role} role in this project")


def grant(user: AbstractBaseUser, project_id: str, role: str) -> ProjectGrant:
    """Give ``user`` ``role`` in ``project_id`` (replacing any role they had there)."""
    if role not in _RANK:
        raise ValueError(f"unknown role {role!r}: one of {', '.join(ROLES)}")
    project_id = project_id.strip()
    if not project_id or len(project_id) > 200 or "\x00" in project_id:
        raise ValueError("a project id is 1 to 200 characters without NUL")
    found, _ = ProjectGrant.objects.update_or_create(user=user, project_id=project_id, defaults={"role": role})
    forget(user)
    return found


def revoke(user: AbstractBaseUser, project_id: str) -> bool:
    """Take away ``user``'s grant to ``project_id``; whether there was one."""
    deleted, _ = ProjectGrant.objects.filter(user=user, project_id=project_id).delete()
    forget(user)
    return bool(deleted)


def projects_for(user: User, store: GraphStore) -> list[str]:
    """The projects the person may open: every project for staff, else their grants."""
    if not user.is_authenticated or not user.is_active:
        return []
    if is_staff(user):
        return store.list_projects()
    return sorted(roles_of(user))


def require_project(user: User, project_id: str) -> GraphStore | None:
    """404 for a project the person may not open (as if it did not exist).
    The store, when this check asked it (staff: the project must exist,
    unless it was seen a moment ago), so the page need not ping it."""
    if not project_id or len(project_id) > 200 or "\x00" in project_id:
        raise Http404("no such project")
    if is_staff(user):
        from .store import project_exists

        # the question is the store's check too: no ping before it
        store, exists = project_exists(project_id)
        if not exists:
            raise Http404("no such project")
        return store
    if role_of(user, project_id) is None:
        raise Http404("no such project")
    return None
