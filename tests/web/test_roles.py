"""Roles are per project: a person's role in one project says nothing about
another, existing grants kept their role when roles moved onto grants, and
``create_user`` gives a role per project."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client

from core.history import ConversationHistory
from core.models import DecisionStatus, ReviewState
from reviewer import access
from reviewer.models import ProjectGrant
from reviewer.store import get_store

from .conftest import Story, make_user
from .test_dashboard import decision


def _client(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _redact(client: Client, story: Story) -> int:
    data = {"event_id": story.event_id, "reason": "x", "confirm": "on", "request_id": "redact-1"}
    return client.post(f"/p/{story.project}/events/redact", data).status_code


def test_steward_elsewhere_is_only_a_reviewer_here(story: Story) -> None:
    mixed = make_user("mia", "reviewer", [story.project])
    ProjectGrant.objects.create(user=mixed, project_id="beta-elsewhere", role="steward")
    client = _client(mixed)
    p = f"/p/{story.project}"
    assert access.role_of(mixed, story.project) == "reviewer"
    assert access.role_of(mixed, "beta-elsewhere") == "steward"
    assert client.get(f"{p}/events/redact?event_id={story.event_id}").status_code == 403
    assert _redact(client, story) == 403
    assert client.post(f"{p}/task/delete", {"name": "on-call", "reason": "x", "confirm": "on"}).status_code == 403
    assert client.post(f"{p}/review/sweep").status_code == 403
    assert client.get(f"{p}/tokens/").status_code == 403
    history = ConversationHistory(get_store(), project_id=story.project, agent_id="t")
    assert history.fetch_event("choose-db", 1).event.redacted_at is None
    assert history.get_task("on-call").found
    # what the reviewer role allows here still works
    page = client.get(f"{p}/decisions/{story.moved}/").content.decode()
    assert "mia · reviewer" in page and "API tokens" not in page and "People" not in page
    response = client.post(f"{p}/decisions/{story.moved}/reaffirm", {"request_id": "m1", "explanation": "ok"})
    assert response.status_code in (200, 302)
    assert decision(story, story.moved).review_state is ReviewState.clear


def test_a_viewer_here_who_is_steward_elsewhere_sees_no_actions(story: Story) -> None:
    vic = make_user("vic", "viewer", [story.project])
    ProjectGrant.objects.create(user=vic, project_id="gamma-elsewhere", role="steward")
    client = _client(vic)
    p = f"/p/{story.project}"
    for url in (f"{p}/review/", f"{p}/decisions/{story.moved}/", f"{p}/events/?task=choose-db"):
        body = client.get(url).content.decode()
        assert "vic · viewer" in body, url
        assert "Reaffirm" not in body and "redact…" not in body and "API tokens" not in body, url
    data = {"request_id": "v1", "explanation": "x"}
    assert client.post(f"{p}/decisions/{story.moved}/reaffirm", data).status_code == 403
    d = decision(story, story.moved)
    assert (d.status, d.review_state) == (DecisionStatus.active, ReviewState.needs_review)


def test_a_project_without_a_grant_is_not_found_whatever_the_role_elsewhere(story: Story) -> None:
    stewie = make_user("stewie", "steward", ["delta-elsewhere"])
    client = _client(stewie)
    assert client.get(f"/p/{story.project}/").status_code == 404
    assert _redact(client, story) == 404
    assert access.role_of(stewie, story.project) is None


def test_staff_are_stewards_in_every_project(story: Story) -> None:
    boss = make_user("boss", None, [], staff=True)
    assert access.role_of(boss, story.project) == "steward"
    assert _client(boss).get(f"/p/{story.project}/tokens/").status_code == 200


def test_create_user_gives_a_role_per_project(db: None, tmp_path: Any) -> None:
    secret = tmp_path / "pw"
    secret.write_text("correct horse battery staple\n")
    call_command("create_user", "nora", grant=["acme=reviewer", "beta=steward"], password_file=secret)
    nora = User.objects.get(username="nora")
    assert access.roles_of(nora) == {"acme": "reviewer", "beta": "steward"}
    call_command("create_user", "nora", grant=["acme=viewer"], revoke=["beta"])
    access.forget(nora)
    assert access.roles_of(nora) == {"acme": "viewer"}
    for bad in ("acme", "acme=owner", "=viewer"):
        with pytest.raises(CommandError, match="PROJECT=ROLE"):
            call_command("create_user", "nora", grant=[bad])
    access.forget(nora)
    assert access.roles_of(nora) == {"acme": "viewer"}  # a refused command changed nothing


@pytest.mark.django_db(transaction=True)
def test_the_migration_gives_each_grant_its_persons_highest_group_role() -> None:
    executor = MigrationExecutor(connection)
    before = [("reviewer", "0002_api_tokens")]
    after = [("reviewer", "0003_grant_roles")]
    executor.migrate(before)
    apps = executor.loader.project_state(before).apps
    users, groups = apps.get_model("auth", "User"), apps.get_model("auth", "Group")
    grants = apps.get_model("reviewer", "ProjectGrant")
    viewer, reviewer, steward = (groups.objects.get_or_create(name=n)[0] for n in ("viewer", "reviewer", "steward"))
    people = {}
    for name, held in (("v", [viewer]), ("r", [viewer, reviewer]), ("s", [steward, reviewer]), ("none", [])):
        people[name] = users.objects.create(username=f"mig-{name}")
        people[name].groups.set(held)
        for project in ("acme", "beta"):
            grants.objects.create(user=people[name], project_id=project)
    executor.loader.build_graph()
    executor.migrate(after)
    found = {
        (g.user.username, g.project_id): g.role for g in ProjectGrant.objects.select_related("user").order_by("id")
    }
    assert found == {
        ("mig-v", "acme"): "viewer",
        ("mig-v", "beta"): "viewer",
        ("mig-r", "acme"): "reviewer",
        ("mig-r", "beta"): "reviewer",
        ("mig-s", "acme"): "steward",
        ("mig-s", "beta"): "steward",
    }  # and a person with no role group, who could open nothing, gains nothing
    executor.loader.build_graph()
    executor.migrate(before)  # reversible: the groups get each person's highest grant role
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
    assert set(User.objects.get(username="mig-s").groups.values_list("name", flat=True)) >= {"steward"}


def test_the_activity_page_tells_a_person_from_an_agent_with_the_same_name(story: Story, as_: Any) -> None:
    import re

    from core.decisions import DecisionTraces

    # rita reviews in the dashboard; a script calls itself "rita" through the library
    response = as_("reviewer").post(
        f"/p/{story.project}/decisions/{story.moved}/reaffirm", {"request_id": "p1", "explanation": "checked"}
    )
    assert response.status_code == 302
    script = DecisionTraces(get_store(), project_id=story.project, agent_id="rita")
    assert script.reject_decision(story.xss, reason="scripted").recorded
    page = as_("viewer").get(f"/p/{story.project}/activity/").content.decode()
    rows = re.findall(r"<tr>(.*?)</tr>", page, re.S)
    kinds = {}
    for row in rows:
        action = re.search(r'data-label="What">\s*(\w+)', row)
        badge = re.search(r'class="badge actor-(\w+)"', row)
        if action and badge:
            kinds[action.group(1).lower()] = badge.group(1)
    assert kinds == {"reaffirm": "person", "reject": "agent"}


def test_a_steward_sees_who_holds_which_role_here_and_only_here(story: Story, people: Any, as_: Any) -> None:
    ProjectGrant.objects.create(user=people["outsider"], project_id="elsewhere-2", role="viewer")
    make_user('<b id="x">eve</b>', "reviewer", [story.project])
    make_user("boss", None, [], staff=True)
    page = as_("steward").get(f"/p/{story.project}/").content.decode()
    assert f'href="/p/{story.project}/people/"' in page  # in the project nav
    response = as_("steward").get(f"/p/{story.project}/people/")
    body = response.content.decode()
    assert response.status_code == 200 and response["Cache-Control"].startswith("max-age=0")
    rows = dict(
        re.findall(
            r'data-label="Person"><bdi>([^<]+?)</bdi>(?: <span[^>]*>[^<]*</span>)*</td>\s*<td data-label="Role">'
            r'<span class="badge role-\w+">(\w+)</span>',
            body,
        )
    )
    assert rows == {
        "vera": "viewer",
        "rita": "reviewer",
        "stan": "steward",
        "&lt;b id=&quot;x&quot;&gt;eve&lt;/b&gt;": "reviewer",
    }
    assert "otto" not in body  # steward elsewhere, not here
    assert '<b id="x">' not in body
    assert "Staff, stewards in every project:\n    <bdi>boss</bdi>." in body
    for role in ("viewer", "reviewer"):
        assert as_(role).get(f"/p/{story.project}/people/").status_code == 403
        assert f"/p/{story.project}/people/" not in as_(role).get(f"/p/{story.project}/").content.decode()
    assert as_("outsider").get(f"/p/{story.project}/people/").status_code == 404


def test_a_steward_changes_roles_here_but_not_their_own_nor_adds_strangers(story: Story, people: Any, as_: Any) -> None:
    client = as_("steward")
    url = f"/p/{story.project}/people/"
    assert client.post(url, {"username": "vera", "role": "reviewer"}).status_code == 302
    assert access.role_of(User.objects.get(username="vera"), story.project) == "reviewer"
    assert client.post(url, {"username": "rita", "remove": "on"}).status_code == 302
    assert access.role_of(User.objects.get(username="rita"), story.project) is None
    refused = client.post(url, {"username": "stan", "role": "viewer"})
    assert refused.status_code == 400 and "cannot change your own role" in refused.content.decode()
    stranger = client.post(url, {"username": "otto", "role": "steward"})  # exists, steward elsewhere
    assert stranger.status_code == 400 and "not in this project" in stranger.content.decode()
    assert client.post(url, {"username": "vera", "role": "owner"}).status_code == 400
    assert client.post(url, {"username": "vera"}).status_code == 400
    assert access.roles_of(User.objects.get(username="otto")) == {"elsewhere": "steward"}
    assert access.role_of(User.objects.get(username="stan"), story.project) == "steward"
    assert access.role_of(User.objects.get(username="vera"), story.project) == "reviewer"
    # a reviewer cannot change anything, even with a hand-made form
    assert as_("reviewer").post(url, {"username": "vera", "role": "steward"}).status_code in (403, 404)
    assert access.role_of(User.objects.get(username="vera"), story.project) == "reviewer"


def test_staff_add_people_to_a_project(story: Story, people: Any) -> None:
    boss = _client(make_user("boss", None, [], staff=True))
    url = f"/p/{story.project}/people/"
    assert boss.post(url, {"username": "otto", "role": "reviewer"}).status_code == 302
    assert access.roles_of(User.objects.get(username="otto")) == {"elsewhere": "steward", story.project: "reviewer"}
    assert boss.post(url, {"username": "nobody-here", "role": "viewer"}).status_code == 400
    assert not User.objects.filter(username="nobody-here").exists()
