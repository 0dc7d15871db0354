"""Template filters of the dashboard. Agent-written text is only ever
rendered through Django's autoescaping."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

from django import template
from django.conf import settings
from django.template import defaultfilters
from django.template.defaultfilters import stringfilter
from django.urls import get_script_prefix, get_urlconf, reverse
from django.utils.text import add_truncation_text, calculate_truncate_chars_length

from reviewer import converters, presenters, visible
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


@register.filter(is_safe=True)
@stringfilter
def clip(value: str, length: Any) -> str:
    """``value|truncatechars:length``, character for character, without
    Django's ``Truncator`` (a lazy object, a normalisation and a loop over
    each character) for ASCII text, where neither changes anything: kept
    whole when short enough, else cut before Django's own truncation text.
    Other text goes to ``truncatechars`` itself."""
    try:
        length = int(length)
    except ValueError:
        return value
    if not value.isascii():
        return defaultfilters.truncatechars(value, length)
    if length <= 0:
        return ""
    if len(value) <= length:
        return value
    return add_truncation_text(value[: calculate_truncate_chars_length(length, None)])


#: ``{{ value|stamp }}`` and ``{{ value|stamp:"minutes" }}`` stand for these ``date`` formats
_STAMPS = {"seconds": "Y-m-d H:i:s", "minutes": "Y-m-d H:i"}


@register.filter(expects_localtime=True, is_safe=False)
def stamp(value: object, precision: str = "seconds") -> str:
    """``value|date:"Y-m-d H:i:s"`` (``"minutes"``: ``"Y-m-d H:i"``), the
    pages' way of showing a time, written out for a datetime instead of
    through Django's ``DateFormat`` (a tenth of the event log's rendering).
    The time zone is the template's, as for ``date``; anything but a
    datetime goes to ``date`` itself."""
    if not isinstance(value, datetime) or precision not in _STAMPS:
        return defaultfilters.date(value, _STAMPS.get(precision, precision))
    text = f"{value.year:04d}-{value.month:02d}-{value.day:02d} {value.hour:02d}:{value.minute:02d}"
    return text + f":{value.second:02d}" if precision == "seconds" else text


@register.filter
def iso(value: object) -> object:
    """``value.isoformat``, as ``{{ value.isoformat }}`` gives it (the
    stored time, not the template's zone), without the template's method
    call checks; "" for what has no ``isoformat`` (None), as there."""
    method = getattr(value, "isoformat", None)
    return method() if callable(method) else ""


#: links every page carries, by (URL name, arguments, script prefix, URL conf)
_PAGE_URLS: dict[tuple[Any, ...], str] = {}


@register.simple_tag
def task_query(project: str, name: str, param: str = "name") -> str:
    """``{% task_query project name %}``: the query naming a task on its pages
    (``name=…``, or ``id=…`` for a name too long for a URL)."""
    return converters.task_query(project, str(name), param)


@register.simple_tag
def document_query(project: str, key: str) -> str:
    """``{% document_query project key %}``: the query naming a document on
    its page (``key=…``, or ``id=…`` for a key too long for a URL)."""
    return converters.document_query(project, str(key))


@register.simple_tag
def page_url(name: str, *args: str) -> str:
    """``{% url name args %}`` for the links every page carries (the
    project's menu, the counters, a page's fixed links): each reversed
    once per process for its project (and the script prefix and URL conf
    in force), not on every page view, where ten reverses cost a
    twentieth of a page's rendering. The arguments must be hashable
    (project ids, fixed words)."""
    key = (name, args, get_script_prefix(), get_urlconf() or settings.ROOT_URLCONF)
    found = _PAGE_URLS.get(key)
    if found is None:
        if len(_PAGE_URLS) >= 4096:  # many projects: start again rather than grow
            _PAGE_URLS.clear()
        found = _PAGE_URLS[key] = reverse(name, args=args)
    return found


@register.simple_tag
def request_id() -> str:
    """A fresh request id for one form: each card's actions act once, and
    two cards never share an id."""
    return uuid.uuid4().hex


@register.filter
def lookup(mapping: object, key: object) -> object:
    """``mapping[str(key)]``, or None: a read model's entry for an id."""
    return mapping.get(str(key)) if isinstance(mapping, dict) else None


class _Fields:
    """One read model as a loop's row: its fields by name, as a dictionary's.
    Django's template engine asks each value's type for ``__getitem__``
    before it reads an attribute; on a pydantic model that question goes
    through pydantic's metaclass and two raised exceptions, some 3 µs for
    each of a row's lookups (thousands on the event log and the conflicts)."""

    __slots__ = ("_model",)

    def __init__(self, model: object) -> None:
        self._model = model

    def __getitem__(self, name: str) -> object:
        return getattr(self._model, name)

    def __getattr__(self, name: str) -> object:  # card_links and others read the fields as attributes
        return getattr(self._model, name)


@register.filter
def fields(models: Any) -> list[_Fields]:
    """``{% for e in page.events|fields %}``: each model of the loop read by
    the template as before (a field the model lacks fails as before), but
    without pydantic's metaclass on every lookup."""
    return [_Fields(m) for m in models or ()]


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
    reversed once per request, not for each of the page's cards. With them
    what every card's forms carry, the same on each card: the CSRF token
    and the page's own path (``next``), read once per request too (through
    ``{{ csrf_token }}`` each was a lazy object's round of proxies per form)."""
    project, flow = context.get("project"), bool(context.get("flow"))
    task, shapes = _per_request(context, ("card", project, flow), lambda: _card_shapes(project, flow))
    did = str(getattr(d, "id", ""))
    links = {key: head + did + tail for key, (head, tail) in shapes.items()}
    links["id"] = did
    links["task"] = task
    links.update(_per_request(context, "forms", lambda: _form_fields(context)))
    return links


def _form_fields(context: template.Context) -> dict[str, str]:
    """The CSRF token and the page's path as ``{{ csrf_token }}`` and
    ``{{ request.get_full_path }}`` render them ("" where the context has none)."""
    token = context.get("csrf_token")
    request = getattr(context, "request", None)
    return {
        "csrf_token": "" if token is None else str(token),
        "next": request.get_full_path() if request is not None else "",
    }


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
