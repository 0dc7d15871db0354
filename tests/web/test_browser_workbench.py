"""The decision workbench in a real browser (Debian's Chromium via
Playwright): superseding by picking the re-anchored passage, by selecting
other text with the mouse and with the keyboard, and "cite revision N
instead" on a dependant. Each new revision cites version 2 of its document.
"""

from __future__ import annotations

from typing import Any

from core.decisions import DecisionTraces
from core.models import DecisionStatus, DocumentSupport
from reviewer.store import get_store

from .conftest import Story
from .test_browser import browser, login, shot  # noqa: F401  (browser is a fixture)
from .test_dashboard import decision


def _traces(story: Story) -> DecisionTraces:
    return DecisionTraces(get_store(), project_id=story.project, agent_id="planner")


def _new_revision(story: Story, old: str) -> Any:
    revisions = _traces(story).list_revisions(old)
    assert revisions[0].decision.status is DecisionStatus.superseded
    return revisions[-1].decision


def _fetch(story: Story, evidence: str) -> str:
    from core.knowledge import Graph

    return Graph(get_store(), project_id=story.project, agent_id="t").fetch(evidence).text or ""


def test_supersede_by_picking_the_reanchored_passage(
    transactional_db: None, live_server: Any, story: Story, people: Any, browser: Any
) -> None:
    base = f"{live_server.url}/p/{story.project}"
    page = login(browser, live_server, "rita")
    page.goto(f"{base}/decisions/{story.changed}/")
    # the page says why it cannot be reaffirmed, and offers no reaffirm button
    assert "the cited passage of oncall changed: an hour. → a day." in page.locator("#cannot-reaffirm").inner_text()
    assert page.locator("#reaffirm-button").count() == 0
    pick = page.locator("#supersede fieldset.pick").first
    candidate = pick.locator("input[type=radio]").first
    assert candidate.is_checked()  # the closest match is preselected
    assert pick.locator("q.candidate").inner_text() == "within a day."
    assert "oncall version 2: “within a day.”" in page.locator("#will-cite").inner_text()
    page.fill("#supersede_conclusion", "Acknowledge pages within a day")
    page.fill("#supersede_explanation", "The on-call document now says a day.")
    shot(page, "workbench-picker")
    with page.expect_navigation():
        page.click("#supersede button[type=submit]")
    assert "revision 2" in page.content()
    new = _new_revision(story, story.changed)
    [doc] = [s for s in new.supports if isinstance(s, DocumentSupport)]
    assert (doc.document_key, doc.recorded_activation_seq) == ("oncall", 2)
    assert _fetch(story, doc.evidence_id) == "within a day."
    assert not page.errors  # type: ignore[attr-defined]
    page.context.close()


def test_supersede_by_selecting_other_text_with_the_mouse_and_the_keyboard(
    transactional_db: None, live_server: Any, story: Story, people: Any, browser: Any
) -> None:
    base = f"{live_server.url}/p/{story.project}"
    page = login(browser, live_server, "rita")
    page.goto(f"{base}/decisions/{story.moved}/")
    box = page.locator("#supersede .pick-text").first
    # the mouse: drag across "We review the choice every quarter."
    box.scroll_into_view_if_needed()
    rect = box.evaluate(
        """(box, wanted) => {
        const node = Array.from(box.childNodes).find(n => n.nodeType === 3 && n.textContent.includes(wanted));
        const at = node.textContent.indexOf(wanted);
        const range = document.createRange();
        range.setStart(node, at); range.setEnd(node, at + wanted.length);
        const r = range.getClientRects()[0];
        return {x0: r.left, x1: r.right, y: r.top + r.height / 2};
    }""",
        "We review the choice every quarter.",
    )
    page.mouse.move(rect["x0"] + 1, rect["y"])
    page.mouse.down()
    page.mouse.move(rect["x1"] - 1, rect["y"], steps=8)
    page.mouse.up()
    page.wait_for_function("() => document.querySelector('[name=doc-0-text]').value.endsWith('quarter.')", timeout=5000)
    assert page.locator("#supersede input[data-selection]").first.is_checked()
    assert page.input_value("[name=doc-0-text]") == "We review the choice every quarter."
    assert "adr version 2: “We review the choice every quarter.”" in page.locator("#will-cite").inner_text()

    # the keyboard: focus the text (the candidate is selected), Shift+Left leaves out the full stop
    page.locator("body").click(position={"x": 2, "y": 2})
    box.focus()
    page.keyboard.press("Shift+ArrowLeft")
    page.wait_for_function(
        "() => document.querySelector('[name=doc-0-text]').value === 'Orders stay on Postgres'", timeout=5000
    )
    assert page.input_value("[name=doc-0-text]") == "Orders stay on Postgres"
    text = page.evaluate("document.querySelector('#supersede .pick-text').textContent")
    start = int(page.input_value("[name=doc-0-start]"))
    assert text[start : int(page.input_value("[name=doc-0-end]"))] == "Orders stay on Postgres"

    # dropping is never silent: the form says so before submit
    page.check("input[name=doc-0][value=drop]")
    assert "adr" in page.locator("#will-cite .no-longer").inner_text()
    assert page.locator("#will-cite .confirm-drop").is_visible()
    page.check("input[name=doc-0][value=selection]")
    assert page.locator("#will-cite .no-longer").is_hidden()

    page.fill("#supersede_explanation", "Cite the name of the database only.")
    with page.expect_navigation():
        page.click("#supersede button[type=submit]")
    new = _new_revision(story, story.moved)
    [doc] = [s for s in new.supports if isinstance(s, DocumentSupport)]
    assert (doc.document_key, doc.recorded_activation_seq) == ("adr", 2)
    assert _fetch(story, doc.evidence_id) == "Orders stay on Postgres"
    assert not page.errors  # type: ignore[attr-defined]
    page.context.close()


def test_cite_revision_n_instead_on_a_dependant(
    transactional_db: None, live_server: Any, story: Story, people: Any, browser: Any
) -> None:
    traces = _traces(story)
    dependant = traces.record_decision(
        "on-call",
        choice_key="pager-rota",
        conclusion="Rota",
        rationale="follows the orders choice",
        supports=[{"kind": "decision", "decision_id": story.clear}],
    ).decision
    new = traces.supersede_decision(
        story.clear,
        conclusion="MySQL 8",
        rationale="r",
        explanation="upgrade",
        supports=[{"kind": "event", "task_name": "choose-db", "seq": 1}],
    ).decision
    base = f"{live_server.url}/p/{story.project}"
    page = login(browser, live_server, "rita")
    page.goto(f"{base}/decisions/{story.clear}/")
    assert "planner superseded this at" in page.locator("#settled").inner_text()
    assert "orders-db · on-call · revision 2 (active)" in page.locator("#settled").inner_text()
    item = page.locator(f"#dependant-{dependant.id}")
    assert "pager-rota · on-call · revision 1 (active)" in item.inner_text()
    explanation = item.locator("textarea")
    assert "revision 2" in explanation.input_value()
    explanation.fill("Follows revision 2 of the orders choice.")
    shot(page, "workbench-cite-instead")
    with page.expect_navigation():
        item.locator("button", has_text="Cite revision 2 instead").click()
    assert "pager-rota now cites revision 2 of orders-db" in page.content()
    assert decision(story, str(dependant.id)).status is DecisionStatus.superseded
    latest = _new_revision(story, str(dependant.id))
    assert [str(s.decision_id) for s in latest.supports] == [str(new.id)]
    assert latest.conclusion == "Rota" and latest.revision == 2
    assert traces.list_revisions(str(latest.id))[-1].explanation == "Follows revision 2 of the orders choice."
    assert not page.errors  # type: ignore[attr-defined]
    page.context.close()


_SELECT_RAW = """(box, [start, end]) => {
    // select box.textContent[start:end] (UTF-16 offsets), across the inert characters' spans
    const walker = document.createTreeWalker(box, NodeFilter.SHOW_TEXT);
    const range = document.createRange();
    let at = 0, node;
    while ((node = walker.nextNode())) {
        const len = node.textContent.length;
        if (start >= at && start <= at + len && !range._s) { range.setStart(node, start - at); range._s = 1; }
        if (end >= at && end <= at + len) { range.setEnd(node, end - at); break; }
        at += len;
    }
    const sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
}"""


def test_the_picker_shows_bidi_characters_inert_and_its_offsets_count_them(
    transactional_db: None, live_server: Any, story: Story, people: Any, browser: Any
) -> None:
    from core.knowledge import Graph

    graph = Graph(get_store(), project_id=story.project, agent_id="ingest")
    graph.add("bidi", "Owners \u202eanswer\u202c pages within an hour.")
    text = graph.current_text("bidi")
    start = text.index("within an hour.")
    evidence = graph.span_evidence_id("bidi", start, start + len("within an hour."))
    d = (
        _traces(story)
        .record_decision(
            "on-call",
            choice_key="bidi-pager",
            conclusion="One hour",
            rationale="r",
            supports=[{"kind": "document", "evidence_id": evidence}],
            fetched=[graph.fetch(evidence)],
        )
        .decision
    )
    graph.update("bidi", "Preface \u2066x\u200b.\n\nOwners \u202eanswer\u202c pages within an hour.")
    current = graph.current_text("bidi")
    page = login(browser, live_server, "rita")
    page.goto(f"{live_server.url}/p/{story.project}/decisions/{d.id}/")
    box = page.locator("#supersede .pick-text").first
    # the raw characters are there (the offsets count them), each inert in its span, drawn as its code
    assert box.evaluate("b => b.textContent") == current
    assert box.locator("span.cc").evaluate_all("s => s.map(x => x.dataset.cc)") == [
        "U+2066",
        "U+200B",
        "U+202E",
        "U+202C",
    ]
    assert box.locator("span.cc").first.evaluate("s => getComputedStyle(s).unicodeBidi") == "isolate"
    drawn = box.locator("span.cc").first.evaluate("s => getComputedStyle(s, '::before').content")
    assert "⟨" in drawn and "⟩" in drawn
    # the page around it is not reordered: the conclusion and title read in order
    assert "\u202e" not in page.locator("main").inner_text().replace(box.inner_text(), "")
    # select across the override: the offsets are into the raw text, the summary shows the codes
    wanted = "\u202eanswer\u202c pages"
    at = current.index(wanted)
    box.scroll_into_view_if_needed()
    box.evaluate(_SELECT_RAW, [at, at + len(wanted)])
    page.wait_for_function("w => document.querySelector('[name=doc-0-text]').value === w", arg=wanted, timeout=5000)
    assert (int(page.input_value("[name=doc-0-start]")), int(page.input_value("[name=doc-0-end]"))) == (
        at,
        at + len(wanted),
    )
    assert "bidi version 2: “⟨U+202E⟩answer⟨U+202C⟩ pages”" in page.locator("#will-cite").inner_text()
    shot(page, "workbench-picker-bidi")
    page.fill("#supersede_explanation", "Cite the owners' sentence.")
    with page.expect_navigation():
        page.click("#supersede button[type=submit]")
    new = _new_revision(story, str(d.id))
    [doc] = [s for s in new.supports if isinstance(s, DocumentSupport)]
    assert _fetch(story, doc.evidence_id) == wanted  # the raw passage, its characters intact
    assert not page.errors  # type: ignore[attr-defined]
    page.context.close()
