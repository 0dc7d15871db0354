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
* ``flagged_at``: when it entered the review queue, and ``flag_depth``: how
  many dependency steps below its root cause (the queue shows roots first).

Current supports are edges: ``CITES_DOC {seq}`` to the Document,
``CITES_EVENT`` to the Event, ``DEPENDS_ON`` to the Decision.
"""

from __future__ import annotations

import uuid

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
        NodeIndex("Decision", ("queued",)),
        NodeIndex("Choice", ("id",), unique=True),
        NodeIndex("Choice", ("conflict",)),
        NodeIndex("SupportRecord", ("id",), unique=True),
        NodeIndex("SupportRecord", ("decision_id",)),
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


def flag(tx: Tx, ids: list[str], reason: ReviewReason, cause: str, at: str, *, spread: bool = True) -> None:
    """Flag active decisions ``needs_review`` for ``reason``; with ``spread``,
    queue the active decisions that depend on them."""
    tx.write(
        "UNWIND $ids AS id MATCH (d:Decision {id: id}) WHERE d.status = 'active' "
        "SET d.review_state = 'needs_review', d.review_reason = $reason, d.review_open = true, "
        "d.flagged_at = coalesce(d.flagged_at, $at), d.root_cause = $cause, d.flag_depth = 0",
        {"ids": ids, "reason": reason.value, "cause": cause, "at": at},
    )
    if spread:
        enqueue_dependants(tx, [{"id": i, "cause": cause, "depth": 0} for i in ids], at)


def enqueue_dependants(tx: Tx, sources: list[dict[str, str | None]], at: str) -> None:
    """Queue the active decisions that depend on ``sources`` (maps of ``id``,
    the ``cause`` to carry down and the ``depth`` of the source below its root
    cause) for review; the clear ones read ``unknown`` until the review
    reaches them."""
    tx.write(
        "UNWIND $rows AS r MATCH (y:Decision {id: r.id}) WITH r, y MATCH (y)<-[:DEPENDS_ON]-(x:Decision) "
        "WHERE x.status = 'active' "
        "SET x.queued = true, x.queued_at = coalesce(x.queued_at, $at), x.review_open = true, "
        "x.flagged_at = coalesce(x.flagged_at, $at), x.root_cause = coalesce(x.root_cause, r.cause), "
        "x.flag_depth = coalesce(x.flag_depth, r.depth + 1), "
        "x.review_state = CASE WHEN x.review_state = 'clear' THEN 'unknown' ELSE x.review_state END",
        {"rows": sources, "at": at},
    )


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
