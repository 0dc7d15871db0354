"""The API's request bodies. Responses are the core's own models (results,
pages, lookups), so the API and the library cannot drift apart; a body here
holds exactly the keyword arguments of the core method it feeds."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from core.models import (
    EventKind,
    RecordEventResult,
    StepKind,
    StepResultBasis,
    StepState,
    Task,
    WriteErrorCode,
)
from core.models.decision import SupportInput
from core.models.knowledge import FetchResult

BATCH_MAX = 1000  # events in one batch request


class Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CreateTask(Body):
    name: str = Field(min_length=1)
    goal: str


class RecordEvent(Body):
    kind: EventKind
    payload: str
    role: str | None = None
    name: str | None = None


class EventBatch(Body):
    events: list[RecordEvent] = Field(max_length=BATCH_MAX)


class SetStep(Body):
    state: StepState
    kind: StepKind = StepKind.other
    result_event_seq: int | None = None
    result_basis: StepResultBasis = StepResultBasis.unknown
    result_supports: list[SupportInput] | None = None


class _DecisionContent(Body):
    conclusion: str
    rationale: str
    supports: list[SupportInput]
    assumptions: list[str] | None = None
    open_questions: list[str] | None = None
    #: the outcomes of ``fetch`` for the document supports, as the library takes them
    fetched: list[FetchResult] | None = None


class RecordDecision(_DecisionContent):
    choice_key: str = Field(min_length=1)


class SupersedeDecision(_DecisionContent):
    explanation: str


class RejectDecision(Body):
    reason: str = Field(min_length=1)


class ReaffirmDecision(Body):
    explanation: str | None = None


class ContinueReview(Body):
    limit: int | None = None


class Document(Body):
    key: str = Field(min_length=1)
    text: str


class Span(Body):
    key: str = Field(min_length=1)
    char_start: int
    char_end: int


# -- responses that are not a single core model --------------------------------


class TaskList(BaseModel):
    tasks: list[Task]
    more: bool


class EventBatchResult(BaseModel):
    """A batch of events: written all or nothing without an Idempotency-Key
    (``load_events``); with one, one by one with a request id each (derived
    from the key and the event's place), so a retried batch answers the
    events already recorded and records the rest."""

    recorded: bool
    error: WriteErrorCode | None = None
    last_event_seq: int | None = None
    results: list[RecordEventResult] = []


class EvidenceId(BaseModel):
    evidence_id: str


class Problem(BaseModel):
    """Anything other than a write's own result: bad input (``detail`` lists
    each field and why), a missing or revoked token, a limit, a store that is
    down."""

    detail: str | list[dict]
