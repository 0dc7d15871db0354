"""Claims and assignment (core/claims.py), on every backend: a claim is a
lease that one of two racing people wins, renewals stop at the cap, a
settlement ends it whoever settles, taking over needs a reason and tells
the holder, a steward assigns, and one read gives a page its marks."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime, timedelta

from core import _common as c
from core import limits
from core.claims import Claims
from core.decisions import DecisionTraces
from core.history import ConversationHistory
from core.knowledge import Graph
from core.models import ClaimErrorCode, TargetKind
from core.retention import ActivityLog
from core.stores import GraphStore
from core.traces_io import export_project, import_lines

D, G = TargetKind.decision, TargetKind.group


def _flagged(store: GraphStore, project_id: str, n: int = 3) -> tuple[list[str], str]:
    """``n`` decisions citing one document, flagged by its update: their ids
    in queue order and their root cause."""
    history = ConversationHistory(store, project_id=project_id, agent_id="planner")
    graph = Graph(store, project_id=project_id, agent_id="ingest")
    traces = DecisionTraces(store, project_id=project_id, agent_id="planner")
    history.create_task("t", goal="g")
    graph.add("adr", "Orders stay on Postgres.")
    ids = []
    for i in range(n):
        ev = graph.span_evidence_id("adr", 0, 6)
        d = traces.record_decision(
            "t",
            choice_key=f"k{i}",
            conclusion=f"c{i}",
            rationale="r",
            supports=[{"kind": "document", "evidence_id": ev}],
            fetched=[graph.fetch(ev)],
        ).decision
        ids.append(str(d.id))
    graph.update("adr", "Orders moved to MySQL.")
    listed = traces.list_decisions_for_review(limit=50).decisions
    cause = Claims(store, project_id=project_id, agent_id="x").marks(ids)  # noqa: F841  (schema ready)
    rows = store.read(project_id, "MATCH (d:Decision {id: $id}) RETURN d.root_cause AS k", {"id": ids[0]})
    return [str(d.id) for d in listed], rows[0]["k"]


def _as(store: GraphStore, project_id: str, who: str) -> Claims:
    return Claims(store, project_id=project_id, agent_id=who)


def test_a_claim_is_a_lease_renewed_up_to_its_cap_and_ended_by_release(store: GraphStore, project_id: str) -> None:
    ids, _cause = _flagged(store, project_id, 1)
    rita, sam = _as(store, project_id, "rita"), _as(store, project_id, "sam")
    assert rita.lease_minutes() == 15
    start = datetime.now(UTC)
    got = rita.claim(D, ids[0])
    assert got.recorded and got.claim.holder == "rita"
    assert got.claim.expires_at - got.claim.claimed_at == timedelta(minutes=15)
    refused = sam.claim(D, ids[0])
    assert refused.error is ClaimErrorCode.claim_held and refused.held.holder == "rita"
    assert sam.renew(D, ids[0]).error is ClaimErrorCode.not_claimed
    assert sam.release(D, ids[0]).error is ClaimErrorCode.claim_held
    # the project's lease, set by a steward; renewed while the page is open, never past two hours
    assert rita.set_lease_minutes(0).error is ClaimErrorCode.invalid_lease
    assert rita.set_lease_minutes(limits.LEASE_MINUTES_MAX + 1).error is ClaimErrorCode.invalid_lease
    assert rita.set_lease_minutes(60).recorded and sam.lease_minutes() == 60
    cap = got.claim.claimed_at + timedelta(minutes=limits.CLAIM_CAP_MINUTES)
    with c.happened_at(start + timedelta(minutes=10)):
        assert rita.renew(D, ids[0]).claim.expires_at > start + timedelta(minutes=69)
    with c.happened_at(start + timedelta(minutes=65)):
        assert rita.renew(D, ids[0]).claim.expires_at == cap
    with c.happened_at(start + timedelta(minutes=121)):  # ran out: anyone may claim it
        assert rita.renew(D, ids[0]).error is ClaimErrorCode.not_claimed
        assert sam.claim(D, ids[0]).recorded
    assert sam.release(D, ids[0]).recorded
    assert rita.set_lease_minutes(5).recorded
    short = sam.claim(D, ids[0]).claim
    assert short.expires_at - short.claimed_at == timedelta(minutes=5)
    assert sam.release(D, ids[0]).recorded and rita.marks(ids)[ids[0]].claim is None
    actions = [(e.action, e.actor) for e in ActivityLog(store, project_id=project_id).list(limit=20)]
    assert ("claim", "rita") in actions and ("release", "sam") in actions


def test_racing_claims_exactly_one_wins_and_the_others_learn_who(store: GraphStore, project_id: str) -> None:
    ids, _cause = _flagged(store, project_id, 1)
    people = [f"p{i}" for i in range(4)]
    services = {who: _as(store, project_id, who) for who in people}
    results = {}
    gate = threading.Barrier(len(people))

    def go(who: str) -> None:
        gate.wait()
        results[who] = services[who].claim(D, ids[0])

    threads = [threading.Thread(target=go, args=(who,)) for who in people]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    won = [who for who, r in results.items() if r.recorded]
    assert len(won) == 1
    for who, r in results.items():
        if who != won[0]:
            assert r.error is ClaimErrorCode.claim_held and r.held.holder == won[0]
    assert services[won[0]].marks(ids)[ids[0]].claim.holder == won[0]


def test_take_over_needs_a_reason_and_tells_the_holder_settling_ends_the_claim(
    store: GraphStore, project_id: str
) -> None:
    ids, _cause = _flagged(store, project_id, 2)
    rita, sam = _as(store, project_id, "rita"), _as(store, project_id, "sam")
    rita.claim(D, ids[0])
    assert sam.take_over(D, ids[0], reason="  ").error is ClaimErrorCode.reason_required
    too_long = "x" * (limits.TAKE_OVER_REASON_MAX + 1)
    assert sam.take_over(D, ids[0], reason=too_long).error is ClaimErrorCode.value_too_long
    taken = sam.take_over(D, ids[0], reason="rita is out today")
    assert taken.recorded and taken.held.holder == "rita" and taken.claim.holder == "sam"
    entry = ActivityLog(store, project_id=project_id).list(limit=1, action="take_over")[0]
    assert (entry.actor, entry.notify, entry.reason, entry.target_id) == ("sam", ["rita"], "rita is out today", ids[0])
    # a steward releases someone else's claim; they are told
    stan = _as(store, project_id, "stan")
    assert stan.release(D, ids[0]).error is ClaimErrorCode.claim_held
    assert stan.release(D, ids[0], others=True).recorded
    assert ActivityLog(store, project_id=project_id).list(limit=1, action="release")[0].notify == ["sam"]
    # settling ends the claim, through the core (as the API settles): the claimer's, and anyone's
    rita.claim(D, ids[0])
    sam.claim(D, ids[1])
    traces = DecisionTraces(store, project_id=project_id, agent_id="rita")
    assert traces.reject_decision(ids[0], reason="wrong").recorded
    assert traces.reaffirm_decision(ids[1], explanation="holds").recorded  # rita acts on sam's claim anyway
    marks = rita.marks(ids)
    assert marks[ids[0]].claim is None and marks[ids[1]].claim is None
    assert not store.read(project_id, "MATCH (x:Claim) WHERE x.holder IS NOT NULL RETURN x.id AS id")
    assert rita.claim(D, ids[0]).error is ClaimErrorCode.decision_not_active
    assert rita.claim(D, ids[1]).error is ClaimErrorCode.decision_not_active  # clear again: out of the queue


def test_groups_assignments_marks_and_queues(store: GraphStore, project_id: str) -> None:
    ids, cause = _flagged(store, project_id, 3)
    rita, sam, stan = (_as(store, project_id, who) for who in ("rita", "sam", "stan"))
    assert rita.claim(G, cause).recorded
    assert sam.claim(D, ids[1]).error is ClaimErrorCode.claim_held  # in rita's group
    assert sam.take_over(D, ids[1], reason="I know this one").recorded  # its own claim wins for it
    assert rita.claim(G, "no-such-cause").error is ClaimErrorCode.group_not_found
    assert rita.claim(G, "k" * (limits.GROUP_KEY_MAX + 1)).error is ClaimErrorCode.value_too_long
    assert rita.claim(D, "not-an-id").error is ClaimErrorCode.decision_not_found
    # a steward assigns the group to sam and one decision to rita
    assert stan.assign(G, cause, assignee="sam").recorded
    assert stan.assign(D, ids[2], assignee="rita").recorded
    assert stan.assign(D, ids[2], assignee="r" * (limits.AGENT_ID_MAX + 1)).error is ClaimErrorCode.value_too_long
    assert ActivityLog(store, project_id=project_id).list(limit=1, action="assign")[0].notify == ["rita"]
    marks = rita.marks(ids)
    assert [marks[i].claim.holder for i in ids] == ["rita", "sam", "rita"]
    assert [marks[i].assignment.assignee for i in ids] == ["sam", "sam", "rita"]
    assert rita.group_marks([cause])[cause].claim.holder == "rita"
    held = stan.held()
    assert {(h.holder, h.target_kind) for h in held} == {("rita", G), ("sam", D)}
    # queues by person: the group's decisions but the one assigned to rita herself
    assert [str(d.id) for d in sam.queue(assignee="sam").result.decisions] == ids[:2]
    assert [str(d.id) for d in rita.queue(assignee="rita", claimed_by="rita").result.decisions] == ids
    assert [str(d.id) for d in sam.queue(claimed_by="sam").result.decisions] == [ids[1]]
    assert sam.queue(unassigned=True).result.count == 0
    assert stan.unassign(G, cause).recorded and stan.unassign(G, cause).error is ClaimErrorCode.not_assigned
    assert [str(d.id) for d in sam.queue(unassigned=True).result.decisions] == ids[:2]
    assert rita.marks(ids)[ids[0]].assignment is None


def test_assignments_go_out_and_back_with_the_traces(store: GraphStore, project_id: str) -> None:
    ids, cause = _flagged(store, project_id, 2)
    stan = _as(store, project_id, "stan")
    stan.assign(G, cause, assignee="sam")
    stan.assign(D, ids[1], assignee="rita")
    stan.claim(D, ids[0])  # a lease: not exported
    lines = [json.dumps(line) for line in export_project(store, project_id)]
    assert sum('"op": "assign"' in line for line in lines) == 2
    copy = project_id + "-copy"
    try:
        for number, outcome in import_lines(store, lines, project=copy):
            assert not isinstance(outcome, Exception), (number, outcome)
        moved = [
            str(d.id)
            for d in DecisionTraces(store, project_id=copy, agent_id="x").list_decisions_for_review().decisions
        ]
        marks = _as(store, copy, "x").marks(moved)
        assert sorted(m.assignment.assignee for m in marks.values()) == ["rita", "sam"]
        assert all(m.claim is None for m in marks.values())
        # the copy's assignments happened long ago: nobody is told of them again
        notices = "MATCH (n:Notice) WHERE n.project_id = $p RETURN count(n) AS n"
        assert store.read(project_id, notices, {"p": project_id})[0]["n"] >= 2
        assert store.read(copy, notices, {"p": copy})[0]["n"] == 0
    finally:
        store.drop_project(copy)


def test_the_claims_ending_soon_are_the_holders_own_within_the_window(store: GraphStore, project_id: str) -> None:
    ids, _cause = _flagged(store, project_id, 3)
    rita, sam = _as(store, project_id, "rita"), _as(store, project_id, "sam")
    assert rita.set_lease_minutes(4).recorded  # within the 5 minutes that count as "soon"
    assert rita.claim(D, ids[0]).recorded and sam.claim(D, ids[1]).recorded
    assert rita.set_lease_minutes(30).recorded  # a later claim lasts longer
    assert rita.claim(D, ids[2]).recorded
    soon = rita.ending_soon("rita")
    assert [(h.target_id, h.holder) for h in soon] == [(ids[0], "rita")]  # not sam's, not the one for 30 minutes
    assert soon[0].expires_at - c.now() <= timedelta(minutes=4)
    assert [h.target_id for h in rita.ending_soon("rita", within_s=3_600)] == [ids[0], ids[2]]  # soonest first
    assert rita.release(D, ids[0]).recorded
    assert rita.ending_soon("rita") == []  # a released claim ends nothing
