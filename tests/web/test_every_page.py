"""Every page, everywhere (issue 15): what the browser test cannot see from
the server side: the app's own 404 page under DEBUG, a favicon, htmx's
inline indicator styles turned off by its own config, Cancel on the
destructive pages, and the decisions a redaction will flag."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from django.contrib.staticfiles import finders
from django.test import override_settings

from core.decisions import DecisionTraces
from reviewer.store import get_store

from .conftest import Story


def test_a_404_under_debug_is_the_apps_page(story: Story, as_: Any) -> None:
    client = as_("viewer")
    with override_settings(DEBUG=True):
        for url in (f"/p/{story.project}/no-such-page/", f"/p/{story.project}/task/?name=nope", "/nowhere"):
            response = client.get(url, follow=True)
            body = response.content.decode()
            assert response.status_code == 404, url
            assert '<header class="topbar">' in body and "Not found" in body, url
            assert "URLconf" not in body and "technical" not in body.lower(), url


def test_every_page_names_a_favicon_that_is_served_and_turns_off_htmx_inline_styles(story: Story, as_: Any) -> None:
    body = as_("viewer").get(f"/p/{story.project}/review/").content.decode()
    icon = re.search(r'<link rel="icon" href="/static/([^"]+)"', body)
    assert icon and finders.find(icon.group(1)) and Path(finders.find(icon.group(1))).stat().st_size > 0
    assert """<meta name="htmx-config" content='{"includeIndicatorStyles": false}'>""" in body
    login = as_("viewer").get("/login/").content.decode()
    assert '<link rel="icon"' in login and "includeIndicatorStyles" in login


def test_the_redact_and_delete_pages_have_a_cancel_link(story: Story, as_: Any) -> None:
    client = as_("steward")
    redact = client.get(f"/p/{story.project}/events/redact", {"event_id": story.event_id}).content.decode()
    assert re.search(rf'<a href="/p/{story.project}/events/\?task=choose-db">Cancel</a>', redact)
    delete = client.get(f"/p/{story.project}/task/delete", {"name": "on-call"}).content.decode()
    assert re.search(rf'<a href="/p/{story.project}/task/\?name=on-call">Cancel</a>', delete)


def test_the_redact_page_lists_the_decisions_the_redaction_will_flag(story: Story, as_: Any) -> None:
    body = as_("steward").get(f"/p/{story.project}/events/redact", {"event_id": story.event_id}).content.decode()
    assert "Redacting it flags 2 decisions:" in body
    listed = re.findall(r'<li><a href="/p/[^/]+/decisions/([^/]+)/">', body.split("Redacting it flags", 1)[1])
    assert sorted(listed) == sorted([story.clear, story.xss])
    # once one of them is rejected it is no longer flagged by the redaction
    DecisionTraces(get_store(), project_id=story.project, agent_id="t").reject_decision(
        story.xss, reason="x", request_id="rx"
    )
    body = as_("steward").get(f"/p/{story.project}/events/redact", {"event_id": story.event_id}).content.decode()
    assert "Redacting it flags 1 decision:" in body
