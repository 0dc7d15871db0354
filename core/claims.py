"""Claims and assignment (issue 32): a team working one review queue.

A **claim** says "I'm on it" about one decision or a whole root-cause group.
It is a lease, not a lock on the data: it lasts the project's lease
(``lease_minutes``, 15 by default, set by a steward), is renewed while the
claimer's page is open (never past ``limits.CLAIM_CAP_MINUTES`` from the
claim) and ends when the claimer releases it, when the decision is settled
(every settle path of ``DecisionTraces`` ends it in its own commit, so the
API's settlements do too) or when it runs out. Reading never claims. What
protects a decision is still its own check at write time.

Two people claiming at once: exactly one wins (each claim is a unit that
locks its target first), the other is refused ``claim_held`` with the claim
that stands in the way. Taking over someone's live claim needs a reason
and tells them (an activity entry ``take_over`` naming them in ``notify``).
A decision's own claim wins over its group's, for that decision.

An **assignment** is a steward's: a decision or a group given to a person
(``assign`` / ``unassign``, the person named in ``notify``); a decision's own
assignment wins over its group's. The dashboard checks who may do what
(roles) and who counts as a person of the project; the core checks the
targets, the lengths (``core.limits``) and the races.

Refused writes return a result with ``recorded=False`` and a
``ClaimErrorCode``; wrong types raise ``ValueError``.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from . import _claim_rows as rows
from . import _common as c
from . import _counters, _review, limits
from ._decision_rows import _DECISION_FIELDS, _decision
from ._schema import CORE_SCHEMA
from .decisions import DecisionTraces
from .models.claims import (
    Assignment,
    AssignResult,
    Claim,
    ClaimErrorCode,
    ClaimResult,
    TargetKind,
    TeamMark,
)
from .models.decision import Decision, DecisionReviewList
from .models.retention import ActorKind
from .stores.base import GraphStore, Tx

__all__ = ["DEFAULT_LEASE_MINUTES", "Claims", "HeldClaim", "TeamQueue"]

DEFAULT_LEASE_MINUTES = 15
#: the live claims an overview lists at most
HELD_SHOWN = 200
#: a claim "ends soon" in the inbox this many seconds before it ends, and at most this many are shown
ENDING_SOON_S = 300
ENDING_SHOWN = 20

_CLAIM_FIELDS = "{0}.holder AS {0}_holder, {0}.claimed_at AS {0}_at, {0}.expires_at AS {0}_exp, {0}.cap_at AS {0}_cap"
_ASSIGN_FIELDS = "{0}.assignee AS {0}_who, {0}.assigned_by AS {0}_by, {0}.assigned_at AS {0}_at"


class HeldClaim(Claim, frozen=True):
    """A live claim as the overview lists it: with its decision's choice key
    (None for a group, whose label the caller reads)."""

    choice_key: str | None = None


class TeamQueue:
    """One page of the queue by assignee, in queue order: the decisions, how
    many match, and each decision's root cause ("" for none)."""

    def __init__(self, decisions: list[Decision], count: int, causes: dict[str, str]) -> None:
        self.result = DecisionReviewList(decisions=decisions, count=count, truncated=False)
        self.causes = causes


def _held(r: dict[str, Any]) -> HeldClaim:
    """A live claim as ``held`` and ``ending_soon`` read it."""
    return HeldClaim(
        target_kind=TargetKind(r["kind"]),
        target_id=r["target"],
        holder=r["c_holder"],
        claimed_at=_time(r["c_at"]),
        expires_at=_time(r["c_exp"]),
        cap_at=_time(r["c_cap"]),
        choice_key=r["choice_key"],
    )


def _time(value: Any) -> datetime:
    return datetime.fromisoformat(value) if isinstance(value, str) else value


class Claims:
    """The claims and assignments of one project, written as one person (or agent)."""

    def __init__(
        self, store: GraphStore, *, project_id: str, agent_id: str, actor_kind: ActorKind | str = ActorKind.agent
    ) -> None:
        self.store = store
        self.project_id = c.text(project_id, "project_id", allow_empty=False)
        self.agent_id = c.text(agent_id, "agent_id", allow_empty=False)
        self.actor_kind = c.enum_value(ActorKind, actor_kind, "actor_kind")
        self._ids_too_long = limits.any_over(
            (self.project_id, limits.PROJECT_ID_MAX), (self.agent_id, limits.AGENT_ID_MAX)
        )
        store.ensure_schema(self.project_id, CORE_SCHEMA)

    # -- the project's lease -----------------------------------------------------

    def lease_minutes(self) -> int:
        found = self.store.read(
            self.project_id,
            "MATCH (s:TeamSettings {id: $id}) RETURN s.lease_minutes AS m",
            {"id": rows.settings_id(self.project_id)},
        )
        return int(found[0]["m"]) if found and found[0]["m"] else DEFAULT_LEASE_MINUTES

    def set_lease_minutes(self, minutes: int) -> ClaimResult:
        """How long a claim lasts without renewal, for every later claim and
        renewal of the project (a steward's setting; the dashboard checks)."""
        minutes = c.integer(minutes, "minutes")
        if not limits.LEASE_MINUTES_MIN <= minutes <= limits.LEASE_MINUTES_MAX:
            return ClaimResult(recorded=False, error=ClaimErrorCode.invalid_lease)
        if self._ids_too_long:
            return ClaimResult(recorded=False, error=ClaimErrorCode.value_too_long)

        def work(tx: Tx) -> ClaimResult:
            at = c.iso(c.now())
            tx.write(
                "MERGE (s:TeamSettings {id: $id}) SET s.project_id = $p, s.lease_minutes = $m",
                {"id": rows.settings_id(self.project_id), "p": self.project_id, "m": minutes},
            )
            self._log(tx, "claim_lease", "project", self.project_id, f"claims last {minutes} minutes", None, at)
            return ClaimResult(recorded=True)

        return self.store.transact(self.project_id, work)

    # -- claims ----------------------------------------------------------------

    def claim(self, kind: TargetKind | str, target: str) -> ClaimResult:
        """Claim a decision (its id) or a group (its root cause), or renew
        one's own claim. Refused ``claim_held`` while someone else's claim
        on it is live (for a decision: its own claim, or its group's)."""
        return self._claim(kind, target, None)

    def take_over(self, kind: TargetKind | str, target: str, *, reason: str) -> ClaimResult:
        """Claim it though someone else holds it: needs a ``reason``, which
        the activity entry keeps for the person whose claim it replaces."""
        reason = c.text(reason, "reason")
        if not reason.strip():
            return ClaimResult(recorded=False, error=ClaimErrorCode.reason_required)
        if limits.over(reason, limits.TAKE_OVER_REASON_MAX):
            return ClaimResult(recorded=False, error=ClaimErrorCode.value_too_long)
        return self._claim(kind, target, reason.strip())

    def _claim(self, kind: Any, target: Any, reason: str | None) -> ClaimResult:
        kind, target, refused = self._target(kind, target)
        if refused is not None:
            return ClaimResult(recorded=False, error=refused)
        cid = rows.node_id("Claim", self.project_id, kind.value, target)

        def work(tx: Tx) -> ClaimResult:
            self._lock(tx, kind, target, cid)
            found = self._read_target(tx, kind, target, claim=cid)
            if found["error"] is not None:
                return ClaimResult(recorded=False, error=found["error"])
            now = c.now()
            own, group = (
                self._live(found, "c", kind, target, now),
                self._live(found, "g", TargetKind.group, found["cause"], now),
            )
            theirs = own if own is not None and own.holder != self.agent_id else None
            if theirs is None and own is None and group is not None and group.holder != self.agent_id:
                theirs = group  # a decision in someone's group: theirs unless it has a claim of its own
            if theirs is not None and reason is None:
                return ClaimResult(recorded=False, error=ClaimErrorCode.claim_held, held=theirs)
            lease = timedelta(minutes=int(found["lease"] or DEFAULT_LEASE_MINUTES))
            mine = own if own is not None and own.holder == self.agent_id else None
            claimed = mine.claimed_at if mine is not None else now
            cap = claimed + timedelta(minutes=limits.CLAIM_CAP_MINUTES)
            claim = Claim(
                target_kind=kind,
                target_id=target,
                holder=self.agent_id,
                claimed_at=claimed,
                expires_at=min(now + lease, cap),
                cap_at=cap,
            )
            self._write_claim(tx, cid, claim)
            at = c.iso(now)
            if theirs is not None:
                summary = f"took over {theirs.holder}'s claim on {found['label']}"
                self._log(tx, "take_over", kind.value, target, summary, reason, at, notify=[theirs.holder])
            elif mine is None:
                self._log(tx, "claim", kind.value, target, f"claimed {found['label']}", None, at)
            return ClaimResult(recorded=True, claim=claim, held=theirs)

        return self.store.transact(self.project_id, work)

    def renew(self, kind: TargetKind | str, target: str) -> ClaimResult:
        """Extend one's own live claim by the lease (the claimer's page is
        still open), never past its cap; ``not_claimed`` once it ran out or
        someone else holds it (the page then says so)."""
        kind, target, refused = self._target(kind, target)
        if refused is not None:
            return ClaimResult(recorded=False, error=refused)
        cid = rows.node_id("Claim", self.project_id, kind.value, target)

        def work(tx: Tx) -> ClaimResult:
            self._lock(tx, kind, target, cid)
            found = self._read_claim(tx, cid)
            now = c.now()
            own = self._live(found, "c", kind, target, now)
            if own is None or own.holder != self.agent_id:
                return ClaimResult(recorded=False, error=ClaimErrorCode.not_claimed, held=own)
            lease = timedelta(minutes=int(found["lease"] or DEFAULT_LEASE_MINUTES))
            claim = own.model_copy(update={"expires_at": max(own.expires_at, min(now + lease, own.cap_at))})
            self._write_claim(tx, cid, claim)
            return ClaimResult(recorded=True, claim=claim)

        return self.store.transact(self.project_id, work)

    def release(self, kind: TargetKind | str, target: str, *, others: bool = False) -> ClaimResult:
        """End a live claim: one's own, or with ``others`` (a steward's
        right; the dashboard checks) anyone's, who is then told."""
        kind, target, refused = self._target(kind, target)
        if refused is not None:
            return ClaimResult(recorded=False, error=refused)
        cid = rows.node_id("Claim", self.project_id, kind.value, target)

        def work(tx: Tx) -> ClaimResult:
            self._lock(tx, kind, target, cid)
            found = self._read_claim(tx, cid)
            own = self._live(found, "c", kind, target, c.now())
            if own is None:
                return ClaimResult(recorded=False, error=ClaimErrorCode.not_claimed)
            if own.holder != self.agent_id and not others:
                return ClaimResult(recorded=False, error=ClaimErrorCode.claim_held, held=own)
            tx.write("MATCH (x:Claim {id: $cid}) DELETE x", {"cid": cid})
            label = found["label"] or target
            theirs = own.holder != self.agent_id
            summary = f"released {own.holder}'s claim on {label}" if theirs else f"released {label}"
            notify = [own.holder] if theirs else None
            self._log(tx, "release", kind.value, target, summary, None, c.iso(c.now()), notify=notify)
            return ClaimResult(recorded=True, held=own)

        return self.store.transact(self.project_id, work)

    # -- assignment --------------------------------------------------------------

    def assign(self, kind: TargetKind | str, target: str, *, assignee: str) -> AssignResult:
        """Give a decision or a group to ``assignee`` (a person of the
        project: the dashboard checks), who is told."""
        assignee = c.text(assignee, "assignee", allow_empty=False).strip()
        if limits.over(assignee, limits.AGENT_ID_MAX):
            return AssignResult(recorded=False, error=ClaimErrorCode.value_too_long)
        kind, target, refused = self._target(kind, target)
        if refused is not None:
            return AssignResult(recorded=False, error=refused)
        aid = rows.node_id("Assignment", self.project_id, kind.value, target)

        def work(tx: Tx) -> AssignResult:
            self._lock(tx, kind, target, aid)
            found = self._read_target(tx, kind, target, assignment=aid)
            if found["error"] is not None:
                return AssignResult(recorded=False, error=found["error"])
            previous = self._assignment(found, "a", kind, target)
            if previous is not None and previous.assignee == assignee:
                return AssignResult(recorded=True, assignment=previous, previous=previous)
            now = c.now()
            assignment = Assignment(
                target_kind=kind, target_id=target, assignee=assignee, assigned_by=self.agent_id, assigned_at=now
            )
            tx.write(
                "MERGE (a:Assignment {id: $aid}) SET a.project_id = $p, a.target_kind = $kind, a.target_id = $t, "
                "a.assignee = $who, a.assigned_by = $by, a.assigned_at = $at",
                {
                    "aid": aid,
                    "p": self.project_id,
                    "kind": kind.value,
                    "t": target,
                    "who": assignee,
                    "by": self.agent_id,
                    "at": c.iso(now),
                },
            )
            summary = f"assigned {found['label']} to {assignee}"
            self._log(tx, "assign", kind.value, target, summary, None, c.iso(now), notify=[assignee])
            return AssignResult(recorded=True, assignment=assignment, previous=previous)

        return self.store.transact(self.project_id, work)

    def unassign(self, kind: TargetKind | str, target: str) -> AssignResult:
        kind, target, refused = self._target(kind, target, settled_ok=True)
        if refused is not None:
            return AssignResult(recorded=False, error=refused)
        aid = rows.node_id("Assignment", self.project_id, kind.value, target)

        def work(tx: Tx) -> AssignResult:
            self._lock(tx, kind, target, aid)
            found = self._read_claim(tx, None, assignment=aid)
            previous = self._assignment(found, "a", kind, target)
            if previous is None:
                return AssignResult(recorded=False, error=ClaimErrorCode.not_assigned)
            tx.write("MATCH (a:Assignment {id: $aid}) DELETE a", {"aid": aid})
            summary = f"unassigned {previous.assignee} from {found['label'] or target}"
            self._log(tx, "unassign", kind.value, target, summary, None, c.iso(c.now()), notify=[previous.assignee])
            return AssignResult(recorded=True, previous=previous)

        return self.store.transact(self.project_id, work)

    # -- reads -----------------------------------------------------------------

    def marks(self, decision_ids: list[str]) -> dict[str, TeamMark]:
        """Each decision's live claim and assignment (its own, else its
        group's), for a whole page of cards in two reads (its groups, then
        the claims and assignments), whatever the page's size."""
        ids = [i for i in dict.fromkeys(str(x).lower() for x in decision_ids) if c.is_uuid(i)]
        if not ids:
            return {}
        # the decisions' groups first, then every node by an id passed in
        # (a lookup by a parameter, which every backend seeks in its index)
        causes = self.store.read(
            self.project_id,
            "UNWIND $ids AS id MATCH (d:Decision {id: id}) WHERE d.project_id = $p RETURN id, d.root_cause AS cause",
            {"ids": ids, "p": self.project_id},
        )
        pre = self._prefixes()
        keyed = [
            {
                "id": r["id"],
                "cause": r["cause"],
                "c": pre["cd"] + r["id"],
                "a": pre["ad"] + r["id"],
                "g": pre["cg"] + r["cause"] if r["cause"] else None,
                "ga": pre["ag"] + r["cause"] if r["cause"] else None,
            }
            for r in causes
        ]
        if not keyed:
            return {}
        found = self.store.read(
            self.project_id,
            "UNWIND $rows AS r OPTIONAL MATCH (c:Claim {id: r.c}) OPTIONAL MATCH (g:Claim {id: r.g}) "
            "OPTIONAL MATCH (a:Assignment {id: r.a}) OPTIONAL MATCH (ga:Assignment {id: r.ga}) "
            f"RETURN r.id AS id, r.cause AS cause, {_CLAIM_FIELDS.format('c')}, {_CLAIM_FIELDS.format('g')}, "
            f"{_ASSIGN_FIELDS.format('a')}, {_ASSIGN_FIELDS.format('ga')}",
            {"rows": keyed},
        )
        now = c.now()
        out: dict[str, TeamMark] = {}
        for r in found:
            claim = self._live(r, "c", TargetKind.decision, r["id"], now) or self._live(
                r, "g", TargetKind.group, r["cause"], now
            )
            assignment = self._assignment(r, "a", TargetKind.decision, r["id"]) or self._assignment(
                r, "ga", TargetKind.group, r["cause"]
            )
            out[r["id"]] = TeamMark(decision_id=r["id"], claim=claim, assignment=assignment)
        return out

    def group_marks(self, causes: list[str]) -> dict[str, TeamMark]:
        """Each group's own live claim and assignment (for its heading)."""
        keys = [k for k in dict.fromkeys(causes) if k]
        if not keys:
            return {}
        found = self.store.read(
            self.project_id,
            "UNWIND $keys AS k OPTIONAL MATCH (g:Claim {id: $cg + k}) OPTIONAL MATCH (ga:Assignment {id: $ag + k}) "
            f"RETURN k, {_CLAIM_FIELDS.format('g')}, {_ASSIGN_FIELDS.format('ga')}",
            {"keys": keys, **self._prefixes()},
        )
        now = c.now()
        return {
            r["k"]: TeamMark(
                decision_id="",
                claim=self._live(r, "g", TargetKind.group, r["k"], now),
                assignment=self._assignment(r, "ga", TargetKind.group, r["k"]),
            )
            for r in found
        }

    def held(self, *, limit: int = HELD_SHOWN) -> list[HeldClaim]:
        """The project's live claims, by holder then age (the overview's
        "who holds which claims"); at most ``limit``."""
        now = c.iso(c.now())
        found = self.store.read(
            self.project_id,
            "MATCH (c:Claim) WHERE c.project_id = $p AND c.holder IS NOT NULL AND c.expires_at > $now "
            "WITH c ORDER BY c.holder, c.claimed_at LIMIT $n "
            "OPTIONAL MATCH (d:Decision {id: c.target_id}) WHERE c.target_kind = 'decision' "
            f"RETURN c.target_kind AS kind, c.target_id AS target, d.choice_key AS choice_key, {_CLAIM_FIELDS.format('c')}",
            {"p": self.project_id, "now": now, "n": c.clamp(limit, HELD_SHOWN, HELD_SHOWN)},
        )
        return [_held(r) for r in found]

    def ending_soon(self, holder: str, *, within_s: int = ENDING_SOON_S) -> list[HeldClaim]:
        """``holder``'s live claims that end within ``within_s`` seconds,
        soonest first (the inbox's "your claims ending soon"); at most
        ``ENDING_SHOWN``. A claim the holder's open page keeps renewing
        shows here only when its cap is near or the page was closed."""
        holder = c.text(holder, "holder", allow_empty=False)
        now = c.now()
        found = self.store.read(
            self.project_id,
            "MATCH (c:Claim) WHERE c.holder = $who AND c.project_id = $p AND c.expires_at > $now "
            "AND c.expires_at <= $until "
            "WITH c ORDER BY c.expires_at LIMIT $n "
            "OPTIONAL MATCH (d:Decision {id: c.target_id}) WHERE c.target_kind = 'decision' "
            f"RETURN c.target_kind AS kind, c.target_id AS target, d.choice_key AS choice_key, {_CLAIM_FIELDS.format('c')}",
            {
                "who": holder,
                "p": self.project_id,
                "now": c.iso(now),
                "until": c.iso(now + timedelta(seconds=c.clamp(within_s, ENDING_SOON_S, 7_200))),
                "n": ENDING_SHOWN,
            },
        )
        return [_held(r) for r in found]

    def queue(
        self,
        *,
        assignee: str | None = None,
        claimed_by: str | None = None,
        unassigned: bool = False,
        offset: int = 0,
        limit: int = 20,
    ) -> TeamQueue:
        """A page of the review queue (queue order) of what is assigned to
        ``assignee`` and/or claimed (live) by ``claimed_by`` ("My queue":
        both, the same person), or with ``unassigned``, of what nobody is
        assigned. A person's part reads only their assignments and claims
        and the decisions they name; "unassigned" reads the queue past the
        assigned (like any filter that is not kept counted)."""
        limit = c.clamp(limit, 20, 100)
        offset = max(0, c.integer(offset, "offset"))
        if unassigned:
            return self._unassigned(offset, limit)
        ids: set[str] = set()
        causes: set[str] = set()
        p = {"p": self.project_id, "now": c.iso(c.now())}
        if assignee:
            for r in self.store.read(
                self.project_id,
                "MATCH (a:Assignment {assignee: $who}) WHERE a.project_id = $p "
                "RETURN a.target_kind AS kind, a.target_id AS target",
                {**p, "who": assignee},
            ):
                (ids if r["kind"] == "decision" else causes).add(r["target"])
        if claimed_by:
            for r in self.store.read(
                self.project_id,
                "MATCH (c:Claim {holder: $who}) WHERE c.project_id = $p AND c.expires_at > $now "
                "RETURN c.target_kind AS kind, c.target_id AS target",
                {**p, "who": claimed_by},
            ):
                (ids if r["kind"] == "decision" else causes).add(r["target"])
        open_rows = self._open_positions(sorted(ids), sorted(causes), assignee or "")
        ordered = sorted(open_rows.items(), key=lambda kv: (kv[1], kv[0]))
        page = [i for i, _ in ordered[offset : offset + limit]]
        return self._page(page, len(ordered))

    def _open_positions(self, ids: list[str], causes: list[str], who: str | None) -> dict[str, int]:
        """The open decisions among ``ids`` and in the groups ``causes``
        (but not those of a group assigned, each by itself, to someone
        other than ``who``; None: every one of the groups), with their
        queue positions."""
        found: dict[str, int] = {}
        if ids:
            for r in self.store.read(
                self.project_id,
                "UNWIND $ids AS id MATCH (d:Decision {id: id}) WHERE d.review_open = true AND d.project_id = $p "
                "RETURN d.id AS id, d.queue_pos AS pos",
                {"ids": ids, "p": self.project_id},
            ):
                found[r["id"]] = r["pos"] or 0
        if causes:
            for r in self.store.read(
                self.project_id,
                "UNWIND $keys AS k MATCH (d:Decision {root_cause: k}) WHERE d.review_open = true AND d.project_id = $p "
                "OPTIONAL MATCH (a:Assignment {id: $ad + d.id}) WITH d, a WHERE $who IS NULL OR a IS NULL OR a.assignee = $who "
                "RETURN d.id AS id, d.queue_pos AS pos",
                {"keys": causes, "p": self.project_id, "who": who, **self._prefixes()},
            ):
                found[r["id"]] = r["pos"] or 0
        return found

    def _unassigned(self, offset: int, limit: int) -> TeamQueue:
        """The queue past what is assigned: its count is the kept open count
        less the assigned open decisions (read through the assignments),
        its page read as the queue's pages are (in position order, widening
        ranges on FalkorDB), with the assigned left out."""
        taken = self.store.read(
            self.project_id,
            "MATCH (a:Assignment) WHERE a.project_id = $p AND a.assignee IS NOT NULL "
            "RETURN a.target_kind AS kind, a.target_id AS target",
            {"p": self.project_id},
        )
        ids = sorted({r["target"] for r in taken if r["kind"] == "decision"})
        causes = sorted({r["target"] for r in taken if r["kind"] == "group"})
        assigned = self._open_positions(ids, causes, None)
        count = max(0, _counters.open_count(self.store, self.project_id) - len(assigned))
        if offset >= count:
            return TeamQueue([], count, {})
        where = [] if self.store.graph_per_project else ["d.project_id = $p"]
        where += ["NOT d.id IN $ids", "(d.root_cause IS NULL OR NOT d.root_cause IN $causes)"]
        params = {"p": self.project_id, "ids": ids, "causes": causes, "skip": offset, "n": limit}
        traces = DecisionTraces(self.store, project_id=self.project_id, agent_id=self.agent_id)
        rows: dict[str, dict[str, Any]] = {}
        decisions = traces._queue_page(where, params, count, scope=None, rows=rows)
        result = TeamQueue(decisions, count, {i: r["cause"] for i, r in rows.items()})
        return result

    def _page(self, ids: list[str], count: int) -> TeamQueue:
        if not ids:
            return TeamQueue([], count, {})
        found = {
            r["id"]: r
            for r in self.store.read(
                self.project_id,
                f"UNWIND $ids AS id MATCH (d:Decision {{id: id}}) RETURN {_DECISION_FIELDS}, "
                "coalesce(d.root_cause, '') AS cause",
                {"ids": ids},
            )
        }
        decisions = [_decision(found[i]) for i in ids if i in found]
        return TeamQueue(decisions, count, {i: found[i]["cause"] for i in ids if i in found})

    # -- the parts of a write ----------------------------------------------------

    def _target(self, kind: Any, target: Any, *, settled_ok: bool = False) -> tuple[TargetKind, str, Any]:
        """The checked target (kind, id or key) and a refusal, or None."""
        kind = c.enum_value(TargetKind, kind, "kind")
        target = c.text(target, "target")
        if self._ids_too_long:
            return kind, target, ClaimErrorCode.value_too_long
        if kind is TargetKind.decision:
            if not c.is_uuid(target.lower()):
                return kind, target, ClaimErrorCode.decision_not_found
            return kind, target.lower(), None
        if limits.over(target, limits.GROUP_KEY_MAX):
            return kind, target, ClaimErrorCode.value_too_long
        if not target.strip():
            return kind, target, ClaimErrorCode.group_not_found
        return kind, target, None

    def _lock(self, tx: Tx, kind: TargetKind, target: str, node: str) -> None:
        """A decision's units lock the decision (as its settlements do: a
        claim never lands on a decision being settled); a group's, the
        claim's or assignment's own node (made on Neo4j to be locked)."""
        if kind is TargetKind.decision:
            tx.lock("Decision", target)
        else:
            tx.lock_kept("Claim" if node.startswith("claim") else "Assignment", node, self.project_id)

    def _prefixes(self) -> dict[str, str]:
        p = self.project_id
        return {
            "cd": rows.prefix("Claim", p, "decision"),
            "cg": rows.prefix("Claim", p, "group"),
            "ad": rows.prefix("Assignment", p, "decision"),
            "ag": rows.prefix("Assignment", p, "group"),
        }

    def _read_target(
        self, tx: Tx, kind: TargetKind, target: str, *, claim: str | None = None, assignment: str | None = None
    ) -> dict[str, Any]:
        """The target's state (``error``: why it cannot be claimed or
        assigned, else None; ``label``: what the activity log calls it),
        its claim (``c_*``), for a decision its group's claim (``g_*``), its
        assignment (``a_*``) and the project's lease, in one read."""
        params = {
            "p": self.project_id,
            "t": target,
            "cid": claim or "",
            "aid": assignment or "",
            "sid": rows.settings_id(self.project_id),
            **self._prefixes(),
        }
        if kind is TargetKind.decision:
            head = (
                "OPTIONAL MATCH (d:Decision {id: $t}) WHERE d.project_id = $p "
                "WITH d OPTIONAL MATCH (g:Claim {id: $cg + d.root_cause}) "
            )
        else:
            head = (
                "OPTIONAL MATCH (d:Decision {root_cause: $t}) WHERE d.review_open = true AND d.project_id = $p "
                "WITH d LIMIT 1 OPTIONAL MATCH (g:Claim {id: '-'}) "
            )
        found = tx.read(
            head
            + "WITH d, g OPTIONAL MATCH (c:Claim {id: $cid}) WITH d, g, c OPTIONAL MATCH (a:Assignment {id: $aid}) "
            "WITH d, g, c, a OPTIONAL MATCH (s:TeamSettings {id: $sid}) "
            "RETURN d.id AS did, d.status AS status, d.review_open AS open, d.choice_key AS choice_key, "
            "d.root_cause AS cause, "
            f"s.lease_minutes AS lease, {_CLAIM_FIELDS.format('c')}, {_CLAIM_FIELDS.format('g')}, "
            f"{_ASSIGN_FIELDS.format('a')}",
            params,
        )[0]
        error = None
        if kind is TargetKind.decision:
            if found["did"] is None:
                error = ClaimErrorCode.decision_not_found
            elif found["status"] != "active" or not found["open"]:
                error = ClaimErrorCode.decision_not_active
            found["label"] = found["choice_key"] or target
        else:
            if found["did"] is None:
                error = ClaimErrorCode.group_not_found
            found["label"] = f"the group {target}"
        found["error"] = error
        return found

    def _read_claim(self, tx: Tx, cid: str | None, *, assignment: str | None = None) -> dict[str, Any]:
        """A claim (``c_*``) or an assignment (``a_*``) with the project's
        lease and what the activity log calls its target (``label``)."""
        found = tx.read(
            "OPTIONAL MATCH (c:Claim {id: $cid}) WITH c OPTIONAL MATCH (a:Assignment {id: $aid}) "
            "WITH c, a OPTIONAL MATCH (s:TeamSettings {id: $sid}) "
            "WITH c, a, s OPTIONAL MATCH (d:Decision {id: coalesce(c.target_id, a.target_id)}) "
            "WHERE coalesce(c.target_kind, a.target_kind) = 'decision' "
            f"RETURN s.lease_minutes AS lease, d.choice_key AS choice_key, coalesce(c.target_kind, a.target_kind) AS kind, "
            f"coalesce(c.target_id, a.target_id) AS target, {_CLAIM_FIELDS.format('c')}, {_ASSIGN_FIELDS.format('a')}",
            {"cid": cid or "", "aid": assignment or "", "sid": rows.settings_id(self.project_id)},
        )[0]
        if found["kind"] == "group":
            found["label"] = f"the group {found['target']}"
        else:
            found["label"] = found["choice_key"]
        return found

    @staticmethod
    def _live(row: dict[str, Any], var: str, kind: TargetKind, target: str | None, now: datetime) -> Claim | None:
        """The claim read as ``var_*``, if someone holds it and it has not run out."""
        holder, expires = row.get(f"{var}_holder"), row.get(f"{var}_exp")
        if holder is None or expires is None or _time(expires) <= now or target is None:
            return None
        return Claim(
            target_kind=kind,
            target_id=target,
            holder=holder,
            claimed_at=_time(row[f"{var}_at"]),
            expires_at=_time(expires),
            cap_at=_time(row[f"{var}_cap"]),
        )

    @staticmethod
    def _assignment(row: dict[str, Any], var: str, kind: TargetKind, target: str | None) -> Assignment | None:
        who = row.get(f"{var}_who")
        if who is None or target is None:
            return None
        return Assignment(
            target_kind=kind,
            target_id=target,
            assignee=who,
            assigned_by=row[f"{var}_by"],
            assigned_at=_time(row[f"{var}_at"]),
        )

    def _write_claim(self, tx: Tx, cid: str, claim: Claim) -> None:
        tx.write(
            "MERGE (x:Claim {id: $cid}) SET x.project_id = $p, x.target_kind = $kind, x.target_id = $t, "
            "x.holder = $who, x.claimed_at = $at, x.expires_at = $exp, x.cap_at = $cap",
            {
                "cid": cid,
                "p": self.project_id,
                "kind": claim.target_kind.value,
                "t": claim.target_id,
                "who": claim.holder,
                "at": c.iso(claim.claimed_at),
                "exp": c.iso(claim.expires_at),
                "cap": c.iso(claim.cap_at),
            },
        )

    def _log(
        self,
        tx: Tx,
        action: str,
        kind: str,
        target: str,
        summary: str,
        reason: str | None,
        at: str,
        *,
        notify: list[str] | None = None,
    ) -> None:
        _review.log_activity(
            tx,
            self.project_id,
            self.agent_id,
            action,
            kind,
            target,
            summary,
            reason,
            at,
            actor_kind=self.actor_kind.value,
            notify=notify,
        )
