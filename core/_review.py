"""How review flags are raised and spread, shared by the knowledge layer, the
decision traces and retention (seed 000, "Review after a source change").

A decision node carries, besides its recorded fields:

* ``review_open``: true while it is active and its review state is not clear
  (absent otherwise), so the review queue is an index lookup;
* ``queued`` / ``queued_at``: it waits for ``continue_decision_review`` to
  establish its state, because a decision it depends on was flagged; until
  then it reads ``unknown`` unless it was already flagged itself;
* ``root_cause``: what flagged it first (a document change, a redaction, a
  deletion), carried down to the decisions flagged through dependency, so a
  reviewer can settle the root first;
* ``flagged_at``: when it entered the review queue, ``flag_depth``: how many
  dependency steps below its root cause, and ``queue_pos``: its place in the
  queue (see :class:`Positions`).

Current supports are edges: ``CITES_DOC {seq}`` to the Document,
``CITES_EVENT`` to the Event, ``DEPENDS_ON`` to the Decision.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from .models.decision import ReviewReason
from .stores.base import FullTextIndex, NodeIndex, Schema, Tx

DECISION_SCHEMA = Schema(
    (
        NodeIndex("Decision", ("id",), unique=True),
        NodeIndex("Decision", ("active_key",), unique=True),
        NodeIndex("Decision", ("project_id",)),
        NodeIndex("Decision", ("task_id",)),
        NodeIndex("Decision", ("choice_key",)),
        NodeIndex("Decision", ("review_open",)),
        NodeIndex("Decision", ("queue_pos",)),
        NodeIndex("Decision", ("queued",)),
        NodeIndex("Choice", ("id",), unique=True),
        NodeIndex("Choice", ("conflict",)),
        NodeIndex("SupportRecord", ("id",), unique=True),
        NodeIndex("SupportRecord", ("decision_id",)),
        NodeIndex("ReviewQueue", ("id",), unique=True),
        NodeIndex("Activity", ("id",), unique=True),
        NodeIndex("Activity", ("project_id",)),
    ),
    (FullTextIndex("Decision", ("conclusion", "rationale")),),
)

#: Reasons a decision carries for itself, which review propagation never replaces.
OWN_REASONS = (
    ReviewReason.source_changed.value,
    ReviewReason.source_removed.value,
    ReviewReason.source_changed_during_recording.value,
)


class Positions:
    """Queue positions for the decisions that enter the review queue in one
    unit: the unit's time in milliseconds, shifted, plus a counter, so the
    queue reads oldest first (and, within a unit, roots before the decisions
    queued beneath them). A page of the queue is read from a narrow range of
    the ``queue_pos`` index instead of sorting every flagged decision."""

    def __init__(self) -> None:
        self.base = int(time.time() * 1000) << 20
        self.used = 0

    def take(self, n: int) -> list[int]:
        first = self.base + self.used
        self.used += n
        return list(range(first, first + n))


def dependants(tx: Tx, sources: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The active decisions that depend on ``sources`` (maps of ``id``,
    ``cause``, ``depth``), each with the cause and depth it inherits. A read:
    call it before the unit's first write."""
    if not sources:
        return []
    by_id = {s["id"]: s for s in sources}
    rows = tx.read(
        "UNWIND $ids AS id MATCH (y:Decision {id: id}) WITH y MATCH (y)<-[:DEPENDS_ON]-(x:Decision) "
        "WHERE x.status = 'active' RETURN x.id AS id, y.id AS source, x.review_open AS open, "
        "x.review_state AS state, x.queued AS queued ORDER BY x.id, y.id",
        {"ids": sorted(by_id)},
    )
    found: dict[str, dict[str, Any]] = {}
    for row in rows:
        if row["id"] not in found:
            src = by_id[row["source"]]
            found[row["id"]] = {"id": row["id"], "cause": src.get("cause"), "depth": (src.get("depth") or 0) + 1,
                                "open": bool(row["open"]), "state": row["state"], "queued": row["queued"]}
    return list(found.values())


def flag(
    tx: Tx,
    project_id: str,
    ids: list[str],
    reason: ReviewReason,
    cause: str,
    at: str,
    *,
    spread: bool = True,
    known: list[dict[str, Any]] | None = None,
) -> None:
    """Flag active decisions ``needs_review`` for ``reason``; with ``spread``,
    queue the active decisions that depend on them. ``known``: rows the
    caller read of ``ids`` (``id``, ``open``, ``state``, ``queued``), which
    saves reading them again. It reads first, so call it before the unit's
    first write."""
    queued = dependants(tx, [{"id": i, "cause": cause, "depth": 0} for i in ids]) if spread else []
    flagged = set(ids)
    queued = [r for r in queued if r["id"] not in flagged]
    tally = Tally(tx, project_id, [*ids, *(r["id"] for r in queued)], known=[*(known or []), *queued])
    positions = Positions()
    tx.write(
        "UNWIND $rows AS r MATCH (d:Decision {id: r.id}) WHERE d.status = 'active' "
        "SET d.review_state = 'needs_review', d.review_reason = $reason, d.review_open = true, "
        "d.queue_pos = coalesce(d.queue_pos, r.pos), d.flagged_at = coalesce(d.flagged_at, $at), "
        "d.root_cause = $cause, d.flag_depth = 0",
        {"rows": [{"id": i, "pos": pos} for i, pos in zip(ids, positions.take(len(ids)))],
         "reason": reason.value, "cause": cause, "at": at},
    )
    enqueue(tx, project_id, queued, at, positions, tally=tally)


def enqueue(
    tx: Tx, project_id: str, rows: list[dict[str, Any]], at: str, positions: Positions, *, tally: Tally
) -> None:
    """Queue decisions for review (rows from :func:`dependants`); the clear
    ones read ``unknown`` until the review reaches them. ``tally``: the
    unit's, holding these rows' ids; settled here, as the unit's last
    change to review state."""
    if rows:
        tx.write(
            "UNWIND $rows AS r MATCH (x:Decision {id: r.id}) WHERE x.status = 'active' "
            "SET x.queued = true, x.queued_at = coalesce(x.queued_at, $at), x.review_open = true, "
            "x.queue_pos = coalesce(x.queue_pos, r.pos), "
            "x.flagged_at = coalesce(x.flagged_at, $at), x.root_cause = coalesce(x.root_cause, r.cause), "
            "x.flag_depth = coalesce(x.flag_depth, r.depth), "
            "x.review_state = CASE WHEN x.review_state = 'clear' THEN 'unknown' ELSE x.review_state END",
            {"rows": [{"id": r["id"], "cause": r["cause"], "depth": r["depth"], "pos": pos}
                      for r, pos in zip(rows, positions.take(len(rows)))], "at": at},
        )
    tally.settle(tx)


def queue_node_id(project_id: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"https://reviewer.invalid/queue/{project_id}"))


#: What one decision adds to each kept counter of the review queue.
COUNTERS = ("open", "needs_review", "unknown", "queued")
_CONTRIBUTION = (
    "sum(CASE WHEN d.review_open = true THEN 1 ELSE 0 END) AS open, "
    "sum(CASE WHEN d.review_open = true AND d.review_state = 'needs_review' THEN 1 ELSE 0 END) AS needs_review, "
    "sum(CASE WHEN d.review_open = true AND d.review_state = 'unknown' THEN 1 ELSE 0 END) AS unknown, "
    "sum(CASE WHEN d.review_open = true AND d.queued = true THEN 1 ELSE 0 END) AS queued"
)


class Tally:
    """The review queue's kept counters (in the queue, needing review,
    reading unknown, queued), for a store whose units run one at a time
    (``GraphStore.serializable_units``): the overview and the queue then
    need not aggregate ten thousand flagged decisions.

    A unit that changes the review state of some decisions makes a tally of
    their ids before its first write (it reads what they count for now;
    ``new=True`` for decisions the unit creates), and settles it after its
    last change to them: one statement that counts them again, seeing the
    unit's writes, and moves the counters by the difference. Deleted
    decisions count for nothing afterwards."""

    def __init__(self, tx: Tx, project_id: str, ids: list[str], *, new: bool = False,
                 known: list[dict[str, Any]] | None = None) -> None:
        self.project_id = project_id
        self.ids = sorted(set(ids))
        self.before: dict[str, int] | None = None
        if not tx.serializable or not self.ids:
            return
        self.before = dict.fromkeys(COUNTERS, 0)
        if new:
            return
        wanted = set(self.ids)
        rows = {r["id"]: r for r in known or [] if r["id"] in wanted}
        for r in rows.values():  # what the caller read already
            if r.get("open"):
                self.before["open"] += 1
                self.before["needs_review"] += r.get("state") == "needs_review"
                self.before["unknown"] += r.get("state") == "unknown"
                self.before["queued"] += bool(r.get("queued"))
        rest = [i for i in self.ids if i not in rows]
        if rest:
            row = tx.read(f"UNWIND $ids AS id MATCH (d:Decision {{id: id}}) RETURN {_CONTRIBUTION}", {"ids": rest})
            for k in COUNTERS:
                self.before[k] += int(row[0][k] or 0) if row else 0

    def settle(self, tx: Tx) -> None:
        if self.before is None:
            return
        tx.write(
            f"UNWIND $ids AS id OPTIONAL MATCH (d:Decision {{id: id}}) WITH {_CONTRIBUTION} "
            "MERGE (q:ReviewQueue {id: $qid}) ON CREATE SET q.project_id = $p "
            + "SET " + ", ".join(f"q.{k} = toInteger(coalesce(q.{k}, 0) + {k} - $b_{k})" for k in COUNTERS),
            {"ids": self.ids, "qid": queue_node_id(self.project_id), "p": self.project_id,
             **{f"b_{k}": v for k, v in self.before.items()}},
        )
        self.before = None


def kept_counts(store: Any, project_id: str) -> dict[str, int] | None:
    """The kept counters, or None where they are not kept (or not yet: a
    queue from before they were kept is counted once, in a unit, first)."""
    if not store.serializable_units:
        return None
    fields = ", ".join(f"q.{k} AS {k}" for k in COUNTERS)
    qid = queue_node_id(project_id)
    rows = store.read(project_id, f"MATCH (q:ReviewQueue {{id: $id}}) RETURN {fields}", {"id": qid})
    if rows and all(rows[0][k] is not None for k in COUNTERS):
        return {k: int(rows[0][k]) for k in COUNTERS}
    if not rows and not store.read(project_id, "MATCH (d:Decision) WHERE d.review_open = true RETURN 1 AS x LIMIT 1"):
        return dict.fromkeys(COUNTERS, 0)  # nothing was ever queued (and reading writes nothing)
    return recount(store, project_id)


def recount(store: Any, project_id: str) -> dict[str, int]:
    """Count the queue from its decisions and keep the counts (a repair, and
    the first count of a queue from before they were kept)."""

    def work(tx: Tx) -> dict[str, int]:
        row = tx.read(f"MATCH (d:Decision) WHERE d.review_open = true RETURN {_CONTRIBUTION}", {})
        counts = {k: int(row[0][k] or 0) if row else 0 for k in COUNTERS}
        tx.write(
            "MERGE (q:ReviewQueue {id: $qid}) ON CREATE SET q.project_id = $p "
            + "SET " + ", ".join(f"q.{k} = ${k}" for k in COUNTERS),
            {"qid": queue_node_id(project_id), "p": project_id, **counts},
        )
        return counts

    return store.transact(project_id, work)


def open_count(store: Any, project_id: str) -> int | None:
    """The kept count of the review queue, or None where it is not kept."""
    counts = kept_counts(store, project_id)
    return None if counts is None else counts["open"]


#: The Cypher that takes a decision out of the review queue.
LEAVE_QUEUE = "review_open = null, queue_pos = null, flagged_at = null, root_cause = null, flag_depth = null"


def log_activity(
    tx: Tx,
    project_id: str,
    actor: str,
    action: str,
    target_kind: str,
    target_id: str,
    summary: str,
    reason: str | None,
    at: str,
) -> None:
    """An activity entry in the same commit as the change it records."""
    tx.write(
        "CREATE (:Activity {id: $id, project_id: $p, at: $at, actor: $actor, action: $action, "
        "target_kind: $kind, target_id: $target, summary: $summary, reason: $reason})",
        {"id": str(uuid.uuid4()), "p": project_id, "at": at, "actor": actor, "action": action,
         "kind": target_kind, "target": target_id, "summary": summary[:500], "reason": reason},
    )
