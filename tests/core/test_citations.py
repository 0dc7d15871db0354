"""A document page's citers (core/_citations.py, ReviewViews.document_page),
on every backend: each version's newest citers from their places among the
version's citations, a kept count of them, and pages of older ones; kept
right as decisions are recorded, superseded, reaffirmed, deleted and
documents revised; a store written before the places is numbered once, by
its first read."""

from __future__ import annotations

from typing import Any

from core import _citations
from core.knowledge import document_node_id
from core.models import WriteErrorCode
from core.review_views import ReviewViews
from core.stores import GraphStore

from .test_decisions import ADR, World
from .test_review_views import world  # noqa: F401  (the fixture)

PASSAGE = "Postgres stays the system of record"


def views(world: World, *, shown: int = 20, page: int = 100) -> ReviewViews:
    v = ReviewViews(world.store, project_id=world.project_id, agent_id="reviewer")
    v.VERSION_CITERS, v.CITERS_PAGE = shown, page
    return v


def record(world: World, task: str, key: str, *, twice: bool = False) -> str:
    doc, got = world.cite("adr", PASSAGE)
    supports, fetched = [doc], [got]
    if twice:  # a second passage of the same version: still one citer
        other, got2 = world.cite("adr", "Reviews happen weekly")
        supports, fetched = [doc, other], [got, got2]
    d = world.record(task, key, key.upper(), supports=supports, fetched=fetched).decision
    assert d is not None
    return str(d.id)


def shown(world: World, **kw: Any) -> list[tuple[int, int, list[str], int | None]]:
    """Each version's (number, count, citers shown, older) on the page."""
    page = views(world, **{k: kw.pop(k) for k in ("shown", "page") if k in kw}).document_page("adr", **kw)
    assert page is not None
    return [(s.version.activation_seq, s.count, [c.id for c in s.citing], s.older) for s in page.versions]


def every_citer(world: World, version: int, page: int) -> list[str]:
    """A version's citers, newest first, by following the pages' links."""
    v = views(world, page=page)
    out: list[str] = []
    before = None
    while True:
        got = v.document_page("adr", version=version, before=before)
        assert got is not None and [s.version.activation_seq for s in got.versions] == [version]
        section = got.versions[0]
        out += [c.id for c in section.citing]
        if section.older is None:
            return out
        assert len(section.citing) == page
        before = section.older


def kept_right(world: World) -> None:
    """The kept numbers agree with the citations: each version's count is
    the decisions citing it, each of those has one place, and no place is
    given twice or above the version's last."""
    doc = document_node_id(world.project_id, "adr")
    versions = world.store.read(
        world.project_id,
        "MATCH (v:DocVersion {document_id: $id}) RETURN v.id AS id, v.activation_seq AS seq, "
        "v.cite_last AS last, v.citers AS n",
        {"id": doc},
    )
    edges = world.store.read(
        world.project_id,
        "MATCH (doc:Document {id: $id})<-[r:CITES_DOC]-(d:Decision) "
        "RETURN d.id AS d, r.seq AS seq, r.pos AS pos, r.version_id AS vid",
        {"id": doc},
    )
    for v in versions:
        mine = [e for e in edges if e["seq"] == v["seq"]]
        numbered = [e for e in mine if e["pos"] is not None]
        assert v["n"] == len({e["d"] for e in mine}) == len(numbered), v
        assert len({e["pos"] for e in numbered}) == len(numbered), v
        assert all(e["vid"] == v["id"] and 1 <= e["pos"] <= v["last"] for e in numbered), v


def test_each_version_lists_its_newest_citers_with_how_many_cite_it(world: World) -> None:
    ids = [record(world, "pick-db", f"c{i}") for i in range(5)]
    kept_right(world)
    assert shown(world, shown=3) == [(1, 5, ids[::-1][:3], _pos(world, ids[2]))]
    assert shown(world) == [(1, 5, ids[::-1], None)]
    # the pages of one version, newest first, each citer once
    assert every_citer(world, 1, 2) == ids[::-1]
    assert every_citer(world, 1, 5) == ids[::-1]
    assert views(world).document_page("adr", version=7) is None
    assert views(world).document_page("nope", version=1) is None
    # one decision citing two passages of the version is one citer
    both = record(world, "billing", "both", twice=True)
    assert shown(world) == [(1, 6, [both, *ids[::-1]], None)]
    kept_right(world)


def _pos(world: World, decision: str) -> int:
    rows = world.store.read(
        world.project_id,
        "MATCH (d:Decision {id: $id})-[r:CITES_DOC]->() RETURN r.pos AS pos",
        {"id": decision},
    )
    return rows[0]["pos"]


def test_revisions_supersessions_reaffirmations_and_deletions_keep_the_citers_right(world: World) -> None:
    a = record(world, "pick-db", "a")
    b = record(world, "billing", "b")
    c = record(world, "pick-db", "c")
    world.graph.update("adr", "Preface.\n\n" + ADR)  # a new version: nobody cites it yet
    assert shown(world) == [(2, 0, [], None), (1, 3, [c, b, a], None)]
    kept_right(world)
    # reaffirmed: it cites the new version now, and no longer the old one
    assert world.traces.reaffirm_decision(b).recorded
    assert shown(world) == [(2, 1, [b], None), (1, 2, [c, a], None)]
    kept_right(world)
    # superseded: the old decision still cites what it cited (shown as
    # superseded), the new one cites the current version, newest first
    doc, got = world.cite("adr", PASSAGE)
    new = world.traces.supersede_decision(
        a, conclusion="A2", rationale="r", explanation="moved", supports=[doc], fetched=[got]
    ).decision
    assert new is not None
    page = views(world).document_page("adr")
    assert page is not None
    assert [(s.count, [(x.id, x.status) for x in s.citing]) for s in page.versions] == [
        (2, [(str(new.id), "active"), (b, "active")]),
        (2, [(c, "active"), (a, "superseded")]),
    ]
    kept_right(world)
    # a task deleted with its decisions: they cite nothing any more
    assert world.retention.delete_task("pick-db", include_decisions=True, reason="gone").recorded
    assert shown(world) == [(2, 1, [b], None)] + [(1, 0, [], None)]
    kept_right(world)
    # later citations keep numbering after the last place given
    d = record(world, "billing", "d")
    assert shown(world, shown=1) == [(2, 2, [d], _pos(world, d)), (1, 0, [], None)]
    assert (_pos(world, b), _pos(world, d)) == (1, 3)  # the superseding decision's 2 is not given again
    kept_right(world)
    world.graph.delete("adr")
    assert shown(world) == [(2, 2, [d, b], None), (1, 0, [], None)]


def test_paging_a_version_with_gaps_reads_every_citer_once_in_order(world: World) -> None:
    world.history.create_task("gone", goal="deleted later")
    kept: list[str] = []
    for i in range(30):
        did = record(world, "gone" if i % 3 else "pick-db", f"k{i}")
        if not i % 3:
            kept.append(did)
    assert world.retention.delete_task("gone", include_decisions=True, reason="gaps").recorded
    kept_right(world)
    assert [n for _, n, _, _ in shown(world)] == [10]
    for size in (1, 3, 4, 10, 11):
        assert every_citer(world, 1, size) == kept[::-1], size


def _forget_the_numbers(store: GraphStore, project_id: str) -> None:
    """The citations as a store written before the numbers holds them (this
    project's: Neo4j keeps every project in one graph)."""
    store.transact(
        project_id,
        lambda tx: [
            tx.write("MATCH (d:Decision {project_id: $p})-[r:CITES_DOC]->() REMOVE r.pos", {"p": project_id}),
            tx.write("MATCH (d:Decision {project_id: $p})-[r:CITES_DOC]->() REMOVE r.version_id", {"p": project_id}),
            tx.write("MATCH (v:DocVersion {project_id: $p}) REMOVE v.cite_last", {"p": project_id}),
            tx.write("MATCH (v:DocVersion {project_id: $p}) REMOVE v.citers", {"p": project_id}),
        ],
    )


def test_a_store_without_places_is_numbered_once_by_its_first_read(world: World) -> None:
    a = record(world, "pick-db", "a")
    b = record(world, "billing", "b", twice=True)
    world.graph.update("adr", "Preface.\n\n" + ADR)
    c = record(world, "pick-db", "c")
    _forget_the_numbers(world.store, world.project_id)
    doc = document_node_id(world.project_id, "adr")
    # a citation written before the first read stays unnumbered for it
    d = record(world, "billing", "d")
    assert world.store.read(
        world.project_id, "MATCH (v:DocVersion {document_id: $id}) RETURN v.citers AS n", {"id": doc}
    ) == [{"n": None}, {"n": None}]
    assert _pos(world, d) is None
    # the first read numbers them, in the order they were made
    assert shown(world) == [(2, 2, [d, c], None), (1, 2, [b, a], None)]
    kept_right(world)
    assert _citations.number(world.store, world.project_id, doc) == 0  # once
    e = record(world, "pick-db", "e")
    assert shown(world) == [(2, 3, [e, d, c], None), (1, 2, [b, a], None)]
    kept_right(world)
    # a reaffirmation and a deletion before the first read are counted too
    _forget_the_numbers(world.store, world.project_id)
    assert world.traces.reaffirm_decision(a).recorded
    assert world.retention.delete_task("billing", include_decisions=True, reason="r").recorded
    assert shown(world) == [(2, 3, [a, e, c], None), (1, 0, [], None)]
    kept_right(world)


def test_numbering_a_version_keeps_each_decisions_place_among_writes_that_follow(world: World) -> None:
    ids = [record(world, "pick-db", f"x{i}") for i in range(5)]
    _forget_the_numbers(world.store, world.project_id)
    assert every_citer(world, 1, 2) == ids[::-1]
    more = [record(world, "billing", f"y{i}") for i in range(3)]
    assert every_citer(world, 1, 2) == (ids + more)[::-1]
    kept_right(world)


def test_a_passage_that_ends_the_document_is_cited_and_one_past_it_is_not(world: World) -> None:
    text = "alpha beta gamma"
    world.graph.add("short", text)

    def cite(start: int, end: int) -> Any:
        evidence = world.graph.span_evidence_id("short", start, end)
        return world.traces.record_decision(
            "pick-db",
            choice_key=f"tail-{end}",
            conclusion="gamma it is",
            rationale="r",
            supports=[{"kind": "document", "evidence_id": evidence}],
            fetched=[world.graph.fetch(evidence)],
        )

    made = cite(text.index("gamma"), len(text))
    assert made.recorded, made.error
    assert world.graph.fetch(made.decision.supports[0].evidence_id).text == "gamma"
    past = cite(text.index("gamma"), len(text) + 1)
    assert not past.recorded and past.error is WriteErrorCode.support_not_fetched
