"""What every project page needs in its context, from one place.

A project view calls ``views.base._project`` first, which checks the
person's access to the project and marks the request with it; only then do
the templates get the project and what the person may do there. An error
page (403, 404, 503) is not a project page: the store middleware drops the
mark when a view raises, so those pages look the same in every project.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from core.decisions import DEFAULT_REAFFIRM_EXPLANATION

from . import access
from .presenters import REASON_LABELS

#: the attribute ``_project`` sets on the request once access is checked
PROJECT_ATTRIBUTE = "reviewer_project"


def project_page(request: HttpRequest) -> dict[str, Any]:
    project = getattr(request, PROJECT_ATTRIBUTE, None)
    if project is None:
        return {}
    user = request.user
    return {
        "project": project,
        "default_explanation": DEFAULT_REAFFIRM_EXPLANATION,
        "role": access.role_of(user, project),
        "can_review": access.can(user, access.REVIEWER, project),
        "can_steward": access.can(user, access.STEWARD, project),
        "reason_labels": REASON_LABELS,
    }
