"""Discussion of a decision: threads of comments (``core.comments``).

A comment's body is sealed with a key of its own (as an event's is), so a
redaction or a deletion, which destroys the key, leaves it readable nowhere.
A comment that is gone keeps its place in the thread (author, time, state)
without its text.
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum

from ._base import Model

__all__ = [
    "Comment",
    "CommentContext",
    "CommentErrorCode",
    "CommentResult",
    "CommentState",
    "CommentSummary",
    "Thread",
    "ThreadList",
    "ThreadResult",
]


class CommentErrorCode(str, Enum):
    decision_not_found = "decision_not_found"
    thread_not_found = "thread_not_found"
    comment_not_found = "comment_not_found"
    #: the comment was deleted or redacted: it can no longer be edited
    comment_gone = "comment_gone"
    #: a comment needs some text
    body_required = "body_required"
    #: the body, a mention or the reason is over its limit (``core.limits``)
    value_too_long = "value_too_long"
    #: only the author edits a comment, and only within ``limits.COMMENT_EDIT_S``
    edit_window_closed = "edit_window_closed"
    #: the comment is someone else's (editing; deleting without ``as_steward``)
    not_author = "not_author"
    #: a decision has ``limits.THREADS_MAX`` threads, or a thread ``limits.THREAD_COMMENTS_MAX`` comments
    too_many_comments = "too_many_comments"
    request_id_reused = "request_id_reused"
    invalid_request_id = "invalid_request_id"


class CommentState(str, Enum):
    live = "live"
    deleted = "deleted"
    redacted = "redacted"


class Comment(Model):
    id: str
    thread_id: str
    decision_id: str
    author: str
    at: datetime
    edited_at: datetime | None = None
    #: the text; None once the comment is deleted or redacted
    body: str | None = None
    #: the people the writer mentioned, as the caller validated them
    mentions: list[str] = []
    state: CommentState = CommentState.live
    #: who deleted or redacted it, and when
    removed_by: str | None = None
    removed_at: datetime | None = None


class Thread(Model):
    id: str
    decision_id: str
    author: str
    created_at: datetime
    last_at: datetime
    resolved_at: datetime | None = None
    resolved_by: str | None = None
    #: oldest first; the first one opened the thread. A listed thread has
    #: its first and its latest ones, a page of it (``get_thread``) a run
    #: from its ``offset``: ``omitted`` are those left out
    comments: list[Comment] = []
    #: all its comments, shown or not (deleted and redacted ones too)
    comment_count: int = 0
    omitted: int = 0

    @property
    def resolved(self) -> bool:
        return self.resolved_at is not None


class ThreadList(Model):
    """A decision's threads, open ones first (then the newest)."""

    decision_id: str
    threads: list[Thread] = []
    total: int = 0
    open: int = 0
    #: more threads after this page (``offset`` + ``len(threads)``)
    more: bool = False


class CommentResult(Model):
    recorded: bool
    error: CommentErrorCode | None = None
    comment: Comment | None = None


class ThreadResult(Model):
    recorded: bool
    error: CommentErrorCode | None = None
    #: the thread, without its comments
    thread: Thread | None = None


class CommentSummary(Model):
    """What a queue card shows of a decision's discussion."""

    decision_id: str
    #: live comments (deleted and redacted ones are not counted)
    count: int = 0
    #: the latest live comment's first line, cut to ``limits.COMMENT_LINE_MAX``
    latest_line: str | None = None
    latest_author: str | None = None
    latest_at: datetime | None = None


class CommentContext(Model):
    """Where a comment stands, without its text: for an inbox or a log."""

    comment_id: str
    thread_id: str
    decision_id: str
    author: str
    at: datetime
    state: CommentState
    thread_resolved: bool = False
    #: the decision's conclusion, cut to ``limits.COMMENT_LINE_MAX``
    decision_conclusion: str = ""
