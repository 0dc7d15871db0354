"""The People and activity pages in a real browser, wide and phone-sized:
nothing overflows the screen, a steward's role forms work, and the activity
log marks a person and an agent apart. Screenshots go with the others."""

from __future__ import annotations

from typing import Any

from django.test import Client

from core.decisions import DecisionTraces
from reviewer import access
from reviewer.store import get_store

from .conftest import PASSWORD, Story
from .test_browser import browser, shot  # noqa: F401  (the browser fixture)


def _page(browser: Any, live_server: Any, username: str, width: int) -> Any:
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    with page.expect_navigation():
        page.click("button[type=submit]")
    return page


def _fits(page: Any) -> bool:
    return page.evaluate("document.documentElement.scrollWidth <= window.innerWidth + 1")


def test_people_and_activity_pages_wide_and_on_a_phone(
    transactional_db: None, live_server: Any, story: Story, people: Any, browser: Any
) -> None:
    rita = people["reviewer"]
    DecisionTraces(get_store(), project_id=story.project, agent_id="rita").reject_decision(
        story.xss, reason="a script under rita's name"
    )
    for width in (1440, 390):
        page = _page(browser, live_server, "stan", width)
        page.goto(f"{live_server.url}/p/{story.project}/")
        page.click("nav.projectnav >> text=People")
        assert page.url.endswith(f"/p/{story.project}/people/")
        assert _fits(page), width
        shot(page, f"people-{width}")
        if width == 1440:
            page.select_option(f"#role-{rita.project_grants.get().pk}", "viewer")
            with page.expect_navigation():
                page.click(f"#grant-{rita.project_grants.get().pk} >> text=Save")
            assert "rita is now viewer in this project." in page.inner_text("main")
            assert access.role_of(rita, story.project) == "viewer"
            access.grant(rita, story.project, "reviewer")
            page.goto(f"{live_server.url}/p/{story.project}/people/")
        page.goto(f"{live_server.url}/p/{story.project}/activity/")
        assert _fits(page), width
        assert page.locator(".badge.actor-agent").count() >= 1
        shot(page, f"activity-{width}")
        page.context.close()
    # the person's own act in the dashboard, then the page again
    client = Client()
    client.force_login(rita)
    url = f"/p/{story.project}/decisions/{story.moved}/reaffirm"
    assert client.post(url, {"request_id": "b1", "explanation": "checked"}).status_code == 302
    page = _page(browser, live_server, "rita", 1440)
    page.goto(f"{live_server.url}/p/{story.project}/activity/")
    first = page.locator("table.list tbody tr").first
    assert "rita" in first.inner_text() and first.locator(".badge.actor-person").count() == 1
    shot(page, "activity-person-agent-1440")
    page.context.close()


def test_the_lockout_message_in_the_browser(
    transactional_db: None, live_server: Any, people: Any, browser: Any
) -> None:
    from django.conf import settings

    for width in (1440, 390):
        context = browser.new_context(viewport={"width": width, "height": 700})
        page = context.new_page()
        page.goto(f"{live_server.url}/login/")
        for _ in range(settings.AXES_FAILURE_LIMIT + (1 if width == 1440 else 0)):
            page.fill("#id_username", "vera")
            page.fill("#id_password", "not-the-password")
            with page.expect_navigation():
                page.click("button[type=submit]")
        page.fill("#id_username", "vera")
        page.fill("#id_password", PASSWORD)
        with page.expect_navigation():
            page.click("button[type=submit]")
        alert = page.inner_text("[role=alert]")
        assert "Too many failed logins" in alert and "15 minutes" in alert
        assert page.url.endswith("/login/") and _fits(page)
        shot(page, f"login-locked-{width}")
        context.close()
