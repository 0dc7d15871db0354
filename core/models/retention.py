"""Retention results (seed 001, "Retention", "Retention error codes")."""

from __future__ import annotations

from datetime import datetime
from enum import Enum

from ._base import Model

__all__ = [
    "ActivityEntry",
    "ActivityFilter",
    "ActorKind",
    "DiskPurge",
    "DiskState",
    "Notice",
    "PersonProgress",
    "RetentionErrorCode",
    "RetentionResult",
    "SinceLastVisit",
    "TaskDeletionPreview",
]


class ActorKind(str, Enum):
    """Who wrote an activity entry: a signed-in ``person`` (the dashboard
    says so), or an ``agent`` (a script, an API token, an import). Services
    write as an agent unless told otherwise, so a script cannot appear as a
    reviewer by taking a person's name as its agent id."""

    person = "person"
    agent = "agent"


class RetentionErrorCode(str, Enum):
    event_not_found = "event_not_found"
    task_not_found = "task_not_found"
    request_id_reused = "request_id_reused"
    invalid_request_id = "invalid_request_id"
    #: ours: the reason is longer than its limit (core/limits.py)
    value_too_long = "value_too_long"


class RetentionResult(Model):
    recorded: bool
    error: RetentionErrorCode | None = None
    affected_decision_ids: list[str] = []


class DiskState(str, Enum):
    """Where a redacted or deleted text stands on disk, as far as it is known.

    FalkorDB rewrites its files, and the server reports the rewrite:
    ``rewrite_pending`` until a purge round ran, then ``rewritten``.
    Neo4j cannot erase bytes on demand: the round confirms the key is
    destroyed (``key_pending`` until then, ``key_destroyed`` after), and
    the ciphertext leaves the transaction log when the log rotates."""

    rewrite_pending = "rewrite_pending"
    rewritten = "rewritten"
    key_pending = "key_pending"
    key_destroyed = "key_destroyed"


class DiskPurge(Model, frozen=True):
    """The one state a page shows for a redaction or deletion on disk."""

    state: DiskState
    #: when the purge round covered it (None while pending)
    at: datetime | None = None
    #: Neo4j: the settings that bound how long the transaction log keeps the
    #: ciphertext, with the values the server reported at the round
    #: ("db.tx_log.rotation.size 256.00MiB; ..."); None when not known
    bound: str | None = None


class ActivityEntry(Model):
    """Who did what to which record, when and why. Kept apart from the records
    it names, so deleting them does not erase it."""

    id: str
    at: datetime
    actor: str
    #: person or agent; None for entries recorded before the kind was kept.
    actor_kind: ActorKind | None = None
    action: str
    target_kind: str
    target_id: str
    summary: str
    reason: str | None = None
    #: When an imported change was imported (``at`` is when it happened).
    imported_at: datetime | None = None
    #: For a redaction or a deletion: "pending" until the store's files were
    #: purged, then "done" (at ``disk_purged_at``); None for other actions.
    disk_purge: str | None = None
    disk_purged_at: datetime | None = None
    #: the same as one state to show (None for other actions)
    disk: DiskPurge | None = None
    #: the people (user names) this entry is news for (``log_activity``)
    notify: list[str] = []
    #: the task the entry is about (a decision's, an event's, a deleted
    #: task's own id); None where nobody knows (a root-cause group, or an
    #: entry older than the field whose decision was deleted)
    task_id: str | None = None


class ActivityFilter(Model, frozen=True):
    """Which entries of the activity log to read; every field set narrows
    it (they combine with AND). Times are aware datetimes: ``since`` is
    inclusive, ``until`` exclusive (a caller turns a person's dates into
    them, in the time zone it shows)."""

    #: who wrote it (``ActivityEntry.actor``, exactly)
    actor: str | None = None
    action: str | None = None
    #: a task's name: entries about it, its decisions or its events
    task: str | None = None
    #: a decision's id (``ActivityEntry.target_id``)
    decision: str | None = None
    since: datetime | None = None
    until: datetime | None = None


class PersonProgress(Model, frozen=True):
    """What one person (or agent) settled in a project: decisions reaffirmed,
    superseded and rejected, today and this week."""

    actor: str
    actor_kind: ActorKind | None = None
    today: dict[str, int] = {}
    week: dict[str, int] = {}


class TaskDeletionPreview(Model):
    """What ``delete_task`` would remove and flag, for a confirmation page."""

    found: bool
    events: int = 0
    steps: int = 0
    decisions: int = 0
    flagged_decision_ids: list[str] = []


class Notice(Model):
    """An activity entry as news for one person (``core.notices``): the
    entry, and the decision its link opens (a supersede entry opens the
    revision it recorded), or None for an entry about no decision."""

    entry: ActivityEntry
    opens: str | None = None


class SinceLastVisit(Model):
    """What changed in a project after a time (``core.notices.changes_since``).
    ``flags``: (root cause, decisions newly in the queue for it), most first;
    ``settled``: verdicts others recorded; ``conflicts``: conflict groups new
    or changed; ``comments``: comments others wrote. ``capped``: more
    happened than was read (each count is then "at least")."""

    since: datetime
    flags: list[tuple[str, int]] = []
    settled: int = 0
    conflicts: int = 0
    comments: int = 0
    capped: bool = False

    @property
    def anything(self) -> bool:
        return bool(self.flags or self.settled or self.conflicts or self.comments)
