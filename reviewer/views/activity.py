"""The project's activity log: who did what, people and agents, filtered by
person, action, task, decision and dates, page by page or downloaded whole
(CSV, JSON Lines) as the filter has it.

Dates are the person's view of dates in the server's time zone
(``settings.TIME_ZONE``, UTC unless set): "from" is the start of that day
there, "to" the end of that day there.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator
from datetime import date, datetime, time, timedelta
from typing import Any
from urllib.parse import urlencode

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.utils import timezone
from django.views.decorators.http import require_GET

from core import limits
from core.models import ActivityEntry, ActivityFilter
from core.retention import ActivityLog

from .base import _param, _project

PAGE = 50

#: the actions the log records (review, retention, and the team's), offered
#: in the action filter; another value is refused beside the form
ACTIONS = (
    "reaffirm",
    "supersede",
    "reject",
    "redact",
    "delete_task",
    "claim",
    "release",
    "take_over",
    "assign",
    "unassign",
    "claim_lease",
    "comment",
    "comment_edit",
    "comment_delete",
    "comment_resolve",
    "comment_redact",
)

#: the filter's query parameters, in the order the form shows them
FIELDS = ("actor", "action", "task", "decision", "since", "until")

#: the columns of a download, in order (JSON Lines: the same keys)
COLUMNS = (
    "at",
    "actor",
    "actor_kind",
    "action",
    "target_kind",
    "target_id",
    "task_id",
    "summary",
    "reason",
    "imported_at",
    "id",
)


class ActivityFilterForm(forms.Form):
    actor = forms.CharField(required=False, max_length=limits.AGENT_ID_MAX, label="Person")
    action = forms.CharField(required=False, max_length=limits.LABEL_MAX)
    task = forms.CharField(required=False, max_length=limits.TASK_NAME_MAX, label="Task name")
    decision = forms.UUIDField(required=False, label="Decision id")
    since = forms.DateField(required=False, label="From", widget=forms.DateInput(attrs={"type": "date"}))
    until = forms.DateField(required=False, label="To", widget=forms.DateInput(attrs={"type": "date"}))

    def clean_action(self) -> str:
        action = self.cleaned_data["action"]
        if action and action not in ACTIONS:
            raise forms.ValidationError("Not an action the log records: choose one from the list.")
        return action

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if data.get("since") and data.get("until") and data["since"] > data["until"]:
            self.add_error("until", "“To” is before “From”.")
        return data

    def where(self) -> ActivityFilter:
        """The core's filter, the dates turned into instants in the server's zone."""
        data = self.cleaned_data
        return ActivityFilter(
            actor=data["actor"] or None,
            action=data["action"] or None,
            task=data["task"] or None,
            decision=str(data["decision"]) if data["decision"] else None,
            since=_midnight(data["since"]) if data["since"] else None,
            until=_midnight(data["until"] + timedelta(days=1)) if data["until"] else None,
        )

    def query(self) -> dict[str, str]:
        """The filter's query parameters as typed (for links that keep it)."""
        return {name: self.data[name] for name in FIELDS if self.data.get(name)}


#: how the progress table names each settling action
SETTLED = {"reaffirm": "reaffirmed", "supersede": "superseded", "reject": "rejected"}


def team_progress(p: Any) -> dict[str, Any]:
    """Who settled what today and this week (from Monday), by action, for
    the overview: days in the server's zone (``settings.TIME_ZONE``)."""
    today = timezone.localdate()
    found = p.activity.progress(today=_midnight(today), week=_midnight(today - timedelta(days=today.weekday())))

    def counts(by: dict[str, int]) -> list[tuple[str, str, int]]:
        return [(action, label, by[action]) for action, label in SETTLED.items() if by.get(action)]

    rows = [
        {"actor": f.actor, "actor_kind": f.actor_kind, "today": counts(f.today), "week": counts(f.week)} for f in found
    ]
    return {"rows": rows, "time_zone": timezone.get_current_timezone_name()}


def _midnight(day: date) -> datetime:
    return timezone.make_aware(datetime.combine(day, time.min), timezone.get_current_timezone())


def _form(request: HttpRequest) -> ActivityFilterForm:
    """The filter as typed, each value cut to 1,000 characters (NULs
    dropped): the form says what is too long and keeps the text."""
    return ActivityFilterForm({name: _param(request.GET, name).strip() for name in FIELDS if request.GET.get(name)})


@require_GET
@login_required
def activity(request: HttpRequest, project: str) -> HttpResponse:
    p = _project(request, project)
    form = _form(request)
    entries: list[ActivityEntry] = []
    links: dict[str, str] = {}
    next_url = None
    if form.is_valid():
        before = _param(request.GET, "before", 100) or None
        entries, links = p.activity.list_with_links(before=before, limit=PAGE, where=form.where())
        if len(entries) == PAGE:
            next_url = "?" + urlencode({**form.query(), "before": ActivityLog.cursor(entries[-1])})
    query = urlencode(form.query())
    return render(
        request,
        "reviewer/activity.html",
        {
            "form": form,
            "entries": entries,
            "next_url": next_url,
            "links": links,
            "actions": ACTIONS,
            "query": query,
            "filtered": bool(form.query()),
            "time_zone": timezone.get_current_timezone_name(),
        },
        status=200 if form.is_valid() else 400,
    )


@require_GET
@login_required
def download(request: HttpRequest, project: str, fmt: str) -> HttpResponse:
    """Every row of the filter, streamed a page at a time (memory: a page)."""
    p = _project(request, project)
    form = _form(request)
    if not form.is_valid():
        errors = "; ".join(f"{name}: {' '.join(e)}" for name, e in form.errors.items())
        return HttpResponse(f"Bad filter: {errors}\n", status=400, content_type="text/plain; charset=utf-8")
    rows = (_row(e) for e in p.activity.every(where=form.where()))
    if fmt == "csv":
        body, kind = _csv(rows), "text/csv; charset=utf-8"
    else:
        body, kind = (json.dumps(r, ensure_ascii=False) + "\n" for r in rows), "application/jsonl; charset=utf-8"
    response = StreamingHttpResponse(body, content_type=kind)
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", project)[:64]
    response["Content-Disposition"] = f'attachment; filename="activity-{name}.{fmt}"'
    response["Cache-Control"] = "no-store"
    return response


def _row(entry: ActivityEntry) -> dict[str, Any]:
    data = entry.model_dump(mode="json", include=set(COLUMNS))
    return {k: data.get(k) for k in COLUMNS}


#: what a spreadsheet reads as a formula at the start of a cell (and the
#: controls that some read past first)
FORMULA = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: Any) -> str:
    """A CSV cell a spreadsheet shows as text: one starting like a formula
    gets a leading apostrophe (OWASP's advice on CSV injection)."""
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(FORMULA) else text


def _csv(rows: Iterator[dict[str, Any]]) -> Iterator[str]:
    buffer = io.StringIO()
    writer = csv.writer(buffer)

    def flushed() -> str:
        out = buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
        return out

    writer.writerow(COLUMNS)
    yield flushed()
    for row in rows:
        writer.writerow([_cell(row[k]) for k in COLUMNS])
        yield flushed()
