"""Agent text that cannot reorder or hide anything on a page.

Bidirectional overrides and isolates (U+202A–202E, U+2066–2069), marks,
zero-width characters, the byte-order mark, other format characters and
control characters (all but tab and the line breaks) are shown as a visible
``⟨U+202E⟩``; line and paragraph separators too. ``agent_html`` wraps the
text in ``<bdi>`` as well, so even ordinary right-to-left text cannot carry
the app's own dates and numbers beside it along.

The passage picker needs the raw text (its offsets count the characters of
the document's text): ``raw_marked_html`` keeps each such character, inert
in an isolated ``<span class="cc">`` whose marker CSS draws beside it."""

from __future__ import annotations

import re
import sys
import unicodedata

from django.contrib.messages.storage.base import Message
from django.utils.html import conditional_escape, escape
from django.utils.safestring import SafeData, SafeString, mark_safe

_KEPT = {"\t", "\n", "\r"}


def _hidden_chars() -> str:
    found = []
    for cp in range(sys.maxunicode + 1):
        ch = chr(cp)
        if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") and ch not in _KEPT:
            found.append(re.escape(ch))
    return "".join(found)


#: every character that is shown as a marker
HIDDEN = re.compile(f"[{_hidden_chars()}]")


def marker(ch: str) -> str:
    return f"⟨U+{ord(ch):04X}⟩"


def visible(text: str) -> str:
    """``text`` with every hidden character as its marker (plain text)."""
    return HIDDEN.sub(lambda m: marker(m.group(0)), text)


def agent_html(value: object) -> object:
    """Agent text for a page's text content: escaped, markers for hidden
    characters, isolated in ``<bdi>``. Text already made safe (such as the
    output of ``linebreaksbr``) keeps its markup. Values that are not text
    (numbers, dates, None) are left to Django."""
    if isinstance(value, SafeData):
        html = str(value)
    elif isinstance(value, str):
        html = escape(value)
    elif isinstance(value, Message):  # the text of a message (they often quote agent text)
        html = escape(str(value))
    else:
        return value
    if not html:
        return html
    return mark_safe(f"<bdi>{visible(html)}</bdi>")


def visible_text(value: object) -> object:
    """Agent text inside an attribute or the page's title: markers only
    (Django's autoescaping applies after)."""
    if isinstance(value, SafeData):
        return mark_safe(visible(str(value)))
    if isinstance(value, str):
        return visible(value)
    return value


def raw_marked_html(value: object) -> SafeString:
    """The picker's text: escaped, every hidden character kept (offsets
    count it) but inert and drawn as its marker."""
    text = str(conditional_escape("" if value is None else value))
    return mark_safe(
        HIDDEN.sub(lambda m: f'<span class="cc" data-cc="U+{ord(m.group(0)):04X}">{m.group(0)}</span>', text)
    )
