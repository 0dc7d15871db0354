"""A long document in a real browser (Chromium via Playwright): the decision
page shows a long cited passage by its ends and the rest on demand (htmx in
place); the supersede picker shows a window of the current text, more of it
on demand, and a selection in that window cites the characters it shows
(the window's offset counted). Screenshots at 1440 and 390 px."""

from __future__ import annotations

from typing import Any

from core.decisions import DecisionTraces
from core.history import ConversationHistory
from core.knowledge import Graph
from core.models import DocumentSupport
from reviewer.store import get_store

from .conftest import Story
from .test_browser import browser, login, shot  # noqa: F401  (browser is a fixture)


def long_text(lines: int, tag: str = "") -> str:
    return "".join(
        f"Line {i}{tag}: the service keeps its orders on Postgres and pages the owner within the hour.\n"
        for i in range(lines)
    )


def test_a_long_document_is_shown_in_windows_and_cited_by_selecting(
    transactional_db: None, live_server: Any, story: Story, people: Any, browser: Any
) -> None:
    store = get_store()
    ConversationHistory(store, project_id=story.project, agent_id="planner").create_task("long", goal="Cite a lot")
    graph = Graph(store, project_id=story.project, agent_id="ingest")
    old = long_text(2500)  # about 230k characters
    graph.add("handbook", old)
    start = old.index("Line 1000:")
    end = old.index("Line 1100:")
    evidence = graph.span_evidence_id("handbook", start, end)
    d = (
        DecisionTraces(store, project_id=story.project, agent_id="planner")
        .record_decision(
            "long",
            choice_key="handbook",
            conclusion="Orders on Postgres",
            rationale="The handbook says so, at length.",
            supports=[{"kind": "document", "evidence_id": evidence}],
            fetched=[graph.fetch(evidence)],
        )
        .decision
    )
    new = "A new preface.\n\n" + old
    graph.update("handbook", new)
    page = login(browser, live_server, "rita")
    for width in (1440, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(f"{live_server.url}/p/{story.project}/decisions/{d.id}/")
        shot(page, f"long-document-decision-{width}")
        page.locator("#supersede").scroll_into_view_if_needed()
        shot(page, f"long-document-supersede-{width}")
        for name, part in (("passage", ".support"), ("picker", "#supersede fieldset.pick")):
            page.locator(part).first.screenshot(path=f"test-output/screenshots/long-document-{name}-{width}.png")
    assert len(page.content()) < 1_000_000

    # the rest of the passage, in place
    quote = page.locator("blockquote[title='the passage as recorded']")
    shown = len(quote.inner_text())
    with page.expect_response(lambda r: "/text?" in r.url):
        quote.locator("a.more").click()
    page.wait_for_function(
        "n => document.querySelector(\"blockquote[title='the passage as recorded']\").innerText.length > n", arg=shown
    )

    # more of the current text in the picker, then a selection in it
    window = page.locator("#pick-window-0")
    offset = int(window.locator(".pick-text").get_attribute("data-offset"))
    assert offset > 0
    with page.expect_response(lambda r: "/pick?" in r.url):
        window.locator("a.more", has_text="Show earlier text").click()
    page.wait_for_function("n => +document.querySelector('#pick-window-0 .pick-text').dataset.offset < n", arg=offset)
    box = page.locator("#pick-window-0 .pick-text")
    box.focus()  # the candidate is selected
    page.keyboard.press("Shift+ArrowLeft")
    page.wait_for_function("() => document.querySelector('[name=doc-0-text]').value.length > 0", timeout=5000)
    picked = page.input_value("[name=doc-0-text]")
    first, last = int(page.input_value("[name=doc-0-start]")), int(page.input_value("[name=doc-0-end]"))
    assert new[first:last] == picked and picked.startswith("Line 1000:")  # offsets count the whole text
    shot(page, "long-document-picked")
    page.fill("#supersede_explanation", "Cite one character less.")
    with page.expect_navigation():
        page.click("#supersede button[type=submit]")
    assert "Superseded: revision 2" in page.content()  # a selection over many lines (posted with CR LF) holds
    revisions = DecisionTraces(store, project_id=story.project, agent_id="planner").list_revisions(str(d.id))
    [doc] = [s for s in revisions[-1].decision.supports if isinstance(s, DocumentSupport)]
    assert (doc.char_start, doc.char_end) == (first, last)
    assert not page.errors  # type: ignore[attr-defined]
    page.context.close()
