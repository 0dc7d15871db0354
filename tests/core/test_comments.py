"""Issue 32, discussion in the core: threads of comments on a decision, on
both backends. Bodies sealed like events; deletion and redaction destroy the
key; the queue's summaries in one read; activity entries without text."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta

import pytest

from core import _common as c
from core import limits
from core._purge import pending_count, purge_round
from core.comments import Discussion
from core.decisions import DecisionTraces
from core.history import ConversationHistory
from core.models import CommentErrorCode as E
from core.models import CommentState
from core.retention import ActivityLog
from core.stores import GraphStore
from core.stores.keystore import keys_of

pytestmark = pytest.mark.usefixtures("purges_held")


def _decision(store: GraphStore, project_id: str, key: str = "k") -> str:
    history = ConversationHistory(store, project_id=project_id, agent_id="agent")
    if not history.get_task("t").found:
        history.create_task("t", goal="g")
        history.record_event("t", kind="message", payload="hello")
    made = DecisionTraces(store, project_id=project_id, agent_id="agent").record_decision(
        "t",
        choice_key=key,
        conclusion=f"Use {key}",
        rationale="r",
        supports=[{"kind": "event", "task_name": "t", "seq": 1}],
    )
    assert made.recorded, made
    return str(made.decision.id)


def _everything(store: GraphStore, project_id: str) -> str:
    rows = store.read(project_id, "MATCH (n) WHERE n.project_id = $p RETURN properties(n) AS p", {"p": project_id})
    return json.dumps([r["p"] for r in rows], default=str)


def test_a_thread_is_asked_answered_resolved_and_reopened(store: GraphStore, project_id: str) -> None:
    did = _decision(store, project_id)
    rita = Discussion(store, project_id=project_id, agent_id="rita")
    sam = Discussion(store, project_id=project_id, agent_id="sam")
    secret = "CANARY-" + uuid.uuid4().hex
    asked = rita.post_comment(did, f"{secret} why this one?\nsecond line", mentions=["sam", "sam"], request_id="q1")
    assert asked.recorded and asked.comment.mentions == ["sam"]
    tid = asked.comment.thread_id
    answer = sam.post_comment(did, "because", thread_id=tid)
    assert answer.recorded and answer.comment.thread_id == tid
    other = sam.post_comment(did, "unrelated")
    assert other.recorded and other.comment.thread_id != tid
    assert secret not in _everything(store, project_id)  # sealed: neither nodes nor the request record
    # a retry answers the first result and writes nothing; another body under the same id is refused
    again = rita.post_comment(did, f"{secret} why this one?\nsecond line", mentions=["sam"], request_id="q1")
    assert again.comment.id == asked.comment.id and again.comment.body.startswith(secret)
    assert rita.post_comment(did, "other text", mentions=["sam"], request_id="q1").error == E.request_id_reused
    assert rita.resolve_thread(tid).recorded
    listed = rita.list_threads(did)
    assert (listed.total, listed.open) == (2, 1)
    assert [t.id for t in listed.threads] == [other.comment.thread_id, tid]  # open first
    resolved = listed.threads[1]
    assert resolved.resolved_by == "rita" and resolved.resolved_at is not None
    assert [x.body.split("\n")[0] for x in resolved.comments] == [f"{secret} why this one?", "because"]
    assert sam.resolve_thread(tid, resolved=False).recorded
    assert all(t.resolved_at is None for t in rita.list_threads(did).threads)
    # the activity log: who is told, and never the text
    entries = ActivityLog(store, project_id=project_id).list()
    actions = [e.action for e in entries]
    assert actions[:5] == ["comment_resolve", "comment_resolve", "comment", "comment", "comment"]
    by_first = {e.actor: e for e in entries if e.action == "comment"}
    assert entries[4].notify == ["sam"] and entries[3].notify == ["rita"]  # the mention; the other writer
    assert by_first["sam"].target_kind == "decision" and by_first["sam"].target_id == did
    assert not any(secret in e.model_dump_json() or "because" in e.summary for e in entries)


def test_refusals_have_codes_and_write_nothing(store: GraphStore, project_id: str) -> None:
    did = _decision(store, project_id)
    rita = Discussion(store, project_id=project_id, agent_id="rita")
    assert rita.post_comment(did, "x" * (limits.COMMENT_MAX + 1)).error == E.value_too_long
    assert rita.post_comment(did, "x" * 5_000_000).error == E.value_too_long  # hostile size
    assert rita.post_comment(did, "   \n").error == E.body_required
    assert rita.post_comment(did, "hi", mentions=["a" * 151]).error == E.value_too_long
    assert rita.post_comment(did, "hi", mentions=[f"p{n}" for n in range(21)]).error == E.value_too_long
    assert rita.post_comment(str(uuid.uuid4()), "hi").error == E.decision_not_found
    assert rita.post_comment("not-an-id", "hi").error == E.decision_not_found
    assert rita.post_comment(did, "hi", thread_id=str(uuid.uuid4())).error == E.thread_not_found
    assert rita.post_comment(did, "hi", request_id="x" * 65).error == E.invalid_request_id
    # another project's decision and thread are not found from here
    elsewhere = Discussion(store, project_id=project_id + "-other", agent_id="rita")
    assert elsewhere.post_comment(did, "hi").error == E.decision_not_found
    assert rita.list_threads(did).total == 0 and rita.summaries([did]) == {}
    ok = rita.post_comment(did, "x" * limits.COMMENT_MAX)
    assert ok.recorded and len(ok.comment.body) == limits.COMMENT_MAX
    assert elsewhere.resolve_thread(ok.comment.thread_id).error == E.thread_not_found
    assert elsewhere.delete_comment(ok.comment.id, as_steward=True).error == E.comment_not_found
    assert elsewhere.get_thread(ok.comment.thread_id) is None


def test_edit_within_the_window_by_the_author_only(store: GraphStore, project_id: str) -> None:
    did = _decision(store, project_id)
    rita = Discussion(store, project_id=project_id, agent_id="rita")
    sam = Discussion(store, project_id=project_id, agent_id="sam")
    posted = rita.post_comment(did, "typo").comment
    edited = rita.edit_comment(posted.id, "fixed", mentions=["sam"])
    assert edited.recorded and edited.comment.body == "fixed" and edited.comment.edited_at is not None
    assert rita.get_comment(posted.id).body == "fixed"
    assert sam.edit_comment(posted.id, "mine now").error == E.not_author
    assert rita.edit_comment(posted.id, "y" * (limits.COMMENT_MAX + 1)).error == E.value_too_long
    assert ActivityLog(store, project_id=project_id).list()[0].notify == ["sam"]  # newly mentioned
    late = c.now() + timedelta(seconds=limits.COMMENT_EDIT_S + 1)
    with c.happened_at(late):
        assert rita.edit_comment(posted.id, "too late").error == E.edit_window_closed
    assert rita.get_comment(posted.id).body == "fixed"


def test_delete_and_redact_destroy_the_key(store: GraphStore, project_id: str) -> None:
    did = _decision(store, project_id)
    rita = Discussion(store, project_id=project_id, agent_id="rita")
    sam = Discussion(store, project_id=project_id, agent_id="sam")
    first = rita.post_comment(did, "first").comment
    second = rita.post_comment(did, "SECOND secret", thread_id=first.thread_id).comment
    slot = store.read(project_id, "MATCH (c:Comment {id: $id}) RETURN c.key_slot AS s", {"id": second.id})[0]["s"]
    assert rita.summaries([did])[did].latest_line == "SECOND secret"
    assert sam.delete_comment(second.id).error == E.not_author  # another's, without the steward's role
    gone = sam.redact_comment(second.id, reason="pii")
    assert gone.recorded and gone.comment.state == CommentState.redacted and gone.comment.body is None
    assert keys_of(store).key(slot) is None
    summary = rita.summaries([did])[did]
    assert (summary.count, summary.latest_line) == (1, "first")  # the latest live comment is the card's again
    assert rita.edit_comment(second.id, "back").error == E.comment_gone
    entry = ActivityLog(store, project_id=project_id).list()[0]
    assert entry.action == "comment_redact" and entry.reason == "pii" and entry.disk_purge == "pending"
    assert pending_count(store) == 1
    purge_round(store)
    assert ActivityLog(store, project_id=project_id).list()[0].disk_purge == "done"
    assert rita.delete_comment(first.id).recorded  # the author's own
    thread = rita.get_thread(first.thread_id)
    assert [(x.state, x.body) for x in thread.comments] == [(CommentState.deleted, None), (CommentState.redacted, None)]
    assert rita.summaries([did]) == {}  # no live comment: no count on the card
    assert "SECOND" not in _everything(store, project_id)
    purge_round(store)  # nothing left pending for the purge at exit


def test_summaries_and_context_for_a_page_in_one_read(store: GraphStore, project_id: str) -> None:
    ids = [_decision(store, project_id, f"k{n}") for n in range(3)]
    rita = Discussion(store, project_id=project_id, agent_id="rita")
    for n, did in enumerate(ids[:2]):
        for m in range(n + 1):
            posted = rita.post_comment(did, f"\n  line {n}.{m} " + "w" * 200 + "\nmore").comment
    reads = []
    real = store.read
    store.read = lambda *a, **k: reads.append(a) or real(*a, **k)  # type: ignore[method-assign]
    try:
        found = rita.summaries(ids)
    finally:
        del store.read
    assert len(reads) == 1
    assert sorted(found) == sorted(ids[:2]) and found[ids[1]].count == 2
    assert (
        found[ids[1]].latest_line.startswith("line 1.1 w") and len(found[ids[1]].latest_line) == limits.COMMENT_LINE_MAX
    )
    context = rita.comment_context([posted.id])[posted.id]
    assert (context.decision_id, context.thread_id, context.decision_conclusion) == (ids[1], posted.thread_id, "Use k1")
    assert "line" not in context.model_dump_json()
    # the inbox's way from an activity entry to its comment, without the text
    entries = ActivityLog(store, project_id=project_id).list(limit=3)
    found = rita.comments_of_entries(entries)
    assert found[entries[0].id].comment_id == posted.id and len(found) == 3


def test_export_and_import_carry_the_discussion_but_no_redacted_text(store: GraphStore, project_id: str) -> None:
    from core.traces_io import export_project, import_lines

    did = _decision(store, project_id)
    rita = Discussion(store, project_id=project_id, agent_id="rita")
    asked = rita.post_comment(did, "why?", mentions=["sam"]).comment
    rita.edit_comment(asked.id, "why this?", mentions=["sam"])
    secret = rita.post_comment(did, "SECRET-" + uuid.uuid4().hex, thread_id=asked.thread_id).comment
    Discussion(store, project_id=project_id, agent_id="stan").redact_comment(secret.id)
    rita.resolve_thread(asked.thread_id)
    lines = [json.dumps(line, default=str) for line in export_project(store, project_id)]
    assert not any("SECRET-" in line for line in lines)
    target = project_id + "-copy"
    outcomes = list(import_lines(store, lines, project=target))
    assert not [o for _, o in outcomes if isinstance(o, Exception)], outcomes
    copy = Discussion(store, project_id=target, agent_id="x")
    did_copy = store.read(  # the same decision in the copy, by its portable name
        target, "MATCH (d:Decision) WHERE d.project_id = $p RETURN d.id AS id", {"p": target}
    )[0]["id"]
    thread = copy.list_threads(did_copy).threads[0]
    assert thread.resolved_by == "rita" and thread.author == "rita"
    assert [(x.author, x.body, x.state.value, x.mentions) for x in thread.comments] == [
        ("rita", "why this?", "live", ["sam"]),
        ("rita", None, "redacted", []),
    ]
    assert thread.comments[0].edited_at is not None
    assert list(import_lines(store, lines, project=target))  # a second import changes nothing
    assert len(copy.list_threads(did_copy).threads[0].comments) == 2
    purge_round(store)


def _long_thread(store: GraphStore, project_id: str, did: str, count: int) -> str:
    """A thread of ``count`` comments, bodies ``m00x``, ``m01x``, … in order."""
    rita = Discussion(store, project_id=project_id, agent_id="rita")
    tid = rita.post_comment(did, "m00x").comment.thread_id
    for i in range(1, count):
        assert rita.post_comment(did, f"m{i:02d}x", thread_id=tid).recorded
    return tid


def test_a_long_thread_shows_its_question_and_latest_and_pages_the_rest(
    store: GraphStore, project_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from core import _comment_reads

    did = _decision(store, project_id)
    shown = limits.THREAD_COMMENTS_SHOWN
    count = shown + 5
    tid = _long_thread(store, project_id, did, count)
    opened: list[str] = []
    real = _comment_reads.unseal
    monkeypatch.setattr(_comment_reads, "unseal", lambda *a: opened.append(a[1]) or real(*a))
    reader = Discussion(store, project_id=project_id, agent_id="sam")
    thread = reader.list_threads(did).threads[0]
    # the question, then the latest; only those bodies are unsealed (a read that grows with the page)
    assert [x.body for x in thread.comments] == ["m00x"] + [f"m{i:02d}x" for i in range(count - shown, count)]
    assert (thread.comment_count, thread.omitted) == (count, count - shown - 1)
    assert len(opened) == shown + 1
    # the rest, a page at a time, oldest first; a hostile limit is cut to a page
    opened.clear()
    page = reader.get_thread(tid, offset=1, limit=10_000)
    assert [x.body for x in page.comments] == [f"m{i:02d}x" for i in range(1, shown + 1)]
    assert (page.comment_count, page.omitted) == (count, count - shown) and len(opened) == shown
    tail = reader.get_thread(tid, offset=shown + 1, limit=3)
    assert [x.body for x in tail.comments] == [f"m{i:02d}x" for i in range(shown + 1, shown + 4)]
    assert reader.get_thread(tid, offset=count).comments == []
    # a short thread is whole, nothing omitted
    short = _long_thread(store, project_id, did, 2)
    assert reader.get_thread(short).omitted == 0
    assert [x.body for x in reader.list_threads(did).threads[0].comments] == ["m00x", "m01x"]


def test_a_list_of_threads_has_at_most_a_page(store: GraphStore, project_id: str) -> None:
    did = _decision(store, project_id)
    rita = Discussion(store, project_id=project_id, agent_id="rita")
    for i in range(limits.THREADS_PAGE_MAX + 1):
        assert rita.post_comment(did, f"q{i}").recorded
    listed = rita.list_threads(did, limit=limits.THREADS_MAX)
    assert len(listed.threads) == limits.THREADS_PAGE_MAX and listed.more
    assert len(rita.list_threads(did, offset=limits.THREADS_PAGE_MAX).threads) == 1
