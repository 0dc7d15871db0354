"""The form renderer: Django's, with the few widgets the dashboard's pages
render most (hidden, text and number inputs, text areas) written out in
Python instead of through their templates.

A decision page renders some fifteen widgets, and each went through the
template engine twice (the widget's template and ``attrs.html``): about a
quarter of the page's CPU. The markup is Django's own, character for
character (``tests/web/test_renderers.py`` compares the two); every other
widget, and any widget whose template name was changed, goes to Django's
templates as before."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from django.forms.renderers import DjangoTemplates
from django.utils.html import conditional_escape
from django.utils.safestring import SafeData


def _text(value: Any) -> str:
    """``{{ value|stringformat:'s' }}`` under autoescaping: text already
    marked safe is kept as it is, anything else is escaped."""
    text = str(value)  # what "%s" does
    return text if isinstance(value, SafeData) else str(conditional_escape(text))


def _attrs(attrs: Mapping[str, Any]) -> str:
    """``django/forms/widgets/attrs.html``."""
    out = []
    for name, value in attrs.items():
        if value is False:
            continue
        out.append(" " + str(conditional_escape(name)))
        if value is not True:
            out.append(f'="{_text(value)}"')
    return "".join(out)


def _input(widget: Mapping[str, Any]) -> str:
    """``django/forms/widgets/input.html``."""
    value = "" if widget["value"] is None else f' value="{_text(widget["value"])}"'
    return (
        f'<input type="{conditional_escape(widget["type"])}" name="{conditional_escape(widget["name"])}"'
        f"{value}{_attrs(widget['attrs'])}>"
    )


def _textarea(widget: Mapping[str, Any]) -> str:
    """``django/forms/widgets/textarea.html``."""
    value = widget["value"]
    return (
        f'<textarea name="{conditional_escape(widget["name"])}"{_attrs(widget["attrs"])}>\n'
        f"{conditional_escape(value) if value else ''}</textarea>"
    )


#: the widget templates written out above, by name
WRITTEN_OUT: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "django/forms/widgets/hidden.html": _input,
    "django/forms/widgets/text.html": _input,
    "django/forms/widgets/number.html": _input,
    "django/forms/widgets/textarea.html": _textarea,
}


class Renderer(DjangoTemplates):
    """Django's default renderer, the common widgets written out."""

    def render(self, template_name: str, context: dict[str, Any], request: Any = None) -> str:
        write = WRITTEN_OUT.get(template_name)
        widget = context.get("widget") if write else None
        if write is None or not isinstance(widget, Mapping):
            return super().render(template_name, context, request=request)
        return write(widget)
