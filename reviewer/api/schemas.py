"""The API's request bodies. Responses are the core's own models (results,
pages, lookups), so the API and the library cannot drift apart; a body here
holds exactly the keyword arguments of the core method it feeds."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from core import limits as L
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


def limited(limit: int, **kw: object) -> object:
    """A text field of at most ``limit`` characters (``maxLength`` in the
    OpenAPI document; longer: 422 ``value_too_long``, see ``views``)."""
    return Field(max_length=limit, **kw)  # type: ignore[call-overload]


#: One assumption or one open question.
Item = Annotated[str, Field(max_length=L.ITEM_MAX)]


class CreateTask(Body):
    name: str = limited(L.TASK_NAME_MAX, min_length=1)
    goal: str = limited(L.GOAL_MAX)


class RecordEvent(Body):
    kind: EventKind
    #: cut to 32,000 characters when longer, never refused (the seed's rule)
    payload: str
    role: str | None = limited(L.LABEL_MAX, default=None)
    name: str | None = limited(L.LABEL_MAX, default=None)


class EventBatch(Body):
    events: list[RecordEvent] = Field(max_length=BATCH_MAX)


class SetStep(Body):
    state: StepState
    kind: StepKind = StepKind.other
    result_event_seq: int | None = None
    result_basis: StepResultBasis = StepResultBasis.unknown
    #: more than 100: 422 ``too_many_supports``
    result_supports: list[SupportInput] | None = Field(default=None, max_length=L.STEP_SUPPORTS_MAX)


class _DecisionContent(Body):
    conclusion: str = limited(L.CONCLUSION_MAX)
    rationale: str = limited(L.RATIONALE_MAX)
    #: 1 to 20 (the seed's): else 422 ``support_required``
    supports: list[SupportInput] = Field(max_length=L.DECISION_SUPPORTS_MAX)
    assumptions: list[Item] | None = Field(default=None, max_length=L.ITEMS_MAX)
    open_questions: list[Item] | None = Field(default=None, max_length=L.ITEMS_MAX)
    #: the outcomes of ``fetch`` for the document supports, as the library takes them
    fetched: list[FetchResult] | None = Field(default=None, max_length=L.FETCHED_MAX)


class RecordDecision(_DecisionContent):
    choice_key: str = limited(L.CHOICE_KEY_MAX, min_length=1)


class SupersedeDecision(_DecisionContent):
    explanation: str = limited(L.EXPLANATION_MAX)


class RejectDecision(Body):
    #: blank: 422 ``explanation_required``
    reason: str = limited(L.EXPLANATION_MAX)


class ReaffirmDecision(Body):
    explanation: str | None = limited(L.EXPLANATION_MAX, default=None)


class ContinueReview(Body):
    limit: int | None = None


class Document(Body):
    key: str = limited(L.DOCUMENT_KEY_MAX, min_length=1)
    text: str = limited(L.DOCUMENT_MAX)


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
    #: a body over a limit (``core.limits``): the write's code, as its result would carry it
    recorded: bool | None = None
    error: WriteErrorCode | None = None


class PostComment(Body):
    #: plain text; ``@name`` mentions a person who can see the project
    body: str = limited(L.COMMENT_MAX, min_length=1)
    #: the thread to reply in; none: a new thread
    thread_id: str | None = limited(36, default=None)


class ResolveThread(Body):
    resolved: bool = True
