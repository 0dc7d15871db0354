"""Claims and assignments (issue 32): who is on a decision or a root-cause
group now, and whom a steward gave it to. Ours, not the seed's."""

from __future__ import annotations

from datetime import datetime
from enum import Enum

from ._base import Model

__all__ = [
    "AssignResult",
    "Assignment",
    "Claim",
    "ClaimErrorCode",
    "ClaimResult",
    "TargetKind",
    "TeamMark",
]


class TargetKind(str, Enum):
    """What a claim or an assignment is on: one decision, or every open
    decision of a root-cause group (its key, as the queue groups it)."""

    decision = "decision"
    group = "group"


class ClaimErrorCode(str, Enum):
    #: someone else holds a live claim on it (``ClaimResult.held`` says who, since when)
    claim_held = "claim_held"
    #: a renewal or a release of a claim this person does not hold (or that ran out)
    not_claimed = "not_claimed"
    #: taking over someone's claim needs a reason
    reason_required = "reason_required"
    #: a reason, a group key or a person's name is longer than its limit
    value_too_long = "value_too_long"
    decision_not_found = "decision_not_found"
    #: the decision is settled (not in the review queue): nothing to claim or assign
    decision_not_active = "decision_not_active"
    #: no open decision has this root cause
    group_not_found = "group_not_found"
    #: a lease outside ``limits.LEASE_MINUTES_MIN``..``LEASE_MINUTES_MAX``
    invalid_lease = "invalid_lease"
    #: an unassignment of something nobody is assigned
    not_assigned = "not_assigned"


class Claim(Model, frozen=True):
    """A lease: ``holder`` is on it until ``expires_at`` (renewed while their
    page is open, never past ``cap_at``)."""

    target_kind: TargetKind
    target_id: str
    holder: str
    claimed_at: datetime
    expires_at: datetime
    cap_at: datetime


class ClaimResult(Model):
    recorded: bool
    error: ClaimErrorCode | None = None
    #: the claim as it stands after the write (None after a release)
    claim: Claim | None = None
    #: a refusal ``claim_held``: the claim in the way; a take-over: the one replaced
    held: Claim | None = None


class Assignment(Model, frozen=True):
    target_kind: TargetKind
    target_id: str
    assignee: str
    assigned_by: str
    assigned_at: datetime


class AssignResult(Model):
    recorded: bool
    error: ClaimErrorCode | None = None
    assignment: Assignment | None = None
    #: the assignment replaced or removed
    previous: Assignment | None = None


class TeamMark(Model, frozen=True):
    """What a queue card and a decision page show of the team: the live
    claim that covers the decision (its own, else its group's) and who it is
    assigned to (its own assignment, else its group's)."""

    decision_id: str
    claim: Claim | None = None
    assignment: Assignment | None = None
