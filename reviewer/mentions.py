"""@mentions in comments: who may be mentioned (the people who can open the
project, checked here, never by the core), which names a text mentions,
and the text split into plain and mention parts for a template to escape.

A name is a Django user name (letters, digits and ``@ . + - _``); an
``@name`` of nobody who can see the project stays plain text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from django.contrib.auth import get_user_model
from django.db.models import Q

from core import limits

#: an @ not inside a word (so an e-mail address is no mention), then a user name
_MENTION = re.compile(r"(?<![\w@.+-])@([\w.@+-]{1,150})")
#: autocomplete offers at most this many names
OFFERED = 10


def _visible(project_id: str) -> Q:
    """Active people with a grant to the project, and active staff (stewards everywhere)."""
    granted = Q(project_grants__project_id=project_id)
    return Q(is_active=True) & (granted | Q(is_staff=True) | Q(is_superuser=True))


def people_like(project_id: str, prefix: str, *, limit: int = OFFERED) -> list[str]:
    """Up to ``limit`` user names who can see the project, starting with
    ``prefix`` (any case), in order: the autocomplete's offer."""
    prefix = prefix.replace("\x00", "")[: limits.AGENT_ID_MAX]
    users = get_user_model().objects.filter(_visible(project_id), username__istartswith=prefix)
    return list(users.order_by("username").values_list("username", flat=True).distinct()[:limit])


def who_can_see(project_id: str, names: Iterable[str]) -> set[str]:
    """Of ``names``, those of people who can see the project (one query)."""
    wanted = {n for n in names if len(n) <= limits.AGENT_ID_MAX}
    if not wanted:
        return set()
    users = get_user_model().objects.filter(_visible(project_id), username__in=wanted)
    return set(users.values_list("username", flat=True))


def _candidates(text: str) -> list[str]:
    """Each ``@name`` in the text, without a sentence's closing dot, in order."""
    return list(dict.fromkeys(m.group(1).rstrip(".") for m in _MENTION.finditer(text)))


def mentioned(project_id: str, text: str) -> list[str]:
    """The people the text mentions who can see the project, in order of
    first mention, at most ``limits.MENTIONS_MAX`` (the rest stay text)."""
    names = _candidates(text)
    if not names:
        return []
    seen = who_can_see(project_id, names[: limits.MENTIONS_MAX * 5])
    return [n for n in names if n in seen][: limits.MENTIONS_MAX]


def parts(text: str, mentions: Iterable[str]) -> list[tuple[str, bool]]:
    """The text as (piece, is_mention) pairs: an ``@name`` is a mention
    only when the comment recorded it. The template escapes every piece."""
    names = set(mentions)
    out: list[tuple[str, bool]] = []
    at = 0
    if names:
        for m in _MENTION.finditer(text):
            name = m.group(1).rstrip(".")
            if name not in names:
                continue
            start, end = m.start(), m.start() + 1 + len(name)
            if start > at:
                out.append((text[at:start], False))
            out.append((text[start:end], True))
            at = end
    if at < len(text):
        out.append((text[at:], False))
    return out
