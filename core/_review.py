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

import uuid
from typing import Any

from . import _common as c
from . import limits
from ._counters import Positions, Tally
from .models.decision import DecisionStatus, ReviewReason, ReviewState
from .stores.base import Tx

#: Reasons a decision carries for itself, which review propagation never replaces.
OWN_REASONS = (
    ReviewReason.source_changed.value,
    ReviewReason.source_removed.value,
    ReviewReason.source_changed_during_recording.value,
)


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
        "x.review_state AS state, x.queued AS queued, x.task_id AS task_id, x.root_cause AS root_cause "
        "ORDER BY x.id, y.id",
        {"ids": sorted(by_id)},
    )
    found: dict[str, dict[str, Any]] = {}
    for row in rows:
        if row["id"] not in found:
            src = by_id[row["source"]]
            found[row["id"]] = {
                "id": row["id"],
                "cause": src.get("cause"),
                "depth": (src.get("depth") or 0) + 1,
                "open": bool(row["open"]),
                "state": row["state"],
                "queued": row["queued"],
                "task_id": row["task_id"],
                "root_cause": row["root_cause"],
                "status": "active",
            }
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
    caller read of ``ids`` (``id``, ``task_id``, ``status``, ``open``,
    ``state``, ``queued``, and ``root_cause`` for those in the queue), which
    saves reading them again. It reads first,
    so call it before the unit's first write."""
    queued = dependants(tx, [{"id": i, "cause": cause, "depth": 0} for i in ids]) if spread else []
    flagged = set(ids)
    queued = [r for r in queued if r["id"] not in flagged]
    tally = Tally(tx, project_id, [*ids, *(r["id"] for r in queued)], known=[*(known or []), *queued])
    tally.flagged(ids, cause)
    positions = tally.positions
    first = positions.take(len(ids))[0] if ids else 0
    tx.write(  # positions in the order of ids; ids as a plain list, which is quicker to send than maps
        "UNWIND range(0, size($ids) - 1) AS i WITH i, $ids[i] AS id MATCH (d:Decision {id: id}) "
        "WHERE d.status = 'active' "
        "SET d.review_state = 'needs_review', d.review_reason = $reason, d.review_open = true, "
        "d.queue_pos = coalesce(d.queue_pos, $first + i), d.flagged_at = coalesce(d.flagged_at, $at), "
        "d.root_cause = $cause, d.flag_depth = 0",
        {"ids": ids, "first": first, "reason": reason.value, "cause": cause, "at": at},
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
            {
                "rows": [
                    {"id": r["id"], "cause": r["cause"], "depth": r["depth"], "pos": pos}
                    for r, pos in zip(rows, positions.take(len(rows)))
                ],
                "at": at,
            },
        )
    tally.settle(tx)


#: The properties whose removal takes a decision out of the review queue.
LEAVE_QUEUE = ("review_open", "queue_pos", "flagged_at", "root_cause", "flag_depth")


def unset(var: str, names: tuple[str, ...] | list[str]) -> str:
    """Cypher that removes properties of ``var``, one per clause, ending the
    statement's other variables: FalkorDB 4 removes the wrong property when
    one clause (or several without a ``WITH`` between) removes more than
    one (``SET n.a = null, n.c = null`` on ``{a, b, c}`` leaves ``{c}``;
    pinned in tests/core/test_seed_edges.py)."""
    return " ".join(f"WITH {var} SET {var}.{name} = null" for name in names)


def review_step(batch: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    """What one review step does to a batch of queued decisions: which to
    flag ``dependency_review`` (and spread from), which are clear again
    (one step of ``DecisionTraces.continue_decision_review``)."""
    flag_rows: list[dict[str, Any]] = []
    spread: list[dict[str, Any]] = []
    cleared: list[str] = []
    for row in batch:
        if row["status"] != DecisionStatus.active.value:
            continue
        deps = [d for d in row["deps"] if d[0] is not None]
        bad = [d for d in deps if d[0] != DecisionStatus.active.value or d[1] != ReviewState.clear.value]
        if row["reason"] in OWN_REASONS:
            continue  # flagged for itself; its dependants were queued then
        if bad:
            cause = row["cause"] or next((d[2] for d in bad if d[2]), None)
            if row["state"] != ReviewState.needs_review.value:
                flag_rows.append({"id": row["id"], "cause": cause})
                spread.append({"id": row["id"], "cause": cause, "depth": row["depth"] or 0})
        elif row["state"] != ReviewState.needs_review.value:
            cleared.append(row["id"])
    return flag_rows, spread, cleared


def write_review_step(tx: Tx, ids: list[str], flag_rows: list[dict[str, Any]], cleared: list[str], at: str) -> None:
    tx.write("UNWIND $ids AS id MATCH (x:Decision {id: id}) " + unset("x", ("queued", "queued_at")), {"ids": ids})
    if flag_rows:  # queued decisions are in the queue already: no new count
        tx.write(
            "UNWIND $rows AS r MATCH (x:Decision {id: r.id}) SET x.review_state = 'needs_review', "
            "x.review_reason = 'dependency_review', x.review_open = true, "
            "x.flagged_at = coalesce(x.flagged_at, $at), x.root_cause = coalesce(x.root_cause, r.cause)",
            {"rows": flag_rows, "at": at},
        )
    if cleared:
        tx.write(
            "UNWIND $ids AS id MATCH (x:Decision {id: id}) SET x.review_state = 'clear' "
            + unset("x", ("review_reason", *LEAVE_QUEUE)),
            {"ids": cleared},
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
    *,
    actor_kind: str,
    purge_slots: str | None = None,
    notify: list[str] | None = None,
    task_id: str | None = None,
) -> None:
    """An activity entry in the same commit as the change it records.
    ``actor_kind``: ``person`` or ``agent`` (``models.ActorKind``); an
    imported change is always an agent's. ``at``
    is when it happened; an imported change (``c.happened_at``) also keeps
    when it was imported. ``purge_slots`` (a redaction or deletion): the
    entry also records that a disk purge is pending, and which event keys it
    destroys (``core._purge``). ``notify``: the people (user names) this
    entry is news for (mentioned, assigned, whose claim was taken over, who
    wrote in the thread); the inbox lists the entries naming a person.
    ``task_id``: the task the entry is about, so the log filters by task
    without reading decisions; a decision's is read in the same statement
    when not given (the decision exists at the time of its entry)."""
    imported = c.imported_at()
    if imported is not None:
        actor_kind = "agent"  # an import writes it, whoever did it first
    # an import replays what happened long ago: nobody is told of it again
    people = _notified(notify) if imported is None else []
    entry_id = str(uuid.uuid4())
    tx.write(
        "OPTIONAL MATCH (td:Decision {id: $task_of}) "
        "CREATE (:Activity {id: $id, project_id: $p, at: $at, actor: $actor, actor_kind: $actor_kind, action: $action, "
        "target_kind: $kind, target_id: $target, summary: $summary, reason: $reason, imported_at: $imported, "
        "purge: $purge, purge_slots: $slots, notify: $notify, task_id: coalesce($task, td.task_id, ''), at_us: $at_us})",
        {
            "id": entry_id,
            "p": project_id,
            "at": at,
            "actor": actor,
            "actor_kind": actor_kind,
            "action": action,
            "kind": target_kind,
            "target": target_id,
            "summary": summary[:500],
            "reason": reason,
            "imported": c.iso(imported) if imported else None,
            "purge": "pending" if purge_slots is not None else None,
            "slots": purge_slots,
            "notify": people or None,
            "task": task_id,
            "at_us": c.micros(at),
            "task_of": target_id if task_id is None and target_kind == "decision" else "",
        },
    )
    if people:
        # one small indexed node per person: a list property cannot be
        # indexed for membership on Neo4j, and the inbox reads by person
        tx.write(
            "UNWIND $people AS who CREATE (:Notice {project_id: $p, person: who, at: $at, entry_id: $id, action: $action})",
            {"people": people, "p": project_id, "at": at, "id": entry_id, "action": action},
        )


def _notified(notify: list[str] | None) -> list[str]:
    """The people an entry names, each once and in order; a name that no
    user could hold (empty, too long, NUL) is refused before anything is
    written, and so are more than ``NOTIFY_MAX`` people."""
    if not notify:
        return []
    if isinstance(notify, str) or len(set(notify)) > limits.NOTIFY_MAX:
        raise ValueError(f"notify: a list of at most {limits.NOTIFY_MAX} user names")
    for who in notify:
        c.text(who, "notify", allow_empty=False)
        if len(who) > limits.PERSON_MAX:
            raise ValueError(f"notify: a user name is at most {limits.PERSON_MAX} characters")
    return sorted(set(notify))
