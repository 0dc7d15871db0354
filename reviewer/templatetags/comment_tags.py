"""Template filters of the discussion: a comment's text as plain and
mention pieces, each escaped by the template (never marked safe)."""

from __future__ import annotations

from django import template

from reviewer import mentions

register = template.Library()


@register.filter
def mention_parts(comment: object) -> list[tuple[str, bool]]:
    """(piece, is_mention) pairs of a comment's body: an ``@name`` is a
    mention only when the comment recorded it."""
    return mentions.parts(getattr(comment, "body", None) or "", getattr(comment, "mentions", None) or [])
