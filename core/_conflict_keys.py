"""The choice keys in conflict kept in key order, where the store cannot read
them so from an index (FalkorDB: its range index scan is unordered, so a
page of conflicts would sort every one of them). Neo4j reads them in key
order from the index ``Choice(project_id, conflict, key)`` and keeps none of
this.

The keys live in buckets (``ConflictBucket`` nodes, each a sorted list
``keys`` of at most :data:`BUCKET_MAX` keys, from its ``low`` key on, below
the next bucket's), listed in order by the project's ``ConflictKeys`` node
(``lows``, the buckets' low keys, the first ""; ``sizes``). Every bucket
but a lone one holds at least :data:`BUCKET_MIN` keys, so a page of keys
reads the bucket its first key is in and the next few, whatever the number
of conflicts.

Every writer of a choice's conflict flag (the statements that end
with :func:`moved`) mark a choice whose flag they changed
(``keys_moved``, :func:`mark_moved`), in the statement that changes it.
The buckets are brought up to the marks by :func:`settle`, a unit holding
the counters' lock that clears the marks it applied; a page read that finds
marks (or no buckets: a store from before, or never read) settles first. So
the buckets and the marks together always say exactly which keys are in
conflict, and a page read with no marks reads the buckets alone.
"""

from __future__ import annotations

import bisect
import uuid
from typing import Any

from . import _common as c
from . import _counters
from .stores.base import GraphStore, GraphStoreWriteConflictError, Tx

#: The most keys a bucket holds, and the fewest (but for a lone bucket).
BUCKET_MAX = 128
BUCKET_MIN = 32
#: The size buckets are cut to when a run of them is rewritten.
BUCKET_TARGET = 64
_SEP = "\x1f"


def kept(store: GraphStore) -> bool:
    """Whether the store keeps the conflicts in key order (FalkorDB)."""
    return store.graph_per_project


def mark_moved(store: GraphStore) -> str:
    """A SET item for the statements that set ``ch.conflict`` from ``was`` to
    ``now`` (1 or 0): marks the choice when its flag changed (where kept)."""
    if not kept(store):
        return ""
    return ", ch.keys_moved = CASE WHEN was <> now THEN true ELSE ch.keys_moved END"


def moved(store: GraphStore) -> str:
    """The end of every statement that sets choices' ``ch.conflict`` from
    ``was`` to ``now`` (1 or 0): the choice marked where its flag changed
    (:func:`mark_moved`), then the kept count moved
    (``_counters.MOVE_CONFLICTS``; ``$qid``: the project's queue node). One
    piece, so that no writer of the flag can leave either out."""
    return mark_moved(store) + " " + _counters.MOVE_CONFLICTS


def keys_node_id(project_id: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"https://reviewer.invalid/conflict-keys/{project_id}"))


def _bucket_id(project_id: str, low: str) -> str:
    return project_id + _SEP + low


def _chunks(keys: list[str]) -> list[list[str]]:
    """Sorted keys cut into buckets of BUCKET_MIN..BUCKET_MAX keys (one bucket
    when they fit, whatever their number)."""
    if len(keys) <= BUCKET_MAX:
        return [keys]
    m = -(-len(keys) // BUCKET_TARGET)
    size, extra = divmod(len(keys), m)
    out, start = [], 0
    for i in range(m):
        end = start + size + (1 if i < extra else 0)
        out.append(keys[start:end])
        start = end
    return out


# -- reads -------------------------------------------------------------------


def page(store: GraphStore, project_id: str, after: str | None, n: int) -> list[str]:
    """The first ``n`` choice keys in conflict after ``after`` (all when
    None), in key order: a read of a few buckets, settled first where the
    buckets are behind (or missing)."""
    for attempt in range(3):
        row = store.read(
            project_id,
            "OPTIONAL MATCH (m:Choice {keys_moved: true}) WITH count(m) AS moved "
            "OPTIONAL MATCH (k:ConflictKeys {id: $kid}) "
            "WITH moved, k IS NOT NULL AS kept, coalesce(k.lows, []) AS lows "
            "WITH moved, kept, lows, CASE WHEN $after IS NULL THEN 1 ELSE size([x IN lows WHERE x <= $after]) END AS i "
            "WITH moved, kept, CASE WHEN moved = 0 THEN [low IN lows[i - 1..i + $span] | $pre + low] ELSE [] END AS ids "
            "OPTIONAL MATCH (b:ConflictBucket) WHERE b.id IN ids "
            "WITH moved, kept, collect([x IN b.keys WHERE $after IS NULL OR x > $after][..$n]) AS found "
            "RETURN moved, kept, found",
            {
                "kid": keys_node_id(project_id),
                "after": after,
                "span": -(-n // BUCKET_MIN),  # buckets after the first: n keys at the fewest
                "pre": project_id + _SEP,
                "n": n,
            },
        )[0]
        if row["kept"] and not row["moved"]:
            return sorted(k for found in row["found"] for k in found)[:n]
        if attempt == 0 and not row["kept"] and not row["moved"] and not _any_conflict(store, project_id):
            return []  # nothing in conflict (and reading writes nothing)
        if not _settled(store, project_id):
            break
    return _direct_page(store, project_id, after, n)  # (writers kept moving keys)


def walk(store: GraphStore, project_id: str, query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
    """Run ``query`` over the keys in conflict in key order (each ``key``,
    from the buckets in order; ``query`` goes on from there, and should end
    with a LIMIT), settled first where behind."""
    for _attempt in range(3):
        rows = store.read(
            project_id,
            "OPTIONAL MATCH (m:Choice {keys_moved: true}) WITH count(m) AS moved "
            "OPTIONAL MATCH (k:ConflictKeys {id: $kid}) RETURN moved, k IS NOT NULL AS kept",
            {"kid": keys_node_id(project_id)},
        )[0]
        if rows["kept"] and not rows["moved"]:
            return store.read(
                project_id,
                "MATCH (k:ConflictKeys {id: $kid}) UNWIND k.lows AS low MATCH (b:ConflictBucket {id: $pre + low}) "
                "UNWIND b.keys AS key " + query,
                {**params, "kid": keys_node_id(project_id), "pre": project_id + _SEP},
            )
        if not rows["kept"] and not rows["moved"] and not _any_conflict(store, project_id):
            return []
        if not _settled(store, project_id):
            break
    # writers kept moving keys: every key in conflict, sorted (what the buckets save)
    return store.read(
        project_id, "MATCH (ch:Choice) WHERE ch.conflict = true WITH ch.key AS key ORDER BY key " + query, params
    )


def _settled(store: GraphStore, project_id: str) -> bool:
    """Settle for a page read; False when writers kept winning (the read
    then answers from the choices directly, never with an error)."""
    try:
        settle(store, project_id)
    except GraphStoreWriteConflictError:
        return False
    return True


def _any_conflict(store: GraphStore, project_id: str) -> bool:
    return bool(store.read(project_id, "MATCH (ch:Choice) WHERE ch.conflict = true RETURN 1 AS x LIMIT 1"))


def _direct_page(store: GraphStore, project_id: str, after: str | None, n: int) -> list[str]:
    rows = store.read(
        project_id,
        "MATCH (ch:Choice) WHERE ch.conflict = true AND ($after IS NULL OR ch.key > $after) "
        "WITH ch ORDER BY ch.key LIMIT $n RETURN ch.key AS key",
        {"after": after, "n": n},
    )
    return [r["key"] for r in rows]


# -- keeping -----------------------------------------------------------------


def settle(store: GraphStore, project_id: str) -> None:
    """Bring the buckets up to the marked choices (building them from every
    choice in conflict where there are none, or where most would change),
    in a unit holding the counters' lock."""

    def work(tx: Tx) -> None:
        _counters.lock(tx, project_id)
        kid = keys_node_id(project_id)
        found = tx.read("MATCH (k:ConflictKeys {id: $kid}) RETURN k.lows AS lows, k.sizes AS sizes", {"kid": kid})
        moved = tx.read("MATCH (ch:Choice {keys_moved: true}) RETURN ch.key AS key, ch.conflict AS conflict")
        if found and not moved:
            return
        if not found or len(moved) > max(len(found[0]["lows"]), BUCKET_MIN):
            _build(tx, project_id)
            return
        lows: list[str] = list(found[0]["lows"])
        sizes: list[int] = [int(s) for s in found[0]["sizes"]]
        changes: dict[int, dict[str, bool]] = {}
        for r in moved:
            i = bisect.bisect_right(lows, r["key"]) - 1
            changes.setdefault(i, {})[r["key"]] = r["conflict"] is True
        # the buckets that change, and neighbours while a run of them is too small
        sizes_after = list(sizes)
        loaded = _read_buckets(tx, project_id, [lows[i] for i in sorted(changes)])
        new_keys: dict[int, list[str]] = {}
        for i, keys_moved in changes.items():
            keys = set(loaded[lows[i]])
            keys |= {k for k, on in keys_moved.items() if on}
            keys -= {k for k, on in keys_moved.items() if not on}
            new_keys[i] = sorted(keys)
            sizes_after[i] = len(new_keys[i])
        runs = _runs(sorted(changes), sizes_after)
        wanted = [lows[i] for a, b in runs for i in range(a, b + 1) if i not in new_keys]
        if wanted:
            more = _read_buckets(tx, project_id, wanted)
            for a, b in runs:
                for i in range(a, b + 1):
                    if i not in new_keys:
                        new_keys[i] = list(more[lows[i]])
        out_lows: list[str] = []
        out_sizes: list[int] = []
        put: list[dict[str, Any]] = []
        gone: list[str] = []
        at = 0
        for a, b in runs:
            out_lows += lows[at:a]
            out_sizes += sizes[at:a]
            keys = [k for i in range(a, b + 1) for k in new_keys[i]]
            chunks = _chunks(keys)
            run_lows = [lows[a]] + [ch[0] for ch in chunks[1:]]
            for low, chunk in zip(run_lows, chunks):
                put.append({"id": _bucket_id(project_id, low), "low": low, "keys": chunk})
            gone += [lows[i] for i in range(a, b + 1) if lows[i] not in set(run_lows)]
            out_lows += run_lows
            out_sizes += [len(ch) for ch in chunks]
            at = b + 1
        out_lows += lows[at:]
        out_sizes += sizes[at:]
        if gone:
            tx.write(
                "UNWIND $ids AS id MATCH (b:ConflictBucket {id: id}) DELETE b",
                {"ids": [_bucket_id(project_id, low) for low in gone]},
            )
        _put_buckets(tx, project_id, put)
        tx.write(
            "MATCH (k:ConflictKeys {id: $kid}) SET k.lows = $lows, k.sizes = $sizes",
            {"kid": kid, "lows": out_lows, "sizes": out_sizes},
        )
        tx.write(
            "UNWIND $ids AS id MATCH (ch:Choice {id: id}) SET ch.keys_moved = null",
            {"ids": [c.choice_node_id(project_id, r["key"]) for r in moved]},
        )

    store.transact(project_id, work)


def _runs(changed: list[int], sizes: list[int]) -> list[tuple[int, int]]:
    """The runs of buckets to rewrite: each changed bucket, joined to its
    neighbours while a run holds fewer than BUCKET_MIN keys (and is not all
    the buckets), and runs that touch joined."""
    last = len(sizes) - 1
    runs: list[list[int]] = []
    for i in changed:
        if runs and i <= runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    while True:
        grown = False
        for run in runs:
            total = sum(sizes[run[0] : run[1] + 1])
            if total < BUCKET_MIN and (run[0] > 0 or run[1] < last):
                if run[1] < last:
                    run[1] += 1
                else:
                    run[0] -= 1
                grown = True
        merged: list[list[int]] = []
        for run in runs:
            if merged and run[0] <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], run[1])
            else:
                merged.append(run)
        runs = merged
        if not grown:
            return [(a, b) for a, b in runs]


def _read_buckets(tx: Tx, project_id: str, lows: list[str]) -> dict[str, list[str]]:
    rows = tx.read(
        "UNWIND $ids AS id MATCH (b:ConflictBucket {id: id}) RETURN b.low AS low, b.keys AS keys",
        {"ids": [_bucket_id(project_id, low) for low in lows]},
    )
    found = {r["low"]: list(r["keys"] or []) for r in rows}
    return {low: found.get(low, []) for low in lows}


def _put_buckets(tx: Tx, project_id: str, put: list[dict[str, Any]]) -> None:
    if put:
        tx.write(
            "UNWIND $rows AS r MERGE (b:ConflictBucket {id: r.id}) SET b.project_id = $p, b.low = r.low, b.keys = r.keys",
            {"rows": put, "p": project_id},
        )


def _build(tx: Tx, project_id: str) -> None:
    """Every bucket again, from every choice in conflict (the counters' lock
    held): the first build, and a settle that would change most buckets."""
    keys = sorted(r["key"] for r in tx.read("MATCH (ch:Choice) WHERE ch.conflict = true RETURN ch.key AS key"))
    chunks = _chunks(keys)
    lows = [""] + [ch[0] for ch in chunks[1:]]
    tx.write("MATCH (b:ConflictBucket) DELETE b")
    _put_buckets(
        tx, project_id, [{"id": _bucket_id(project_id, low), "low": low, "keys": ch} for low, ch in zip(lows, chunks)]
    )
    tx.write(
        "MERGE (k:ConflictKeys {id: $kid}) SET k.project_id = $p, k.lows = $lows, k.sizes = $sizes",
        {"kid": keys_node_id(project_id), "p": project_id, "lows": lows, "sizes": [len(ch) for ch in chunks]},
    )
    tx.write("MATCH (ch:Choice {keys_moved: true}) SET ch.keys_moved = null")
