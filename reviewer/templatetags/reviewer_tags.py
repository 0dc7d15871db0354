"""Template filters of the dashboard. Agent-written text is only ever
rendered through Django's autoescaping."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from typing import Any

from django import template
from django.urls import reverse

from reviewer import presenters, visible
from reviewer.presenters import REASON_LABELS, describe_cause

register = template.Library()


@register.filter
def cause(value: str) -> str:
    return describe_cause(value or "")


@register.filter
def reason(value: object) -> str:
    key = getattr(value, "value", value)
    return REASON_LABELS.get(str(key), "") if key else ""


@register.filter
def agent(value: object) -> object:
    """Agent-written text in a page's content: escaped, hidden and bidi
    control characters shown as ``⟨U+202E⟩``, isolated (see reviewer.visible)."""
    return visible.agent_html(value)


@register.filter
def shown(value: object) -> object:
    """Agent-written text in an attribute or the title: control characters
    shown as ``⟨U+202E⟩`` (then autoescaped)."""
    return visible.visible_text(value)


@register.filter
def picktext(value: object) -> object:
    """The picker's text: raw characters (its offsets count them), each
    hidden one inert and drawn as its marker."""
    return visible.raw_marked_html(value)


@register.filter
def sentence(value: object) -> str:
    """``value`` ended with a full stop, unless it already ends a sentence
    (a flag's words often end with the document's own period: “a day.”)."""
    text = str(value or "").rstrip()
    return text if not text or text.endswith((".", "!", "?", "…")) else text + "."


@register.filter
def support_ref(value: object) -> str:
    return presenters.support_ref(value)


@register.filter
def get(mapping: object, key: object) -> object:
    """``mapping[key]`` (keys compared as text), or None."""
    return mapping.get(str(key)) if isinstance(mapping, dict) else None


@register.filter
def enum(value: object) -> str:
    """An enum member as its stored string, with spaces for underscores."""
    return str(getattr(value, "value", value) or "").replace("_", " ")


@register.simple_tag
def request_id() -> str:
    """A fresh request id for one form: each card's actions act once, and
    two cards never share an id."""
    return uuid.uuid4().hex


@register.filter
def lookup(mapping: object, key: object) -> object:
    """``mapping[str(key)]``, or None: a read model's entry for an id."""
    return mapping.get(str(key)) if isinstance(mapping, dict) else None


#: stands for a decision's id while a card's links are reversed once per page
_PLACEHOLDER = uuid.UUID(int=0)
_PLACEHOLDER_TEXT = str(_PLACEHOLDER)


def _card_shapes(project: str, flow: bool) -> tuple[str, dict[str, tuple[str, str]]]:
    """The task page's link and, for each link of a card that holds the
    decision's id, what comes before and after the id. Reversed by Django
    (the project converter encodes the id of any project), with a
    placeholder id that ``rpartition`` finds after the project segment."""
    names = {"detail": ("decision", ())}
    if flow:
        names |= {"reaffirm": ("queue_act", ("reaffirm",)), "reject": ("queue_act", ("reject",))}
    else:
        names |= {"reaffirm": ("reaffirm", ()), "reject": ("reject", ())}
    shapes = {}
    for key, (name, extra) in names.items():
        head, _, tail = reverse(name, args=(project, _PLACEHOLDER, *extra)).rpartition(_PLACEHOLDER_TEXT)
        shapes[key] = (head, tail)
    return reverse("task", args=(project,)), shapes


@register.simple_tag(takes_context=True)
def card_links(context: template.Context, d: object) -> dict[str, str]:
    """A queue card's id as text and its links (the decision page, its
    reaffirm and reject actions, its task's page): the URL shapes are
    reversed once per request, not for each of the page's cards."""
    project, flow = context.get("project"), bool(context.get("flow"))
    task, shapes = _per_request(context, ("card", project, flow), lambda: _card_shapes(project, flow))
    did = str(getattr(d, "id", ""))
    links = {key: head + did + tail for key, (head, tail) in shapes.items()}
    links["id"] = did
    links["task"] = task
    return links


#: a decision id as Django's ``uuid`` path converter matches it
_UUID_TEXT = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


@register.simple_tag(takes_context=True)
def decision_url(context: template.Context, project: str, decision_id: object) -> str:
    """``{% url 'decision' project decision_id %}``, for pages that link
    hundreds of decisions (conflicts, a document's citers): the URL's shape
    is reversed once per request and each id put in the placeholder's place
    (as :func:`card_links` does). An id that is not a UUID goes to Django's
    ``reverse``, which refuses it as before."""
    did = str(decision_id)
    if not isinstance(decision_id, uuid.UUID) and not _UUID_TEXT.match(did):
        return reverse("decision", args=(project, decision_id))
    head, tail = _per_request(
        context,
        ("decision", project),
        lambda: reverse("decision", args=(project, _PLACEHOLDER)).rpartition(_PLACEHOLDER_TEXT)[::2],
    )
    return head + did + tail


def _per_request(context: template.Context, key: object, make: Callable[[], Any]) -> Any:
    """``make()``, once per request and ``key``: kept on the request, because
    each ``{% partial %}`` renders with a render context of its own."""
    request = getattr(context, "request", None)
    known = getattr(request, "_reviewer_url_shapes", None) if request is not None else None
    if known is None:
        known = {}
        if request is not None:
            request._reviewer_url_shapes = known
    if key not in known:
        known[key] = make()
    return known[key]
