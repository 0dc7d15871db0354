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
from html import escape as _escape

from django.contrib.messages.storage.base import Message
from django.utils.html import conditional_escape, escape
from django.utils.safestring import SafeData, SafeString, mark_safe

_KEPT = {"\t", "\n", "\r"}


def _hidden_class(codepoints: list[int]) -> str:
    """A character class of ``codepoints``, as ranges: a class of single
    characters that reaches past U+FFFF is matched by trying each in turn,
    five times slower on every character of the text than the ranges."""
    ranges: list[list[int]] = []
    for cp in codepoints:
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1][1] = cp
        else:
            ranges.append([cp, cp])
    parts = (re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in ranges)
    return f"[{''.join(parts)}]"


_HIDDEN_CODEPOINTS = [
    cp
    for cp in range(sys.maxunicode + 1)
    if unicodedata.category(chr(cp)) in ("Cc", "Cf", "Zl", "Zp") and chr(cp) not in _KEPT
]

#: every character that is shown as a marker
HIDDEN = re.compile(_hidden_class(_HIDDEN_CODEPOINTS))
#: those of them in ASCII (control characters), all that ASCII text can hold
_HIDDEN_ASCII = re.compile(_hidden_class([cp for cp in _HIDDEN_CODEPOINTS if cp < 128]))


def marker(ch: str) -> str:
    return f"⟨U+{ord(ch):04X}⟩"


def _marker_of(found: re.Match[str]) -> str:
    return marker(found.group(0))


def visible(text: str) -> str:
    """``text`` with every hidden character as its marker (plain text)."""
    return (_HIDDEN_ASCII if text.isascii() else HIDDEN).sub(_marker_of, text)


def agent_html(value: object) -> object:
    """Agent text for a page's text content: escaped, markers for hidden
    characters, isolated in ``<bdi>``. Text already made safe (such as the
    output of ``linebreaksbr``) keeps its markup. Values that are not text
    (numbers, dates, None) are left to Django."""
    if isinstance(value, SafeData):
        html = str(value)
    elif isinstance(value, str):
        html = SafeString(_escape(value))  # django.utils.html.escape, without its check for lazy text
    elif isinstance(value, Message):  # the text of a message (they often quote agent text)
        html = escape(str(value))
    else:
        return value
    if not html:
        return html
    return SafeString(f"<bdi>{visible(html)}</bdi>")


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
