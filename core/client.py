"""The portal's JSON API as a library: the same method names, arguments and
models as the core services, so an agent moves from opening the store to
calling the portal by changing the line that opens it (and the imports)::

    from core.client import connect, ConversationHistory, DecisionTraces, Graph
    portal = connect("https://reviewer.example.org", token="rvw_…")   # was: store = open_store(url)
    history = ConversationHistory(portal, project_id="acme", agent_id="planner")

The token decides the project and the author: ``project_id`` must be the
token's project, and ``agent_id`` is kept only so the constructor reads the
same (what is written carries the token's agent id). Refused writes return
the result with its seed code, as the library does; the API's 422 for a value
of the wrong kind raises ``ValueError`` and an unreachable portal or store
raises ``GraphStoreError``, as the library does. Standard library only.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from typing import Any, TypeVar

from pydantic import BaseModel, TypeAdapter

from . import _common as c
from .models import (
    ConflictList,
    CreateTaskResult,
    Decision,
    DecisionHit,
    DecisionLookup,
    DecisionPage,
    DecisionPageLookup,
    DecisionReviewList,
    Event,
    EventLookup,
    EventPage,
    ReaffirmDecisionResult,
    RecordDecisionResult,
    RecordEventResult,
    RejectDecisionResult,
    ReviewProgress,
    Revision,
    SetStepResult,
    StepPage,
    SupportHistoryPage,
    Task,
    TaskLookup,
    TaskView,
)
from .models.comments import CommentResult, Thread, ThreadList, ThreadResult
from .models.knowledge import DocumentInfo, DocumentVersion, DocumentWriteResult, FetchResult
from .stores import GraphStoreError

M = TypeVar("M", bound=BaseModel)

__all__ = ["ApiError", "ConversationHistory", "DecisionTraces", "Discussion", "Graph", "Portal", "connect"]


class ApiError(Exception):
    """An answer the API gives for no write result: a missing or revoked
    token (401), a role that may not (403), a body too large (413)."""

    def __init__(self, status: int, detail: Any) -> None:
        super().__init__(f"{status}: {detail}")
        self.status, self.detail = status, detail


def _origin(url: str) -> tuple[str, str, int | None]:
    """A url's origin: scheme, host and port (the scheme's default port when
    none is written), the unit a browser keeps credentials to."""
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = -1  # a port that is no number matches no origin
    return scheme, (parts.hostname or "").lower(), port or _DEFAULT_PORTS.get(scheme)


_DEFAULT_PORTS = {"http": 80, "https": 443}
#: headers that carry the portal's credentials: never sent to another origin
_CREDENTIALS = ("authorization", "cookie", "proxy-authorization")


class _SameOriginCredentials(urllib.request.HTTPRedirectHandler):
    """Follows redirects as urllib does, but a redirect to another origin
    (another scheme, host or port: ``https`` to ``http`` too) goes without
    the token, so a portal that redirects elsewhere, or an address that was
    taken over, never receives it. A redirect within the portal's origin
    keeps it."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and _origin(new.full_url) != _origin(req.full_url):
            for name in list(new.headers):
                if name.lower() in _CREDENTIALS:
                    del new.headers[name]
        return new


class Portal:
    """A connection to one portal with one token. ``retries``: how often a
    429 or 503 is waited out (its Retry-After) before it raises. The token
    is sent to the portal's own origin only: a redirect to another origin is
    followed without it (which that origin answers as it would an anonymous
    request, usually 401)."""

    def __init__(self, base_url: str, *, token: str, timeout: float = 30.0, retries: int = 3) -> None:
        self.base_url = base_url.rstrip("/")
        self.token, self.timeout, self.retries = token, timeout, retries
        self._opener = urllib.request.build_opener(_SameOriginCredentials())

    def close(self) -> None:  # the library's store has one; nothing to close here
        pass

    def __enter__(self) -> Portal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        query: dict[str, Any] | None = None,
        request_id: str | None = None,
        missing_ok: bool = False,
    ) -> tuple[int, Any]:
        """(status, decoded body); 404/409/422 with a write result are
        answers, other failures raise."""
        url = f"{self.base_url}/api/v1{path}"
        query = {k: v for k, v in (query or {}).items() if v is not None}
        if query:
            url += "?" + urllib.parse.urlencode(
                {k: str(v).lower() if isinstance(v, bool) else v for k, v in query.items()}
            )
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body, default=_jsonable).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if request_id is not None:
            headers["Idempotency-Key"] = request_id
        for attempt in range(self.retries + 1):
            request = urllib.request.Request(url, data=data, method=method, headers=headers)
            try:
                with self._opener.open(request, timeout=self.timeout) as r:
                    return r.status, json.loads(r.read() or b"null")
            except urllib.error.HTTPError as e:
                status, payload = e.code, _decode(e.read())
                if status in (429, 503) and attempt < self.retries:
                    time.sleep(min(float(e.headers.get("Retry-After") or 1), 60.0))
                    continue
            except (urllib.error.URLError, OSError) as e:
                raise GraphStoreError(f"the portal at {self.base_url} cannot be reached: {e}") from e
            if status == 503:
                raise GraphStoreError(f"the portal's store is unavailable: {payload}")
            if isinstance(payload, dict) and "recorded" in payload:
                # a refused write: the result is the answer (a limit's 422 also names the field: dropped)
                return status, {k: v for k, v in payload.items() if k != "detail"}
            if status == 404 and missing_ok:
                return status, None
            if status == 422:
                raise ValueError(_reason(payload))
            raise ApiError(status, payload.get("detail") if isinstance(payload, dict) else payload)
        raise AssertionError("unreachable")


def connect(base_url: str, *, token: str, timeout: float = 30.0, retries: int = 3) -> Portal:
    return Portal(base_url, token=token, timeout=timeout, retries=retries)


def _jsonable(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if hasattr(value, "value"):  # an enum member
        return value.value
    raise TypeError(f"{type(value).__name__} is not JSON")


def _decode(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")


def _reason(payload: Any) -> str:
    detail = payload.get("detail") if isinstance(payload, dict) else payload
    if isinstance(detail, list) and detail:
        first = detail[0]
        return f"{'.'.join(str(x) for x in first.get('loc', [])[1:]) or 'body'}: {first.get('msg')}"
    return str(detail)


def _q(text: str) -> str:
    return urllib.parse.quote(str(text), safe="")


def _supports(items: Sequence[Any] | None) -> list[Any] | None:
    if items is None:
        return None
    return [i.model_dump(mode="json") if isinstance(i, BaseModel) else i for i in items]


class _Service:
    def __init__(self, portal: Portal, *, project_id: str, agent_id: str | None = None) -> None:
        self.portal, self.project_id, self.agent_id = portal, project_id, agent_id
        self._base = f"/projects/{_q(c.escape_segment(project_id))}"

    def _call(self, method: str, path: str, body: Any = None, **kw: Any) -> tuple[int, Any]:
        return self.portal.call(method, self._base + path, body, **kw)

    def _model(self, model: type[M], method: str, path: str, body: Any = None, **kw: Any) -> M:
        return model.model_validate(self._call(method, path, body, **kw)[1])


class ConversationHistory(_Service):
    def create_task(self, name: str, *, goal: str, request_id: str | None = None) -> CreateTaskResult:
        return self._model(CreateTaskResult, "POST", "/tasks", {"name": name, "goal": goal}, request_id=request_id)

    def list_tasks(
        self, *, search: str | None = None, after_name: str | None = None, limit: int = 50
    ) -> tuple[list[Task], bool]:
        _, page = self._call("GET", "/tasks", query={"search": search, "after_name": after_name, "limit": limit})
        return [Task.model_validate(t) for t in page["tasks"]], page["more"]

    def get_task(self, name: str) -> TaskLookup:
        _, view = self._call("GET", f"/tasks/{_q(c.escape_segment(name))}", missing_ok=True)
        return TaskLookup(found=False) if view is None else TaskLookup(found=True, view=TaskView.model_validate(view))

    def record_event(
        self,
        task_name: str,
        *,
        kind: Any,
        payload: str,
        role: str | None = None,
        name: str | None = None,
        request_id: str | None = None,
    ) -> RecordEventResult:
        return self._model(
            RecordEventResult,
            "POST",
            f"/tasks/{_q(c.escape_segment(task_name))}/events",
            {"kind": kind, "payload": payload, "role": role, "name": name},
            request_id=request_id,
        )

    def load_events(self, task_name: str, events: Sequence[dict[str, Any]]) -> int:
        """All or nothing, as the library's; the task's last event number."""
        _status, answer = self._call(
            "POST", f"/tasks/{_q(c.escape_segment(task_name))}/events/batch", {"events": list(events)}
        )
        if not answer["recorded"]:
            raise ValueError(answer["error"])
        return answer["last_event_seq"]

    def list_events(self, task_name: str, *, after_seq: int = 0, limit: int = 50) -> EventPage:
        _, page = self._call(
            "GET",
            f"/tasks/{_q(c.escape_segment(task_name))}/events",
            query={"after_seq": after_seq, "limit": limit},
            missing_ok=True,
        )
        return EventPage(found=False) if page is None else EventPage.model_validate(page)

    def fetch_event(self, task_name: str, seq: int) -> EventLookup:
        _, event = self._call("GET", f"/tasks/{_q(c.escape_segment(task_name))}/events/{int(seq)}", missing_ok=True)
        return EventLookup(found=False) if event is None else EventLookup(found=True, event=Event.model_validate(event))

    def set_step(
        self,
        task_name: str,
        *,
        name: str,
        state: Any,
        kind: Any = "other",
        result_event_seq: int | None = None,
        result_basis: Any = "unknown",
        result_supports: Sequence[Any] | None = None,
        request_id: str | None = None,
    ) -> SetStepResult:
        body = {
            "state": state,
            "kind": kind,
            "result_event_seq": result_event_seq,
            "result_basis": result_basis,
            "result_supports": _supports(result_supports),
        }
        return self._model(
            SetStepResult,
            "PUT",
            f"/tasks/{_q(c.escape_segment(task_name))}/steps/{_q(c.escape_segment(name))}",
            body,
            request_id=request_id,
        )

    def list_steps(self, task_name: str, *, after_name: str | None = None, limit: int = 50) -> StepPage:
        return self._model(
            StepPage,
            "GET",
            f"/tasks/{_q(c.escape_segment(task_name))}/steps",
            query={"after_name": after_name, "limit": limit},
        )


class DecisionTraces(_Service):
    def _content(
        self,
        conclusion: str,
        rationale: str,
        supports: Sequence[Any],
        assumptions: Any,
        open_questions: Any,
        fetched: Any,
    ) -> dict[str, Any]:
        return {
            "conclusion": conclusion,
            "rationale": rationale,
            "supports": _supports(supports),
            "assumptions": assumptions,
            "open_questions": open_questions,
            "fetched": _supports(fetched),
        }

    def record_decision(
        self,
        task_name: str,
        *,
        choice_key: str,
        conclusion: str,
        rationale: str,
        supports: Sequence[Any],
        assumptions: Sequence[str] | None = None,
        open_questions: Sequence[str] | None = None,
        fetched: Sequence[Any] | None = None,
        request_id: str | None = None,
    ) -> RecordDecisionResult:
        body = {
            "choice_key": choice_key,
            **self._content(conclusion, rationale, supports, assumptions, open_questions, fetched),
        }
        return self._model(
            RecordDecisionResult,
            "POST",
            f"/tasks/{_q(c.escape_segment(task_name))}/decisions",
            body,
            request_id=request_id,
        )

    def supersede_decision(
        self,
        decision_id: str,
        *,
        conclusion: str,
        rationale: str,
        explanation: str,
        supports: Sequence[Any],
        assumptions: Sequence[str] | None = None,
        open_questions: Sequence[str] | None = None,
        fetched: Sequence[Any] | None = None,
        request_id: str | None = None,
    ) -> RecordDecisionResult:
        body = {
            "explanation": explanation,
            **self._content(conclusion, rationale, supports, assumptions, open_questions, fetched),
        }
        return self._model(
            RecordDecisionResult, "POST", f"/decisions/{_q(decision_id)}/supersede", body, request_id=request_id
        )

    def reject_decision(self, decision_id: str, *, reason: str, request_id: str | None = None) -> RejectDecisionResult:
        return self._model(
            RejectDecisionResult,
            "POST",
            f"/decisions/{_q(decision_id)}/reject",
            {"reason": reason},
            request_id=request_id,
        )

    def reaffirm_decision(
        self, decision_id: str, *, explanation: str | None = None, request_id: str | None = None
    ) -> ReaffirmDecisionResult:
        return self._model(
            ReaffirmDecisionResult,
            "POST",
            f"/decisions/{_q(decision_id)}/reaffirm",
            {"explanation": explanation},
            request_id=request_id,
        )

    def get_decision(self, decision_id: str) -> DecisionLookup:
        _, d = self._call("GET", f"/decisions/{_q(decision_id)}", missing_ok=True)
        return (
            DecisionLookup(found=False)
            if d is None
            else DecisionLookup(found=True, decision=Decision.model_validate(d))
        )

    def list_decisions(
        self, task_name: str, *, include_history: bool = True, limit: int = 50, offset: int = 0
    ) -> DecisionPageLookup:
        _, page = self._call(
            "GET",
            f"/tasks/{_q(c.escape_segment(task_name))}/decisions",
            missing_ok=True,
            query={"include_history": include_history, "limit": limit, "offset": offset},
        )
        return (
            DecisionPageLookup(found=False)
            if page is None
            else DecisionPageLookup(found=True, page=DecisionPage.model_validate(page))
        )

    def list_decisions_for_review(
        self,
        task_name: str | None = None,
        *,
        limit: int = 50,
        offset: int = 0,
        reason: Any = None,
        state: Any = None,
        root_cause: str | None = None,
    ) -> DecisionReviewList:
        query = {
            "task": task_name,
            "limit": limit,
            "offset": offset,
            "reason": _value(reason),
            "state": _value(state),
            "cause": root_cause,
        }
        return self._model(DecisionReviewList, "GET", "/review", query=query)

    def review_counts(self) -> dict[str, int]:
        return self._call("GET", "/review/counts")[1]

    def continue_decision_review(self, *, limit: int | None = None) -> ReviewProgress:
        return self._model(ReviewProgress, "POST", "/review/continue", {"limit": limit})

    def list_conflicts(
        self, *, task_name: str | None = None, max_groups: int = 50, after_key: str | None = None
    ) -> ConflictList:
        return self._model(
            ConflictList,
            "GET",
            "/conflicts",
            query={"task": task_name, "max_groups": max_groups, "after_key": after_key},
        )

    def list_support_history(self, decision_id: str, *, after_ordinal: int = -1, limit: int = 20) -> SupportHistoryPage:
        return self._model(
            SupportHistoryPage,
            "GET",
            f"/decisions/{_q(decision_id)}/supports",
            query={"after_ordinal": after_ordinal, "limit": limit},
        )

    def list_revisions(self, decision_id: str) -> list[Revision]:
        return TypeAdapter(list[Revision]).validate_python(
            self._call("GET", f"/decisions/{_q(decision_id)}/revisions")[1]
        )

    def search_decisions(self, query: str, *, task_name: str | None = None, limit: int = 20) -> list[DecisionHit]:
        hits = self._call("GET", "/search", query={"q": query, "task": task_name, "limit": limit})[1]
        return TypeAdapter(list[DecisionHit]).validate_python(hits)


class Graph(_Service):
    def add(self, key: str, text: str, *, request_id: str | None = None) -> DocumentWriteResult:
        return self._model(DocumentWriteResult, "POST", "/documents", {"key": key, "text": text}, request_id=request_id)

    def update(self, key: str, text: str, *, request_id: str | None = None) -> DocumentWriteResult:
        return self._model(DocumentWriteResult, "PUT", "/documents", {"key": key, "text": text}, request_id=request_id)

    def delete(self, key: str, *, request_id: str | None = None) -> DocumentWriteResult:
        return self._model(DocumentWriteResult, "DELETE", "/documents", query={"key": key}, request_id=request_id)

    def fetch(self, evidence_id: str, *, max_chars: int | None = None) -> FetchResult:
        return self._model(FetchResult, "GET", "/evidence", query={"evidence_id": evidence_id, "max_chars": max_chars})

    def get_document(self, key: str) -> DocumentInfo | None:
        _, info = self._call("GET", "/documents", query={"key": key}, missing_ok=True)
        return None if info is None else DocumentInfo.model_validate(info)

    def list_versions(self, key: str) -> list[DocumentVersion]:
        return TypeAdapter(list[DocumentVersion]).validate_python(
            self._call("GET", "/documents/versions", query={"key": key})[1]
        )

    def span_evidence_id(self, key: str, char_start: int, char_end: int) -> str:
        _status, answer = self._call(
            "POST", "/evidence/span", {"key": key, "char_start": char_start, "char_end": char_end}, missing_ok=True
        )
        if answer is None:
            raise KeyError(f"no current document {key!r}")
        return answer["evidence_id"]

    def current_text(self, key: str) -> str | None:
        """The current version's text (read through ``fetch`` of its whole span)."""
        info = self.get_document(key)
        if info is None or not info.live:
            return None
        versions = [v for v in self.list_versions(key) if v.activation_seq == info.activation_seq]
        if not versions:
            return None
        return self.fetch(self.span_evidence_id(key, 0, versions[0].length)).text


class Discussion(_Service):
    """``core.comments.Discussion`` over the API: read a decision's threads,
    answer in them, resolve them. Mentions are read from the text by the
    portal (the people who can see the project)."""

    def list_threads(self, decision_id: str, *, limit: int = 10, offset: int = 0) -> ThreadList:
        _, found = self._call(
            "GET", f"/decisions/{_q(decision_id)}/threads", query={"limit": limit, "offset": offset}, missing_ok=True
        )
        return ThreadList(decision_id=decision_id) if found is None else ThreadList.model_validate(found)

    def get_thread(self, thread_id: str, *, offset: int = 0, limit: int | None = None) -> Thread | None:
        query = {"offset": offset} if limit is None else {"offset": offset, "limit": limit}
        _, found = self._call("GET", f"/threads/{_q(thread_id)}", query=query, missing_ok=True)
        return None if found is None else Thread.model_validate(found)

    def post_comment(
        self, decision_id: str, body: str, *, thread_id: str | None = None, request_id: str | None = None
    ) -> CommentResult:
        return self._model(
            CommentResult,
            "POST",
            f"/decisions/{_q(decision_id)}/comments",
            {"body": body, "thread_id": thread_id},
            request_id=request_id,
        )

    def resolve_thread(self, thread_id: str, *, resolved: bool = True, request_id: str | None = None) -> ThreadResult:
        return self._model(
            ThreadResult, "POST", f"/threads/{_q(thread_id)}/resolve", {"resolved": resolved}, request_id=request_id
        )


def _value(v: Any) -> Any:
    return getattr(v, "value", v)
