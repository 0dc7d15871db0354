"""A person's news in a project, and what changed there since they last looked.

``log_activity(..., notify=[user names])`` writes, in the same commit as the
entry, one ``(:Notice {project_id, person, at, entry_id, action})`` per
person it names: the entry's ``notify`` list cannot be indexed for
membership on Neo4j, and the inbox reads by person. The core keeps no read
state: what a person has read, and when they last looked, are theirs to keep
(the dashboard keeps them in Django's ORM) and are passed in as times.
Every read here is bounded: a page, a count that stops at a cap, a scan of
at most ``SINCE_SCAN_MAX`` entries.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from . import _common as c
from . import limits
from ._schema import DECISION_SCHEMA
from .models.retention import Notice, SinceLastVisit
from .retention import ENTRY_COLUMNS, ActivityLog
from .stores.base import GraphStore

#: the verdicts "decisions others settled" counts
SETTLING = ("reaffirm", "supersede", "reject")


def _scope(store: GraphStore, var: str) -> str:
    """The project's filter where one graph holds every project (Neo4j); a
    graph of its own (FalkorDB) needs none, and its planner then reads the
    index of the other property (a person's, a time's) rather than every
    node of the project."""
    return "" if store.graph_per_project else f" AND {var}.project_id = $p"


def _moment(value: datetime | str | None, field: str) -> str | None:
    if value is None or isinstance(value, str):
        return c.optional_text(value, field) or None
    if not isinstance(value, datetime):
        raise ValueError(f"{field} must be a time")
    return c.iso(value)


class Notices:
    """One project's notices, read for one person at a time."""

    def __init__(self, store: GraphStore, *, project_id: str) -> None:
        self.store = store
        self.project_id = c.text(project_id, "project_id", allow_empty=False)
        store.ensure_schema(self.project_id, DECISION_SCHEMA)
        self._log = ActivityLog(store, project_id=self.project_id)

    def page(
        self,
        person: str,
        *,
        before: str | None = None,
        after: datetime | str | None = None,
        actions: Iterable[str] | None = None,
        limit: int = 30,
        oldest_first: bool = False,
    ) -> list[Notice]:
        """The entries naming ``person``, newest first, with the decision
        each opens. ``before``: ``cursor(last notice)`` of the previous
        page; ``after``: only entries later than this time; ``actions``:
        only entries of these actions. ``oldest_first``: the oldest after
        ``after`` first (a reader that moves a mark past what it read, so
        nothing older is left behind a full page)."""
        person = self._person(person)
        order = "ASC" if oldest_first else "DESC"
        at, _, after_id = (c.optional_text(before, "before") or "").partition("|")
        wanted = sorted({c.text(a, "actions") for a in actions}) if actions is not None else None
        rows = self.store.read(
            self.project_id,
            f"MATCH (n:Notice) WHERE n.person = $who{_scope(self.store, 'n')} "
            "AND ($at IS NULL OR n.at < $at OR (n.at = $at AND $id IS NOT NULL AND n.entry_id > $id)) "
            "AND ($after IS NULL OR n.at > $after) AND ($actions IS NULL OR n.action IN $actions) "
            f"WITH n ORDER BY n.at {order}, n.entry_id LIMIT $n "
            "MATCH (a:Activity {id: n.entry_id}) "
            "OPTIONAL MATCH (o:Decision {id: CASE WHEN a.action = 'supersede' THEN a.target_id END}) "
            f"RETURN {ENTRY_COLUMNS}, o.superseded_by AS opens ORDER BY a.at {order}, a.id",
            {
                "p": self.project_id,
                "who": person,
                "at": at or None,
                "id": after_id or None,
                "after": _moment(after, "after"),
                "actions": wanted,
                "n": c.clamp(limit, 30, limits.NOTICES_PAGE_MAX),
            },
        )
        out = []
        for row in rows:
            opens = row.pop("opens")
            entry = self._log.entry(row)
            out.append(
                Notice(entry=entry, opens=(opens or entry.target_id) if entry.target_kind == "decision" else None)
            )
        return out

    def count_after(self, person: str, after: datetime | str | None, *, cap: int = limits.UNREAD_COUNT_MAX) -> int:
        """How many entries name ``person`` after ``after`` (all, if None),
        counted up to ``cap``: a badge needs no more, and no count reads
        more than that many notices (a cap may add the notices the caller
        will take away as read, up to ``NOTICE_READS_COUNTED_MAX``)."""
        rows = self.store.read(
            self.project_id,
            f"MATCH (n:Notice) WHERE n.person = $who{_scope(self.store, 'n')} AND ($after IS NULL OR n.at > $after) "
            "WITH n LIMIT $n RETURN count(n) AS n",
            {
                "p": self.project_id,
                "who": self._person(person),
                "after": _moment(after, "after"),
                "n": c.clamp(cap, limits.UNREAD_COUNT_MAX, limits.UNREAD_COUNT_MAX + limits.NOTICE_READS_COUNTED_MAX),
            },
        )
        return int(rows[0]["n"]) if rows else 0

    def time_of(self, person: str, entry_id: str) -> datetime | None:
        """When the entry ``entry_id`` happened, if it names ``person``
        (None: no such entry here, or not news for them). One entry read by
        its id: what a "mark read" may store is checked here, never taken
        from the client."""
        entry_id = c.text(entry_id, "entry_id", allow_empty=False)
        rows = self.store.read(
            self.project_id,
            f"MATCH (a:Activity {{id: $id}}) WHERE $who IN coalesce(a.notify, []){_scope(self.store, 'a')} "
            "RETURN a.at AS at LIMIT 1",
            {"p": self.project_id, "id": entry_id, "who": self._person(person)},
        )
        return datetime.fromisoformat(rows[0]["at"]) if rows and rows[0]["at"] else None

    @staticmethod
    def cursor(notice: Notice) -> str:
        """Where the page after ``notice`` starts (its time and entry id)."""
        return f"{c.iso(notice.entry.at)}|{notice.entry.id}"

    @staticmethod
    def _person(person: Any) -> str:
        person = c.text(person, "person", allow_empty=False)
        if len(person) > limits.PERSON_MAX:
            raise ValueError(f"person: a user name is at most {limits.PERSON_MAX} characters")
        return person


def changes_since(store: GraphStore, project_id: str, person: str, since: datetime) -> SinceLastVisit:
    """What changed in the project after ``since`` that ``person`` did not
    do: decisions newly flagged (by root cause), verdicts others recorded,
    conflict groups new or changed, comments others wrote. Three bounded
    reads, each stopping at ``SINCE_SCAN_MAX`` rows (the entries unsorted:
    sorting would read every entry after ``since``); past it the counts are
    "at least" (``capped``)."""
    project_id = c.text(project_id, "project_id", allow_empty=False)
    person = Notices._person(person)
    store.ensure_schema(project_id, DECISION_SCHEMA)
    at = c.iso(since)
    cap = limits.SINCE_SCAN_MAX
    params = {"p": project_id, "at": at, "n": cap, "who": person, "settling": list(SETTLING)}
    flags = store.read(
        project_id,
        f"MATCH (d:Decision) WHERE d.flagged_at > $at{_scope(store, 'd')} AND d.review_open = true "
        "WITH d LIMIT $n RETURN coalesce(d.root_cause, '') AS cause, count(d) AS n",
        params,
    )
    entries = store.read(
        project_id,
        f"MATCH (a:Activity) WHERE a.at > $at{_scope(store, 'a')} WITH a LIMIT $n "
        "RETURN count(a) AS seen, "
        "sum(CASE WHEN a.actor <> $who AND a.action IN $settling THEN 1 ELSE 0 END) AS settled, "
        "sum(CASE WHEN a.actor <> $who AND a.action = 'comment' THEN 1 ELSE 0 END) AS comments",
        params,
    )
    conflicts = store.read(
        project_id,
        f"MATCH (ch:Choice) WHERE ch.updated_at > $at{_scope(store, 'ch')} AND ch.conflict = true "
        "WITH ch LIMIT $n RETURN count(ch) AS n",
        params,
    )
    seen = entries[0] if entries else {"seen": 0, "settled": 0, "comments": 0}
    flagged = sorted(((r["cause"], int(r["n"])) for r in flags if r["n"]), key=lambda p: (-p[1], p[0]))
    n_conflicts = int(conflicts[0]["n"]) if conflicts else 0
    return SinceLastVisit(
        since=since,
        flags=flagged,
        settled=int(seen["settled"] or 0),
        conflicts=n_conflicts,
        comments=int(seen["comments"] or 0),
        capped=int(seen["seen"] or 0) >= cap or sum(n for _, n in flagged) >= cap or n_conflicts >= cap,
    )


def flagged_after(store: GraphStore, project_id: str, decision_ids: Iterable[str], since: datetime) -> set[str]:
    """Which of ``decision_ids`` (one page's cards) entered the review queue
    after ``since``: the cards new to a person."""
    ids = [str(i) for i in decision_ids][: limits.NOTICES_PAGE_MAX * 5]
    if not ids:
        return set()
    rows = store.read(
        project_id,
        "UNWIND $ids AS id MATCH (d:Decision {id: id}) WHERE d.flagged_at > $at RETURN d.id AS id",
        {"ids": ids, "at": c.iso(since)},
    )
    return {r["id"] for r in rows}
