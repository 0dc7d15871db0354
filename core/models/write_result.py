"""Write results and error codes (seed 001, "Write results", "Write error codes")."""

from __future__ import annotations

from enum import Enum

from ._base import Model
from .decision import Decision
from .task import Event, Step, Task

__all__ = [
    "CreateTaskResult",
    "ReaffirmDecisionResult",
    "RecordDecisionResult",
    "RecordEventResult",
    "RejectDecisionResult",
    "SetStepResult",
    "WriteErrorCode",
    "WriteResult",
]


class WriteErrorCode(str, Enum):
    # conversation history writes
    task_exists = "task_exists"
    task_not_found = "task_not_found"
    event_not_found = "event_not_found"
    support_required = "support_required"
    support_invalid = "support_invalid"
    request_id_reused = "request_id_reused"
    invalid_request_id = "invalid_request_id"
    # decision writes
    choice_exists = "choice_exists"
    supersede_target_invalid = "supersede_target_invalid"
    explanation_required = "explanation_required"
    support_malformed = "support_malformed"
    support_not_fetched = "support_not_fetched"
    support_out_of_scope = "support_out_of_scope"
    support_document_not_found = "support_document_not_found"
    support_event_not_found = "support_event_not_found"
    support_decision_not_found = "support_decision_not_found"
    decision_not_found = "decision_not_found"
    decision_not_active = "decision_not_active"
    support_decision_not_active = "support_decision_not_active"
    cannot_revalidate = "cannot_revalidate"
    # ours (core/limits.py): every write
    #: a text, or a list of texts, is longer than its limit; nothing is written
    value_too_long = "value_too_long"
    #: a step result cites more supports than ``limits.STEP_SUPPORTS_MAX``
    too_many_supports = "too_many_supports"


class WriteResult(Model):
    recorded: bool
    error: WriteErrorCode | None = None


class CreateTaskResult(WriteResult):
    task: Task | None = None


class RecordEventResult(WriteResult):
    event: Event | None = None


class SetStepResult(WriteResult):
    step: Step | None = None


class RecordDecisionResult(WriteResult):
    decision: Decision | None = None
    warnings: list[str] = []


class RejectDecisionResult(WriteResult):
    decision: Decision | None = None


class ReaffirmDecisionResult(WriteResult):
    decision: Decision | None = None
