"""Every limit on what an agent or a person writes, in one place: the core's
writes, the API's schemas (``maxLength`` in the OpenAPI document), the
dashboard's forms and the importer all read them from here.

The seed's own limits come first (seed 001, "Methods, defaults, and
limits"); the rest are ours. A value over its limit is refused with
``value_too_long`` (a text, or a list of texts, that is too long) and
nothing is written, except an event payload, which the seed cuts instead.
A name only *looked up* (the task a ``record_event`` writes to, the task
``delete_task`` removes) is not refused for its length, so a record written
before these limits stays usable; a name that *creates* a record is.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

# -- the seed's --------------------------------------------------------------------

#: Event payloads: longer text is cut to this length (seed), never refused.
PAYLOAD_MAX = 32_000
#: Request ids: 1 to 64 characters (seed), else ``invalid_request_id``.
REQUEST_ID_MAX = 64
#: Supports of one decision: 1 to 20 (seed), else ``support_required``.
DECISION_SUPPORTS_MAX = 20

# -- ids, names and keys ----------------------------------------------------------------
#
# A URL holds at most three of these (the API's ``projects/P/tasks/T/steps/S``;
# the queue filtered by task and by a document's cause): 64 + 100 + 100 = 264
# characters, at most 12 bytes each percent-encoded (a 4-byte character,
# %XX four times), so under 3.2 kB with the rest of the URL: below
# gunicorn's 4,094-byte request line even then, and under 1.4 kB for ASCII.

#: A project id: the first segment of every dashboard and API path.
PROJECT_ID_MAX = 64
#: An agent id (a token's, or the person a dashboard service writes as): a
#: Django username's 150, so every person can act; no URL holds one.
AGENT_ID_MAX = 150
#: A task name: in the path of the API and the query of the dashboard.
TASK_NAME_MAX = 100
#: A step name: a path segment of the API's ``set_step``.
STEP_NAME_MAX = 100
#: A choice key: the conflicts page's paging link and anchor hold it.
CHOICE_KEY_MAX = 100
#: A document key: the document page's query and a queue cause hold it.
DOCUMENT_KEY_MAX = 100
#: An event's role or tool name: a label, shown whole on every event.
LABEL_MAX = 100

# -- texts ------------------------------------------------------------------------

#: A task's goal: shown on the task page and beside every precedent.
GOAL_MAX = 4_000
#: A decision's conclusion: compared (normalised) across tasks for conflicts.
CONCLUSION_MAX = 4_000
#: A decision's rationale: "a concise statement of the reasoning" (seed).
RATIONALE_MAX = 20_000
#: One assumption or one open question.
ITEM_MAX = 2_000
#: Assumptions, and open questions, of one decision.
ITEMS_MAX = 50
#: A supersede or reaffirm explanation, a rejection reason, a redaction or
#: deletion reason: a person's (or an agent's) sentence or paragraph.
EXPLANATION_MAX = 4_000
#: A document's text, in characters (1 MiB of ASCII): what one version holds.
DOCUMENT_MAX = 1_048_576
#: A cited span: the passage one document support names, in characters.
PASSAGE_MAX = 20_000
#: Fetch outcomes passed with one decision write.
FETCHED_MAX = 100
#: Supports of one step result (the seed sets none): else ``too_many_supports``.
STEP_SUPPORTS_MAX = 100

# -- claims and assignment (core/claims.py) ---------------------------------------

#: Why a person takes over someone's live claim: a sentence, shown to them.
TAKE_OVER_REASON_MAX = 1_000
#: A root-cause group's key as a claim or an assignment names it (a cause is
#: ``doc:KEY``, ``redaction:ID``, ``superseded:ID``…: a document key and a prefix).
GROUP_KEY_MAX = 200
#: A claim's lease, in minutes, as a steward sets it for the project.
LEASE_MINUTES_MIN = 1
LEASE_MINUTES_MAX = 120
#: How long a page left open keeps renewing a claim, from when it was made.
CLAIM_CAP_MINUTES = 120
# -- discussion (core/comments.py) --------------------------------------------------

#: A comment's text, in characters (the issue's).
COMMENT_MAX = 10_000
#: People one comment mentions (each an agent id, ``AGENT_ID_MAX``).
MENTIONS_MAX = 20
#: Threads on one decision, and comments in one thread: a decision's page
#: and a thread's read stay bounded (beyond these, a meeting is due).
THREADS_MAX = 100
THREAD_COMMENTS_MAX = 100
#: What one read of a discussion carries (each comment up to ``COMMENT_MAX``):
#: a listed thread shows its first comment and its latest
#: ``THREAD_COMMENTS_SHOWN``; a page of one thread's comments has at most
#: ``THREAD_COMMENTS_SHOWN``; a list has at most ``THREADS_PAGE_MAX`` threads.
#: So a read is at most ~2 MB of text however long the discussion grew.
THREAD_COMMENTS_SHOWN = 20
THREADS_PAGE_MAX = 10
#: How long the author may edit a comment, in seconds.
COMMENT_EDIT_S = 600
#: A queue card's first line of the latest comment, in characters.
COMMENT_LINE_MAX = 120


def over(value: str | None, limit: int) -> bool:
    """Whether a text (None: not given) is longer than ``limit`` characters."""
    return value is not None and len(value) > limit


def items_over(values: Iterable[str] | None, *, item: int = ITEM_MAX, count: int = ITEMS_MAX) -> bool:
    """Whether a list of texts has more than ``count`` items, or one longer than ``item``."""
    if values is None:
        return False
    values = list(values)
    return len(values) > count or any(len(v) > item for v in values)


def any_over(*pairs: tuple[Any, int]) -> bool:
    """Whether any (text, limit) pair is over its limit."""
    return any(over(value, limit) for value, limit in pairs)


#: Every limit by what it bounds, for the docs and their test.
TABLE: dict[str, int] = {
    "payload (cut)": PAYLOAD_MAX,
    "request_id": REQUEST_ID_MAX,
    "decision supports": DECISION_SUPPORTS_MAX,
    "project_id": PROJECT_ID_MAX,
    "agent_id": AGENT_ID_MAX,
    "task name": TASK_NAME_MAX,
    "step name": STEP_NAME_MAX,
    "choice_key": CHOICE_KEY_MAX,
    "document key": DOCUMENT_KEY_MAX,
    "event role, event name": LABEL_MAX,
    "goal": GOAL_MAX,
    "conclusion": CONCLUSION_MAX,
    "rationale": RATIONALE_MAX,
    "each assumption, each open question": ITEM_MAX,
    "assumptions, open questions (items)": ITEMS_MAX,
    "explanation, reason": EXPLANATION_MAX,
    "document text": DOCUMENT_MAX,
    "cited span (passage)": PASSAGE_MAX,
    "fetched (items)": FETCHED_MAX,
    "step result supports": STEP_SUPPORTS_MAX,
    "take-over reason": TAKE_OVER_REASON_MAX,
    "claimed or assigned group key": GROUP_KEY_MAX,
    "claim lease (minutes)": LEASE_MINUTES_MAX,
    "comment": COMMENT_MAX,
    "comment mentions (items)": MENTIONS_MAX,
    "threads of a decision": THREADS_MAX,
    "comments of a thread": THREAD_COMMENTS_MAX,
}

# -- the inbox and "since my last visit" (core.notices) --
#: people one activity entry can name as news for (``log_activity(notify=...)``)
NOTIFY_MAX = 50
#: a person named there (a user name: Django's own limit)
PERSON_MAX = 150
#: notices on one inbox page
NOTICES_PAGE_MAX = 100
#: where an unread count stops counting (shown as "99+")
UNREAD_COUNT_MAX = 100
#: notices read one by one that an unread count takes away at most (it counts
#: up to the cap plus these; past it the badge may say fewer than there are)
NOTICE_READS_COUNTED_MAX = 1_000
#: activity entries one "since your last visit" reads at most (the counts say "at least" past it)
SINCE_SCAN_MAX = 1_000
