"""Two reviewers split a queue by claims in a real browser (two contexts):
rita claims a decision on the queue (htmx, in place), stan sees it, ``j``
passes over it, acting on it asks him first, and his answer settles it;
My queue is one click from the top bar. Then they discuss the other one:
stan asks @rita on its page, her top bar counts it, For you lists it, the
e-mail (a real SMTP server) carries a link and not the words, stan settles
it, and the activity log's filters find the claim, the comment and the
verdicts. Screenshots at 1440 and 390 px go to
``$REVIEWER_TEST_OUTPUT/shots`` (default ``test-output/shots``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from core.models import ReviewState

from .conftest import Story
from .test_browser import browser, login  # noqa: F401  (the module's browser fixture)
from .test_dashboard import decision
from .test_notice_mail import Inbox, body, email_on, smtp  # noqa: F401  (the SMTP server fixture)

SHOTS = Path(os.environ.get("REVIEWER_TEST_OUTPUT", "test-output")) / "shots"


def _shots(page: Any, name: str) -> None:
    """The page at 1440 and at 390 px wide."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    for width in (1440, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.screenshot(path=str(SHOTS / f"claims-{name}-{width}.png"), full_page=True)
    page.set_viewport_size({"width": 1440, "height": 900})


def test_two_reviewers_split_the_queue_by_claims(
    transactional_db: None,
    live_server: Any,
    story: Story,
    people: Any,
    browser: Any,
    smtp: Inbox,
) -> None:
    from datetime import UTC, datetime, timedelta

    from reviewer.notice_mail import send_due

    email_on(people["reviewer"], datetime.now(UTC) - timedelta(minutes=1))
    base = f"{live_server.url}/p/{story.project}"
    rita, stan = login(browser, live_server, "rita"), login(browser, live_server, "stan")
    rita.goto(f"{base}/review/")
    card = rita.locator(f"#d-{story.moved}")
    card.get_by_role("button", name="Claim").click()
    card.get_by_text("Claimed by you").wait_for()
    # stan's queue: rita's claim on the card, j passes over it
    stan.goto(f"{base}/review/")
    theirs = stan.locator(f"#d-{story.moved}")
    theirs.get_by_text("Claimed by rita").wait_for()
    assert theirs.get_attribute("data-claimed") == "other"
    stan.keyboard.press("j")
    focused = stan.locator(".decision-card.focused")
    assert focused.get_attribute("id") != f"d-{story.moved}"
    _shots(stan, "queue")
    # the decision page, claimed by someone else
    stan.goto(f"{base}/decisions/{story.moved}/")
    stan.get_by_text("Claimed by rita").wait_for()
    _shots(stan, "decision-claimed")
    stan.get_by_role("link", name="Take over…").click()
    stan.locator("#take-over-form").wait_for()
    _shots(stan, "take-over")
    # acting on it asks first (the card becomes the question), and the answer acts
    stan.goto(f"{base}/review/")
    theirs = stan.locator(f"#d-{story.moved}")
    theirs.get_by_role("button", name="Reaffirm and next").click()
    stan.get_by_text("rita claimed this just now: act anyway?").wait_for()
    _shots(stan, "confirm")
    assert decision(story, story.moved).review_state is ReviewState.needs_review
    stan.get_by_role("button", name="Reaffirm anyway").click()
    stan.locator(f"article.settled#d-{story.moved}").wait_for()
    assert decision(story, story.moved).review_state is ReviewState.clear
    # My queue, from the top bar: what is claimed by or assigned to me
    stan.goto(f"{base}/review/")
    stan.locator(f"#d-{story.changed}").get_by_role("button", name="Claim").click()
    stan.locator(f"#d-{story.changed}").get_by_text("Claimed by you").wait_for()
    stan.goto(f"{base}/")
    _shots(stan, "overview")
    stan.get_by_role("link", name="My queue").click()
    stan.get_by_role("heading", name="My queue").wait_for()
    assert stan.locator(f"#d-{story.changed}").count() == 1
    _shots(stan, "my-queue")
    # a question to @rita on the decision stan holds
    question = "@rita is the new passage still the one we cited?"
    stan.goto(f"{base}/decisions/{story.changed}/")
    stan.get_by_placeholder("Ask a question", exact=False).fill(question)
    stan.get_by_role("button", name="Comment", exact=True).click()
    stan.get_by_text("is the new passage still the one we cited?").wait_for()
    # rita's top bar counts it, and For you says why it is news
    rita.goto(f"{base}/")
    assert rita.locator(".inbox-link .badge").inner_text().strip() == "1"
    rita.get_by_role("link", name="For you", exact=False).click()
    rita.get_by_role("heading", name="For you").wait_for()
    notice = rita.locator("li.notice").first
    assert "mention or reply" in notice.inner_text() and "stan" in notice.inner_text()
    _shots(rita, "inbox")
    # the e-mail, once held long enough: a link to the decision, never the words
    assert send_due(now=datetime.now(UTC) + timedelta(minutes=3)) == 1
    (to, message), *others = smtp.messages
    text = body(message)
    assert not others and to == ["rita@example.com"]
    assert f"/p/{story.project}/decisions/{story.changed}/" in text and "new passage" not in text
    # stan settles it from its card; the log's filters find what the two of them did
    stan.goto(f"{base}/review/")
    card = stan.locator(f"#d-{story.changed}")
    card.get_by_placeholder("Reason for rejecting").fill("the passage changed its meaning")
    card.get_by_role("button", name="Reject and next").click()
    stan.locator(f"article.settled#d-{story.changed}").wait_for()
    rita.goto(f"{base}/activity/?actor=stan")
    log = rita.locator("table").last.inner_text()
    for action in ("claim", "comment", "reaffirm", "reject"):
        assert action in log, (action, log)
    rita.goto(f"{base}/activity/?action=comment&decision={story.changed}")
    assert rita.locator("tr:has(td[data-label='What'])").count() == 1
    _shots(rita, "activity-filtered")
    assert not rita.errors and not stan.errors  # type: ignore[attr-defined]
