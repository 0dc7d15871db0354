"""Reading the activity log by filter: the statement's conditions, the task
an older entry is about, and the team's progress (``ActivityLog``).

Every condition is written only when its filter is set, never as
``$x IS NULL OR ...``: a planner can then reach the entries through the
index of the narrowest filter (Neo4j: the ``(project_id, at)`` index in
its order when only times are given). The page's cursor is written as a
range on ``at`` (``a.at <= $at``) with the tie-break beside it, so the
range stays an index seek.

An entry names its task (``task_id``) from the commit that wrote it
(``_review.log_activity``); entries written before that are given theirs
once per project (:func:`name_tasks`), by their decision, event or task
while those still exist. One that cannot be told keeps ``''``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from . import _common as c
from . import limits
from .models.retention import ActivityFilter, ActorKind, PersonProgress
from .stores.base import GraphStore

#: the actions that settle a decision, counted as a person's progress
SETTLING = ("reaffirm", "supersede", "reject")

#: entries given their task per statement (:func:`name_tasks`)
NAMING_BATCH = 2_000

#: the (store url, project) pairs whose older entries were completed
_NAMED: set[tuple[str, str]] = set()


def checked(where: ActivityFilter | None) -> ActivityFilter:
    """The filter, its texts within their limits (``ValueError`` otherwise:
    a caller checks what a person typed first)."""
    where = where or ActivityFilter()
    for value, field, most in (
        (where.actor, "actor", limits.AGENT_ID_MAX),
        (where.action, "action", limits.LABEL_MAX),
        (where.task, "task", limits.TASK_NAME_MAX),
        (where.decision, "decision", 36),
    ):
        if value is not None and (limits.over(c.text(value, field), most) or not value):
            raise ValueError(f"{field} must be 1 to {most} characters")
    for moment, field in ((where.since, "since"), (where.until, "until")):
        if moment is not None and moment.tzinfo is None:
            raise ValueError(f"{field} must be an aware datetime")
    return where


def conditions(
    project_id: str, where: ActivityFilter, before: str | None, window: tuple[int, int] | None = None
) -> tuple[str, dict[str, Any]]:
    """``WHERE`` text (after ``MATCH (a:Activity)``) and its parameters;
    ``window``: ``at_us`` from (inclusive) and to (exclusive), the range a
    long read takes at a time."""
    parts, params = ["a.project_id = $p"], {"p": project_id}
    if window is not None:
        parts.append("a.at_us >= $lo AND a.at_us < $hi")
        params.update(lo=window[0], hi=window[1])
    for prop, value in (("actor", where.actor), ("action", where.action), ("target_id", where.decision)):
        if value is not None:
            parts.append(f"a.{prop} = ${prop}")
            params[prop] = value
    if where.task is not None:
        parts.append("a.task_id = $task")
        params["task"] = c.task_id(project_id, where.task)
    if where.since is not None:
        parts.append("a.at >= $since")
        params["since"] = c.iso(where.since)
    at, _, after_id = (before or "").partition("|")
    until = c.iso(where.until) if where.until is not None else None
    if at and (until is None or at < until):
        if after_id:  # the entries after the page's last: older, or as old and after it by id
            parts.append("a.at <= $at AND (a.at < $at OR a.id > $after)")
            params.update(at=at, after=after_id)
        else:
            parts.append("a.at < $at")
            params["at"] = at
    elif until is not None:
        parts.append("a.at < $until")
        params["until"] = until
    return " AND ".join(parts), params


def complete_older(store: GraphStore, project_id: str) -> None:
    """Give the entries written before entries kept their task and their
    time as a number (``at_us``) both: a decision's or an event's task
    while it exists, a deleted task's own id, ``''`` where none is left to
    tell. Once per project (a marker node says it is done), in batches;
    idempotent, so processes doing it at once agree."""
    key = (str(getattr(store, "url", id(store))), project_id)
    if key in _NAMED:
        return
    marker = store.read(project_id, "MATCH (m:ActivityTasks {id: $p}) RETURN m.id AS id", {"p": project_id})
    while not marker:
        older = store.read(
            project_id,
            "MATCH (a:Activity) WHERE a.project_id = $p AND a.at_us IS NULL RETURN a.id AS id, a.at AS at LIMIT $n",
            {"p": project_id, "n": NAMING_BATCH},
        )
        if not older:
            break
        store.write(
            project_id,
            "UNWIND $rows AS r MATCH (a:Activity {id: r.id}) SET a.at_us = r.us",
            {"rows": [{"id": r["id"], "us": c.micros(r["at"])} for r in older]},
        )
    while not marker:
        store.write(
            project_id,
            "MATCH (a:Activity) WHERE a.project_id = $p AND a.task_id IS NULL WITH a LIMIT $n "
            "OPTIONAL MATCH (d:Decision {id: a.target_id}) "
            "OPTIONAL MATCH (e:Event {id: a.target_id}) "
            "SET a.task_id = coalesce(CASE WHEN a.target_kind = 'task' THEN a.target_id END, d.task_id, "
            "e.task_id, '')",
            {"p": project_id, "n": NAMING_BATCH},
        )
        left = store.read(
            project_id,
            "MATCH (a:Activity) WHERE a.project_id = $p AND a.task_id IS NULL RETURN a.id AS id LIMIT 1",
            {"p": project_id},
        )
        if not left:
            store.write(project_id, "MERGE (:ActivityTasks {id: $p})", {"p": project_id})
            break
    _NAMED.add(key)


def progress(store: GraphStore, project_id: str, *, today: datetime, week: datetime) -> list[PersonProgress]:
    """Who settled what since ``week`` (and since ``today``, which is not
    earlier), by action: one statement over this week's settling entries
    (a range of the ``at`` index), most settled first."""
    since = min(today, week)
    rows = store.read(
        project_id,
        "MATCH (a:Activity) WHERE a.project_id = $p AND a.at >= $week AND a.action IN $settling "
        "RETURN a.actor AS actor, a.actor_kind AS kind, a.action AS action, count(a) AS week, "
        "sum(CASE WHEN a.at >= $today THEN 1 ELSE 0 END) AS today",
        {"p": project_id, "week": c.iso(since), "today": c.iso(today), "settling": list(SETTLING)},
    )
    people: dict[str, dict[str, Any]] = {}
    for r in rows:
        person = people.setdefault(r["actor"], {"actor": r["actor"], "actor_kind": None, "today": {}, "week": {}})
        if r["kind"] in (k.value for k in ActorKind):
            person["actor_kind"] = r["kind"]
        person["week"][r["action"]] = person["week"].get(r["action"], 0) + r["week"]
        if r["today"]:
            person["today"][r["action"]] = person["today"].get(r["action"], 0) + r["today"]
    found = [PersonProgress.model_validate(p) for p in people.values()]
    return sorted(found, key=lambda p: (-sum(p.week.values()), p.actor))
