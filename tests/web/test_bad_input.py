"""Whatever a person (or a crawler) puts in a query string or a form, the
dashboard answers with a page, never a 500, and changes nothing it refused."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.models import DecisionStatus, ReviewState

from .conftest import Story
from .test_dashboard import decision

NASTY = st.one_of(
    st.text(max_size=300),
    st.sampled_from(
        [
            "\x00",
            "-1",
            "99999999999999999999999",
            "1e9",
            "../",
            "%00",
            "<script>",
            "' OR 1=1 --",
            "\u202e",
            "\ud7ff",
            "a" * 5000,
            "NaN",
            " ",
            "",
        ]
    ),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    value=NASTY,
    param=st.sampled_from(
        ["page", "task", "reason", "state", "cause", "q", "after", "name", "key", "before", "event_id"]
    ),
)
def test_query_parameters_never_break_a_page(story: Story, as_: Any, value: str, param: str) -> None:
    client = as_("steward")
    p = f"/p/{story.project}"
    for path in (
        "/review/",
        "/tasks/",
        "/task/",
        "/events/",
        "/document/",
        "/activity/",
        "/conflicts/",
        "/events/redact",
        "/task/delete",
    ):
        response = client.get(p + path, {param: value})
        assert response.status_code in (200, 400, 404), (path, param, value, response.status_code)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(reason=NASTY, explanation=NASTY, conclusion=NASTY, request_id=NASTY)
def test_action_forms_never_break_and_refusals_change_nothing(
    story: Story, as_: Any, reason: str, explanation: str, conclusion: str, request_id: str
) -> None:
    client = as_("reviewer")
    p = f"/p/{story.project}/decisions/{story.changed}"
    for action, data in (
        ("reject", {"reason": reason}),
        ("supersede", {"conclusion": conclusion, "rationale": "r", "explanation": explanation, "add": reason}),
        ("reaffirm", {"explanation": explanation}),
    ):
        before = decision(story, story.changed)
        response = client.post(f"{p}/{action}", {**data, "request_id": request_id})
        assert response.status_code in (302, 400), (action, response.status_code)
        if response.status_code == 400:
            assert decision(story, story.changed) == before  # a refusal changes nothing
    after = decision(story, story.changed)
    if after.status is DecisionStatus.active:
        assert after.review_state is ReviewState.needs_review  # the passage changed: never reaffirmed


def test_odd_project_ids_in_the_path_answer_404_or_a_page(story: Story, as_: Any) -> None:
    from django.test import Client

    from .conftest import make_user

    staff = Client()
    staff.force_login(make_user("root", None, [], staff=True))
    for client in (as_("steward"), staff):
        _odd_paths(client)


def _odd_paths(client: Any) -> None:
    for project in ("%00", "x%00y", "nope", "a" * 300):
        for path in ("/", "/review/", "/tasks/"):
            assert client.get(f"/p/{project}{path}").status_code in (200, 404), (project, path)
