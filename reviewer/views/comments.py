"""The discussion on a decision's page (issue 32): threads of comments, a
new thread, replies, edits within the window, deletion, resolve/reopen, a
steward's redaction (with a confirmation page, as an event's), and the
@mention autocomplete.

Roles: viewers read threads; reviewers comment, edit and delete their own,
resolve and reopen; stewards also delete others' comments and redact. Every
form works without JavaScript (a redirect to the page's discussion); htmx
swaps the discussion alone. A refused comment comes back beside its form
with the text kept.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from core import _common as c
from core import limits
from core.comments import Discussion
from core.models import ActorKind, CommentErrorCode, CommentState
from core.retention import disk_pending

from .. import access, mentions
from ..forms import REQUEST_ID_REUSED, new_request_id
from ..inbox import looked
from .base import Project, _decision_or_404, _int, _param, _project

PARTIAL = "reviewer/_discussion.html"
#: threads a page of the discussion shows
THREADS_SHOWN = 10

COMMENT_ERRORS: dict[CommentErrorCode, str] = {
    CommentErrorCode.decision_not_found: "That decision does not exist.",
    CommentErrorCode.thread_not_found: "That thread no longer exists.",
    CommentErrorCode.comment_not_found: "That comment no longer exists.",
    CommentErrorCode.comment_gone: "That comment was deleted or redacted.",
    CommentErrorCode.body_required: "Write something first.",
    CommentErrorCode.value_too_long: f"A comment has at most {limits.COMMENT_MAX:,} characters.",
    CommentErrorCode.edit_window_closed: f"A comment can be edited for {limits.COMMENT_EDIT_S // 60} minutes only.",
    CommentErrorCode.not_author: "Only its author (or a steward, to delete it) may do that.",
    CommentErrorCode.too_many_comments: (
        f"This discussion is full: at most {limits.THREADS_MAX} threads of "
        f"{limits.THREAD_COMMENTS_MAX} comments. Resolve it elsewhere."
    ),
    CommentErrorCode.request_id_reused: REQUEST_ID_REUSED,
    CommentErrorCode.invalid_request_id: "This form is out of date. Reload the page and try again.",
}


class CommentForm(forms.Form):
    request_id = forms.CharField(widget=forms.HiddenInput, max_length=64)
    thread_id = forms.UUIDField(required=False, widget=forms.HiddenInput)
    body = forms.CharField(
        max_length=limits.COMMENT_MAX,
        strip=False,
        error_messages={
            "required": COMMENT_ERRORS[CommentErrorCode.body_required],
            "max_length": COMMENT_ERRORS[CommentErrorCode.value_too_long],
        },
    )


class RedactCommentForm(forms.Form):
    request_id = forms.CharField(widget=forms.HiddenInput, max_length=64)
    reason = forms.CharField(max_length=limits.EXPLANATION_MAX, widget=forms.Textarea(attrs={"rows": 2}))
    confirm = forms.BooleanField(
        label="I understand the text is gone for good.",
        error_messages={"required": "Tick the box to confirm the redaction."},
    )


def discussion_of(p: Project) -> Discussion:
    return Discussion(p.store, project_id=p.id, agent_id=p.agent, actor_kind=ActorKind.person)


def discussion_context(request: HttpRequest, p: Project, decision_id: Any, **problem: Any) -> dict[str, Any]:
    """What the discussion partial shows: a page of threads (open first), who
    may do what, and a refused form's message and text (``problem``:
    ``where``, the thread id or ``new``; ``message``; ``text``)."""
    offset = _int(request.GET.get("threads_from"), 0, maximum=limits.THREADS_MAX)
    discussion = discussion_of(p)
    listed = discussion.list_threads(str(decision_id), limit=THREADS_SHOWN, offset=offset)
    paged = _paged_thread(request, discussion, listed)
    me = p.agent
    window = timedelta(seconds=limits.COMMENT_EDIT_S)
    now = c.now()
    editable = {
        x.id
        for t in listed.threads
        for x in t.comments
        if x.author == me and x.state == CommentState.live and now - x.at <= window
    }
    return {
        "discussion": listed,
        "paged": paged,
        "discussion_from": offset,
        "discussion_next": offset + len(listed.threads) if listed.more else None,
        "can_comment": access.can(request.user, access.REVIEWER, p.id),
        "can_steward": access.can(request.user, access.STEWARD, p.id),
        "me": me,
        "editable": editable,
        "comment_problem": problem or None,
        "comment_request_id": new_request_id(),
        "comment_max": limits.COMMENT_MAX,
        "did": str(decision_id),
    }


def _paged_thread(request: HttpRequest, discussion: Discussion, listed: Any) -> dict[str, Any] | None:
    """``?thread=<id>&from=<n>``: that listed thread shows a page of its
    comments from position ``n`` (0, the question, from its "N earlier
    comments" link) in place of
    its first and latest ones, with links to the pages around it; no
    JavaScript needed. Anything else (a thread not on this page) is ignored."""
    wanted = _param(request.GET, "thread", 40)
    at = next((i for i, t in enumerate(listed.threads) if t.id == (wanted or "").lower()), None)
    if at is None:
        return None
    size = limits.THREAD_COMMENTS_SHOWN
    start = _int(request.GET.get("from"), 0, maximum=limits.THREAD_COMMENTS_MAX)
    thread = discussion.get_thread(listed.threads[at].id, offset=start, limit=size)
    if thread is None:
        return None
    listed.threads[at] = thread
    shown = start + len(thread.comments)
    return {
        "id": thread.id,
        "from": start,
        "to": shown,
        "earlier": max(0, start - size) if start > 0 else None,
        "later": shown if shown < thread.comment_count else None,
    }


def _back(request: HttpRequest, p: Project, decision_id: Any, *, status: int = 200, **problem: Any) -> HttpResponse:
    """The answer to a discussion form: the partial (htmx), the decision page
    with the refusal beside its form (refused), or a redirect to the page's
    discussion."""
    if request.htmx:  # htmx swaps only a 2xx answer: a refusal comes back as the partial with its message
        return render(request, PARTIAL, discussion_context(request, p, decision_id, **problem))
    if problem:
        from .decisions import PAGE, _decision_context

        d = _decision_or_404(p, decision_id)
        context = {**_decision_context(request, p, d), **discussion_context(request, p, decision_id, **problem)}
        return render(request, PAGE, context, status=status)
    return redirect(reverse("decision", kwargs={"project": p.id, "decision_id": decision_id}) + "#discussion")


@require_POST
@login_required
def post_comment(request: HttpRequest, project: str, decision_id: Any) -> HttpResponse:
    """A new thread's first comment, or (``thread_id``) a reply."""
    p = _project(request, project)
    access.require(request.user, access.REVIEWER, project)
    _decision_or_404(p, decision_id)
    form = CommentForm(request.POST)
    where = _param(request.POST, "thread_id", 40) or "new"
    typed = _param(request.POST, "body", limits.COMMENT_MAX + 1)
    if not form.is_valid():
        first = next(iter(form.errors.values()))[0]
        return _back(request, p, decision_id, status=400, where=where, message=first, text=typed)
    body = form.cleaned_data["body"]
    thread = form.cleaned_data["thread_id"]
    result = discussion_of(p).post_comment(
        str(decision_id),
        body,
        thread_id=str(thread) if thread else None,
        mentions=mentions.mentioned(p.id, body),
        request_id=form.cleaned_data["request_id"],
    )
    if not result.recorded:
        assert result.error is not None
        return _back(request, p, decision_id, status=400, where=where, message=COMMENT_ERRORS[result.error], text=body)
    looked(request, p.id)  # a comment is an explicit act: "since your last visit" starts again
    return _back(request, p, decision_id)


def _comment_or_404(p: Project, comment_id: Any) -> Any:
    found = discussion_of(p).get_comment(str(comment_id))
    if found is None:
        raise Http404("no such comment")
    return found


@require_http_methods(["GET", "POST"])
@login_required
def edit_comment(request: HttpRequest, project: str, comment_id: Any) -> HttpResponse:
    """The author's edit within the window: a page with the text (GET), the
    new text saved (POST)."""
    p = _project(request, project)
    access.require(request.user, access.REVIEWER, project)
    comment = _comment_or_404(p, comment_id)
    error, text = None, comment.body or ""
    if request.method == "POST":
        form = CommentForm(request.POST)
        text = _param(request.POST, "body", limits.COMMENT_MAX + 1)
        if form.is_valid():
            body = form.cleaned_data["body"]
            result = discussion_of(p).edit_comment(
                str(comment_id),
                body,
                mentions=mentions.mentioned(p.id, body),
                request_id=form.cleaned_data["request_id"],
            )
            if result.recorded:
                return _back(request, p, comment.decision_id)
            assert result.error is not None
            error = COMMENT_ERRORS[result.error]
        else:
            error = next(iter(form.errors.values()))[0]
    context = {
        "comment": comment,
        "text": text,
        "error": error,
        "request_id": new_request_id(),
        "comment_max": limits.COMMENT_MAX,
        "window": limits.COMMENT_EDIT_S // 60,
    }
    return render(request, "reviewer/comment_edit.html", context, status=400 if error else 200)


@require_POST
@login_required
def delete_comment(request: HttpRequest, project: str, comment_id: Any) -> HttpResponse:
    """The author's, or a steward's (of anyone's)."""
    p = _project(request, project)
    access.require(request.user, access.REVIEWER, project)
    comment = _comment_or_404(p, comment_id)
    steward = access.can(request.user, access.STEWARD, project)
    if comment.author != p.agent and not steward:
        raise access.PermissionDenied("only its author or a steward deletes a comment")
    result = discussion_of(p).delete_comment(
        str(comment_id), as_steward=steward, request_id=_param(request.POST, "request_id", 64) or None
    )
    if not result.recorded:
        assert result.error is not None
        return _back(
            request, p, comment.decision_id, status=400, where=comment.thread_id, message=COMMENT_ERRORS[result.error]
        )
    return _back(request, p, comment.decision_id)


@require_POST
@login_required
def resolve_thread(request: HttpRequest, project: str, thread_id: Any) -> HttpResponse:
    p = _project(request, project)
    access.require(request.user, access.REVIEWER, project)
    discussion = discussion_of(p)
    thread = discussion.get_thread(str(thread_id), limit=1)  # its decision, not its text
    if thread is None:
        raise Http404("no such thread")
    resolved = _param(request.POST, "resolved", 5) != "0"
    result = discussion.resolve_thread(
        str(thread_id), resolved=resolved, request_id=_param(request.POST, "request_id", 64) or None
    )
    if not result.recorded:
        assert result.error is not None
        return _back(
            request, p, thread.decision_id, status=400, where=str(thread_id), message=COMMENT_ERRORS[result.error]
        )
    return _back(request, p, thread.decision_id)


@require_http_methods(["GET", "POST"])
@login_required
def redact_comment(request: HttpRequest, project: str, comment_id: Any) -> HttpResponse:
    """A steward's redaction, confirmed on a page of its own that says what
    happens on disk (as an event's)."""
    p = _project(request, project)
    access.require(request.user, access.STEWARD, project)
    comment = _comment_or_404(p, comment_id)
    form = RedactCommentForm(request.POST or None, initial={"request_id": new_request_id()})
    error = None
    if request.method == "POST" and form.is_valid():
        result = discussion_of(p).redact_comment(
            str(comment_id), reason=form.cleaned_data["reason"], request_id=form.cleaned_data["request_id"]
        )
        if result.recorded:
            messages.success(request, f"The comment by {comment.author} was redacted; its text is gone.")
            return _back(request, p, comment.decision_id)
        assert result.error is not None
        error = COMMENT_ERRORS[result.error]
    context = {"comment": comment, "form": form, "error": error, "disk": disk_pending(p.store)}
    status = 400 if request.method == "POST" else 200
    return render(request, "reviewer/comment_redact.html", context, status=status)


@require_GET
@login_required
def mention_people(request: HttpRequest, project: str) -> JsonResponse:
    """Who an ``@`` may name: people who can see the project whose name
    starts with ``q``, at most ``mentions.OFFERED``."""
    _project(request, project)
    access.require(request.user, access.REVIEWER, project)
    prefix = _param(request.GET, "q", limits.AGENT_ID_MAX)
    return JsonResponse({"people": mentions.people_like(project, prefix)})
