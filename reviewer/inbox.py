"""A person's inbox across their projects, what they have read, and when
they last looked.

The graph keeps the news (``core.notices``: one notice per person an
activity entry names); Django's ORM keeps what belongs to the person
(``ProjectMarks``: read up to, last looked at; ``NoticeRead``: one read
notice after that). Access is checked again at every read: only the
projects the person may open now are asked, so a person who lost a
project's grant sees nothing from it (nor gets it by e-mail,
``reviewer.notice_mail``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.db.models import Count, Q
from django.http import HttpRequest

from core import limits
from core.claims import Claims
from core.models import ActorKind, Notice, SinceLastVisit
from core.notices import Notices, changes_since, flagged_after
from core.stores import GraphStore, GraphStoreError

from . import access
from .models import NoticeRead, ProjectMarks

#: a person's projects the inbox asks at most (staff may open every project)
PROJECTS_MAX = 50
#: notices on one inbox page
PAGE = 30
#: why an entry is news to the person, by its action (the inbox's tag; an
#: e-mail's line). The entry's summary says what happened, and never
#: carries comment text (the activity log's contract).
ACTION_LABELS = {
    "comment": "mention or reply",
    "assign": "assigned to you",
    "unassign": "unassigned",
    "take_over": "your claim taken over",
    "release": "your claim released",
    "claim": "claimed",
    "claim_expiring": "your claim ends soon",
}
_UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
#: where the unread count is kept for the rest of a request
_CACHE = "_reviewer_unread"


@dataclass(frozen=True)
class Item:
    """One notice as the inbox shows it."""

    project: str
    notice: Notice
    unread: bool

    @property
    def decision(self) -> str | None:
        """The decision the notice opens (an id the page can link)."""
        opens = self.notice.opens
        return opens if opens and _UUID.match(opens) else None

    @property
    def group(self) -> str | None:
        """The root-cause group the notice is about, if any."""
        e = self.notice.entry
        return e.target_id if e.target_kind == "group" else None

    @property
    def label(self) -> str:
        return ACTION_LABELS.get(self.notice.entry.action, self.notice.entry.action.replace("_", " "))


def projects(user: Any, store: GraphStore) -> list[str]:
    """The projects whose notices this person may see now."""
    return access.projects_for(user, store)[:PROJECTS_MAX]


def marks(user: Any, project_ids: list[str]) -> dict[str, ProjectMarks]:
    return {m.project_id: m for m in ProjectMarks.objects.filter(user=user, project_id__in=project_ids)}


def _reads_after(user: Any, marks_of: dict[str, ProjectMarks], project_ids: list[str]) -> dict[str, int]:
    """Per project, the notices marked read one by one after its
    read-up-to: one counting query (older rows are covered by the mark)."""
    if not project_ids:
        return {}
    after = Q()
    for pid in project_ids:
        mark = marks_of.get(pid)
        if mark is not None and mark.read_until is not None:
            after |= Q(project_id=pid, at__gt=mark.read_until)
        else:
            after |= Q(project_id=pid)
    rows = NoticeRead.objects.filter(after, user=user).values("project_id").annotate(n=Count("id"))
    return {r["project_id"]: r["n"] for r in rows}


def unread_unknown(request: HttpRequest) -> None:
    """This request's page says nothing of unread notices (its top bar has
    no count) and asks the store nothing more: the store page of a store
    that did not answer must not wait for it a second time."""
    setattr(request, _CACHE, None)


def unread_count(request: HttpRequest) -> int | None:
    """The person's unread notices over their projects, up to
    ``UNREAD_COUNT_MAX`` (the badge says "99+" past it), counted once per
    request: one bounded count per project, up to the cap plus the notices
    read one by one there (taken away before the cap applies). None when
    the store is not answering (the page still renders)."""
    cached = getattr(request, _CACHE, False)
    if cached is not False:
        return cached
    user = request.user
    total: int | None = 0
    try:
        from .store import get_store

        store = get_store()
        ids = projects(user, store)
        marks_of = marks(user, ids)
        reads = _reads_after(user, marks_of, ids)
        for pid in ids:
            mark = marks_of.get(pid)
            read = min(reads.get(pid, 0), limits.NOTICE_READS_COUNTED_MAX)
            n = Notices(store, project_id=pid).count_after(
                user.get_username(), mark and mark.read_until, cap=limits.UNREAD_COUNT_MAX + read
            )
            total += max(0, n - read)
            if total >= limits.UNREAD_COUNT_MAX:
                total = limits.UNREAD_COUNT_MAX
                break
    except GraphStoreError:  # the store is down or closed: the top bar goes without the count
        total = None
    setattr(request, _CACHE, total)
    return total


def page(user: Any, store: GraphStore, *, project: str | None, before: str | None) -> tuple[list[Item], str | None]:
    """One page of the person's notices, newest first, over their projects
    (or one of them): each project is asked for one page after ``before``,
    and the pages are merged. The cursor of the next page, if any."""
    ids = projects(user, store)
    if project is not None:
        ids = [p for p in ids if p == project]
    who = user.get_username()
    found: list[tuple[str, Notice]] = []
    for pid in ids:
        found += [(pid, n) for n in Notices(store, project_id=pid).page(who, before=before, limit=PAGE + 1)]
    found.sort(key=lambda pn: (-pn[1].entry.at.timestamp(), pn[1].entry.id))
    more = len(found) > PAGE
    found = found[:PAGE]
    marks_of = marks(user, ids)
    read = set(
        NoticeRead.objects.filter(user=user, entry_id__in=[n.entry.id for _, n in found]).values_list(
            "project_id", "entry_id"
        )
    )
    items = []
    for pid, n in found:
        mark = marks_of.get(pid)
        done = (mark is not None and mark.read_until is not None and n.entry.at <= mark.read_until) or (
            (pid, n.entry.id) in read
        )
        items.append(Item(pid, n, not done))
    return items, (Notices.cursor(found[-1][1]) if more and found else None)


def mark_read(user: Any, store: GraphStore, project: str, entry_id: str) -> bool:
    """One notice read, if it is one of the person's notices in the project
    (its time is the store's, never the client's): a script cannot add rows
    for entries that are not theirs. Rows the read-up-to mark covers are
    dropped on the way. False: no such notice for them."""
    at = Notices(store, project_id=project).time_of(user.get_username(), entry_id)
    if at is None:
        return False
    mark = ProjectMarks.objects.filter(user=user, project_id=project).first()
    if mark is not None and mark.read_until is not None:
        NoticeRead.objects.filter(user=user, project_id=project, at__lte=mark.read_until).delete()
        if at <= mark.read_until:
            return True  # already read by the mark
    NoticeRead.objects.get_or_create(user=user, project_id=project, entry_id=entry_id, defaults={"at": at})
    return True


def mark_all_read(user: Any, project_ids: list[str], *, now: datetime | None = None) -> None:
    """Every notice up to now read, in each of these projects; the notices
    read one by one before it are forgotten (the mark covers them)."""
    moment = now or datetime.now(UTC)
    for pid in project_ids:
        ProjectMarks.objects.update_or_create(user=user, project_id=pid, defaults={"read_until": moment})
    NoticeRead.objects.filter(user=user, project_id__in=project_ids, at__lte=moment).delete()


def read_checker(user: Any, project: str, entry_ids: list[str]) -> Callable[[str, datetime], bool]:
    """Whether the person has read a notice (e-mail skips it), for the
    notices ``entry_ids`` of one project: two queries, whatever their count."""
    mark = ProjectMarks.objects.filter(user=user, project_id=project).values_list("read_until", flat=True).first()
    read = set(
        NoticeRead.objects.filter(user=user, project_id=project, entry_id__in=entry_ids).values_list(
            "entry_id", flat=True
        )
    )
    return lambda entry_id, at: (mark is not None and at <= mark) or entry_id in read


# -- since my last visit -----------------------------------------------------------


def looked(request: HttpRequest, project: str) -> None:
    """The person has looked at the project now: the overview's "since your
    last visit" starts again from here. Called on explicit acts only (a
    verdict, "mark all seen", a comment), never on a page load."""
    if request.user.is_authenticated:
        ProjectMarks.objects.update_or_create(
            user=request.user, project_id=project, defaults={"looked_at": datetime.now(UTC)}
        )


def last_looked(user: Any, project: str) -> datetime | None:
    """When the person last looked at the project (None: never)."""
    found = ProjectMarks.objects.filter(user=user, project_id=project).values_list("looked_at", flat=True).first()
    return found


@dataclass(frozen=True)
class Since:
    """The overview's "since your last visit": when, what changed (None:
    the person never looked, so there is nothing to compare with), and each
    newly flagged cause's label."""

    at: datetime | None
    changes: SinceLastVisit | None
    labels: dict[str, str]


def changes(request: HttpRequest, store: GraphStore, project: str, cause_labels: Any) -> Since:
    at = last_looked(request.user, project)
    if at is None:
        return Since(None, None, {})
    found = changes_since(store, project, request.user.get_username(), at)
    return Since(at, found, cause_labels([c for c, _ in found.flags]) if found.flags else {})


def new_cards(request: HttpRequest, store: GraphStore, project: str, decisions: list[Any]) -> set[Any]:
    """The ids of the queue page's decisions flagged after the person last
    looked (none if they never did: everything would be new)."""
    at = last_looked(request.user, project)
    if at is None or not decisions:
        return set()
    fresh = flagged_after(store, project, [str(d.id) for d in decisions], at)
    return {d.id for d in decisions if str(d.id) in fresh}


def ending_claims(user: Any, store: GraphStore, *, project: str | None) -> list[tuple[str, Any]]:
    """(project, claim) for the person's live claims that end within five
    minutes, soonest first, in the one project asked for or in each they
    may open (each a bounded, indexed read; never in the top bar)."""
    out: list[tuple[str, Any]] = []
    for pid in [project] if project else projects(user, store):
        claims = Claims(store, project_id=pid, agent_id=user.get_username(), actor_kind=ActorKind.person)
        out += [(pid, claim) for claim in claims.ending_soon(user.get_username())]
    return sorted(out, key=lambda pc: pc[1].expires_at)
