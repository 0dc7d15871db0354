"""Roles and project access, checked in every view.

Roles are Django groups: ``viewer`` reads, ``reviewer`` also reaffirms,
supersedes and rejects, ``steward`` also redacts events, deletes tasks and
runs the review sweep. Staff and superusers act as stewards in every project.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import PermissionDenied
from django.http import Http404

from core.stores import GraphStore

VIEWER, REVIEWER, STEWARD = "viewer", "reviewer", "steward"
ROLES = (VIEWER, REVIEWER, STEWARD)
_RANK = {role: n for n, role in enumerate(ROLES)}


def role_of(user: AbstractBaseUser | AnonymousUser) -> str | None:
    if not user.is_authenticated:
        return None
    if user.is_staff or user.is_superuser:
        return STEWARD
    names = {g.name for g in user.groups.all()}
    held = [r for r in ROLES if r in names]
    return held[-1] if held else None


def can(user: AbstractBaseUser | AnonymousUser, role: str) -> bool:
    mine = role_of(user)
    return mine is not None and _RANK[mine] >= _RANK[role]


def require(user: AbstractBaseUser | AnonymousUser, role: str) -> None:
    """403 unless the person holds ``role`` or a higher one."""
    if not can(user, role):
        raise PermissionDenied(f"this needs the {role} role")


def projects_for(user: AbstractBaseUser | AnonymousUser, store: GraphStore) -> list[str]:
    if not user.is_authenticated or role_of(user) is None:
        return []
    existing = store.list_projects()
    if user.is_staff or user.is_superuser:
        return existing
    granted = set(user.project_grants.values_list("project_id", flat=True))
    return sorted(granted)


def require_project(user: AbstractBaseUser | AnonymousUser, project_id: str) -> None:
    """404 for a project the person may not open (as if it did not exist)."""
    if role_of(user) is None or not project_id or len(project_id) > 200 or "\x00" in project_id:
        raise Http404("no such project")
    if user.is_staff or user.is_superuser:
        from .store import check_store

        if project_id not in check_store().list_projects():
            raise Http404("no such project")
        return
    if not user.project_grants.filter(project_id=project_id).exists():
        raise Http404("no such project")
