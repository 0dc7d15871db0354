"""The queue's flow and every page, in a real browser (issue 15): settling a
group of five by keyboard with "and next", a group reaffirm that reports one
refusal, and every page at 390 px without horizontal overflow and without a
console error. Fixtures and helpers come from ``test_browser``."""

from __future__ import annotations

import os
from typing import Any

import pytest

from core.decisions import DecisionTraces
from core.models import DecisionStatus, ReviewState
from reviewer.store import get_store

from .conftest import PASSWORD, Story
from .test_browser import browser, login, shot  # noqa: F401 (the browser fixture)
from .test_queue_flow import CAUSE, Group, group  # noqa: F401 (the group fixture)

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


def traces(story: Story, agent: str = "t") -> DecisionTraces:
    return DecisionTraces(get_store(), project_id=story.project, agent_id=agent)


def focused(page: Any) -> str | None:
    return page.evaluate(
        "() => { const c = document.querySelector('.decision-card.focused');"
        " return c && c === document.activeElement ? c.id : null; }"
    )


def settle(page: Any, did: str) -> None:
    page.locator(f"#d-{did}.settled").wait_for()
    page.wait_for_function("() => !document.querySelector('.htmx-request')")


def test_settling_a_group_of_five_by_keyboard_with_and_next(
    transactional_db: None, live_server: Any, story: Story, group: Group, people: Any, browser: Any
) -> None:
    page = login(browser, live_server, "rita")
    consoles: list[str] = []
    page.on("console", lambda m: consoles.append(m.text) if m.type == "error" else None)
    page.goto(f"{live_server.url}/p/{story.project}/review/?cause={CAUSE}")
    ids = group.ids
    assert page.locator(".decision-card").count() == 5

    # j j r j: focus survives the swap and moves on from where it was
    page.keyboard.press("j")
    page.keyboard.press("j")
    assert focused(page) == f"d-{ids[1]}"
    keys = 2
    if ids[1] == group.changed:  # the one that cannot be reaffirmed: reject it instead
        page.keyboard.press("x")
        page.keyboard.type("The rule changed.")
        page.keyboard.press("Enter")
        keys += 2
    else:
        page.keyboard.press("r")
        keys += 1
    settle(page, ids[1])
    assert focused(page) == f"d-{ids[2]}"  # the next decision of the group
    page.keyboard.press("j")
    keys += 1
    assert focused(page) == f"d-{ids[3]}"  # the fourth card, not back to the first
    shot(page, "queue-flow-after-jjrj")

    # the rest by keyboard alone: back to the first, then one key each
    page.keyboard.press("k")
    page.keyboard.press("k")
    page.keyboard.press("k")
    keys += 3
    assert focused(page) == f"d-{ids[0]}"
    for did in [ids[0], *ids[2:]]:
        assert focused(page) == f"d-{did}"
        if did == group.changed:
            page.keyboard.press("x")
            page.keyboard.type("The rule changed.")
            page.keyboard.press("Enter")
            keys += 2
        else:
            page.keyboard.press("r")
            keys += 1
        settle(page, did)
    progress = " ".join(page.locator("#progress").inner_text().split())
    assert progress.startswith("This group is done") and progress.endswith("left in the queue.")
    assert page.locator("#queue-count").inner_text().startswith("0 decisions")
    for did in ids:
        d = traces(story).get_decision(did).decision
        expected = DecisionStatus.rejected if did == group.changed else DecisionStatus.active
        assert d.status is expected and d.review_state is ReviewState.clear, did
    # five settled with 4 reaffirms (1 key each) and 1 reject (x, Enter), plus 6 moves
    assert keys == 5 + 1 + 6
    assert not page.errors and not consoles, (page.errors, consoles)  # type: ignore[attr-defined]
    shot(page, "queue-flow-done")
    page.context.close()


def test_a_group_reaffirm_reports_the_one_refused(
    transactional_db: None, live_server: Any, story: Story, group: Group, people: Any, browser: Any
) -> None:
    page = login(browser, live_server, "rita")
    page.goto(f"{live_server.url}/p/{story.project}/review/")
    shot(page, "review-queue")
    with page.expect_navigation():
        page.click("text=Reaffirm those whose cited passage is unchanged…")
    assert "Reaffirm the 4 whose cited passage is unchanged" in page.content()
    assert page.locator("#group-confirm input[name=decision]").count() == 4
    shot(page, "group-preview")
    # someone else acts on one of the four between the preview and the confirmation
    carol = list(group.unchanged)[1]
    assert traces(story, "carol").reject_decision(carol, reason="duplicate", request_id="carol-1").recorded
    page.fill("#group_note", "Same rules under a new preface.")
    page.check("#group_confirm")
    with page.expect_navigation():
        page.click("#group-confirm button[type=submit]")
    text = page.locator(".result").inner_text()
    assert "Done: 3" in text and "Refused: 1" in text and "carol rejected it: duplicate" in text
    shot(page, "group-result")
    for did in group.unchanged:
        d = traces(story).get_decision(did).decision
        assert d.review_state is ReviewState.clear, did
    assert not page.errors  # type: ignore[attr-defined]
    page.context.close()


def test_the_queue_after_one_reaffirm_and_next(
    transactional_db: None, live_server: Any, story: Story, group: Group, people: Any, browser: Any
) -> None:
    """The whole queue, one decision of the group settled by ``r``: the
    settled line, the focus on the next of the group, the progress line and
    the heading count (the README's screenshot)."""
    page = login(browser, live_server, "rita")
    page.set_viewport_size({"width": 1440, "height": 1000})
    page.goto(f"{live_server.url}/p/{story.project}/review/")
    first = group.unchanged[0]
    while focused(page) != f"d-{first}":
        page.keyboard.press("j")
    page.keyboard.press("r")
    settle(page, first)
    after = group.ids[group.ids.index(first) + 1]
    assert focused(page) == f"d-{after}"
    progress = " ".join(page.locator("#progress").inner_text().split())
    assert progress == f"{group.ids.index(after) + 1} of 5 in this group, 6 left in the queue."
    assert page.locator("#queue-count").inner_text().strip() == "6 decisions"
    assert page.locator("#counts .count").first.inner_text().split() == ["6", "need", "review"]
    page.locator(f"#d-{first}").scroll_into_view_if_needed()
    shot(page, "review-queue-flow")
    assert not page.errors  # type: ignore[attr-defined]
    page.context.close()


def every_page(story: Story, group_ids: list[str]) -> list[str]:
    p = f"/p/{story.project}"
    return [
        "/",
        f"{p}/",
        f"{p}/review/",
        f"{p}/review/?task=call",
        f"{p}/review/group?cause={CAUSE}&action=reaffirm",
        f"{p}/review/group?cause={CAUSE}&action=reject",
        f"{p}/decisions/{story.moved}/",
        f"{p}/decisions/{story.changed}/",
        f"{p}/decisions/{group_ids[0]}/",
        f"{p}/conflicts/",
        f"{p}/tasks/",
        f"{p}/task/?name=choose-db",
        f"{p}/task/?name=pager-duty",
        f"{p}/events/?task=choose-db",
        f"{p}/events/redact?event_id={story.event_id}",
        f"{p}/task/delete?name=on-call",
        f"{p}/document/?key=adr",
        f"{p}/document/?key=runbook",
        f"{p}/activity/",
    ]


@pytest.mark.parametrize("width", [390, 1440])
def test_every_page_fits_the_screen_without_a_console_error(
    transactional_db: None,
    live_server: Any,
    story: Story,
    group: Group,
    people: Any,
    browser: Any,
    width: int,
) -> None:
    # some history first, so the activity and event pages have rows
    steward = traces(story, "stan")
    steward.reaffirm_decision(group.unchanged[0], explanation="A long explanation " * 12, request_id="w1")
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"{page.url}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"{page.url}: {e}"))

    page.goto(f"{live_server.url}/login/")
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, ("login", overflow)
    shot(page, f"w{width}-login")
    page.fill("#id_username", "stan")
    page.fill("#id_password", PASSWORD)
    with page.expect_navigation():
        page.click("button[type=submit]")
    for i, path in enumerate(every_page(story, group.ids)):
        response = page.goto(f"{live_server.url}{path}")
        assert response is not None and response.status == 200, path
        page.wait_for_load_state("load")
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, (path, overflow)
        name = path.split("/p/", 1)[-1].split("/", 1)[-1].split("?")[0].strip("/").replace("/", "-") or "home"
        shot(page, f"w{width}-{i:02d}-{name.split('-')[0] if name.startswith('decisions') else name}")
    page.goto(f"{live_server.url}/p/{story.project}/nothing-here/")
    assert page.evaluate("document.documentElement.scrollWidth - window.innerWidth") <= 0
    problems = [p for p in problems if "/nothing-here/" not in p]  # the 404 document itself is an error
    assert not problems, problems
    context.close()
