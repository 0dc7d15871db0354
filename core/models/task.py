"""Tasks, events and steps (seed 001, "Tasks and events", "Lookups and pages")."""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from uuid import UUID

from ..limits import PAYLOAD_MAX
from ._base import Model
from .decision import ConflictGroup, Decision, Support

__all__ = [
    "PAYLOAD_LIMIT",
    "REDACTED_MARKER",
    "Event",
    "EventKind",
    "EventLookup",
    "EventPage",
    "Step",
    "StepKind",
    "StepPage",
    "StepResultBasis",
    "StepResultValidity",
    "StepState",
    "StepSummary",
    "Task",
    "TaskLookup",
    "TaskStatus",
    "TaskView",
]

#: At most this many characters of an event payload are stored.
PAYLOAD_LIMIT = PAYLOAD_MAX
#: The body of a redacted event.
REDACTED_MARKER = "[REDACTED]"


class TaskStatus(str, Enum):
    open = "open"
    done = "done"


class EventKind(str, Enum):
    message = "message"
    tool_call = "tool_call"
    tool_result = "tool_result"
    note = "note"


class StepState(str, Enum):
    not_started = "not_started"
    in_progress = "in_progress"
    completed = "completed"
    failed = "failed"
    unknown = "unknown"


class StepKind(str, Enum):
    read = "read"
    analysis = "analysis"
    other = "other"


class StepResultBasis(str, Enum):
    independent = "independent"
    supported = "supported"
    unknown = "unknown"


class StepResultValidity(str, Enum):
    reusable = "reusable"
    needs_review = "needs_review"
    unavailable = "unavailable"
    unknown = "unknown"


class Task(Model):
    id: UUID
    project_id: str
    name: str
    goal: str
    status: TaskStatus
    event_seq: int
    author: str
    created_at: datetime


class Event(Model):
    id: UUID
    task_id: UUID
    seq: int
    kind: EventKind
    role: str | None
    name: str | None
    payload: str
    #: None only where the reader may not have it: an API token's view of a
    #: redacted event, and the replay of a write whose event was deleted
    payload_sha256: str | None
    truncated: bool
    author: str
    at: datetime
    redacted_at: datetime | None = None


class Step(Model):
    id: UUID
    task_id: UUID
    name: str
    kind: StepKind
    state: StepState
    result_event_seq: int | None
    updated_seq: int
    result_basis: StepResultBasis = StepResultBasis.unknown
    result_supports: list[Support] = []


class StepSummary(Model):
    name: str
    kind: StepKind
    state: StepState
    result_event_seq: int | None
    result_basis: StepResultBasis = StepResultBasis.unknown
    result_validity: StepResultValidity = StepResultValidity.unknown
    result_supports: list[Support] = []


class StepPage(Model):
    steps: list[StepSummary] = []
    truncated: bool = False
    next_after_name: str | None = None


class TaskView(Model):
    task_name: str
    goal: str
    status: TaskStatus
    last_event_seq: int
    steps: dict[StepState, list[StepSummary]]
    step_counts: dict[StepState, int]
    steps_truncated: bool
    decisions: list[Decision] = []
    decision_count: int = 0
    decisions_truncated: bool = False
    review_decisions: list[Decision] = []
    conflicts: list[ConflictGroup] = []
    conflicts_truncated: bool = False


class TaskLookup(Model):
    found: bool
    view: TaskView | None = None


class EventPage(Model):
    found: bool
    events: list[Event] = []
    truncated: bool = False
    next_after_seq: int | None = None


class EventLookup(Model):
    found: bool
    event: Event | None = None
