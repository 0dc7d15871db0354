"""The form renderer writes the common widgets out in Python: the markup
must be Django's own, character for character, for any value."""

from __future__ import annotations

from typing import Any

import pytest
from django import forms
from django.forms.renderers import DjangoTemplates
from django.utils.safestring import mark_safe

from reviewer.forms import ReaffirmForm, RejectForm, SupersedeForm
from reviewer.renderers import WRITTEN_OUT, Renderer

VALUES: list[Any] = [
    None,
    "",
    "plain",
    "<script>alert(\"x\")</script> & 'quotes'",
    "line one\nline two\n",
    "\nstarts with a newline",
    "  spaced  ",
    "\u202eright-to-left\u2066",
    mark_safe("<b>already safe</b>"),
    0,
    7,
    -3,
]

ATTRS: list[dict[str, Any]] = [
    {},
    {"rows": 2, "cols": 40},
    {"required": True, "disabled": False, "maxlength": 20000},
    {"placeholder": 'say "why" <here>', "data-key": "x", "id": "id_a&b"},
    {"class": mark_safe("a&amp;b"), "autofocus": True},
]

WIDGETS = [forms.HiddenInput, forms.TextInput, forms.NumberInput, forms.Textarea]


@pytest.mark.parametrize("widget_class", WIDGETS, ids=lambda w: w.__name__)
def test_the_written_out_widgets_render_exactly_as_django_templates(widget_class: type[forms.Widget]) -> None:
    ours, django = Renderer(), DjangoTemplates()
    assert widget_class.template_name in WRITTEN_OUT
    for attrs in ATTRS:
        widget = widget_class(attrs=attrs)
        for value in VALUES:
            for name in ("note", 'odd"<name>&'):
                expected = widget.render(name, value, renderer=django)
                assert widget.render(name, value, renderer=ours) == expected, (widget_class, attrs, value, name)


def test_the_dashboard_forms_render_as_before_bound_or_not() -> None:
    ours, django = Renderer(), DjangoTemplates()
    posted = {
        "request_id": 'r"1<',
        "explanation": "<i>why</i>\nbecause",
        "reason": "x & y",
        "conclusion": "Postgres",
        "rationale": "",
        "event_seq": "abc",
        "cite_key": "k<",
    }
    for make in (
        lambda r, data: ReaffirmForm(data, renderer=r),
        lambda r, data: RejectForm(data, renderer=r),
        lambda r, data: SupersedeForm(data, renderer=r, choices=[("a", "A <b>"), ("b", "B")]),
    ):
        for data in (None, posted):
            theirs, mine = make(django, data), make(ours, data)
            if data is not None:
                theirs.is_valid(), mine.is_valid()
            for field in theirs:
                assert str(mine[field.name]) == str(field), field.name
            assert str(mine) == str(theirs)


def test_other_widgets_still_go_through_django_templates() -> None:
    ours, django = Renderer(), DjangoTemplates()
    for widget in (forms.CheckboxInput(), forms.Select(choices=[("a", "<A>")]), forms.CheckboxSelectMultiple()):
        assert widget.render("n", "a", renderer=ours) == widget.render("n", "a", renderer=django)
