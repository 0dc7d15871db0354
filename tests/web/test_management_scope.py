"""Every management view is scoped by its project: a steward of one project
can neither see nor change another project's tokens or grants through it,
whatever ids or names they send."""

from __future__ import annotations

from typing import Any

from django.test import Client

from reviewer.api.tokens import create_token
from reviewer.models import ApiToken, ProjectGrant

from .conftest import Story, make_user

OTHER = "other-project"


def test_a_steward_here_cannot_see_or_revoke_another_projects_tokens(story: Story, as_: Any) -> None:
    theirs, _ = create_token(project_id=OTHER, name="their bot", agent_id="their-bot")
    same_agent, _ = create_token(project_id=OTHER, name="planner elsewhere", agent_id="planner")
    mine, _ = create_token(project_id=story.project, name="our bot", agent_id="planner")
    steward = as_("steward")
    page = steward.get(f"/p/{story.project}/tokens/").content.decode()
    assert "our bot" in page and "their bot" not in page and "planner elsewhere" not in page
    for record in (theirs, same_agent):
        answer = steward.post(f"/p/{story.project}/tokens/{record.pk}/revoke")
        assert answer.status_code == 404
        assert ApiToken.objects.get(pk=record.pk).revoked_at is None
    assert steward.post(f"/p/{story.project}/tokens/{mine.pk + 10_000}/revoke").status_code == 404
    # and the token the steward made here belongs here
    steward.post(f"/p/{story.project}/tokens/", {"name": "new", "agent_id": "agent-x", "role": "agent"})
    assert ApiToken.objects.get(agent_id="agent-x").project_id == story.project
    # their own token: revoked, and only it
    assert steward.post(f"/p/{story.project}/tokens/{mine.pk}/revoke").status_code == 302
    assert ApiToken.objects.get(pk=mine.pk).revoked_at is not None
    assert not ApiToken.objects.filter(project_id=OTHER, revoked_at__isnull=False).exists()


def test_a_steward_here_cannot_see_or_change_grants_of_another_project(story: Story, people: Any, as_: Any) -> None:
    there = make_user("tess", "reviewer", [OTHER])  # only elsewhere
    both = make_user("bo", "viewer", [story.project, OTHER])  # here and elsewhere
    ProjectGrant.objects.filter(user=both, project_id=OTHER).update(role="steward")
    steward = as_("steward")
    page = steward.get(f"/p/{story.project}/people/").content.decode()
    assert "bo" in page and "tess" not in page
    url = f"/p/{story.project}/people/"
    for form, here in (
        ({"username": "tess", "role": "steward"}, None),  # not in this project: a steward cannot add her
        ({"username": "tess", "remove": "on"}, None),
        ({"username": "bo", "role": "reviewer"}, "reviewer"),
        ({"username": "bo", "remove": "on"}, None),
    ):
        steward.post(url, form)
        grants = dict(ProjectGrant.objects.filter(project_id=OTHER).values_list("user__username", "role"))
        assert grants == {"tess": "reviewer", "bo": "steward"}, form  # untouched elsewhere
        person = there if form["username"] == "tess" else both
        assert (
            ProjectGrant.objects.filter(user=person, project_id=story.project).values_list("role", flat=True).first()
            == here
        ), form


def test_a_steward_elsewhere_reaches_no_management_view_here(story: Story, people: Any) -> None:
    mine, _ = create_token(project_id=story.project, name="our bot", agent_id="planner")
    outsider = Client()
    outsider.force_login(people["outsider"])  # a steward of "elsewhere" only
    for method, url, form in (
        ("get", f"/p/{story.project}/tokens/", None),
        ("post", f"/p/{story.project}/tokens/", {"name": "x", "agent_id": "x", "role": "agent"}),
        ("post", f"/p/{story.project}/tokens/{mine.pk}/revoke", None),
        ("get", f"/p/{story.project}/people/", None),
        ("post", f"/p/{story.project}/people/", {"username": "vera", "remove": "on"}),
        ("get", f"/p/{story.project}/activity/", None),
    ):
        answer = getattr(outsider, method)(url, form or {})
        assert answer.status_code == 404, (method, url, answer.status_code)
    assert ApiToken.objects.get(pk=mine.pk).revoked_at is None
    assert not ApiToken.objects.filter(agent_id="x").exists()
    assert ProjectGrant.objects.filter(user=people["viewer"], project_id=story.project).exists()
