"""No page grows with a document: ten cited documents of 1.9 MB each
(cited over 500k characters, then changed by one character) and a 200k
document of "a"s cited over 20k; the decision page, its supersede picker,
the queue and the text shown on demand each stay under about 1 MB and
within a generous CPU budget (this process's time: the page took 10 to 16
seconds and was 76 MB before)."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest

from reviewer.store import get_store
from tests.hostile_data import Hostile, seed

from .conftest import Story

MB = 1_000_000
#: the CPU time of this process one page may take on a loaded machine
BUDGET = 5.0


@pytest.fixture
def hostile(story: Story) -> Hostile:
    return seed(get_store(), story.project)


def timed(client: Any, url: str, **headers: Any) -> tuple[str, float]:
    began = time.process_time()
    response = client.get(url, **headers)
    spent = time.process_time() - began
    assert response.status_code == 200, (url, response.status_code)
    return response.content.decode(), spent


def test_the_pages_of_a_hostile_data_set_stay_small_and_fast(story: Story, hostile: Hostile, as_: Any) -> None:
    reviewer = as_("reviewer")
    base = f"/p/{story.project}"
    pages = {}
    for name, d in (("many", hostile.many), ("repeat", hostile.repeat)):
        page, spent = timed(reviewer, f"{base}/decisions/{d}/")
        pages[name] = page
        assert len(page.encode()) < MB and spent < BUDGET, (name, len(page), spent)
        assert 'name="conclusion"' in page  # the supersede form and its picker are on it
        viewer_page, spent = timed(as_("viewer"), f"{base}/decisions/{d}/")
        assert len(viewer_page.encode()) < MB and spent < BUDGET
    queue, spent = timed(reviewer, f"{base}/review/")
    assert len(queue.encode()) < MB and spent < BUDGET
    assert "many" in queue and "repeat" in queue
    # every support moved (the passage stands in the new text), so each can be reaffirmed
    assert pages["many"].count('<span class="badge moved">moved</span>') == 10
    assert 'id="reaffirm-form"' in pages["repeat"]
    # the rest of a long passage on demand: the links work as htmx fragments and as pages
    page = pages["many"]
    more = re.findall(r'hx-get="([^"]+/text\?[^"]+)"', page)
    assert more, "a long passage offers the rest of it"
    fragment, spent = timed(reviewer, more[0].replace("&amp;", "&"), HTTP_HX_REQUEST="true")
    assert 0 < len(fragment.encode()) < MB and spent < BUDGET
    plain = re.findall(r'<a class="more"\s+href="([^"]+/text\?[^"]+)"', page)
    whole, spent = timed(reviewer, plain[0].replace("&amp;", "&"))
    assert "<mark" in whole and len(whole.encode()) < MB and spent < BUDGET
    picks = re.findall(r'hx-get="([^"]+/pick\?[^"]+)"', page)
    assert picks, "the picker offers more of the current text"
    widened, spent = timed(reviewer, picks[-1].replace("&amp;", "&"), HTTP_HX_REQUEST="true")
    assert 'class="pick-text"' in widened and len(widened.encode()) < MB and spent < BUDGET
    offset = int(re.search(r'data-offset="(\d+)"', widened).group(1))
    assert offset > 0  # the window starts inside the text: the picker counts from there
    # the document page shows a window of its current text, and pages through the rest
    document, spent = timed(reviewer, f"{base}/document/?key=long-0")
    assert len(document.encode()) < MB and spent < BUDGET
    assert "Characters 1–20000 of 1900000" in document
    later = re.findall(r'href="([^"]+from=20000[^"]*)"', document)
    assert later, "the document page links to its later text"
    window, spent = timed(reviewer, later[0].replace("&amp;", "&"))
    assert "Characters 20001–40000 of 1900000" in window and len(window.encode()) < MB


def test_reaffirming_a_hostile_decision_from_the_queue_is_fast(story: Story, hostile: Hostile, as_: Any) -> None:
    reviewer = as_("reviewer")
    for d in (hostile.repeat, hostile.many):
        began = time.process_time()
        response = reviewer.post(
            f"/p/{story.project}/decisions/{d}/reaffirm",
            {"explanation": "Still holds.", "request_id": f"hostile-{d}"},
            HTTP_HX_REQUEST="true",
        )
        spent = time.process_time() - began
        assert response.status_code == 200 and len(response.content) < MB and spent < BUDGET, spent
        assert "Reaffirmed" in response.content.decode()
