"""The discussion of a decision over the API (``core.comments``), so an
agent can read the questions people put to it and answer them.

The same habits as every endpoint (``views``): the token's project only
(404 for another's), ``Idempotency-Key`` as the write's ``request_id``,
refusals as the core's result with its code. Mentions are read from the
text on the server, and only people who can see the project are mentioned
(``reviewer.mentions``); an ``@name`` of anyone else stays plain text. An
``automation`` token comments too: discussion is review, not recorded work.
Deleting and redacting comments are the dashboard's (the author's, a
steward's).
"""

from __future__ import annotations

from typing import Annotated, Any

from django.http import Http404, HttpRequest
from ninja import Router
from ninja.responses import Status
from pydantic import WithJsonSchema

from core import limits
from core.comments import Discussion
from core.models import CommentErrorCode, CommentResult, Thread, ThreadList, ThreadResult

from .. import mentions
from . import schemas as s
from .views import _service, agent, key_header, reads, reviews

router = Router(tags=["discussion"])

_NOT_FOUND = {
    CommentErrorCode.decision_not_found,
    CommentErrorCode.thread_not_found,
    CommentErrorCode.comment_not_found,
}
_CONFLICT = {
    CommentErrorCode.request_id_reused,
    CommentErrorCode.comment_gone,
    CommentErrorCode.edit_window_closed,
    CommentErrorCode.too_many_comments,
}


def _answer(result: Any) -> Status:
    if result.recorded:
        return Status(200, result)
    if result.error in _NOT_FOUND:
        return Status(404, result)
    return Status(409 if result.error in _CONFLICT else 422, result)


def _page(default: int, maximum: int) -> Any:
    """A ``limit`` the core clamps to ``maximum`` (as every list here does),
    said in the OpenAPI document."""
    return Annotated[int, WithJsonSchema({"type": "integer", "minimum": 1, "maximum": maximum, "default": default})]


#: the ``limit`` of a list of threads, and of a page of a thread's comments
_THREADS = _page(10, limits.THREADS_PAGE_MAX)
_COMMENTS = _page(limits.THREAD_COMMENTS_SHOWN, limits.THREAD_COMMENTS_SHOWN)


def _discussion(request: HttpRequest, project: str) -> Discussion:
    a = agent(request, project)
    return _service(Discussion, a.store, a.token.project_id, a.token.agent_id)


@router.get("/projects/{project}/decisions/{decision_id}/threads", response=reads(ThreadList))
def list_threads(
    request: HttpRequest,
    project: str,
    decision_id: str,
    limit: _THREADS = 10,
    offset: int = 0,
) -> Any:
    """The decision's threads, open threads first, each with its first and
    its latest comments (``omitted`` counts those between: page through
    them with ``GET threads/<id>``)."""
    a = agent(request, project)
    if a.traces.get_decision(decision_id).decision is None:
        raise Http404("no such decision")
    return _discussion(request, project).list_threads(decision_id, limit=limit, offset=max(0, offset))


@router.get("/projects/{project}/threads/{thread_id}", response=reads(Thread))
def get_thread(
    request: HttpRequest,
    project: str,
    thread_id: str,
    offset: int = 0,
    limit: _COMMENTS = limits.THREAD_COMMENTS_SHOWN,
) -> Any:
    """The thread with a page of its comments from position ``offset``
    (0 is the question), oldest first."""
    found = _discussion(request, project).get_thread(thread_id, offset=max(0, offset), limit=limit)
    if found is None:
        raise Http404("no such thread")
    return found


@router.post("/projects/{project}/decisions/{decision_id}/comments", response=reviews(CommentResult))
def post_comment(
    request: HttpRequest,
    project: str,
    decision_id: str,
    body: s.PostComment,
    idempotency_key: str | None = key_header(),
) -> Any:
    """A comment: a new thread's first, or (``thread_id``) a reply."""
    discussion = _discussion(request, project)
    names = mentions.mentioned(discussion.project_id, body.body)
    return _answer(
        discussion.post_comment(
            decision_id, body.body, thread_id=body.thread_id, mentions=names, request_id=idempotency_key
        )
    )


@router.post("/projects/{project}/threads/{thread_id}/resolve", response=reviews(ThreadResult))
def resolve_thread(
    request: HttpRequest,
    project: str,
    thread_id: str,
    body: s.ResolveThread,
    idempotency_key: str | None = key_header(),
) -> Any:
    """Mark the thread resolved, or (``resolved: false``) open it again."""
    return _answer(
        _discussion(request, project).resolve_thread(thread_id, resolved=body.resolved, request_id=idempotency_key)
    )
