"""The dashboard's faster stand-ins for Django's own filters and tags
(issue 18) give what Django's give, character for character: a page that
uses ``clip``, ``stamp``, ``iso``, ``page_url`` or ``card_links`` looks as it
did with ``truncatechars``, ``date``, ``.isoformat``, ``{% url %}`` and
``{{ csrf_token }}``; and agent text shows every hidden character as before."""

from __future__ import annotations

import sys
import unicodedata
import uuid
from datetime import UTC, datetime, timedelta, timezone

import pytest
from django.template import Context, Template
from django.test import RequestFactory, override_settings
from django.urls import NoReverseMatch, clear_script_prefix, set_script_prefix
from django.utils import timezone as django_timezone
from django.utils.safestring import mark_safe

from .test_hardening import ODD_IDS

TEXTS = [
    "",
    "a",
    "option 0",
    "x" * 13,
    "x" * 14,
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "result 1 " * 40,
    "café au lait, " * 20,  # not ASCII: Django's own path
    "e\u0301" * 200,  # combining accents: Django counts them as nothing, and normalises
    "<b>&amp;</b>" * 30,
    "\u202eevil\u202c " * 30,
    "line\nbreak\t" * 30,
]


def _both(ours: str, django: str, context: dict[str, object]) -> tuple[str, str]:
    load = "{% load reviewer_tags %}"
    return Template(load + ours).render(Context(context)), Template(load + django).render(Context(context))


def test_clip_is_truncatechars() -> None:
    for text in TEXTS:
        for value in (text, mark_safe(text)):
            for length in (-1, 0, 1, 2, 13, 140, 160, 200, 600, 2000):
                context = {"t": value}
                mine, theirs = _both(f"{{{{ t|clip:{length} }}}}", f"{{{{ t|truncatechars:{length} }}}}", context)
                assert mine == theirs, (text[:20], length)
                mine, theirs = _both(
                    f"{{{{ t|clip:{length}|agent }}}}", f"{{{{ t|truncatechars:{length}|agent }}}}", context
                )
                assert mine == theirs, (text[:20], length)
    for value in (None, 12345678901234567890, ""):
        assert _both("{{ t|clip:5 }}", "{{ t|truncatechars:5 }}", {"t": value}) == _both(
            "{{ t|truncatechars:5 }}", "{{ t|truncatechars:5 }}", {"t": value}
        )
    assert _both('{{ t|clip:"x" }}', '{{ t|truncatechars:"x" }}', {"t": "abc"})[0] == "abc"


MOMENTS = [
    datetime(2026, 11, 30, 10, 1, 2, 345678, tzinfo=UTC),
    datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=5, minutes=30))),
    datetime(999, 12, 31, 23, 59, 59, tzinfo=UTC),
    datetime(2026, 6, 1, 12, 0, 0),  # naive
]


def test_stamp_and_iso_are_date_and_isoformat() -> None:
    for zone in ("UTC", "Asia/Kolkata", "America/St_Johns"):
        with django_timezone.override(zone):
            for moment in [*MOMENTS, None, "", "not a time"]:
                context = {"at": moment}
                assert _both("{{ at|stamp }}", '{{ at|date:"Y-m-d H:i:s" }}', context) == _both(
                    '{{ at|date:"Y-m-d H:i:s" }}', '{{ at|date:"Y-m-d H:i:s" }}', context
                ), (zone, moment)
                mine, theirs = _both('{{ at|stamp:"minutes" }}', '{{ at|date:"Y-m-d H:i" }}', context)
                assert mine == theirs, (zone, moment)
                mine, theirs = _both("{{ at|iso }}", "{{ at.isoformat }}", context)
                assert mine == theirs, (zone, moment)
    # a missing value reads as Django reads it
    assert _both(
        "{{ nothing|stamp }}|{{ nothing|iso }}", '{{ nothing|date:"Y-m-d H:i:s" }}|{{ nothing.isoformat }}', {}
    )


def test_page_url_is_url_for_any_project_and_script_prefix() -> None:
    names = ["overview", "queue", "conflicts", "tasks", "activity", "people", "tokens", "task", "events", "group"]
    projects = ["acme", "00000000-0000-0000-0000-000000000000", *ODD_IDS, "%", "a.b", "\u202e"]
    try:
        for prefix in ("/", "/reviewer/", "/a b/"):
            set_script_prefix(prefix)
            for project in projects:
                for name in names:
                    context = {"project": project, "name": name}
                    mine, theirs = _both("{% page_url name project %}", "{% url name project %}", context)
                    assert mine == theirs, (prefix, project, name)
                    mine, theirs = _both(
                        "{% page_url name project as u %}[{{ u }}]", "{% url name project as u %}[{{ u }}]", context
                    )
                    assert mine == theirs, (prefix, project, name)
            assert _both("{% page_url 'home' %}{% page_url 'logout' %}", "{% url 'home' %}{% url 'logout' %}", {})
    finally:
        clear_script_prefix()


def test_page_url_follows_a_changed_url_conf() -> None:
    page = "{% load reviewer_tags %}{% page_url 'home' %}"
    assert Template(page).render(Context({})) == "/"
    with override_settings(ROOT_URLCONF="reviewer.api.urls"), pytest.raises(NoReverseMatch):
        Template(page).render(Context({}))  # as {% url 'home' %} would: that URL conf has no home page
    assert Template(page).render(Context({})) == "/"


def test_card_links_carry_the_pages_csrf_token_and_path() -> None:
    """Each card's forms hold what ``{{ csrf_token }}`` and
    ``{{ request.get_full_path }}`` gave them, escaped alike."""

    from django.template import RequestContext

    request = RequestFactory().get("/p/acme/review/", {"task": 'a"<b>&', "page": "2"})
    d = type("D", (), {"id": uuid.uuid4()})()
    source = (
        "{% load reviewer_tags %}{% card_links d as u %}{{ u.csrf_token }}|{{ u.next }}"
        "\n{{ csrf_token }}|{{ request.get_full_path }}"
    )
    out = Template(source).render(RequestContext(request, {"d": d, "project": "acme", "flow": True}))
    mine, theirs = out.split("\n")
    assert mine == theirs and "&amp;page=2" in mine and len(mine.split("|")[0]) == 64, out
    # without a request (a template rendered alone) both are empty, as before
    alone = "{% load reviewer_tags %}{% card_links d as u %}{{ u.csrf_token }}|{{ u.next }}"
    assert Template(alone).render(Context({"d": d, "project": "acme"})) == "|"


def test_the_hidden_characters_are_every_control_and_format_character() -> None:
    """The classes written as ranges match exactly the characters of the
    categories they stand for, over every code point."""
    from reviewer.visible import HIDDEN, visible

    kept = {"\t", "\n", "\r"}
    every = "".join(chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF)
    expected = [ch for ch in every if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") and ch not in kept]
    assert HIDDEN.findall(every) == expected
    ascii_text = "".join(chr(c) for c in range(128))
    assert visible(ascii_text) == "".join(f"⟨U+{ord(ch):04X}⟩" if ch in expected else ch for ch in ascii_text)
