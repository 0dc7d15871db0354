"""Discussion: threads of comments on a decision (issue 32).

People (and agents) ask and answer questions about a decision in threads.
A thread is opened by its first comment, can be marked resolved (who and
when are kept) and reopened; a decision's threads read open ones first.

A comment is plain text of at most ``limits.COMMENT_MAX`` characters. Its
body is sealed with a key of its own in the graph's key store, exactly as an
event body is (``core.stores.keystore``): the graph holds only the
ciphertext and the slot. Deleting a comment (its author, or a steward) and
redacting it (a steward) destroy the key and start the disk purge
(``core._purge``), so its text is left in no reply, record, log, export or
file; the comment keeps its place in the thread (author, time, state). An
edit (the author's, within ``limits.COMMENT_EDIT_S``) seals the new text
under the same key, so one destruction covers every version.

Mentions are names the caller validated (the dashboard passes the project's
people who may see it); the core records them and tells them through the
activity log (``notify``). Activity summaries never hold comment text.

Writes of one decision's discussion queue on one lock (its
``DecisionComments`` node, which also keeps the live count and the latest
comment the queue cards show, so a page of cards is one read).
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import datetime, timedelta
from typing import Any

from . import _common as c
from . import _review, limits
from ._comment_reads import _COMMENT_FIELDS, _THREAD_FIELDS, CommentReads, _aad, first_line
from ._schema import CORE_SCHEMA
from .history import _MintedKeys
from .models.comments import (
    Comment,
    CommentErrorCode,
    CommentResult,
    CommentState,
    Thread,
    ThreadResult,
)
from .models.retention import ActorKind
from .stores.base import GraphStore, Tx
from .stores.keystore import keys_of, seal, slot_ranges

__all__ = ["Discussion", "first_line"]

E = CommentErrorCode


def _sha(body: str) -> str:
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


def _when(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) else value


class Discussion(CommentReads):
    """The discussion of one project's decisions, written as one person or agent."""

    def __init__(
        self, store: GraphStore, *, project_id: str, agent_id: str, actor_kind: ActorKind | str = ActorKind.agent
    ) -> None:
        self.store = store
        self.project_id = c.text(project_id, "project_id", allow_empty=False)
        self.agent_id = c.text(agent_id, "agent_id", allow_empty=False)
        self.actor_kind = c.enum_value(ActorKind, actor_kind, "actor_kind")
        store.ensure_schema(self.project_id, CORE_SCHEMA)

    # -- writes -----------------------------------------------------------

    def post_comment(
        self,
        decision_id: str,
        body: str,
        *,
        thread_id: str | None = None,
        mentions: list[str] | None = None,
        request_id: str | None = None,
    ) -> CommentResult:
        """A comment on the decision: a new thread's first (``thread_id``
        None) or a reply in ``thread_id``. ``mentions``: names the caller
        checked may see the project; each is told (``notify``), as is
        everyone else who wrote in the thread."""
        return self._post(decision_id, body, thread_id=thread_id, mentions=mentions, request_id=request_id)

    def _checked_mentions(self, mentions: Any) -> list[str] | None:
        """The names, deduplicated in order; None when over a limit."""
        if mentions is None:
            return []
        if not isinstance(mentions, list | tuple):
            raise ValueError("mentions must be a list of names")
        names = list(dict.fromkeys(c.text(m, "mention", allow_empty=False) for m in mentions))
        if limits.items_over(names, item=limits.AGENT_ID_MAX, count=limits.MENTIONS_MAX):
            return None
        return names

    def _post(
        self,
        decision_id: str,
        body: str | None,
        *,
        thread_id: str | None,
        mentions: Any,
        request_id: str | None,
        restore: dict[str, Any] | None = None,
    ) -> CommentResult:
        """``restore`` (the importer's): the comment as exported: its ids,
        state, edit time and remover, written as it was (a gone comment
        without text and without a key)."""
        did = c.text(decision_id, "decision_id").lower()
        gone = restore is not None and restore.get("state", "live") != CommentState.live.value
        body = None if gone else c.text(body, "body")
        names = self._checked_mentions(mentions)
        tid = None if thread_id is None else c.text(thread_id, "thread_id").lower()
        if not c.check_request_id(request_id):
            return CommentResult(recorded=False, error=E.invalid_request_id)
        if body is not None and not body.strip():
            return CommentResult(recorded=False, error=E.body_required)
        if names is None or limits.over(body, limits.COMMENT_MAX):
            return CommentResult(recorded=False, error=E.value_too_long)
        if not c.is_uuid(did) or (tid is not None and not c.is_uuid(tid)):
            return CommentResult(recorded=False, error=E.thread_not_found if c.is_uuid(did) else E.decision_not_found)
        if not self._decision_here(did):  # before the lock, which makes its node
            return CommentResult(recorded=False, error=E.decision_not_found)
        replay = c.Replay(
            self.project_id,
            self.agent_id,
            request_id,
            "post_comment",
            {"decision": did, "thread": tid, "mentions": names, "restore": restore},
            body=None if body is None else _sha(body),
        )
        minted = _MintedKeys(keys_of(self.store))
        key: dict[str, Any] = {}
        wrote: list[str] = []

        def work(tx: Tx) -> CommentResult:
            wrote.clear()
            tx.lock_kept("DecisionComments", did, self.project_id)
            earlier = c.replayed(
                tx, replay, CommentResult, lambda: CommentResult(recorded=False, error=E.request_id_reused)
            )
            if earlier is not None:
                return self._replayed(earlier, replay)
            decision = tx.read(
                "MATCH (d:Decision {id: $id}) WHERE d.project_id = $p "
                "OPTIONAL MATCH (s:DecisionComments {id: $id}) "
                "RETURN d.conclusion AS conclusion, coalesce(s.threads, 0) AS threads",
                {"id": did, "p": self.project_id},
            )
            if not decision:
                return CommentResult(recorded=False, error=E.decision_not_found)
            new_thread, others, seq = tid is None, [], 0
            thread_node = tid or str(uuid.uuid4())
            if tid is not None:
                found = tx.read(
                    "MATCH (t:Thread {id: $id}) WHERE t.project_id = $p AND t.decision_id = $d "
                    "OPTIONAL MATCH (c:Comment {thread_id: $id}) "
                    "RETURN t.id AS id, count(c) AS n, collect(DISTINCT c.author) AS authors",
                    {"id": tid, "p": self.project_id, "d": did},
                )
                if not found and restore is not None:
                    new_thread = True  # the importer's first comment of an exported thread
                elif not found:
                    return CommentResult(recorded=False, error=E.thread_not_found)
                else:
                    seq, others = found[0]["n"], found[0]["authors"]
            if new_thread and decision[0]["threads"] >= limits.THREADS_MAX:
                return CommentResult(recorded=False, error=E.too_many_comments)
            if seq >= limits.THREAD_COMMENTS_MAX:
                return CommentResult(recorded=False, error=E.too_many_comments)
            if body is not None and not key:
                key["slot"], (key["key"],) = minted.new(1)  # on disk before the graph names it
            cid = (restore or {}).get("comment") or str(uuid.uuid4())
            key["comment"] = cid
            at = c.now()
            r = restore or {}
            comment = Comment(
                id=cid,
                thread_id=thread_node,
                decision_id=did,
                author=self.agent_id,
                at=at,
                edited_at=r.get("edited_at"),
                body=body,
                mentions=names,
                state=r.get("state", CommentState.live.value),
                removed_by=r.get("removed_by"),
                removed_at=r.get("removed_at"),
            )
            live = comment.state == CommentState.live
            stamp = c.iso(at)
            if new_thread:
                tx.write(
                    "CREATE (:Thread {id: $id, project_id: $p, decision_id: $d, author: $a, created_at: $at, "
                    "last_at: $at})",
                    {"id": thread_node, "p": self.project_id, "d": did, "a": self.agent_id, "at": stamp},
                )
            else:
                tx.write("MATCH (t:Thread {id: $id}) SET t.last_at = $at", {"id": thread_node, "at": stamp})
            tx.write(
                "CREATE (:Comment {id: $id, project_id: $p, thread_id: $t, decision_id: $d, seq: $seq, author: $a, "
                "at: $at, edited_at: $edited, body_ct: $ct, key_slot: $slot, mentions: $m, state: $state, "
                "removed_by: $rby, removed_at: $rat})",
                {
                    "id": cid,
                    "p": self.project_id,
                    "t": thread_node,
                    "d": did,
                    "seq": seq,
                    "a": self.agent_id,
                    "at": stamp,
                    "edited": c.iso(comment.edited_at) if comment.edited_at else None,
                    "ct": seal(key["key"], _aad(cid), body) if body is not None else None,
                    "slot": key.get("slot") if body is not None else None,
                    "m": names or None,
                    "state": comment.state.value,
                    "rby": comment.removed_by,
                    "rat": c.iso(comment.removed_at) if comment.removed_at else None,
                },
            )
            tx.write(
                "MERGE (s:DecisionComments {id: $d}) SET s.project_id = $p, "
                "s.threads = coalesce(s.threads, 0) + $new, s.count = coalesce(s.count, 0) + $live, "
                "s.last_id = CASE WHEN $live = 1 THEN $c ELSE s.last_id END",
                {"d": did, "p": self.project_id, "new": int(new_thread), "live": int(live), "c": cid},
            )
            if restore is None:
                what = "replied on" if not new_thread else "commented on"
                self._log(
                    tx,
                    "comment",
                    did,
                    f"{what} “{first_line(decision[0]['conclusion'], 80)}”",
                    notify=[*names, *others],
                    at=stamp,  # the comment's own time: ``comments_of_entries`` finds it by it
                )
            result = CommentResult(recorded=True, comment=comment)
            replay.remember(tx, _without_body(result), body_key=key.get("key"))
            wrote.append(cid)
            return result

        with minted.settled(lambda: self._has_key(key.get("comment"), key.get("slot"))):
            result = self.store.transact(self.project_id, work)
            if wrote:
                minted.keep()
        return result

    def _decision_here(self, did: str) -> bool:
        return bool(
            self.store.read(
                self.project_id,
                "MATCH (d:Decision {id: $id}) WHERE d.project_id = $p RETURN d.id AS id",
                {"id": did, "p": self.project_id},
            )
        )

    def _has_key(self, comment_id: str | None, slot: int | None) -> bool:
        if comment_id is None or slot is None:
            return False
        rows = self.store.read(
            self.project_id, "MATCH (c:Comment {id: $id}) RETURN c.key_slot AS slot", {"id": comment_id}
        )
        return bool(rows) and rows[0]["slot"] == slot

    def _replayed(self, earlier: CommentResult, replay: c.Replay) -> CommentResult:
        """A replay answered with the comment as it is now (its text, or none
        once gone); ``request_id_reused`` when its key still checks the body
        and this body is another."""
        if earlier.comment is None:
            return earlier
        rows = self.store.read(
            self.project_id,
            f"MATCH (c:Comment {{id: $id}}) RETURN {_COMMENT_FIELDS}",
            {"id": earlier.comment.id},
        )
        if not rows:
            return earlier
        slot = rows[0]["key_slot"]
        if replay.same_body(None if slot is None else keys_of(self.store).key(slot)) is False:
            return CommentResult(recorded=False, error=E.request_id_reused)
        return earlier.model_copy(update={"comment": self._open(rows)[0]})

    def _log(self, tx: Tx, action: str, did: str, summary: str, *, notify: list[str] | None = None, **kw: Any) -> None:
        _review.log_activity(
            tx,
            self.project_id,
            self.agent_id,
            action,
            "decision",
            did,
            summary,
            kw.pop("reason", None),
            kw.pop("at", None) or c.iso(c.now()),
            actor_kind=self.actor_kind.value,
            notify=_told(notify, self.agent_id),
            **kw,
        )

    def _comment_row(self, cid: str) -> dict[str, Any] | None:
        rows = self.store.read(
            self.project_id,
            "MATCH (c:Comment {id: $id}) WHERE c.project_id = $p RETURN c.decision_id AS decision_id",
            {"id": cid, "p": self.project_id},
        )
        return rows[0] if rows else None

    def _locked_comment(self, tx: Tx, cid: str, did: str) -> dict[str, Any] | None:
        """The comment read under its decision's discussion lock, with the
        decision's conclusion (for the activity summary)."""
        rows = tx.read(
            f"MATCH (c:Comment {{id: $id}}) WHERE c.project_id = $p "
            f"OPTIONAL MATCH (d:Decision {{id: $d}}) RETURN {_COMMENT_FIELDS}, d.conclusion AS conclusion",
            {"id": cid, "p": self.project_id, "d": did},
        )
        return rows[0] if rows else None

    def edit_comment(
        self, comment_id: str, body: str, *, mentions: list[str] | None = None, request_id: str | None = None
    ) -> CommentResult:
        """The author's new text, within ``limits.COMMENT_EDIT_S`` of the
        comment; sealed under the comment's key. People newly mentioned are
        told."""
        cid = c.text(comment_id, "comment_id").lower()
        body = c.text(body, "body")
        names = self._checked_mentions(mentions)
        if not c.check_request_id(request_id):
            return CommentResult(recorded=False, error=E.invalid_request_id)
        if not body.strip():
            return CommentResult(recorded=False, error=E.body_required)
        if names is None or limits.over(body, limits.COMMENT_MAX):
            return CommentResult(recorded=False, error=E.value_too_long)
        found = self._comment_row(cid) if c.is_uuid(cid) else None
        if found is None:
            return CommentResult(recorded=False, error=E.comment_not_found)
        did = found["decision_id"]
        replay = c.Replay(
            self.project_id, self.agent_id, request_id, "edit_comment", {"comment": cid, "m": names}, body=_sha(body)
        )

        def work(tx: Tx) -> CommentResult:
            tx.lock_kept("DecisionComments", did, self.project_id)
            earlier = c.replayed(
                tx, replay, CommentResult, lambda: CommentResult(recorded=False, error=E.request_id_reused)
            )
            if earlier is not None:
                return self._replayed(earlier, replay)
            row = self._locked_comment(tx, cid, did)
            if row is None:
                return CommentResult(recorded=False, error=E.comment_not_found)
            if row["state"] != CommentState.live.value or row["key_slot"] is None:
                return CommentResult(recorded=False, error=E.comment_gone)
            if row["author"] != self.agent_id:
                return CommentResult(recorded=False, error=E.not_author)
            at = c.now()
            if at - _when(row["at"]) > timedelta(seconds=limits.COMMENT_EDIT_S):  # type: ignore[operator]
                return CommentResult(recorded=False, error=E.edit_window_closed)
            key = keys_of(self.store).key(row["key_slot"])
            if key is None:
                return CommentResult(recorded=False, error=E.comment_gone)
            tx.write(
                "MATCH (c:Comment {id: $id}) SET c.body_ct = $ct, c.edited_at = $at, c.mentions = $m",
                {"id": cid, "ct": seal(key, _aad(cid), body), "at": c.iso(at), "m": names or None},
            )
            earlier_names = set(row["mentions"] or [])
            self._log(
                tx,
                "comment_edit",
                did,
                f"edited a comment on “{first_line(row['conclusion'] or '', 80)}”",
                notify=[n for n in names or [] if n not in earlier_names],
                at=c.iso(at),  # the edit's time
            )
            row.pop("conclusion")
            comment = self._open([{**row, "body_ct": None, "key_slot": None}])[0]
            result = CommentResult(
                recorded=True, comment=comment.model_copy(update={"body": body, "edited_at": at, "mentions": names})
            )
            replay.remember(tx, _without_body(result), body_key=key)
            return result

        return self.store.transact(self.project_id, work)

    def delete_comment(
        self, comment_id: str, *, as_steward: bool = False, request_id: str | None = None
    ) -> CommentResult:
        """Remove a comment's text: its author, or (``as_steward``: the
        caller checked the role) a steward. The key is destroyed and the
        disk purge started; the comment keeps its place, marked deleted."""
        return self._remove(comment_id, CommentState.deleted, as_steward=as_steward, request_id=request_id)

    def redact_comment(
        self, comment_id: str, *, reason: str | None = None, request_id: str | None = None
    ) -> CommentResult:
        """A steward's redaction (the caller checked the role), with the
        guarantee of an event's: the key destroyed, the disk purge started,
        the reason kept in the activity log."""
        reason = c.optional_text(reason, "reason")
        if limits.over(reason, limits.EXPLANATION_MAX):
            return CommentResult(recorded=False, error=E.value_too_long)
        return self._remove(comment_id, CommentState.redacted, as_steward=True, request_id=request_id, reason=reason)

    def _remove(
        self,
        comment_id: str,
        state: CommentState,
        *,
        as_steward: bool,
        request_id: str | None,
        reason: str | None = None,
    ) -> CommentResult:
        from .retention import purge_disk_soon

        cid = c.text(comment_id, "comment_id").lower()
        if not isinstance(as_steward, bool):
            raise ValueError("as_steward must be a boolean")
        if not c.check_request_id(request_id):
            return CommentResult(recorded=False, error=E.invalid_request_id)
        found = self._comment_row(cid) if c.is_uuid(cid) else None
        if found is None:
            return CommentResult(recorded=False, error=E.comment_not_found)
        did = found["decision_id"]
        op = "redact_comment" if state is CommentState.redacted else "delete_comment"
        replay = c.Replay(self.project_id, self.agent_id, request_id, op, {"comment": cid, "reason": reason})
        shred: list[int] = []

        def work(tx: Tx) -> CommentResult:
            shred.clear()
            tx.lock_kept("DecisionComments", did, self.project_id)
            earlier = c.replayed(
                tx, replay, CommentResult, lambda: CommentResult(recorded=False, error=E.request_id_reused)
            )
            if earlier is not None:
                return self._replayed(earlier, replay)
            row = self._locked_comment(tx, cid, did)
            if row is None:
                return CommentResult(recorded=False, error=E.comment_not_found)
            if row["author"] != self.agent_id and not as_steward:
                return CommentResult(recorded=False, error=E.not_author)
            conclusion = row.pop("conclusion") or ""
            if row["state"] == state.value or (row["state"] == "redacted"):
                result = CommentResult(recorded=True, comment=self._open([row])[0])  # already done
                replay.remember(tx, result)
                return result
            was_live = row["state"] == CommentState.live.value
            latest = []
            if was_live:  # the card's latest comment, should this one be it
                latest = tx.read(
                    "MATCH (s:DecisionComments {id: $d}) WITH s WHERE s.last_id = $id "
                    "MATCH (c:Comment {decision_id: $d}) WHERE c.state = 'live' AND c.id <> $id "
                    "RETURN c.id AS id ORDER BY c.at DESC, c.id DESC LIMIT 1",
                    {"d": did, "id": cid},
                )
            at = c.iso(c.now())
            tx.write(
                "MATCH (c:Comment {id: $id}) SET c.state = $state, c.removed_by = $by, c.removed_at = $at, "
                "c.body_ct = null, c.key_slot = null, c.mentions = null",
                {"id": cid, "state": state.value, "by": self.agent_id, "at": at},
            )
            if was_live:
                tx.write(
                    "MATCH (s:DecisionComments {id: $d}) SET s.count = s.count - 1, "
                    "s.last_id = CASE WHEN s.last_id = $id THEN $next ELSE s.last_id END",
                    {"d": did, "id": cid, "next": latest[0]["id"] if latest else None},
                )
            shred[:] = [] if row["key_slot"] is None else [row["key_slot"]]
            action = "comment_redact" if state is CommentState.redacted else "comment_delete"
            verb = "redacted" if state is CommentState.redacted else "deleted"
            self._log(
                tx,
                action,
                did,
                f"{verb} a comment by {row['author']} on “{first_line(conclusion, 80)}”",
                reason=reason,
                purge_slots=slot_ranges(shred) if shred else None,
            )
            gone = {**row, "state": state.value, "removed_by": self.agent_id, "removed_at": at}
            result = CommentResult(recorded=True, comment=self._open([{**gone, "body_ct": None}])[0])
            replay.remember(tx, result)
            return result

        result = self.store.transact(self.project_id, work)
        if shred:  # the key goes now; the purge round destroys it again should this process die here
            keys_of(self.store).destroy(shred)
        if result.recorded and shred:
            purge_disk_soon(self.store)
        return result

    def resolve_thread(self, thread_id: str, *, resolved: bool = True, request_id: str | None = None) -> ThreadResult:
        """Mark the thread resolved (who and when are kept) or, with
        ``resolved=False``, open again."""
        tid = c.text(thread_id, "thread_id").lower()
        if not isinstance(resolved, bool):
            raise ValueError("resolved must be a boolean")
        if not c.check_request_id(request_id):
            return ThreadResult(recorded=False, error=E.invalid_request_id)
        rows = (
            self.store.read(
                self.project_id,
                "MATCH (t:Thread {id: $id}) WHERE t.project_id = $p RETURN t.decision_id AS d",
                {"id": tid, "p": self.project_id},
            )
            if c.is_uuid(tid)
            else []
        )
        if not rows:
            return ThreadResult(recorded=False, error=E.thread_not_found)
        did = rows[0]["d"]
        replay = c.Replay(self.project_id, self.agent_id, request_id, "resolve_thread", {"t": tid, "r": resolved})

        def work(tx: Tx) -> ThreadResult:
            tx.lock_kept("DecisionComments", did, self.project_id)
            earlier = c.replayed(
                tx, replay, ThreadResult, lambda: ThreadResult(recorded=False, error=E.request_id_reused)
            )
            if earlier is not None:
                return earlier
            found = tx.read(
                f"MATCH (t:Thread {{id: $id}}) OPTIONAL MATCH (d:Decision {{id: t.decision_id}}) "
                f"RETURN {_THREAD_FIELDS}, d.conclusion AS conclusion",
                {"id": tid},
            )
            row = found[0]
            conclusion = row.pop("conclusion") or ""
            if (row["resolved_at"] is not None) == resolved:
                result = ThreadResult(recorded=True, thread=Thread.model_validate(row))
                replay.remember(tx, result)
                return result
            at = c.iso(c.now())
            tx.write(
                "MATCH (t:Thread {id: $id}) SET t.resolved_at = $at, t.resolved_by = $by",
                {"id": tid, "at": at if resolved else None, "by": self.agent_id if resolved else None},
            )
            verb = "resolved" if resolved else "reopened"
            self._log(tx, "comment_resolve", did, f"{verb} a thread on “{first_line(conclusion, 80)}”")
            changed = {
                **row,
                "resolved_at": at if resolved else None,
                "resolved_by": self.agent_id if resolved else None,
            }
            result = ThreadResult(recorded=True, thread=Thread.model_validate(changed))
            replay.remember(tx, result)
            return result

        return self.store.transact(self.project_id, work)


def _without_body(result: CommentResult) -> CommentResult:
    """What a request record keeps: never the text (a replay reads it
    again, as it is then)."""
    if result.comment is None:
        return result
    return result.model_copy(update={"comment": result.comment.model_copy(update={"body": None})})


def _told(notify: list[str] | None, author: str) -> list[str] | None:
    """Who a comment is news for: its mentions first, then the thread's other
    writers, each once, never the author, and only names a person could
    hold; at most ``limits.NOTIFY_MAX`` (a thread of many writers still takes
    a reply: the mentioned are told, the longest-standing writers after)."""
    names = [n for n in dict.fromkeys(notify or []) if n != author and 0 < len(n) <= limits.PERSON_MAX]
    return names[: limits.NOTIFY_MAX] or None
