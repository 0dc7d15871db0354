"""The top bar's link to the inbox, with the person's unread count."""

from __future__ import annotations

from typing import Any

from django import template

from core import limits

from ..inbox import unread_count

register = template.Library()


@register.inclusion_tag("reviewer/_inbox_link.html", takes_context=True)
def inbox_link(context: template.Context) -> dict[str, Any]:
    """Counted once per request (``reviewer.inbox.unread_count``); "99+"
    past the count's cap; no number when the store is not answering."""
    request = context.get("request")
    n = unread_count(request) if request is not None and request.user.is_authenticated else None
    shown = None if not n else (f"{limits.UNREAD_COUNT_MAX - 1}+" if n >= limits.UNREAD_COUNT_MAX else str(n))
    return {"unread": shown, "n": n or 0}
