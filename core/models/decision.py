"""Decisions and their supports (seed 001, "Decisions", "Supports", "Pages and lookups")."""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Annotated, Literal
from uuid import UUID

from pydantic import Field

from ..limits import DECISION_SUPPORTS_MAX
from ._base import Model

__all__ = [
    "MAX_SUPPORTS",
    "ConflictGroup",
    "ConflictList",
    "Decision",
    "DecisionHit",
    "DecisionLookup",
    "DecisionPage",
    "DecisionPageLookup",
    "DecisionReviewList",
    "DecisionStatus",
    "DecisionSupport",
    "DecisionSupportInput",
    "DocumentSupport",
    "DocumentSupportInput",
    "EventSupport",
    "EventSupportInput",
    "EvidenceKind",
    "ReviewProgress",
    "ReviewReason",
    "ReviewState",
    "Revision",
    "Support",
    "SupportHistoryPage",
    "SupportInput",
    "SupportKind",
]

#: A decision cites at most this many supports (a step result: ``limits.STEP_SUPPORTS_MAX``).
MAX_SUPPORTS = DECISION_SUPPORTS_MAX


class DecisionStatus(str, Enum):
    active = "active"
    rejected = "rejected"
    superseded = "superseded"


class ReviewState(str, Enum):
    clear = "clear"
    needs_review = "needs_review"
    unknown = "unknown"


class ReviewReason(str, Enum):
    source_changed = "source_changed"
    source_removed = "source_removed"
    source_changed_during_recording = "source_changed_during_recording"
    dependency_review = "dependency_review"


class SupportKind(str, Enum):
    document = "document"
    event = "event"
    decision = "decision"


class EvidenceKind(str, Enum):
    span = "span"
    chunk = "chunk"


class _ReviewFields(Model):
    current: bool = True
    reviewed_by: str | None = None
    reviewed_at: datetime | None = None
    review_explanation: str | None = None


class DocumentSupport(_ReviewFields):
    kind: Literal["document"] = "document"
    evidence_id: str
    document_key: str
    document_node_id: UUID
    content_hash_prefix: str
    content_hash: str
    reference_kind: EvidenceKind
    char_start: int | None = None
    char_end: int | None = None
    chunk_id: UUID | None = None
    recorded_activation_seq: int | None = None


class EventSupport(_ReviewFields):
    kind: Literal["event"] = "event"
    event_id: UUID
    task_name: str
    seq: int


class DecisionSupport(_ReviewFields):
    kind: Literal["decision"] = "decision"
    decision_id: UUID


Support = Annotated[DocumentSupport | EventSupport | DecisionSupport, Field(discriminator="kind")]


class DocumentSupportInput(Model):
    kind: Literal["document"] = "document"
    evidence_id: str


class EventSupportInput(Model):
    kind: Literal["event"] = "event"
    task_name: str
    seq: int


class DecisionSupportInput(Model):
    kind: Literal["decision"] = "decision"
    decision_id: str


SupportInput = Annotated[DocumentSupportInput | EventSupportInput | DecisionSupportInput, Field(discriminator="kind")]


class Decision(Model):
    id: UUID
    task_id: UUID
    task_name: str
    choice_key: str
    revision: int
    conclusion: str
    rationale: str
    assumptions: list[str]
    open_questions: list[str]
    author: str
    status: DecisionStatus
    review_state: ReviewState
    review_reason: ReviewReason | None = None
    rejection_reason: str | None = None
    rejected_by: str | None = None
    created_at: datetime
    supports: list[Support] = []


class DecisionPage(Model):
    decisions: list[Decision] = []
    count: int = 0
    truncated: bool = False


class DecisionPageLookup(Model):
    found: bool
    page: DecisionPage = DecisionPage()


class DecisionLookup(Model):
    found: bool
    decision: Decision | None = None


class DecisionReviewList(Model):
    decisions: list[Decision] = []
    count: int = 0
    truncated: bool = False


class SupportHistoryPage(Model):
    supports: list[Support] = []
    truncated: bool = False
    next_after_ordinal: int | None = None


class DecisionHit(Model):
    decision: Decision
    task_goal: str
    marker: Literal["precedent"] = "precedent"


class ConflictGroup(Model):
    choice_key: str
    decisions: list[Decision] = []
    truncated: bool = False


class ConflictList(Model):
    groups: list[ConflictGroup] = []
    truncated: bool = False


class ReviewProgress(Model):
    """What one ``continue_decision_review`` call did (not in the seed, which
    leaves the return value open)."""

    moved: int
    flagged: list[str] = []
    cleared: list[str] = []
    #: Whether decisions may still wait (call again); ``review_counts()``
    #: gives how many.
    more: bool = False


class Revision(Model):
    """One revision of a choice, with the explanation that made it replace the
    revision before (None for the first)."""

    decision: Decision
    explanation: str | None = None
