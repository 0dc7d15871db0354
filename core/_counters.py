"""The kept counters and numbers of review, so that no page aggregates ten
thousand decisions: the review queue's counters on the project's
``ReviewQueue`` node (with the count of choices in conflict, ``conflicts``),
how many decisions of the queue each root cause holds (a ``QueueCause``
node per cause), each task's counters on its ``TaskDecisions`` node, the
creation numbers (``active_seq``) that order a task's newest decisions, and
the last queue position given (``last_pos``).

They stay exact because every unit that reads one to rewrite it, or changes
what one counts, first takes the lock of the project's ``ReviewQueue`` node
(:func:`lock`): such units run one after the other (on FalkorDB a Redis
lock key of the node, on Neo4j the node's write lock; docs/stores.md).
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from .stores.base import Tx


def queue_node_id(project_id: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"https://reviewer.invalid/queue/{project_id}"))


def lock(tx: Tx, project_id: str) -> bool:
    """Take the lock of the project's kept counters, once per unit (see the
    module docstring): the first step of a unit that will change them, so
    that units take their locks in one order. True when the unit read
    something before it that may since have changed (read it again)."""
    return tx.lock_kept("ReviewQueue", queue_node_id(project_id), project_id)


class Positions:
    """Queue positions for the decisions that enter the review queue in one
    unit: the unit's time in milliseconds, shifted, plus a counter, so the
    queue reads oldest first (and, within a unit, roots before the decisions
    queued beneath them); never below the last position given in the project
    (``floor``, kept on the ``ReviewQueue`` node), so no two units give the
    same position, whatever their clocks. A page of the queue is read from
    a narrow range of the ``queue_pos`` index instead of sorting every
    flagged decision."""

    def __init__(self, floor: int | None = None) -> None:
        self.base = max(int(time.time() * 1000) << 20, (floor or 0) + 1)
        self.used = 0

    def take(self, n: int) -> list[int]:
        first = self.base + self.used
        self.used += n
        return list(range(first, first + n))

    @property
    def last(self) -> int | None:
        return self.base + self.used - 1 if self.used else None

    @staticmethod
    def horizon() -> int:
        """The position a unit would take a minute from now: past every
        position given so far, as far as this clock knows (the end of the
        queue's range reads; a clock set back can give ones beyond it)."""
        return (int(time.time() * 1000) + 60_000) << 20


def positions(tx: Tx, project_id: str) -> Positions:
    """The unit's queue positions (one source per unit), from the last one
    given in the project. Locks the counters and reads: call it before the
    unit's first write (a :class:`Tally` does)."""
    found = tx.state.get("positions")
    if found is None:
        lock(tx, project_id)
        if tx.kept_found is not None and tx.kept_locked == queue_node_id(project_id):  # the lock read it (Neo4j)
            last = tx.kept_found.get("last_pos")
        else:
            rows = tx.read(
                "MATCH (q:ReviewQueue {id: $id}) RETURN q.last_pos AS last", {"id": queue_node_id(project_id)}
            )
            last = rows[0]["last"] if rows else None
        found = tx.state["positions"] = Positions(last)
    return found


#: What one decision adds to each kept counter of the review queue.
COUNTERS = ("open", "needs_review", "unknown", "queued")
#: ... and to each kept counter of its task (``TaskDecisions``).
TASK_COUNTERS = ("active", "open")
_ROW_CONTRIBUTION = (
    "CASE WHEN d.status = 'active' THEN 1 ELSE 0 END AS active, "
    "CASE WHEN d.review_open = true THEN 1 ELSE 0 END AS open, "
    "CASE WHEN d.review_open = true AND d.review_state = 'needs_review' THEN 1 ELSE 0 END AS needs_review, "
    "CASE WHEN d.review_open = true AND d.review_state = 'unknown' THEN 1 ELSE 0 END AS unknown, "
    "CASE WHEN d.review_open = true AND d.queued = true THEN 1 ELSE 0 END AS queued"
)
#: The root cause a decision is counted under while it is in the queue ("" for none).
_ROW_CAUSE = "CASE WHEN d.review_open = true THEN coalesce(d.root_cause, '') END"


#: The order of a row's counts in :class:`Tally`.
_ALL = ("active", "open", "needs_review", "unknown", "queued")
_FLAGGED = (1, 1, 1, 0)  # active, in the queue, needing review, not unknown (queued as before)


def _cause_of(row: dict[str, Any]) -> str | None:
    """The root cause a decision row (``open``, ``root_cause``) is counted
    under, None when it is not in the queue."""
    return (row.get("root_cause") or "") if row.get("open") else None


def known_row(decision: dict[str, Any]) -> dict[str, Any]:
    """A decision row read under the counters' lock (its fields and
    bookkeeping, as :func:`core._decision_rows.read_decision` reads them) as
    a :class:`Tally`'s ``known`` row: a unit that read the decision it
    changes need not read it again to count it."""
    return {
        "id": decision["id"],
        "task_id": decision["task_id"],
        "status": decision["status"],
        "open": bool(decision["review_open"]),
        "state": decision["review_state"],
        "queued": decision["queued"],
        "root_cause": decision["root_cause"],
    }


def _counts_of(row: dict[str, Any]) -> tuple[int, ...]:
    """What one decision row (``status``, ``open``, ``state``, ``queued``)
    counts for, in the order of :data:`_ALL`."""
    is_open = bool(row.get("open"))
    state = row.get("state")
    return (
        int(row.get("status") == "active"),
        int(is_open),
        int(is_open and state == "needs_review"),
        int(is_open and state == "unknown"),
        int(is_open and bool(row.get("queued"))),
    )


class Tally:
    """Kept counters, so that no page aggregates ten thousand decisions
    (their units run one at a time: see :func:`lock`): the review queue's (in the queue, needing review,
    reading unknown, queued) on the project's ``ReviewQueue`` node, how
    many decisions each root cause holds in the queue (``QueueCause``
    nodes), and each task's (active decisions, decisions in the queue) on
    its ``TaskDecisions`` node.

    A unit that changes the status or review state of some decisions makes a
    tally of their ids before its first write (it reads what they count for
    now, their root causes and their tasks; ``new``: decisions the unit
    creates, with their task ids, counted by :meth:`created`), and settles it
    after its last change to them: statements that count them again, seeing
    the unit's writes, and move the counters by the difference (decisions
    whose outcome is certain, as for :func:`flag` and new decisions, are not
    counted again: see :meth:`flagged`). Deleted decisions count for nothing
    afterwards. A counter that was never counted stays so: the first read
    counts it (:func:`recount`, :func:`task_state`, :func:`cause_counts`),
    and from then on every unit keeps it.

    It takes the counters' lock and the unit's queue positions
    (:attr:`positions`) first; rows the caller read before that lock
    (``known``) are read again, as are known rows in the queue that do not
    say their ``root_cause``."""

    def __init__(
        self,
        tx: Tx,
        project_id: str,
        ids: list[str],
        *,
        new: dict[str, str] | None = None,
        known: list[dict[str, Any]] | None = None,
    ) -> None:
        self.project_id = project_id
        # id -> (task id, raw queued flag, what it counts for now, its root
        # cause in the queue); and the counts and causes of those whose
        # outcome is certain
        self.rows: dict[str, tuple[str, bool, tuple[int, ...], str | None]] = {}
        self.after: dict[str, tuple[tuple[int, ...], str | None]] = {}
        if lock(tx, project_id):
            known = None  # read before the lock: perhaps changed since
        self.positions = tx.state.get("positions") or positions(tx, project_id)
        if new is not None:
            self.rows = {i: (tid, False, (0, 0, 0, 0, 0), None) for i, tid in new.items()}
            return
        wanted = set(ids)
        for r in known or []:  # what the caller read already
            if r["id"] in wanted and r.get("task_id") and r.get("status") and ("root_cause" in r or not r.get("open")):
                self.rows[r["id"]] = (r["task_id"], bool(r.get("queued")), _counts_of(r), _cause_of(r))
        rest = sorted(wanted - set(self.rows))
        if rest:
            for r in tx.read(
                "UNWIND $ids AS id MATCH (d:Decision {id: id}) RETURN d.id AS id, d.task_id AS tid, "
                f"d.queued AS queued_raw, {_ROW_CAUSE} AS cause, {_ROW_CONTRIBUTION}",
                {"ids": rest},
            ):
                self.rows[r["id"]] = (r["tid"], bool(r["queued_raw"]), tuple(int(r[k]) for k in _ALL), r["cause"])

    def flagged(self, ids: list[str], cause: str) -> None:
        """These decisions are about to be flagged by :func:`flag`'s write
        with root cause ``cause``: the active ones will count as active, in
        the queue and needing review (queued as before), so the settle need
        not count them again."""
        for i in ids:
            row = self.rows.get(i)
            if row is not None and row[2][0]:
                self.after[i] = ((*_FLAGGED, int(row[1])), cause)

    def created(self, nodes: list[dict[str, Any]]) -> None:
        """What the new decisions (their node rows, about to be written) will
        count for: certain, so the settle does not read them."""
        for n in nodes:
            if n["id"] in self.rows:
                row = {"status": n["status"], "open": n["review_open"], "state": n["review_state"]}
                self.after[n["id"]] = (_counts_of(row), _cause_of({**row, "root_cause": n["root_cause"]}))

    def settle(self, tx: Tx) -> None:
        last = self.positions.last
        if not self.rows:
            if last is not None:
                tx.write(
                    "MATCH (q:ReviewQueue {id: $qid}) SET q.last_pos = CASE WHEN coalesce(q.last_pos, 0) < $last "
                    "THEN $last ELSE q.last_pos END",
                    {"qid": queue_node_id(self.project_id), "last": last},
                )
            return
        # each counter moves by (after - before): a certain outcome is taken
        # off before here, the others are counted again by the statement
        before = [0] * len(_ALL)
        tasks: dict[str, tuple[list[int], list[str]]] = {}
        causes: dict[str, int] = {}
        zero = (0,) * len(_ALL)
        for i, (tid, _queued, counts, cause) in self.rows.items():
            task = tasks.get(tid)
            if task is None:
                task = tasks[tid] = ([0] * len(_ALL), [])
            after, after_cause = self.after.get(i, (None, None))
            if after is None:
                task[1].append(i)
            elif after_cause is not None:
                causes[after_cause] = causes.get(after_cause, 0) + 1
            if cause is not None:
                causes[cause] = causes.get(cause, 0) - 1
            for n, (b, a) in enumerate(zip(counts, after or zero)):
                task[0][n] += b - a
                before[n] += b - a
        sums = ", ".join(f"sum({k}) AS {k}" for k in _ALL)
        tx.write(
            "UNWIND $groups AS g UNWIND g.ids + [null] AS id OPTIONAL MATCH (d:Decision {id: id}) "
            f"WITH g.tid AS tid, g.b_active AS b_active, g.b_open AS b_open, {_ROW_CONTRIBUTION} "
            f"WITH tid, b_active, b_open, {sums} "
            "OPTIONAL MATCH (k:TaskDecisions {id: tid}) "
            "SET k.active = toInteger(k.active + active - b_active), k.open = toInteger(k.open + open - b_open) "
            f"WITH {', '.join(f'sum({k}) AS {k}' for k in COUNTERS)} "
            "MERGE (q:ReviewQueue {id: $qid}) ON CREATE SET q.project_id = $p "
            + "SET "
            + ", ".join(f"q.{k} = toInteger(q.{k} + {k} - $b_{k})" for k in COUNTERS)
            + ", q.last_pos = CASE WHEN $last IS NULL OR coalesce(q.last_pos, 0) >= $last THEN q.last_pos "
            "ELSE $last END",
            {
                "p": self.project_id,
                "last": last,
                "groups": [
                    {"tid": tid, "ids": sorted(ids), "b_active": b[0], "b_open": b[1]}
                    for tid, (b, ids) in sorted(tasks.items())
                ],
                "qid": queue_node_id(self.project_id),
                **{f"b_{k}": before[_ALL.index(k)] for k in COUNTERS},
            },
        )
        uncertain = sorted(i for _b, ids in tasks.values() for i in ids)
        moves = [{"cause": k, "n": n} for k, n in sorted(causes.items()) if n]
        if uncertain or moves:
            _move_causes(tx, self.project_id, uncertain, moves)
        self.rows, self.after = {}, {}


#: The id of a root cause's ``QueueCause`` node, in Cypher (``$p``: the project).
_CAUSE_ID = "$p + $sep + cause"
_SEP = "\x1f"


def _move_causes(tx: Tx, project_id: str, ids: list[str], moves: list[dict[str, Any]]) -> None:
    """Move the root causes' kept counts (where kept: the queue says
    ``causes_counted``) by ``moves`` (each ``cause`` and ``n``) and by the
    causes ``ids`` hold in the queue now. A count that reaches nothing goes,
    so the causes read are the queue's."""
    counted = (
        "UNWIND $ids AS id MATCH (d:Decision {id: id}) "
        f"WITH {_ROW_CAUSE} AS cause WITH cause, count(*) AS n WHERE cause IS NOT NULL "
        "WITH collect({cause: cause, n: n}) AS found UNWIND found + $moves AS m "
        if ids
        else "UNWIND $moves AS m "
    )
    tx.write(
        counted + "WITH m.cause AS cause, sum(m.n) AS n WHERE n <> 0 "
        "MATCH (q:ReviewQueue {id: $qid}) WHERE q.causes_counted = true "
        f"MERGE (k:QueueCause {{id: {_CAUSE_ID}}}) ON CREATE SET k.project_id = $p, k.cause = cause, k.n = 0 "
        "SET k.n = k.n + n WITH k WHERE k.n <= 0 DELETE k",
        {"ids": ids, "moves": moves, "p": project_id, "qid": queue_node_id(project_id), "sep": _SEP},
    )


def kept_counts(store: Any, project_id: str) -> dict[str, int]:
    """The kept counters (a queue whose counters were never counted is
    counted once, in a unit, first)."""
    fields = ", ".join(f"q.{k} AS {k}" for k in COUNTERS)
    qid = queue_node_id(project_id)
    rows = store.read(project_id, f"MATCH (q:ReviewQueue {{id: $id}}) RETURN {fields}", {"id": qid})
    if rows and all(rows[0][k] is not None for k in COUNTERS):
        return {k: int(rows[0][k]) for k in COUNTERS}
    if not rows and not store.read(
        project_id,
        f"MATCH (d:Decision) WHERE d.review_open = true{_scope(store)} RETURN 1 AS x LIMIT 1",
        {"p": project_id},
    ):
        return dict.fromkeys(COUNTERS, 0)  # nothing was ever queued (and reading writes nothing)
    return recount(store, project_id)


def recount(store: Any, project_id: str) -> dict[str, int]:
    """Count the queue from its decisions and keep the counts (a repair, and
    the first count of a queue)."""

    def work(tx: Tx) -> dict[str, int]:
        lock(tx, project_id)
        sums = ", ".join(f"sum({k}) AS {k}" for k in COUNTERS)
        row = tx.read(
            f"MATCH (d:Decision) WHERE d.review_open = true{_scope(store)} WITH {_ROW_CONTRIBUTION} RETURN {sums}",
            {"p": project_id},
        )
        counts = {k: int(row[0][k] or 0) if row else 0 for k in COUNTERS}
        tx.write(
            "MERGE (q:ReviewQueue {id: $qid}) ON CREATE SET q.project_id = $p "
            + "SET "
            + ", ".join(f"q.{k} = ${k}" for k in COUNTERS),
            {"qid": queue_node_id(project_id), "p": project_id, **counts},
        )
        return counts

    return store.transact(project_id, work)


#: Cypher ending a statement that set choices' conflict flags: ``was`` and
#: ``now`` (1 or 0) per choice move the kept count of choices in conflict
#: (where kept; ``$qid``: the project's queue node). The unit holds the
#: counters' lock.
MOVE_CONFLICTS = (
    "WITH sum(now - was) AS moved MATCH (q:ReviewQueue {id: $qid}) WHERE q.conflicts IS NOT NULL "
    "SET q.conflicts = q.conflicts + moved"
)


def conflict_count(store: Any, project_id: str) -> int:
    """The kept count of choice keys in conflict (counted once, in a unit,
    first, where never counted)."""
    qid = queue_node_id(project_id)
    rows = store.read(project_id, "MATCH (q:ReviewQueue {id: $id}) RETURN q.conflicts AS n", {"id": qid})
    if rows and rows[0]["n"] is not None:
        return int(rows[0]["n"])
    if not rows and not store.read(
        project_id,
        f"MATCH (ch:Choice) WHERE ch.conflict = true{_scope(store, 'ch')} RETURN 1 AS x LIMIT 1",
        {"p": project_id},
    ):
        return 0  # nothing to count (and reading writes nothing)
    return count_conflicts(store, project_id)


def count_conflicts(store: Any, project_id: str) -> int:
    """Count the choice keys in conflict and keep the count (the first
    count, and a repair)."""

    def work(tx: Tx) -> int:
        lock(tx, project_id)
        n = tx.read(
            f"MATCH (ch:Choice) WHERE ch.conflict = true{_scope(store, 'ch')} RETURN count(ch) AS n",
            {"p": project_id},
        )[0]["n"]
        tx.write(
            "MERGE (q:ReviewQueue {id: $qid}) ON CREATE SET q.project_id = $p SET q.conflicts = $n",
            {"qid": queue_node_id(project_id), "p": project_id, "n": int(n)},
        )
        return int(n)

    return store.transact(project_id, work)


def _open_causes_direct(tx: Tx, store: Any, project_id: str) -> dict[str, int]:
    rows = tx.read(
        f"MATCH (d:Decision) WHERE d.review_open = true{_scope(store)} "
        "RETURN coalesce(d.root_cause, '') AS cause, count(d) AS n",
        {"p": project_id},
    )
    return {r["cause"]: int(r["n"]) for r in rows}


def count_causes(store: Any, project_id: str) -> dict[str, int]:
    """Count how many decisions of the queue each root cause holds and keep
    the counts (the first count of a queue, and a repair): from then on
    every :class:`Tally` moves them."""

    def work(tx: Tx) -> dict[str, int]:
        lock(tx, project_id)
        counts = _open_causes_direct(tx, store, project_id)
        tx.write("MATCH (k:QueueCause) WHERE k.project_id = $p DETACH DELETE k", {"p": project_id})
        if counts:
            tx.write(
                f"UNWIND $rows AS r WITH r.cause AS cause, r.n AS n "
                f"CREATE (:QueueCause {{id: {_CAUSE_ID}, project_id: $p, cause: cause, n: n}})",
                {"rows": [{"cause": k, "n": n} for k, n in sorted(counts.items())], "p": project_id, "sep": _SEP},
            )
        tx.write(
            "MERGE (q:ReviewQueue {id: $qid}) ON CREATE SET q.project_id = $p SET q.causes_counted = true",
            {"qid": queue_node_id(project_id), "p": project_id},
        )
        return counts

    return store.transact(project_id, work)


def cause_sizes(store: Any, project_id: str, causes: list[str]) -> dict[str, int]:
    """How many decisions of the queue each of ``causes`` ("" for none)
    holds: kept counts, read by id (counted first where never counted)."""
    if not causes:
        return {}
    rows = store.read(
        project_id,
        "MATCH (q:ReviewQueue {id: $qid}) WHERE q.causes_counted = true "
        f"WITH q UNWIND $causes AS cause OPTIONAL MATCH (k:QueueCause {{id: {_CAUSE_ID}}}) "
        "RETURN cause, k.n AS n",
        {"qid": queue_node_id(project_id), "causes": list(causes), "p": project_id, "sep": _SEP},
    )
    if not rows:  # never counted
        counts = count_causes(store, project_id)
        return {k: counts.get(k, 0) for k in causes}
    return {r["cause"]: int(r["n"] or 0) for r in rows}


#: The review queue's kept counters as ``review_counts`` returns them, in Cypher.
_QUEUE_COUNTS = (
    "q.needs_review AS needs_review, q.unknown AS unknown, q.queued AS queued, q.open AS open, "
    "q.conflicts AS conflicts, q.causes_counted AS causes_counted"
)


def _queue_counts(row: dict[str, Any]) -> dict[str, int] | None:
    """The counts of ``review_counts`` from a row of :data:`_QUEUE_COUNTS`;
    None when one of them was never counted."""
    if any(row[k] is None for k in (*COUNTERS, "conflicts")):
        return None
    return {k: int(row[k]) for k in ("needs_review", "unknown", "queued", "conflicts")}


def queue_counts(store: Any, project_id: str) -> dict[str, int] | None:
    """The counts of ``review_counts`` as kept, in one read; None when one
    of them was never counted (``kept_counts`` and ``conflict_count`` count
    first)."""
    rows = store.read(
        project_id, f"MATCH (q:ReviewQueue {{id: $qid}}) RETURN {_QUEUE_COUNTS}", {"qid": queue_node_id(project_id)}
    )
    return _queue_counts(rows[0]) if rows else None


def counts_and_sizes(
    store: Any, project_id: str, causes: list[str], tid: str | None = None
) -> tuple[dict[str, int], dict[str, int], int | None] | None:
    """The queue's kept counters, how many decisions each of ``causes``
    holds, and (with ``tid``) how many of them the task holds, in one round
    trip (a page of the queue shows them all); None when any of them was
    never counted (ask ``review_counts``, ``cause_sizes`` and
    ``task_state``, which count first)."""
    rows = store.read(
        project_id,
        "MATCH (q:ReviewQueue {id: $qid}) OPTIONAL MATCH (t:TaskDecisions {id: $tid}) "
        f"WITH q, t UNWIND $causes AS cause OPTIONAL MATCH (k:QueueCause {{id: {_CAUSE_ID}}}) "
        f"RETURN {_QUEUE_COUNTS}, t.open AS task_open, cause, k.n AS n",
        # one row at least, for the counters: a null cause matches no group
        {
            "qid": queue_node_id(project_id),
            "tid": tid,
            "causes": list(causes) or [None],
            "p": project_id,
            "sep": _SEP,
        },
    )
    counts = _queue_counts(rows[0]) if rows else None
    if counts is None or (causes and rows[0]["causes_counted"] is not True):
        return None
    if tid is not None and rows[0]["task_open"] is None:
        return None
    sizes = {r["cause"]: int(r["n"] or 0) for r in rows if r["cause"] is not None}
    return counts, sizes, None if tid is None else int(rows[0]["task_open"])


def counts_and_top_causes(
    store: Any, project_id: str, limit: int
) -> tuple[dict[str, int], list[tuple[str, int]]] | None:
    """The queue's kept counters and its ``limit`` largest root causes (as
    ``top_causes``), in one round trip (what an overview shows); None when
    either was never counted."""
    rows = store.read(
        project_id,
        f"MATCH (q:ReviewQueue {{id: $qid}}) OPTIONAL MATCH (k:QueueCause) WHERE k.project_id = $p AND k.n > 0 "
        f"WITH q, k ORDER BY k.n DESC, k.cause LIMIT $n RETURN {_QUEUE_COUNTS}, k.cause AS cause, k.n AS n",
        {"qid": queue_node_id(project_id), "p": project_id, "n": limit},
    )
    counts = _queue_counts(rows[0]) if rows else None
    if counts is None or rows[0]["causes_counted"] is not True:
        return None
    return counts, [(r["cause"], int(r["n"])) for r in rows if r["cause"] is not None]


def top_causes(store: Any, project_id: str, limit: int) -> list[tuple[str, int]]:
    """The root causes of the queue with how many decisions each holds, most
    first: kept counts (counted first where never counted)."""
    rows = store.read(
        project_id,
        "MATCH (k:QueueCause) WHERE k.project_id = $p AND k.n > 0 "
        "RETURN k.cause AS cause, k.n AS n ORDER BY n DESC, cause LIMIT $n",
        {"p": project_id, "n": limit},
    )
    if rows:
        return [(r["cause"], int(r["n"])) for r in rows]
    if store.read(
        project_id,
        "MATCH (q:ReviewQueue {id: $qid}) WHERE q.causes_counted = true RETURN 1 AS x",
        {"qid": queue_node_id(project_id)},
    ) or not store.read(
        project_id,
        f"MATCH (d:Decision) WHERE d.review_open = true{_scope(store)} RETURN 1 AS x LIMIT 1",
        {"p": project_id},
    ):
        return []  # counted and empty, or nothing to count (and reading writes nothing)
    counts = count_causes(store, project_id)
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]


def _scope(store: Any, var: str = "d") -> str:
    return "" if store.graph_per_project else f" AND {var}.project_id = $p"


def open_count(store: Any, project_id: str) -> int:
    """The kept count of the review queue."""
    return kept_counts(store, project_id)["open"]


# -- a task's decisions ------------------------------------------------------
#
# Each task's ``TaskDecisions`` node
# (keyed by the task id, so it outlives a deleted task whose decisions were
# kept) holds the kept counters above and ``seq``, the last of the task's
# creation numbers: an active decision carries its number as ``active_seq``
# (cleared when it is superseded or rejected), so the newest active
# decisions of a task are read from a narrow range of an index instead of
# sorting all of them.


def take_numbers(tx: Tx, project_id: str, tids: list[str]) -> dict[str, int]:
    """The last creation number of each task whose decisions are counted,
    for :func:`number_new`. Locks the counters and reads: call it before the
    unit's first write."""
    if not tids:
        return {}
    lock(tx, project_id)
    return {
        r["id"]: int(r["seq"])
        for r in tx.read(
            "UNWIND $ids AS id MATCH (k:TaskDecisions {id: id}) WHERE k.seq IS NOT NULL RETURN id, k.seq AS seq",
            {"ids": sorted(set(tids))},
        )
    }


def take_numbers_of_task(tx: Tx, project_id: str, tid: str) -> tuple[dict[str, int], int]:
    """:func:`take_numbers` of one task, with the task's generation (0 when
    no live task has that id) in the same read."""
    lock(tx, project_id)
    row = tx.read(
        "OPTIONAL MATCH (t:Task {id: $id}) OPTIONAL MATCH (k:TaskDecisions {id: $id}) "
        "RETURN t.generation AS g, k.seq AS seq",
        {"id": tid},
    )[0]
    return ({tid: int(row["seq"])} if row["seq"] is not None else {}), int(row["g"] or 0)


def number_new(tx: Tx, rows: list[dict[str, Any]], numbers: dict[str, int]) -> None:
    """Number new decisions (node rows with ``task_id``, not yet written) in
    order per task, from the tasks' last numbers (:func:`take_numbers`): sets
    ``active_seq`` on each row and writes the tasks' new last numbers. A task
    whose decisions were never counted has no number, and its first read
    counts and numbers them (:func:`task_state`)."""
    last = dict(numbers)
    for r in rows:
        if r["task_id"] in last:
            last[r["task_id"]] += 1
            r["active_seq"] = last[r["task_id"]]
    moved = [{"id": tid, "seq": seq} for tid, seq in sorted(last.items()) if seq != numbers[tid]]
    if moved:
        tx.write("UNWIND $rows AS r MATCH (k:TaskDecisions {id: r.id}) SET k.seq = r.seq", {"rows": moved})


def start_task(tx: Tx, project_id: str, tid: str) -> None:
    """Keep a new task's decision counters from its start (where kept): a
    read then a write, so call it after the unit's other reads. A task id
    that already has decisions (kept when their task was deleted) is left
    to be counted on its first read."""
    lock(tx, project_id)
    if tx.read("MATCH (k:TaskDecisions {id: $id}) RETURN 1 AS x", {"id": tid}) or tx.read(
        "MATCH (d:Decision {task_id: $id}) RETURN 1 AS x LIMIT 1", {"id": tid}
    ):
        return
    tx.write(
        "CREATE (:TaskDecisions {id: $id, project_id: $p, seq: 0, active: 0, open: 0})", {"id": tid, "p": project_id}
    )


#: The columns of a task's kept counters and the project's kept count of
#: conflicts, for a read that ends ``OPTIONAL MATCH (k:TaskDecisions {id:
#: $id}) OPTIONAL MATCH (q:ReviewQueue {id: $qid})`` (``$qid``:
#: :func:`queue_node_id`): what a task view needs first, carried on another
#: read (see :func:`task_view_state`).
TASK_VIEW_FIELDS = "k.seq AS kept_seq, k.active AS kept_active, k.open AS kept_open, q.conflicts AS kept_conflicts"


def task_view_state(store: Any, project_id: str, tid: str, row: dict[str, Any] | None = None) -> dict[str, int]:
    """A task's kept ``seq``, ``active`` and ``open`` (:func:`task_state`)
    and, where kept, the project's count of choices in conflict as
    ``conflicts`` (left out when never counted: :func:`conflict_count`
    counts it): from ``row``, the columns of :data:`TASK_VIEW_FIELDS` that
    another read returned, or one read of both nodes. A task never counted
    is counted first, as :func:`task_state` does."""
    if row is None:
        rows = store.read(
            project_id,
            "OPTIONAL MATCH (k:TaskDecisions {id: $id}) OPTIONAL MATCH (q:ReviewQueue {id: $qid}) "
            f"RETURN {TASK_VIEW_FIELDS}",
            {"id": tid, "qid": queue_node_id(project_id)},
        )
        row = rows[0] if rows else {}
    kept = {k: row.get(f"kept_{k}") for k in ("seq", *TASK_COUNTERS)}
    if all(v is not None for v in kept.values()):
        state = {k: int(v) for k, v in kept.items()}
    else:
        state = task_state(store, project_id, tid)
    if row.get("kept_conflicts") is not None:
        state["conflicts"] = int(row["kept_conflicts"])
    return state


def task_state(store: Any, project_id: str, tid: str) -> dict[str, int]:
    """A task's kept ``active`` and ``open`` counts and last ``seq``. A task
    never counted is counted once, in a unit, first, and its active
    decisions numbered in creation order."""
    rows = store.read(
        project_id,
        "MATCH (k:TaskDecisions {id: $id}) RETURN k.seq AS seq, k.active AS active, k.open AS open",
        {"id": tid},
    )
    if rows and all(rows[0][k] is not None for k in ("seq", *TASK_COUNTERS)):
        return {k: int(rows[0][k]) for k in ("seq", *TASK_COUNTERS)}
    if not store.read(project_id, "MATCH (d:Decision {task_id: $id}) RETURN 1 AS x LIMIT 1", {"id": tid}):
        return {"seq": 0, "active": 0, "open": 0}  # nothing to count (and reading writes nothing)

    def work(tx: Tx) -> dict[str, int]:
        lock(tx, project_id)
        decisions = tx.read(
            "MATCH (d:Decision {task_id: $tid}) RETURN d.id AS id, d.status AS status, d.created_at AS at, "
            "d.active_seq AS seq, d.review_open AS open",
            {"tid": tid},
        )
        active = [d for d in decisions if d["status"] == "active"]
        top = max((d["seq"] for d in active if d["seq"] is not None), default=0)
        missing = sorted((d for d in active if d["seq"] is None), key=lambda d: (d["at"] or "", d["id"]))
        numbered = [{"id": d["id"], "seq": top + i} for i, d in enumerate(missing, 1)]
        state = {"seq": top + len(numbered), "active": len(active), "open": sum(1 for d in decisions if d["open"])}
        if numbered:
            tx.write("UNWIND $rows AS r MATCH (d:Decision {id: r.id}) SET d.active_seq = r.seq", {"rows": numbered})
        tx.write(
            "MERGE (k:TaskDecisions {id: $id}) ON CREATE SET k.project_id = $p "
            "SET k.seq = $seq, k.active = $active, k.open = $open",
            {"id": tid, "p": project_id, **state},
        )
        return state

    return store.transact(project_id, work)
