"""Each decision's place among the citers of a document version, so that
the document page reads a version's newest citers (and pages through the
rest) from a narrow range of an index, however many decisions cite it.

Each ``CITES_DOC`` edge names the version it cites (``version_id``, the
``DocVersion`` node's id) and, once the version is numbered, its place among
the version's citations (``pos``: 1, 2, … in the order they were made; a
reaffirmed decision cites the current version anew, at its end). The
version keeps the last place given (``cite_last``) and how many decisions
cite it (``citers``: its numbered edges). A decision citing one version
through several supports is one citer: one edge of the pair is numbered.

They stay exact as the kept counters do (``_counters``): every unit that
adds or removes citations holds the lock of the project's kept counters
(decisions are written under it, a document's writes take it first). A
version written before these numbers has neither (null until counted): its
first read numbers its citations once, in a unit under that lock
(:func:`number`); until then writers leave its new citations unnumbered
(``null + 1`` stays null), and that count takes them in.
"""

from __future__ import annotations

from typing import Any

from . import _common as c
from . import _counters
from ._evidence import VERSION_FIELDS, version_id
from .models.knowledge import DocumentVersion
from .stores.base import GraphStore, Tx

#: numbered edges written per statement when a version is numbered
_BATCH = 5_000

_CITER_FIELDS = (
    "d.id AS id, d.choice_key AS key, d.task_name AS task, d.review_state AS state, "
    "d.revision AS revision, d.status AS status"
)


def prepare(tx: Tx, project_id: str, links: list[dict[str, Any]]) -> None:
    """Read the last places of the versions ``links`` cite (``{"doc":
    document node id, "seq": version}`` each) for this unit's
    :class:`Links`: a unit that writes before it builds them calls this
    first (it takes the counters' lock and reads)."""
    known: dict[str, int | None] = tx.state.setdefault("cite_last", {})
    wanted = sorted({version_id(str(link["doc"]), int(link["seq"])) for link in links} - set(known))
    if not wanted:
        return
    _counters.lock(tx, project_id)
    found = {
        r["id"]: r["last"]
        for r in tx.read(
            "UNWIND $ids AS id MATCH (v:DocVersion {id: id}) RETURN v.id AS id, v.cite_last AS last", {"ids": wanted}
        )
    }
    known.update({v: found.get(v) for v in wanted})


def note_last(tx: Tx, found: dict[str, int | None]) -> None:
    """The last places of versions a unit read for its own reasons (version
    id -> ``cite_last``), kept for its :class:`Links` (so they need not read
    them again) when it read them holding the counters' lock, as
    :func:`prepare` would have."""
    if tx.serializable or tx.kept_locked is not None:
        known: dict[str, int | None] = tx.state.setdefault("cite_last", {})
        for v, last in found.items():
            known.setdefault(v, last)  # a place this unit gave already stands


class Links:
    """The citations a unit will create (``{"d": decision id, "doc":
    document node id, "seq": version}`` each), one per decision and
    version, numbered after each version's last place. Reads what
    :func:`prepare` did not, so build it before the unit's first write (or
    prepare first); :meth:`write` queues the writes."""

    def __init__(self, tx: Tx, project_id: str, links: list[dict[str, Any]]) -> None:
        self.rows: list[dict[str, Any]] = []
        seen: set[tuple[str, str, int]] = set()
        for link in links:
            key = (str(link["d"]), str(link["doc"]), int(link["seq"]))
            if key not in seen:
                seen.add(key)
                self.rows.append({"d": key[0], "doc": key[1], "seq": key[2], "v": version_id(key[1], key[2])})
        self.moved: list[dict[str, Any]] = []
        if not self.rows:
            return
        prepare(tx, project_id, self.rows)
        last: dict[str, int | None] = tx.state["cite_last"]
        added: dict[str, int] = {}
        for r in self.rows:
            top = last.get(r["v"])
            if top is None:
                r["pos"] = None  # not numbered yet: its first read counts this one too
                continue
            added[r["v"]] = added.get(r["v"], 0) + 1
            r["pos"] = top + added[r["v"]]
        for v, n in added.items():
            last[v] = (last[v] or 0) + n  # a second Links of this unit numbers on from here
        self.moved = [{"v": v, "last": last[v], "n": n} for v, n in sorted(added.items())]

    def write(self, tx: Tx) -> None:
        if not self.rows:
            return
        tx.write(
            "UNWIND $rows AS r MATCH (d:Decision {id: r.d}) MATCH (doc:Document {id: r.doc}) "
            "CREATE (d)-[e:CITES_DOC {seq: r.seq, version_id: r.v}]->(doc) SET e.pos = r.pos",
            {"rows": self.rows},
        )
        if self.moved:
            tx.write(
                "UNWIND $rows AS r MATCH (v:DocVersion {id: r.v}) SET v.cite_last = r.last, v.citers = v.citers + r.n",
                {"rows": self.moved},
            )


def unlink(tx: Tx, match: str, params: dict[str, Any]) -> None:
    """Queue the write that takes the citations ``match`` binds as ``r``
    off their versions' counts: before the write that deletes them."""
    tx.write(
        f"{match} WHERE r.pos IS NOT NULL WITH r.version_id AS vid, count(r) AS n "
        "MATCH (v:DocVersion {id: vid}) SET v.citers = v.citers - n",
        params,
    )


def number(store: GraphStore, project_id: str, doc_id: str) -> int:
    """Number the citations of the document's versions that were never
    numbered (a store written before the numbers), oldest first (by when
    the decision was made or last reaffirmed), and keep each version's
    count: once, in a unit under the counters' lock. Returns how many
    citations it numbered."""

    def work(tx: Tx) -> int:
        _counters.lock(tx, project_id)
        versions = {
            r["seq"]: r["id"]
            for r in tx.read(
                "MATCH (v:DocVersion {document_id: $id}) WHERE v.cite_last IS NULL "
                "RETURN v.id AS id, v.activation_seq AS seq",
                {"id": doc_id},
            )
        }
        if not versions:
            return 0
        edges = tx.read(
            "MATCH (doc:Document {id: $id}) WITH doc MATCH (doc)<-[r:CITES_DOC]-(d:Decision) "
            "WHERE r.seq IN $seqs RETURN DISTINCT r.seq AS seq, d.id AS d, "
            "coalesce(d.reaffirmed_at, d.created_at) AS at",
            {"id": doc_id, "seqs": sorted(versions)},
        )
        edges.sort(key=lambda e: (e["seq"], e["at"] or "", e["d"]))
        rows: list[dict[str, Any]] = []
        counts = dict.fromkeys(versions, 0)
        for e in edges:
            counts[e["seq"]] += 1
            rows.append({"d": e["d"], "seq": e["seq"], "pos": counts[e["seq"]], "v": versions[e["seq"]]})
        for at in range(0, len(rows), _BATCH):
            # from each decision (a few edges), never from the document (all of them)
            tx.write(
                "UNWIND $rows AS x MATCH (d:Decision {id: x.d}) MATCH (d)-[r:CITES_DOC]->(doc) "
                "WHERE doc.id = $doc AND r.seq = x.seq "
                "WITH x.pos AS pos, x.v AS vid, collect(r) AS found "
                "WITH pos, vid, found[0] AS r SET r.pos = pos, r.version_id = vid",
                {"rows": rows[at : at + _BATCH], "doc": doc_id},
            )
        tx.write(
            "UNWIND $rows AS x MATCH (v:DocVersion {id: x.v}) SET v.cite_last = x.n, v.citers = x.n",
            {"rows": [{"v": versions[s], "n": n} for s, n in sorted(counts.items())]},
        )
        return len(rows)

    return store.transact(project_id, work)


def versions(store: GraphStore, project_id: str, doc_id: str) -> list[tuple[DocumentVersion, int, int]]:
    """Every version of the document, newest first, with the last place
    given among its citations and how many decisions cite it (a version
    never numbered is numbered first)."""
    query = (
        f"MATCH (v:DocVersion {{document_id: $id}}) RETURN {VERSION_FIELDS}, "
        "v.cite_last AS cite_last, v.citers AS citers ORDER BY v.activation_seq DESC"
    )
    rows = store.read(project_id, query, {"id": doc_id})
    if any(r["cite_last"] is None or r["citers"] is None for r in rows):
        number(store, project_id, doc_id)
        rows = store.read(project_id, query, {"id": doc_id})
    return [
        (
            DocumentVersion.model_validate({k: v for k, v in r.items() if k not in ("cite_last", "citers")}),
            int(r["cite_last"] or 0),
            int(r["citers"] or 0),
        )
        for r in rows
    ]


def newest(
    store: GraphStore, project_id: str, vid: str, *, last: int, below: int | None, n: int
) -> list[dict[str, Any]]:
    """Up to ``n`` citers of the version ``vid`` (whose last place given is
    ``last``) placed below ``below`` (all when None), newest first, each
    with its ``pos``: read from the ``(version_id, pos)`` index, in its
    order on Neo4j; on FalkorDB (whose index gives no order) from widening
    ranges below the top, so only the places read are sorted. A range that
    yields ``n`` holds every citer above the last of them, so the page is
    exact."""
    top = last if below is None else min(last, below - 1)
    if top < 1 or n < 1:
        return []
    if not store.graph_per_project:
        return store.read(
            project_id,
            "MATCH (d)-[r:CITES_DOC]->() USING INDEX SEEK r:CITES_DOC(version_id, pos) "
            "WHERE r.version_id = $v AND r.pos <= $top "
            f"WITH d, r ORDER BY r.version_id DESC, r.pos DESC LIMIT $n RETURN r.pos AS pos, {_CITER_FIELDS}",
            {"v": vid, "top": top, "n": n},
        )
    return c.widening(
        lambda lo, hi: store.read(
            project_id,
            "MATCH (d)-[r:CITES_DOC]->(doc) WHERE r.version_id = $v AND r.pos >= $low AND r.pos <= $top "
            f"WITH d, r.pos AS pos ORDER BY pos DESC LIMIT $n RETURN pos, {_CITER_FIELDS}",
            {"v": vid, "low": lo, "top": hi, "n": n},
        ),
        n=n,
        near=top,
        far=1,
        width=4 * n,
    )
