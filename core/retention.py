"""Retention: the two operations that change recorded history (seed 000,
"Retention"; seed 001, "Retention", "Retention error codes").

Who redacted or deleted what, when and why is kept as an activity entry in
the same commit, apart from the records it names, so the deletion cannot
erase it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import datetime
from typing import Any

from . import _activity, _causes, _citations, _conflict_keys, _counters, _decision_rows, _review, limits
from . import _common as c
from ._purge import Purger, event_purge_states
from ._schema import ACTIVITY_SCHEMA, CORE_SCHEMA, DECISION_SCHEMA
from .models.decision import ReviewReason
from .models.retention import (
    ActivityEntry,
    ActivityFilter,
    ActorKind,
    DiskPurge,
    DiskState,
    PersonProgress,
    RetentionErrorCode,
    RetentionResult,
    TaskDeletionPreview,
)
from .stores.base import GraphStore, Tx
from .stores.keystore import keys_of, parse_ranges, slot_ranges

__all__ = [
    "REDACTED",
    "ActivityFilter",
    "ActivityLog",
    "HistoryRetention",
    "disk_pending",
    "disk_purge_states",
    "disk_state",
    "purge_disk_soon",
]

#: The body of a redacted event.
REDACTED = "[REDACTED]"


def _reused() -> RetentionResult:
    return RetentionResult(recorded=False, error=RetentionErrorCode.request_id_reused)


class HistoryRetention:
    """Redaction and deletion in one project, done by one person or agent
    (``actor_kind``: an agent unless the caller is a signed-in person's
    dashboard)."""

    def __init__(
        self, store: GraphStore, *, project_id: str, agent_id: str, actor_kind: ActorKind | str = ActorKind.agent
    ) -> None:
        self.store = store
        self.project_id = c.text(project_id, "project_id", allow_empty=False)
        self.agent_id = c.text(agent_id, "agent_id", allow_empty=False)
        self.actor_kind = c.enum_value(ActorKind, actor_kind, "actor_kind")
        store.ensure_schema(self.project_id, CORE_SCHEMA)

    def redact_event(
        self, event_id: str | uuid.UUID, *, reason: str | None = None, request_id: str | None = None
    ) -> RetentionResult:
        """Replace one event body with the marker; its number and hash stay.
        Decisions citing it are flagged ``source_removed`` and their
        dependants queued for review."""
        eid = str(event_id) if isinstance(event_id, uuid.UUID) else c.text(event_id, "event_id")
        reason = c.optional_text(reason, "reason")
        if not c.check_request_id(request_id):
            return RetentionResult(recorded=False, error=RetentionErrorCode.invalid_request_id)
        if limits.over(reason, limits.EXPLANATION_MAX):
            return RetentionResult(recorded=False, error=RetentionErrorCode.value_too_long)
        if not c.is_uuid(eid):
            return RetentionResult(recorded=False, error=RetentionErrorCode.event_not_found)
        eid = eid.lower()
        replay = c.Replay(self.project_id, self.agent_id, request_id, "redact_event", {"event": eid, "reason": reason})

        def work(tx: Tx) -> RetentionResult:
            _counters.lock(tx, self.project_id)  # first: a redaction flags what cites the event
            tx.lock("Event", eid)
            earlier = c.replayed(tx, replay, RetentionResult, _reused)
            if earlier is not None:
                return earlier
            rows = tx.read(
                "MATCH (e:Event {id: $id}) WHERE e.project_id = $p "
                "RETURN e.task_id AS task_id, e.seq AS seq, e.redacted_at AS redacted_at, e.key_slot AS slot",
                {"id": eid, "p": self.project_id},
            )
            if not rows:
                return RetentionResult(recorded=False, error=RetentionErrorCode.event_not_found)
            if rows[0]["redacted_at"] is not None:
                result = RetentionResult(recorded=True)  # already redacted: nothing more to do
                replay.remember(tx, result)
                return result
            flagged = sorted(
                r["id"]
                for r in tx.read(
                    "MATCH (e:Event {id: $id}) WITH e MATCH (e)<-[:CITES_EVENT]-(d:Decision) WHERE d.status = 'active' "
                    "RETURN DISTINCT d.id AS id",
                    {"id": eid},
                )
            )
            task = tx.read("MATCH (t:Task {id: $id}) RETURN t.name AS name", {"id": rows[0]["task_id"]})
            at = c.iso(c.now())
            if flagged:  # reads first, so before this unit's writes
                _review.flag(
                    tx, self.project_id, flagged, ReviewReason.source_removed, _causes.redaction_cause(eid), at
                )
            tx.write(
                "MATCH (e:Event {id: $id}) SET e.payload = $marker, e.redacted_at = $at, e.redacted_by = $by, "
                "e.payload_ct = null, e.key_slot = null",
                {"id": eid, "marker": REDACTED, "at": at, "by": self.agent_id},
            )
            label = f"{task[0]['name'] if task else '?'} #{rows[0]['seq']}"
            slot = rows[0]["slot"]
            shred[:] = [] if slot is None else [slot]
            _review.log_activity(
                tx,
                self.project_id,
                self.agent_id,
                "redact",
                "event",
                eid,
                label,
                reason,
                at,
                actor_kind=self.actor_kind.value,
                purge_slots=slot_ranges(shred),
                task_id=rows[0]["task_id"],
            )
            result = RetentionResult(recorded=True, affected_decision_ids=flagged)
            replay.remember(tx, result)
            return result

        shred: list[int] = []
        result = self.store.transact(self.project_id, work)
        if shred:  # the key goes now; the purge destroys it again should this process die here
            keys_of(self.store).destroy(shred)
        if result.recorded:
            purge_disk_soon(self.store)  # whoever redacts starts the purge of the files
        return result

    def _deletion_plan(self, tx: Tx | None, tid: str, include_decisions: bool) -> dict[str, Any]:
        def read(query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
            return tx.read(query, params) if tx is not None else self.store.read(self.project_id, query, params)

        task = read("MATCH (t:Task {id: $id}) RETURN t.name AS name, t.event_seq AS events", {"id": tid})
        if not task:
            return {}
        steps = read("MATCH (s:Step {task_id: $id}) RETURN count(s) AS n", {"id": tid})[0]["n"]
        own_rows = read(
            "MATCH (d:Decision {task_id: $id}) "
            "RETURN d.id AS id, d.review_open AS open, d.review_state AS state, d.queued AS queued, "
            "d.task_id AS task_id, d.status AS status, d.root_cause AS root_cause",
            {"id": tid},
        )
        own = [r["id"] for r in own_rows]
        # decisions elsewhere that cite an event of the task, or (when they go
        # too) one of its decisions
        citing = read(
            "MATCH (e:Event {task_id: $id}) WITH e MATCH (e)<-[:CITES_EVENT]-(d:Decision) "
            "WHERE d.status = 'active' AND d.task_id <> $id RETURN DISTINCT d.id AS id",
            {"id": tid},
        )
        if include_decisions:
            citing += read(
                "MATCH (x:Decision {task_id: $id}) WITH x MATCH (x)<-[:DEPENDS_ON]-(d:Decision) "
                "WHERE d.status = 'active' AND d.task_id <> $id RETURN DISTINCT d.id AS id",
                {"id": tid},
            )
        return {
            "name": task[0]["name"],
            "events": task[0]["events"],
            "steps": steps,
            "own": own,
            "own_rows": own_rows,
            "flagged": sorted({r["id"] for r in citing}),
        }

    def preview_delete_task(self, task_name: str, *, include_decisions: bool = True) -> TaskDeletionPreview:
        """What ``delete_task`` would remove and flag, changing nothing."""
        task_name = c.text(task_name, "task_name")
        plan = self._deletion_plan(None, c.task_id(self.project_id, task_name), _bool(include_decisions))
        if not plan:
            return TaskDeletionPreview(found=False)
        return TaskDeletionPreview(
            found=True,
            events=plan["events"],
            steps=plan["steps"],
            decisions=len(plan["own"]) if include_decisions else 0,
            flagged_decision_ids=plan["flagged"],
        )

    def delete_task(
        self,
        task_name: str,
        *,
        include_decisions: bool = True,
        reason: str | None = None,
        request_id: str | None = None,
    ) -> RetentionResult:
        """Remove the task, its events and steps, and (by default) its
        decisions. Decisions in other tasks citing a deleted event or decision
        are flagged ``source_removed``; their dependants are not."""
        task_name = c.text(task_name, "task_name")
        include_decisions = _bool(include_decisions)
        reason = c.optional_text(reason, "reason")
        if not c.check_request_id(request_id):
            return RetentionResult(recorded=False, error=RetentionErrorCode.invalid_request_id)
        if limits.over(reason, limits.EXPLANATION_MAX):  # (the task's name is only looked up: any length)
            return RetentionResult(recorded=False, error=RetentionErrorCode.value_too_long)
        tid = c.task_id(self.project_id, task_name)
        replay = c.Replay(
            self.project_id,
            self.agent_id,
            request_id,
            "delete_task",
            {"task": task_name, "decisions": include_decisions, "reason": reason},
        )

        def work(tx: Tx) -> RetentionResult:
            _counters.lock(tx, self.project_id)  # first, as every unit that changes the kept counters
            tx.lock("Task", tid)
            earlier = c.replayed(tx, replay, RetentionResult, _reused)
            if earlier is not None:
                return earlier
            plan = self._deletion_plan(tx, tid, include_decisions)
            if not plan:
                return RetentionResult(recorded=False, error=RetentionErrorCode.task_not_found)
            slots = [
                r["s"]
                for r in tx.read(
                    "MATCH (e:Event {task_id: $id}) WHERE e.key_slot IS NOT NULL RETURN e.key_slot AS s", {"id": tid}
                )
            ]
            shred[:] = slots
            remaining = self._choices_left(tx, tid) if include_decisions and plan["own"] else {}
            # every read before the first write (the flags): kept decisions take the generation's detached id
            generation = None if include_decisions else _decision_rows.task_generation(tx, tid)
            at = c.iso(c.now())
            own = _counters.Tally(tx, self.project_id, plan["own"] if include_decisions else [], known=plan["own_rows"])
            if plan["flagged"]:
                _review.flag(
                    tx,
                    self.project_id,
                    plan["flagged"],
                    ReviewReason.source_removed,
                    _causes.deletion_cause(task_name),
                    at,
                    spread=False,
                )
            self._delete_records(tx, tid, plan["own"] if include_decisions else None, own, at, generation)
            self._write_choices(tx, remaining)
            summary = f"{task_name}: {plan['events']} events, {plan['steps']} steps, " + (
                f"{len(plan['own'])} decisions removed" if include_decisions else "decisions kept"
            )
            _review.log_activity(
                tx,
                self.project_id,
                self.agent_id,
                "delete_task",
                "task",
                tid,
                summary,
                reason,
                at,
                actor_kind=self.actor_kind.value,
                purge_slots=slot_ranges(slots),
                task_id=tid,
            )
            result = RetentionResult(recorded=True, affected_decision_ids=plan["flagged"])
            replay.remember(tx, result)
            return result

        shred: list[int] = []
        result = self.store.transact(self.project_id, work)
        if shred:  # the keys go now; the purge destroys them again should this process die here
            keys_of(self.store).destroy(parse_ranges(slot_ranges(shred)))
        if result.recorded:
            purge_disk_soon(self.store)  # whoever deletes starts the purge of the files
        return result

    def _delete_records(
        self, tx: Tx, tid: str, own: list[str] | None, tally: _counters.Tally, at: str, generation: int | None
    ) -> None:
        """The task, its events and steps deleted; its decisions (``own``)
        deleted with their support records, or (None) kept and detached
        (under the task's ``generation``). Writes only."""
        if own is not None:
            tx.write("MATCH (r:SupportRecord) WHERE r.decision_id IN $ids DELETE r", {"ids": own})
            _citations.unlink(tx, "MATCH (d:Decision {task_id: $id})-[r:CITES_DOC]->()", {"id": tid})
            tx.write("MATCH (d:Decision {task_id: $id}) DETACH DELETE d", {"id": tid})
            tally.settle(tx)
        else:
            _decision_rows.detach_decisions(tx, tid, generation or 0, at)
        tx.write("MATCH (e:Event {task_id: $id}) DETACH DELETE e", {"id": tid})
        tx.write("MATCH (s:Step {task_id: $id}) DETACH DELETE s", {"id": tid})
        tx.write("MATCH (t:Task {id: $id}) DETACH DELETE t", {"id": tid})

    def _choices_left(self, tx: Tx, tid: str) -> dict[str, list[dict[str, Any]]]:
        """For each choice of the task's active decisions (which the deletion
        removes), the active decisions of other tasks that remain: the
        choice's conflict flag is counted again from them."""
        choices = tx.read(
            "MATCH (d:Decision {task_id: $id}) WHERE d.status = 'active' RETURN DISTINCT d.choice_key AS key",
            {"id": tid},
        )
        return {
            row["key"]: tx.read(
                "MATCH (d:Decision {choice_key: $key}) WHERE d.project_id = $p AND d.status = 'active' "
                "AND d.task_id <> $id RETURN d.conclusion_norm AS norm",
                {"key": row["key"], "p": self.project_id, "id": tid},
            )
            for row in choices
        }

    def _write_choices(self, tx: Tx, remaining: dict[str, list[dict[str, Any]]]) -> None:
        if not remaining:
            return
        tx.write(
            "UNWIND $rows AS r MATCH (ch:Choice {id: r.id}) "
            "WITH ch, r, CASE WHEN ch.conflict = true THEN 1 ELSE 0 END AS was, "
            "CASE WHEN r.conflict THEN 1 ELSE 0 END AS now "
            "SET ch.active = r.n, ch.conflict = CASE WHEN r.conflict THEN true ELSE null END"
            + _conflict_keys.moved(self.store),
            {
                "rows": [
                    {
                        "id": c.choice_node_id(self.project_id, key),
                        "n": len(active),
                        "conflict": len({a["norm"] for a in active}) > 1,
                    }
                    for key, active in sorted(remaining.items())
                ],
                "qid": _counters.queue_node_id(self.project_id),
            },
        )


#: an activity entry ``a`` as ``ActivityLog.entry`` reads it
ENTRY_COLUMNS = (
    "a.id AS id, a.at AS at, a.actor AS actor, a.actor_kind AS actor_kind, a.action AS action, "
    "a.target_kind AS target_kind, a.task_id AS task_id, "
    "a.target_id AS target_id, a.summary AS summary, a.reason AS reason, a.imported_at AS imported_at, "
    "a.purge AS disk_purge, a.purged_at AS disk_purged_at, a.purge_verified AS purge_verified, "
    "a.purge_bound AS purge_bound, coalesce(a.notify, []) AS notify"
)


class ActivityLog:
    """The project's record of review, retention and team actions, newest
    first, read whole or by filter (``ActivityFilter``: person, action,
    task, decision, time range, combined)."""

    #: entries per statement of a long read (``every``)
    EVERY_PAGE = 200
    #: the first window of time a long read tries (``every``): an hour
    FIRST_WINDOW_US = 3_600_000_000

    def __init__(self, store: GraphStore, *, project_id: str) -> None:
        self.store = store
        self.project_id = c.text(project_id, "project_id", allow_empty=False)
        store.ensure_schema(self.project_id, DECISION_SCHEMA + ACTIVITY_SCHEMA)

    def list(
        self,
        *,
        before: str | None = None,
        limit: int = 50,
        action: str | None = None,
        where: ActivityFilter | None = None,
    ) -> list[ActivityEntry]:
        """Newest first. ``before``: ``cursor(last entry)`` of the previous
        page (an ISO time alone is taken too: the entries before that time).
        ``action`` is ``where.action``, kept for its callers."""
        return [self.entry(r) for r in self._rows(before, limit, self._where(where, action))]

    def entry(self, row: dict[str, Any]) -> ActivityEntry:
        """The entry of a row read with ``ENTRY_COLUMNS``."""
        verified, bound = row.pop("purge_verified", None), row.pop("purge_bound", None)
        row["task_id"] = row.get("task_id") or None
        entry = ActivityEntry.model_validate(row)
        if entry.disk_purge is None:
            return entry
        disk = disk_state(self.store, entry.disk_purged_at if entry.disk_purge == "done" else None, verified, bound)
        return entry.model_copy(update={"disk": disk})

    def list_with_links(
        self,
        *,
        before: str | None = None,
        limit: int = 50,
        action: str | None = None,
        where: ActivityFilter | None = None,
    ) -> tuple[list[ActivityEntry], dict[str, str]]:
        """``list``, with the decision each entry's link opens, by entry id,
        read with it: a supersede entry ("X: revision 2") opens the revision
        it recorded, not the one it replaced."""
        rows = self._rows(
            before,
            limit,
            self._where(where, action),
            # a supersede entry's old revision names the new one
            "OPTIONAL MATCH (o:Decision {id: CASE WHEN a.action = 'supersede' THEN a.target_id END}) ",
            ", o.superseded_by AS opens",
        )
        entries = [self.entry({k: v for k, v in r.items() if k != "opens"}) for r in rows]
        links = {r["id"]: r["opens"] or r["target_id"] for r in rows if r["target_kind"] == "decision"}
        return entries, links

    def _where(self, where: ActivityFilter | None, action: str | None) -> ActivityFilter:
        where = _activity.checked(where)
        if action is not None:
            where = where.model_copy(update={"action": c.text(action, "action")})
        _activity.complete_older(self.store, self.project_id)  # once: entries older than task_id, at_us
        return where

    def _rows(
        self,
        before: str | None,
        limit: int,
        where: ActivityFilter,
        join: str = "",
        more: str = "",
        window: tuple[int, int] | None = None,
    ) -> list[dict[str, Any]]:
        before = c.optional_text(before, "before")
        limit = c.clamp(limit, 50, 200)
        conditions, params = _activity.conditions(self.project_id, where, before, window)
        return self.store.read(
            self.project_id,
            f"MATCH (a:Activity) WHERE {conditions} WITH a ORDER BY a.at DESC, a.id LIMIT $n {join}"
            f"RETURN {ENTRY_COLUMNS}{more}",
            {**params, "n": limit},
        )

    def every(self, *, action: str | None = None, where: ActivityFilter | None = None) -> Iterator[ActivityEntry]:
        """Every entry (matching), newest first, a statement at a time, each
        over a window of time (``at_us``, a range of its index) that adapts
        to how dense the log is there: halved after a full page, doubled
        after one that emptied its window. Each statement sorts a few
        hundred entries at most (FalkorDB's indexes give no order), so
        reading the whole log stays linear in its length; memory: a page."""
        where = self._where(where, action)
        conditions, params = _activity.conditions(self.project_id, where, None)
        bounds = self.store.read(
            self.project_id,
            f"MATCH (a:Activity) WHERE {conditions} RETURN min(a.at_us) AS oldest, max(a.at_us) AS newest",
            params,
        )
        if not bounds or bounds[0]["oldest"] is None:
            return
        oldest, top, span = bounds[0]["oldest"], bounds[0]["newest"] + 1, self.FIRST_WINDOW_US
        cursor = None
        while top > oldest:
            low = max(oldest, top - span)
            page = [self.entry(r) for r in self._rows(cursor, self.EVERY_PAGE, where, window=(low, top))]
            yield from page
            if len(page) == self.EVERY_PAGE:  # more in this window: on from the page's last, narrower
                cursor, top, span = self.cursor(page[-1]), c.micros(page[-1].at) + 1, max(span // 2, 1)
            else:  # the window is read: the next one, wider
                cursor, top, span = None, low, span * 2

    def progress(self, *, today: datetime, week: datetime) -> list[PersonProgress]:
        """Per person (and agent): decisions reaffirmed, superseded and
        rejected since ``today`` and since ``week`` (the caller's start of
        the day and of the week, aware, in the zone it shows), most first."""
        return _activity.progress(self.store, self.project_id, today=today, week=week)

    @staticmethod
    def cursor(entry: ActivityEntry) -> str:
        """Where the page after ``entry`` starts: its time and id, so entries
        written in the same instant are neither skipped nor repeated."""
        return f"{c.iso(entry.at)}|{entry.id}"


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError("include_decisions must be a boolean")
    return value


def purge_disk_soon(store: GraphStore, *, now: bool = False) -> None:
    """Start this process's background disk purge (``core._purge``): after a
    quiet spell following a redaction or deletion, or ``now`` (on opening a
    store, to finish a purge an earlier process left pending). Every
    redaction and deletion calls it; a process that exits finishes the
    purges it started first (at most ``Purger.EXIT_WAIT_S``), and a server
    also checks on a timer (``Purger.watch``) for what others left pending."""
    Purger.kick(store, now=now)


def disk_purge_states(store: GraphStore, project_id: str, event_ids: list[str]) -> dict[str, DiskPurge]:
    """Redacted event id -> where its text stands on disk (``disk_state``)."""
    states = event_purge_states(store, project_id, event_ids)
    return {k: disk_state(store, v["at"], v["verified"], v["bound"]) for k, v in states.items()}


def disk_pending(store: GraphStore) -> DiskPurge:
    """What a redaction or deletion made now shows until a purge round
    covers it (a confirmation page says what is coming)."""
    return disk_state(store, None, None, None)


def disk_state(store: GraphStore, at: datetime | str | None, verified: str | None, bound: str | None) -> DiskPurge:
    """The one state of a redaction or deletion on disk. ``at``: when a
    purge round covered it (None: pending); ``verified``, ``bound``: what
    the round recorded (``core._purge``). A round recorded before rounds
    said what they verified is read by the store's backend, whose purge has
    always done the same: FalkorDB rewrote its files, Neo4j could not."""
    rewrites = store.backend != "neo4j"
    if at is None:
        return DiskPurge(state=DiskState.rewrite_pending if rewrites else DiskState.key_pending)
    when = datetime.fromisoformat(at) if isinstance(at, str) else at
    if verified == "files_rewritten" or (verified is None and rewrites):
        return DiskPurge(state=DiskState.rewritten, at=when)
    return DiskPurge(state=DiskState.key_destroyed, at=when, bound=bound)
