"""A document write flags the decisions citing it in bounded units (issue 18:
one unit flagging 100,000 citers outgrew Neo4j's transaction memory, and held
FalkorDB's single writer for seconds).

``Graph.update`` and ``Graph.delete`` write the new version (or the delete)
and flag the first ``FLAG_BATCH`` citers in one unit. When more remain, that
unit leaves an open job on the document, a ``FlagJob`` node keyed by the
document's id:

* ``reason``, ``cause``, ``at``: the review reason, root cause and time every
  citer is flagged with, as if by one unit;
* ``ends``: per version below the one flagged for (``ends[i]`` for version
  ``i + 1``), the last citation place (``_citations``) given when the job
  began: citations made later are not the change's to flag;
* ``vseq``, ``pos``: the cursor, the last citation taken (a version and its
  place); each unit reads the next batch from the ``(version_id, pos)``
  index, never every citer;
* ``lease_until``: renewed by each unit; while it lies ahead the document
  reads ``pending`` (a writer is at work), after it ``failed`` (the writer
  stopped: the work waits to be continued);
* ``request``: the request record of the call that began it, when it had a
  request id: each later unit keeps the ids it flagged in a ``FlagBatch``
  node of that record, so a retry returns the whole call's result;
* ``units``, ``flagged``: how many units ran and decisions they flagged.

Each unit takes the locks a document write takes (the kept counters', then
the document's) and reads the cursor under them, so units run one after the
other whoever runs them, and each citation is taken once: the writer itself,
a retry with its request id, the next write of the same document, or the
review sweep (:func:`finish_stale`). The last unit deletes the job.

A decision citing several old versions is flagged once: one already flagged
with the job's reason and root cause is passed over.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from . import _common as c
from . import _counters, _review
from ._evidence import version_id
from .models.decision import ReviewReason
from .stores.base import GraphStore, Tx

#: Citers flagged per unit: the memory of a unit grows with this, not with
#: how many decisions cite the document (tests lower it).
FLAG_BATCH = 2_000
#: Seconds a unit's lease lasts: a job not continued for longer reads failed.
LEASE_S = 60.0
#: Seconds between two looks at a living writer's job by the next write of
#: the same document, which waits for it.
WAIT_S = 0.2

_CITER_FIELDS = (
    "d.id AS id, d.review_open AS open, d.review_state AS state, d.queued AS queued, d.task_id AS task_id, "
    "d.status AS status, d.root_cause AS root_cause, d.review_reason AS reason"
)
_JOB_FIELDS = (
    "j.key AS key, j.reason AS reason, j.cause AS cause, j.at AS at, j.ends AS ends, j.vseq AS vseq, "
    "j.pos AS pos, j.lease_until AS lease_until, j.request AS request, j.units AS units, j.flagged AS flagged"
)


def lease_until() -> str:
    """A new lease's end: real time, not a write's ``happened_at``."""
    return c.iso(datetime.now(UTC) + timedelta(seconds=LEASE_S))


def lease_expired(lease: str) -> bool:
    return lease <= c.iso(datetime.now(UTC))


@dataclass
class Unit:
    """What one unit of a flag job did."""

    flagged: list[str] = field(default_factory=list)
    #: whether a job is open after the unit
    open: bool = False


def version_ends(tx: Tx, doc_id: str, below: int) -> list[int] | None:
    """The last citation place of each version below ``below`` (0 for a
    version no decision cites now); None when one was never numbered (a
    store from before the numbers: ``_citations.number`` it first)."""
    ends = [0] * (below - 1)
    for r in tx.read(
        "MATCH (v:DocVersion {document_id: $id}) WHERE v.activation_seq < $below "
        "RETURN v.activation_seq AS seq, v.cite_last AS last, v.citers AS citers",
        {"id": doc_id, "below": below},
    ):
        if r["last"] is None:
            return None
        ends[r["seq"] - 1] = 0 if r["citers"] == 0 else int(r["last"])
    return ends


def _read_batch(
    tx: Tx, doc_id: str, ends: list[int], vseq: int, pos: int, n: int, *, ordered: bool
) -> list[dict[str, Any]]:
    """Up to ``n`` citations after the cursor (``vseq``, ``pos``), in order
    of version then place, each with its citer's fields, ``vseq`` and
    ``pos``: from the ``(version_id, pos)`` index, in its order on Neo4j
    (``ordered``), else from widening ranges above the cursor."""
    out: list[dict[str, Any]] = []
    for seq in range(max(vseq, 1), len(ends) + 1):
        after, end = (pos if seq == vseq else 0), ends[seq - 1]
        want = n - len(out)
        if want <= 0:
            break
        if after >= end:
            continue
        vid = version_id(doc_id, seq)
        if ordered:
            rows = tx.read(
                "MATCH (d)-[r:CITES_DOC]->() USING INDEX SEEK r:CITES_DOC(version_id, pos) "
                "WHERE r.version_id = $v AND r.pos > $after AND r.pos <= $end "
                f"WITH d, r ORDER BY r.version_id, r.pos LIMIT $n RETURN r.pos AS pos, {_CITER_FIELDS}",
                {"v": vid, "after": after, "end": end, "n": want},
            )
        else:
            rows = c.widening(
                lambda lo, hi, vid=vid, want=want: tx.read(
                    # no label on d: FalkorDB would scan the label instead of seeking the index
                    "MATCH (d)-[r:CITES_DOC]->(doc) WHERE r.version_id = $v AND r.pos >= $lo "
                    f"AND r.pos <= $hi WITH d, r.pos AS pos ORDER BY pos LIMIT $n RETURN pos, {_CITER_FIELDS}",
                    {"v": vid, "lo": lo, "hi": hi, "n": want},
                ),
                n=want,
                near=after + 1,
                far=end,
                width=2 * want,
            )
        out += [{**r, "vseq": seq} for r in rows]
    return out


def flag_batch(
    tx: Tx,
    project_id: str,
    doc_id: str,
    job: dict[str, Any],
    *,
    ordered: bool,
    batch: int | None = None,
) -> tuple[list[str], dict[str, Any] | None]:
    """One unit's flags: the next batch after the cursor of ``job`` (its
    ``ends``, ``vseq``, ``pos``, ``reason``, ``cause``, ``at``) flagged,
    and the cursor after it, None when nothing remains. Reads, then writes
    the flags (``_review.flag``): call it before the unit's other writes."""
    n = batch or FLAG_BATCH
    rows = _read_batch(tx, doc_id, job["ends"], job["vseq"], job["pos"], n + 1, ordered=ordered)
    taken, more = rows[:n], len(rows) > n
    reason = ReviewReason(job["reason"])
    seen: set[str] = set()
    citing: list[dict[str, Any]] = []
    for r in taken:
        if r["id"] in seen or r["status"] != "active":
            continue
        seen.add(r["id"])
        if r["state"] == "needs_review" and r["reason"] == reason.value and r["root_cause"] == job["cause"]:
            continue  # flagged by this change already (it cites another old version too)
        citing.append(r)
    flagged = [r["id"] for r in citing]
    if flagged:
        _review.flag(tx, project_id, flagged, reason, job["cause"], job["at"], known=citing)
    cursor = {"vseq": taken[-1]["vseq"], "pos": taken[-1]["pos"]} if more else None
    return flagged, cursor


def open_job(
    tx: Tx, project_id: str, doc_id: str, job: dict[str, Any], cursor: dict[str, Any], request: str | None
) -> None:
    """Queue the write of a new job (``job``: ``key``, ``reason``,
    ``cause``, ``at``, ``ends``), its cursor after the first unit."""
    tx.write(
        "CREATE (:FlagJob {id: $id, project_id: $p, key: $key, reason: $reason, cause: $cause, at: $at, "
        "ends: $ends, vseq: $vseq, pos: $pos, lease_until: $lease, request: $request, units: 1, flagged: $n})",
        {
            "id": doc_id,
            "p": project_id,
            **{k: job[k] for k in ("key", "reason", "cause", "at", "ends")},
            **cursor,
            "lease": lease_until(),
            "request": request,
            "n": job.get("flagged", 0),
        },
    )


def read_job(tx: Tx, doc_id: str) -> dict[str, Any] | None:
    rows = tx.read(f"MATCH (j:FlagJob {{id: $id}}) RETURN {_JOB_FIELDS}", {"id": doc_id})
    return rows[0] if rows else None


def continue_job(
    store: GraphStore,
    project_id: str,
    doc_id: str,
    *,
    cause: str | None = None,
    stale_only: bool = False,
) -> Unit | None:
    """One unit of the document's open job; None when there is none (or,
    with ``cause``, none of that root cause, which names the write that
    began it; with ``stale_only``, none whose lease has expired)."""
    ordered = not store.graph_per_project

    def work(tx: Tx) -> Unit | None:
        _counters.lock(tx, project_id)
        tx.lock("Document", doc_id)
        job = read_job(tx, doc_id)
        if job is None or (cause is not None and job["cause"] != cause):
            return None
        if stale_only and not lease_expired(job["lease_until"]):
            return None
        flagged, cursor = flag_batch(tx, project_id, doc_id, job, ordered=ordered)
        units = int(job["units"] or 0) + 1
        if cursor is None:
            tx.write("MATCH (j:FlagJob {id: $id}) DELETE j", {"id": doc_id})
        else:
            tx.write(
                "MATCH (j:FlagJob {id: $id}) SET j.vseq = $vseq, j.pos = $pos, j.lease_until = $lease, "
                "j.units = $units, j.flagged = j.flagged + $n",
                {"id": doc_id, **cursor, "lease": lease_until(), "units": units, "n": len(flagged)},
            )
        if job["request"] is not None:
            keep_batch(tx, project_id, job["request"], units, flagged)
        return Unit(flagged=flagged, open=cursor is not None)

    return store.transact(project_id, work)


def keep_batch(tx: Tx, project_id: str, request: str, unit: int, ids: list[str]) -> None:
    """Keep the ids one unit flagged with the request record of its job."""
    tx.write(
        "CREATE (:FlagBatch {id: $id, project_id: $p, request: $request, unit: $unit, ids: $ids})",
        {"id": f"{request}:{unit}", "p": project_id, "request": request, "unit": unit, "ids": ids},
    )


def kept_ids(store: GraphStore, project_id: str, request: str) -> list[str]:
    """Every id the later units of a request's job kept."""
    rows = store.read(project_id, "MATCH (b:FlagBatch {request: $r}) RETURN b.ids AS ids", {"r": request})
    return [i for r in rows for i in r["ids"] or []]


def finish(store: GraphStore, project_id: str, doc_id: str, *, cause: str | None = None) -> list[str]:
    """Run the document's open job (with ``cause``: only the job of that
    root cause) to its end; the ids the units run here flagged."""
    flagged: list[str] = []
    while True:
        unit = continue_job(store, project_id, doc_id, cause=cause)
        if unit is None:
            return flagged
        flagged += unit.flagged
        if not unit.open:
            return flagged


def finish_earlier(store: GraphStore, project_id: str, doc_id: str) -> None:
    """An earlier write's open job, met by the next write of the document:
    left to its writer while the lease holds (waiting for it to end, so
    that writer's answer stays whole), taken over once the lease ran out
    (the writer stopped) and run to its end."""
    while True:
        unit = continue_job(store, project_id, doc_id, stale_only=True)
        if unit is not None:
            if unit.open:  # this writer's now: its units renew the lease
                finish(store, project_id, doc_id)
            return
        rows = store.read(project_id, "MATCH (j:FlagJob {id: $id}) RETURN j.lease_until AS lease", {"id": doc_id})
        if not rows:
            return  # its writer finished it
        left = (datetime.fromisoformat(rows[0]["lease"]) - datetime.now(UTC)).total_seconds()
        time.sleep(min(WAIT_S, max(left, 0.0) + 0.01))


def open_jobs(store: GraphStore, project_id: str) -> list[dict[str, Any]]:
    """The project's open jobs: ``id`` (the document's), ``key``,
    ``lease_until``, ``units``, ``flagged``."""
    return store.read(
        project_id,
        "MATCH (j:FlagJob) WHERE j.project_id = $p RETURN j.id AS id, j.key AS key, "
        "j.lease_until AS lease_until, j.units AS units, j.flagged AS flagged ORDER BY j.id",
        {"p": project_id},
    )


def finish_stale(store: GraphStore, project_id: str, *, max_units: int | None = None) -> tuple[int, int]:
    """Continue every job whose lease has expired (its writer stopped), up
    to ``max_units`` units: (units run, decisions flagged). A job whose
    lease holds is left to its writer."""
    units = flagged = 0
    for job in open_jobs(store, project_id):
        if not lease_expired(job["lease_until"]):
            continue
        stale_only = True  # taken over by its first unit here, which renews the lease
        while max_units is None or units < max_units:
            unit = continue_job(store, project_id, job["id"], stale_only=stale_only)
            stale_only = False
            if unit is None:
                break
            units += 1
            flagged += len(unit.flagged)
            if not unit.open:
                break
    return units, flagged
