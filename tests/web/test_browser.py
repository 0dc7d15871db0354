"""The review jobs in a real browser: Debian's Chromium, headless, driven by
Playwright against a live server on the embedded store.

Screenshots of each page go to ``$REVIEWER_TEST_OUTPUT/screenshots``
(default ``test-output/screenshots``). A missing Chromium fails the test: set
``REVIEWER_TEST_CHROMIUM`` to its path if it is not ``/usr/bin/chromium``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core.history import ConversationHistory
from core.models import DecisionStatus, ReviewState
from reviewer.store import get_store

from .conftest import PASSWORD, Story
from .test_dashboard import decision

# Playwright's sync API runs an event loop in this thread; the test's own
# ORM calls (users, grants) are plain synchronous ones.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = os.environ.get("REVIEWER_TEST_CHROMIUM", "/usr/bin/chromium")
SHOTS = Path(os.environ.get("REVIEWER_TEST_OUTPUT", "test-output")) / "screenshots"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        pytest.fail(
            f"Chromium is not at {CHROMIUM}: install Debian's chromium or set REVIEWER_TEST_CHROMIUM", pytrace=False
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ],
        )
        yield chromium
        chromium.close()


def shot(page: Any, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def login(browser: Any, live_server: Any, username: str) -> Any:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{live_server.url}/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    with page.expect_navigation():
        page.click("button[type=submit]")
    page.errors = errors  # type: ignore[attr-defined]
    return page


def test_review_jobs_in_the_browser(
    transactional_db: None, live_server: Any, story: Story, people: Any, browser: Any
) -> None:
    base = f"{live_server.url}/p/{story.project}"

    # a reviewer opens the queue and a flagged decision
    page = login(browser, live_server, "rita")
    page.goto(f"{base}/review/")
    assert page.locator(".decision-card").count() == 2
    shot(page, "review-queue")
    page.goto(f"{base}/decisions/{story.changed}/")
    assert page.locator("pre.diff del").first.is_visible()  # recorded against current text
    assert page.locator("pre.diff ins").first.is_visible()
    shot(page, "decision-detail")

    # reaffirm one from the queue, in place (htmx)
    page.goto(f"{base}/review/")
    card = page.locator(f"#d-{story.moved}")
    card.locator("button", has_text="Reaffirm").click()
    page.locator(f"#d-{story.moved} .msg.success").wait_for()
    assert "1" in page.locator("#counts .count").first.inner_text()
    assert decision(story, story.moved).review_state is ReviewState.clear
    shot(page, "review-queue-after-reaffirm")

    # supersede the changed one from its page
    page.goto(f"{base}/decisions/{story.changed}/")
    page.fill("#supersede_conclusion", "Acknowledge pages within a day")
    page.fill("#supersede_explanation", "The on-call document now says a day.")
    page.fill("#supersede_add", "event choose-db 1")
    with page.expect_navigation():
        page.click("#supersede button[type=submit]")
    assert "revision 2" in page.content()
    assert decision(story, story.changed).status is DecisionStatus.superseded
    shot(page, "decision-superseded")

    # reject another with a reason
    page.goto(f"{base}/decisions/{story.clear}/")
    page.fill("#reject_reason", "Two teams must not run two databases for orders.")
    with page.expect_navigation():
        page.click("form[action$='/reject'] button[type=submit]")
    assert decision(story, story.clear).status is DecisionStatus.rejected
    assert not page.errors  # type: ignore[attr-defined]
    page.context.close()

    # a steward redacts an event
    page = login(browser, live_server, "stan")
    page.goto(f"{base}/events/?task=choose-db")
    shot(page, "event-log")
    with page.expect_navigation():
        page.click("text=redact…")
    page.fill("#redact_reason", "Personal data")
    page.check("#redact_confirm")
    with page.expect_navigation():
        page.click("button.danger")
    assert "[REDACTED]" in page.content()
    event = ConversationHistory(get_store(), project_id=story.project, agent_id="t").fetch_event("choose-db", 1).event
    assert event.redacted_at is not None
    page.goto(f"{base}/activity/")
    shot(page, "activity")
    page.context.close()

    # a viewer sees no action buttons
    page = login(browser, live_server, "vera")
    page.goto(f"{base}/review/")
    assert page.locator(".decision-card").count() >= 1
    assert page.locator("button", has_text="Reaffirm").count() == 0
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.goto(f"{base}/decisions/{story.xss}/")
    assert page.locator("p.conclusion", has_text="<script>alert('x')</script>").count() == 1  # text, not code
    page.hover("p.prose")
    assert dialogs == []
    shot(page, "viewer-decision")
    page.context.close()
