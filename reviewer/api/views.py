"""The agents' JSON API, ``/api/v1/projects/<project>/…``: the core's public
services over HTTP, with the core's own models as bodies.

Every request carries a project token (``Authorization: Bearer rvw_…``). The
token's agent id is the author of what it writes; a token of one project sees
no other (404); a revoked token is refused (401); an ``automation`` token
reads and reviews but records no work. A refused write answers the core's
result, ``{"recorded": false, "error": "<seed code>"}``, with 404 for what is
not there, 409 for a conflict of state and 422 for refused input. The
``Idempotency-Key`` header is the write's ``request_id``, kept per project and
agent: a token of another agent neither gets its result nor spoils it. A
redacted event reaches a token without its ``payload_sha256`` (null).
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from ninja import Header, NinjaAPI, Path, Router
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.renderers import JSONRenderer
from ninja.responses import NinjaJSONEncoder, Status
from ninja.security import HttpBearer
from pydantic import TypeAdapter

from core import limits
from core._common import unescape_segment
from core.decisions import DecisionTraces
from core.history import ConversationHistory
from core.knowledge import Graph
from core.models import (
    ConflictList,
    CreateTaskResult,
    Decision,
    DecisionHit,
    DecisionPage,
    DecisionReviewList,
    Event,
    EventPage,
    ReaffirmDecisionResult,
    RecordDecisionResult,
    RecordEventResult,
    RejectDecisionResult,
    ReviewProgress,
    ReviewReason,
    ReviewState,
    Revision,
    SetStepResult,
    StepPage,
    SupportHistoryPage,
    TaskView,
    WriteErrorCode,
)
from core.models.knowledge import DocumentErrorCode, DocumentInfo, DocumentVersion, DocumentWriteResult, FetchResult
from core.stores import GraphStoreError, GraphStoreWriteConflictError

from .. import converters  # noqa: F401  (registers the segment converter)
from ..models import ApiToken
from ..store import get_store, reset_store
from . import schemas as s
from .limits import BodyTooLarge, RateLimited, check_body, check_rate
from .tokens import find_token, touch

log = logging.getLogger(__name__)

NOT_FOUND = {
    WriteErrorCode.task_not_found,
    WriteErrorCode.event_not_found,
    WriteErrorCode.decision_not_found,
    DocumentErrorCode.document_not_found,
}
CONFLICT = {
    WriteErrorCode.task_exists,
    WriteErrorCode.choice_exists,
    WriteErrorCode.request_id_reused,
    WriteErrorCode.decision_not_active,
    WriteErrorCode.cannot_revalidate,
    DocumentErrorCode.document_exists,
    DocumentErrorCode.request_id_reused,
}
PROBLEMS = {401: s.Problem, 413: s.Problem, 429: s.Problem, 503: s.Problem}


def reads(model: Any) -> dict[int, Any]:
    """The answers of a read: the model, or a problem (404: the project or
    the thing is not there; 422: bad input)."""
    return {200: model, 404: s.Problem, 422: s.Problem, **PROBLEMS}


def reviews(result: Any) -> dict[int, Any]:
    """The answers of a write: its result (refused: 404, 409, 422 with the
    seed's code), or a problem (404: no such project; 422: bad input)."""
    return {200: result, 404: result | s.Problem, 409: result, 422: result | s.Problem, **PROBLEMS}


def records(result: Any) -> dict[int, Any]:
    """A write that records work: an automation token may not (403)."""
    return {**reviews(result), 403: s.Problem}


def same_project(segment: str | None, project_id: str) -> bool:
    """The path's project segment names the token's project: as the id
    itself, or escaped as the dashboard and the Python client escape it
    (``core._common.escape_segment``: an id such as ``a/b`` cannot be one
    segment otherwise). The token alone decides which project is read."""
    return segment is not None and (segment == project_id or unescape_segment(segment) == project_id)


class TokenAuth(HttpBearer):
    """A live token, its body size and its rate, checked before the body is read."""

    openapi_description = "A project token made by a steward (`rvw_…`)."

    def authenticate(self, request: HttpRequest, token: str) -> ApiToken | None:
        record = find_token(token)
        if record is None or record.revoked_at is not None:
            return None
        match = request.resolver_match
        if match is not None and not same_project(match.kwargs.get("project"), record.project_id):
            # before the body or the query is read: another project's token learns nothing
            raise Http404("no such project")
        check_body(request)
        check_rate(record.pk)
        touch(record)
        return record


class _Encoder(NinjaJSONEncoder):
    """Times as the core's models write them (Django's encoder would cut
    them to milliseconds, so the API would answer other values than the
    library)."""

    def default(self, o: Any) -> Any:
        if isinstance(o, datetime):
            return TypeAdapter(datetime).dump_python(o, mode="json")
        return super().default(o)


class _Renderer(JSONRenderer):
    encoder_class = _Encoder


class ReviewerApi(NinjaAPI):
    def get_openapi_operation_id(self, operation: Any) -> str:
        return operation.view_func.__name__  # the core method's name


api = ReviewerApi(
    title="Reviewer API",
    version="1",
    renderer=_Renderer(),
    urls_namespace="api",
    auth=TokenAuth(),
    docs_url=None,
    openapi_url="/openapi.json",
    description="Agents record their work (tasks, events, steps, documents, decisions) and read the review "
    "state of one project with a project token. Bodies are the core library's models.",
)


# -- errors -------------------------------------------------------------------


@api.exception_handler(GraphStoreError)
def _store_down(request: HttpRequest, exc: GraphStoreError) -> HttpResponse:
    if isinstance(exc, GraphStoreWriteConflictError):
        # the store answers, but other writers kept winning: nothing was written; the store stays open
        log.warning("write gave up under contention: %s", exc)
        response = api.create_response(
            request, {"detail": "too many writers at once; nothing was written, try again"}, status=503
        )
        response["Retry-After"] = "1"
        return response
    log.warning("graph store unavailable: %s", exc)
    reset_store()
    response = api.create_response(request, {"detail": "the graph store is unavailable; try again"}, status=503)
    response["Retry-After"] = "5"
    return response


@api.exception_handler(ValueError)
def _bad_value(request: HttpRequest, exc: ValueError) -> HttpResponse:
    # the core's answer to a value of the wrong kind (or a malformed evidence id)
    return api.create_response(
        request, {"detail": [{"loc": ["body"], "msg": str(exc), "type": "value_error"}]}, status=422
    )


#: pydantic's error types for a value over its ``max_length``
_TOO_LONG = {"string_too_long", "too_long"}


def limit_code(errors: list[dict[str, Any]]) -> WriteErrorCode | None:
    """The write's code when every error is a value over its limit
    (``core.limits``), as the core would answer it: the seed's
    ``support_required`` past a decision's 20 supports, ``too_many_supports``
    past a step result's, ``value_too_long`` for everything else."""
    if not errors or any(e.get("type") not in _TOO_LONG for e in errors):
        return None
    last = {str(e.get("loc", ())[-1]) for e in errors if e.get("loc")}
    if last == {"supports"}:
        return WriteErrorCode.support_required
    if last == {"result_supports"}:
        return WriteErrorCode.too_many_supports
    return WriteErrorCode.value_too_long


def _without_input(error: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in error.items() if k != "input"}


@api.exception_handler(ValidationError)
def _invalid(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    # ninja's own answer, with the write's code when only limits were broken
    code = limit_code(exc.errors)
    body: dict[str, Any] = {"detail": exc.errors}
    if code is not None:  # (without the over-long input itself)
        body = {"recorded": False, "error": code.value, "detail": [_without_input(e) for e in exc.errors]}
    return api.create_response(request, body, status=422)


@api.exception_handler(HttpError)
def _http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    if exc.status_code == 400:  # a body that is not JSON
        return api.create_response(
            request,
            {"detail": [{"loc": ["body"], "msg": "the body is not valid JSON", "type": "json_invalid"}]},
            status=422,
        )
    return api.create_response(request, {"detail": str(exc)}, status=exc.status_code)


@api.exception_handler(AuthenticationError)
def _unauthorized(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    response = api.create_response(request, {"detail": "a valid, unrevoked project token is needed"}, status=401)
    response["WWW-Authenticate"] = "Bearer"
    return response


@api.exception_handler(RateLimited)
def _rate_limited(request: HttpRequest, exc: RateLimited) -> HttpResponse:
    response = api.create_response(request, {"detail": str(exc)}, status=429)
    response["Retry-After"] = str(exc.retry_after)
    return response


@api.exception_handler(BodyTooLarge)
def _too_large(request: HttpRequest, exc: BodyTooLarge) -> HttpResponse:
    return api.create_response(request, {"detail": str(exc)}, status=413)


# -- the project a token may use --------------------------------------------------


_SERVICES_KEPT = 512
_services: OrderedDict[tuple[int, str, str, str], Any] = OrderedDict()
_services_lock = threading.Lock()


def _service(kind: type, store: Any, project_id: str, agent_id: str) -> Any:
    """One service object per store, project, agent and kind, kept between
    requests: ``record_event`` keeps the last event number it saw per task
    and then writes in one statement (a compare-and-set that falls back to
    the full unit when another writer got there first), as an agent using the
    library does. The objects are safe to share between threads."""
    key = (id(store), kind.__name__, project_id, agent_id)
    with _services_lock:
        found = _services.get(key)
        if found is not None and found.store is store:
            _services.move_to_end(key)
            return found
    made = kind(store, project_id=project_id, agent_id=agent_id)
    with _services_lock:
        _services[key] = made
        while len(_services) > _SERVICES_KEPT:
            _services.popitem(last=False)
    return made


@dataclass
class Agent:
    """The core services of one project, acting as the token's agent."""

    token: ApiToken

    @cached_property
    def store(self) -> Any:
        return get_store()

    @cached_property
    def history(self) -> ConversationHistory:
        return _service(ConversationHistory, self.store, self.token.project_id, self.token.agent_id)

    @cached_property
    def traces(self) -> DecisionTraces:
        return _service(DecisionTraces, self.store, self.token.project_id, self.token.agent_id)

    @cached_property
    def graph(self) -> Graph:
        return _service(Graph, self.store, self.token.project_id, self.token.agent_id)


def agent(request: HttpRequest, project: str, *, records: bool = False) -> Agent:
    """The token's project, as if no other existed; ``records``: the call
    records work, which an automation token may not."""
    token: ApiToken = request.auth  # type: ignore[attr-defined]
    if not same_project(project, token.project_id):
        raise Http404("no such project")
    if records and token.role != ApiToken.AGENT:
        raise HttpError(403, "an automation token reads and reviews; it records no work")
    return Agent(token)


def status_of(result: Any) -> int:
    """A write's status: 200 when recorded, else by its error code."""
    if result.recorded:
        return 200
    if result.error in NOT_FOUND:
        return 404
    if result.error in CONFLICT:
        return 409
    return 422


def answer(result: Any) -> Status:
    return Status(status_of(result), result)


def for_token(event: Event | None) -> Event | None:
    """An event as a token may see it: a redacted event without its
    ``payload_sha256`` (a hash confirms a guessed text; only stewards see
    it, on the dashboard)."""
    if event is None or event.redacted_at is None:
        return event
    return event.model_copy(update={"payload_sha256": None})


def event_result(result: RecordEventResult) -> RecordEventResult:
    return result.model_copy(update={"event": for_token(result.event)})


def key_header() -> Any:
    return Header(
        None,
        alias="Idempotency-Key",
        description="The write's request_id (1-64 characters), the token's agent's own: a retry with the same key "
        "answers the first result.",
    )


def found(value: Any) -> Any:
    if value is None:
        raise Http404("not found")
    return value


router = Router(tags=["projects"])

# -- tasks, events, steps ------------------------------------------------------------


@router.post("/projects/{project}/tasks", response=records(CreateTaskResult))
def create_task(
    request: HttpRequest, project: str, body: s.CreateTask, idempotency_key: str | None = key_header()
) -> Any:
    return answer(
        agent(request, project, records=True).history.create_task(body.name, goal=body.goal, request_id=idempotency_key)
    )


@router.get("/projects/{project}/tasks", response=reads(s.TaskList))
def list_tasks(
    request: HttpRequest, project: str, search: str | None = None, after_name: str | None = None, limit: int = 50
) -> Any:
    tasks, more = agent(request, project).history.list_tasks(search=search, after_name=after_name, limit=limit)
    return {"tasks": tasks, "more": more}


@router.get("/projects/{project}/tasks/{segment:task}", response=reads(TaskView))
def get_task(request: HttpRequest, project: str, task: str) -> Any:
    return found(agent(request, project).history.get_task(task).view)


@router.post("/projects/{project}/tasks/{segment:task}/events", response=records(RecordEventResult))
def record_event(
    request: HttpRequest, project: str, task: str, body: s.RecordEvent, idempotency_key: str | None = key_header()
) -> Any:
    result = agent(request, project, records=True).history.record_event(
        task, kind=body.kind, payload=body.payload, role=body.role, name=body.name, request_id=idempotency_key
    )
    return answer(event_result(result))


def batch_request_id(key: str, n: int) -> str:
    """The request id of a batch's n-th event: the key and the place, within
    the seed's 64 characters."""
    base = key if len(key) <= 48 else hashlib.sha256(key.encode()).hexdigest()[:48]
    return f"{base}#{n}"


@router.post("/projects/{project}/tasks/{segment:task}/events/batch", response=records(s.EventBatchResult))
def record_events(
    request: HttpRequest, project: str, task: str, body: s.EventBatch, idempotency_key: str | None = key_header()
) -> Any:
    history = agent(request, project, records=True).history
    if idempotency_key is None:
        try:
            last = history.load_events(task, [e.model_dump(mode="json") for e in body.events])
        except ValueError as exc:
            if str(exc) == WriteErrorCode.task_not_found.value:
                return Status(404, s.EventBatchResult(recorded=False, error=WriteErrorCode.task_not_found))
            raise
        return Status(200, s.EventBatchResult(recorded=True, last_event_seq=last))
    results = []
    for n, e in enumerate(body.events):
        result = history.record_event(
            task,
            kind=e.kind,
            payload=e.payload,
            role=e.role,
            name=e.name,
            request_id=batch_request_id(idempotency_key, n),
        )
        results.append(event_result(result))
        if not result.recorded:
            return Status(status_of(result), s.EventBatchResult(recorded=False, error=result.error, results=results))
    last = results[-1].event.seq if results else None
    return Status(200, s.EventBatchResult(recorded=True, last_event_seq=last, results=results))


@router.get("/projects/{project}/tasks/{segment:task}/events", response=reads(EventPage))
def list_events(request: HttpRequest, project: str, task: str, after_seq: int = 0, limit: int = 50) -> Any:
    page = agent(request, project).history.list_events(task, after_seq=after_seq, limit=limit)
    if not page.found:
        raise Http404("no such task")
    return page.model_copy(update={"events": [for_token(e) for e in page.events]})


@router.get("/projects/{project}/tasks/{segment:task}/events/{seq}", response=reads(Event))
def fetch_event(request: HttpRequest, project: str, task: str, seq: int) -> Any:
    return found(for_token(agent(request, project).history.fetch_event(task, seq).event))


@router.put("/projects/{project}/tasks/{segment:task}/steps/{segment:step}", response=records(SetStepResult))
def set_step(
    request: HttpRequest,
    project: str,
    task: str,
    body: s.SetStep,
    step: str = Path(..., max_length=limits.STEP_NAME_MAX),
    idempotency_key: str | None = key_header(),
) -> Any:
    supports = None if body.result_supports is None else [x.model_dump() for x in body.result_supports]
    return answer(
        agent(request, project, records=True).history.set_step(
            task,
            name=step,
            state=body.state,
            kind=body.kind,
            result_event_seq=body.result_event_seq,
            result_basis=body.result_basis,
            result_supports=supports,
            request_id=idempotency_key,
        )
    )


@router.get("/projects/{project}/tasks/{segment:task}/steps", response=reads(StepPage))
def list_steps(request: HttpRequest, project: str, task: str, after_name: str | None = None, limit: int = 50) -> Any:
    return agent(request, project).history.list_steps(task, after_name=after_name, limit=limit)


# -- decisions ----------------------------------------------------------------------


@router.post("/projects/{project}/tasks/{segment:task}/decisions", response=records(RecordDecisionResult))
def record_decision(
    request: HttpRequest, project: str, task: str, body: s.RecordDecision, idempotency_key: str | None = key_header()
) -> Any:
    return answer(
        agent(request, project, records=True).traces.record_decision(
            task,
            choice_key=body.choice_key,
            conclusion=body.conclusion,
            rationale=body.rationale,
            supports=[x.model_dump() for x in body.supports],
            assumptions=body.assumptions,
            open_questions=body.open_questions,
            fetched=body.fetched,
            request_id=idempotency_key,
        )
    )


@router.get("/projects/{project}/tasks/{segment:task}/decisions", response=reads(DecisionPage))
def list_decisions(
    request: HttpRequest, project: str, task: str, include_history: bool = True, limit: int = 50, offset: int = 0
) -> Any:
    lookup = agent(request, project).traces.list_decisions(
        task, include_history=include_history, limit=limit, offset=offset
    )
    if not lookup.found:
        raise Http404("no such task")
    return lookup.page


@router.get("/projects/{project}/decisions/{decision_id}", response=reads(Decision))
def get_decision(request: HttpRequest, project: str, decision_id: str) -> Any:
    return found(agent(request, project).traces.get_decision(decision_id).decision)


@router.post("/projects/{project}/decisions/{decision_id}/supersede", response=reviews(RecordDecisionResult))
def supersede_decision(
    request: HttpRequest,
    project: str,
    decision_id: str,
    body: s.SupersedeDecision,
    idempotency_key: str | None = key_header(),
) -> Any:
    return answer(
        agent(request, project).traces.supersede_decision(
            decision_id,
            conclusion=body.conclusion,
            rationale=body.rationale,
            explanation=body.explanation,
            supports=[x.model_dump() for x in body.supports],
            assumptions=body.assumptions,
            open_questions=body.open_questions,
            fetched=body.fetched,
            request_id=idempotency_key,
        )
    )


@router.post("/projects/{project}/decisions/{decision_id}/reject", response=reviews(RejectDecisionResult))
def reject_decision(
    request: HttpRequest,
    project: str,
    decision_id: str,
    body: s.RejectDecision,
    idempotency_key: str | None = key_header(),
) -> Any:
    return answer(
        agent(request, project).traces.reject_decision(decision_id, reason=body.reason, request_id=idempotency_key)
    )


@router.post("/projects/{project}/decisions/{decision_id}/reaffirm", response=reviews(ReaffirmDecisionResult))
def reaffirm_decision(
    request: HttpRequest,
    project: str,
    decision_id: str,
    body: s.ReaffirmDecision,
    idempotency_key: str | None = key_header(),
) -> Any:
    traces = agent(request, project).traces
    if body.explanation is None:
        return answer(traces.reaffirm_decision(decision_id, request_id=idempotency_key))
    return answer(traces.reaffirm_decision(decision_id, explanation=body.explanation, request_id=idempotency_key))


@router.get("/projects/{project}/decisions/{decision_id}/supports", response=reads(SupportHistoryPage))
def list_support_history(
    request: HttpRequest, project: str, decision_id: str, after_ordinal: int = -1, limit: int = 20
) -> Any:
    return agent(request, project).traces.list_support_history(decision_id, after_ordinal=after_ordinal, limit=limit)


@router.get("/projects/{project}/decisions/{decision_id}/revisions", response=reads(list[Revision]))
def list_revisions(request: HttpRequest, project: str, decision_id: str) -> Any:
    return agent(request, project).traces.list_revisions(decision_id)


@router.get("/projects/{project}/review", response=reads(DecisionReviewList))
def list_decisions_for_review(
    request: HttpRequest,
    project: str,
    task: str | None = None,
    reason: ReviewReason | None = None,
    state: ReviewState | None = None,
    cause: str | None = None,
    limit: int = 50,
    offset: int = 0,
) -> Any:
    return agent(request, project).traces.list_decisions_for_review(
        task, limit=limit, offset=max(0, offset), reason=reason, state=state, root_cause=cause
    )


@router.get("/projects/{project}/review/counts", response=reads(dict[str, int]))
def review_counts(request: HttpRequest, project: str) -> Any:
    return agent(request, project).traces.review_counts()


@router.post("/projects/{project}/review/continue", response=reads(ReviewProgress))
def continue_decision_review(request: HttpRequest, project: str, body: s.ContinueReview) -> Any:
    traces = agent(request, project).traces
    if body.limit is None:
        return traces.continue_decision_review()
    return traces.continue_decision_review(limit=body.limit)


@router.get("/projects/{project}/conflicts", response=reads(ConflictList))
def list_conflicts(
    request: HttpRequest, project: str, task: str | None = None, max_groups: int = 50, after_key: str | None = None
) -> Any:
    return agent(request, project).traces.list_conflicts(task_name=task, max_groups=max_groups, after_key=after_key)


@router.get("/projects/{project}/search", response=reads(list[DecisionHit]))
def search_decisions(request: HttpRequest, project: str, q: str, task: str | None = None, limit: int = 20) -> Any:
    return agent(request, project).traces.search_decisions(q, task_name=task, limit=limit)


# -- documents and evidence ------------------------------------------------------------


@router.post("/projects/{project}/documents", response=records(DocumentWriteResult))
def add_document(
    request: HttpRequest, project: str, body: s.Document, idempotency_key: str | None = key_header()
) -> Any:
    return answer(agent(request, project, records=True).graph.add(body.key, body.text, request_id=idempotency_key))


@router.put("/projects/{project}/documents", response=records(DocumentWriteResult))
def update_document(
    request: HttpRequest, project: str, body: s.Document, idempotency_key: str | None = key_header()
) -> Any:
    return answer(agent(request, project, records=True).graph.update(body.key, body.text, request_id=idempotency_key))


@router.delete("/projects/{project}/documents", response=records(DocumentWriteResult))
def delete_document(request: HttpRequest, project: str, key: str, idempotency_key: str | None = key_header()) -> Any:
    return answer(agent(request, project, records=True).graph.delete(key, request_id=idempotency_key))


@router.get("/projects/{project}/documents", response=reads(DocumentInfo))
def get_document(request: HttpRequest, project: str, key: str) -> Any:
    return found(agent(request, project).graph.get_document(key))


@router.get("/projects/{project}/documents/versions", response=reads(list[DocumentVersion]))
def list_versions(request: HttpRequest, project: str, key: str) -> Any:
    return agent(request, project).graph.list_versions(key)


@router.post("/projects/{project}/evidence/span", response=reads(s.EvidenceId))
def span_evidence_id(request: HttpRequest, project: str, body: s.Span) -> Any:
    graph = agent(request, project).graph
    try:
        return {"evidence_id": graph.span_evidence_id(body.key, body.char_start, body.char_end)}
    except KeyError:  # no current version (never added, or deleted)
        raise Http404("no current document of that key") from None


@router.get("/projects/{project}/evidence", response=reads(FetchResult))
def fetch(request: HttpRequest, project: str, evidence_id: str, max_chars: int | None = None) -> Any:
    return agent(request, project).graph.fetch(evidence_id, max_chars=max_chars)


api.add_router("", router)

from . import comments  # noqa: E402  (the discussion's endpoints, issue 32; it imports from here)

api.add_router("", comments.router)
