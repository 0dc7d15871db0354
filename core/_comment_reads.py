"""The reads of a decision's discussion (``core.comments``): threads and
their comments with the live bodies unsealed, the queue cards' summaries in
one read, and a comment's context without its text."""

from __future__ import annotations

from typing import Any

from . import _common as c
from . import limits
from .models.comments import Comment, CommentContext, CommentState, CommentSummary, Thread, ThreadList
from .stores.base import GraphStore
from .stores.keystore import UNREADABLE, keys_of, unseal

_COMMENT_FIELDS = (
    "c.id AS id, c.thread_id AS thread_id, c.decision_id AS decision_id, c.author AS author, c.at AS at, "
    "c.edited_at AS edited_at, c.body_ct AS body_ct, c.key_slot AS key_slot, coalesce(c.mentions, []) AS mentions, "
    "c.state AS state, c.removed_by AS removed_by, c.removed_at AS removed_at"
)
_THREAD_FIELDS = (
    "t.id AS id, t.decision_id AS decision_id, t.author AS author, t.created_at AS created_at, "
    "t.last_at AS last_at, t.resolved_at AS resolved_at, t.resolved_by AS resolved_by"
)


def _aad(comment_id: str) -> str:
    """What a comment's ciphertext is bound to (never an event's id)."""
    return f"comment\x1f{comment_id}"


def first_line(text: str | None, limit: int = limits.COMMENT_LINE_MAX) -> str | None:
    """The first non-blank line of ``text``, cut to ``limit`` characters."""
    if text is None:
        return None
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


class CommentReads:
    """What a discussion reads; ``Discussion`` writes too."""

    store: GraphStore
    project_id: str

    # -- reads ------------------------------------------------------------

    def _open(self, rows: list[dict[str, Any]]) -> list[Comment]:
        """Comment rows as models, the live ones' bodies unsealed (the keys
        read in one call)."""
        slots = [r["key_slot"] for r in rows if r.get("body_ct") is not None and r.get("key_slot") is not None]
        found = keys_of(self.store).keys(slots) if slots else {}
        out = []
        for r in rows:
            sealed, slot = r.pop("body_ct", None), r.pop("key_slot", None)
            body = None
            if r["state"] == CommentState.live.value and sealed is not None:
                body = unseal(found.get(slot), _aad(r["id"]), sealed)
                body = UNREADABLE if body is None else body
            out.append(Comment.model_validate({**r, "body": body}))
        return out

    def list_threads(self, decision_id: str, *, limit: int = 10, offset: int = 0) -> ThreadList:
        """A page of the decision's threads (at most ``limits.THREADS_PAGE_MAX``),
        each with its first comment (the question) and its latest
        ``limits.THREAD_COMMENTS_SHOWN``; ``Thread.omitted`` counts the ones
        between (``get_thread`` pages through them). Open threads first,
        then by their latest comment, newest first. Two reads, and only the
        comments shown are unsealed: the read grows with the page, not with
        the discussion."""
        did = c.text(decision_id, "decision_id").lower()
        limit = c.clamp(limit, 10, limits.THREADS_PAGE_MAX)
        offset = max(0, c.integer(offset, "offset"))
        rows = self.store.read(
            self.project_id,
            f"MATCH (t:Thread) WHERE t.decision_id = $d AND t.project_id = $p RETURN {_THREAD_FIELDS}",
            {"d": did, "p": self.project_id},
        )
        rows.sort(key=lambda r: r["last_at"], reverse=True)
        rows.sort(key=lambda r: r["resolved_at"] is not None)
        page = rows[offset : offset + limit]
        shown = self._window([r["id"] for r in page], "i = 0 OR i >= n - $k", {"k": limits.THREAD_COMMENTS_SHOWN})
        threads = [self._thread(r, *shown.get(r["id"], ([], 0))) for r in page]
        return ThreadList(
            decision_id=did,
            threads=threads,
            total=len(rows),
            open=sum(1 for r in rows if r["resolved_at"] is None),
            more=offset + len(page) < len(rows),
        )

    @staticmethod
    def _thread(row: dict[str, Any], comments: list[Comment], count: int) -> Thread:
        return Thread.model_validate(
            {**row, "comments": comments, "comment_count": count, "omitted": count - len(comments)}
        )

    def _window(
        self, thread_ids: list[str], where: str, params: dict[str, Any]
    ) -> dict[str, tuple[list[Comment], int]]:
        """Per thread id, the comments at the positions ``where`` keeps (``i``
        the position, oldest first from 0; ``n`` the thread's count), and
        that count. Only those rows carry their ciphertext, in one read."""
        if not thread_ids:
            return {}
        rows = self.store.read(
            self.project_id,
            "UNWIND $ids AS tid MATCH (c:Comment {thread_id: tid}) WITH tid, c ORDER BY c.seq "
            "WITH tid, collect(c) AS cs UNWIND range(0, size(cs) - 1) AS i "
            f"WITH tid, size(cs) AS n, i, cs[i] AS c WHERE {where} "
            f"RETURN {_COMMENT_FIELDS}, i AS pos, n",
            {"ids": thread_ids, **params},
        )
        rows.sort(key=lambda r: (r["thread_id"], r.pop("pos")))
        counts = {r["thread_id"]: r.pop("n") for r in rows}
        out: dict[str, tuple[list[Comment], int]] = {t: ([], counts[t]) for t in counts}
        for comment in self._open(rows):
            out[comment.thread_id][0].append(comment)
        return out

    def _comments_of(self, thread_ids: list[str]) -> dict[str, list[Comment]]:
        """Every comment of these threads (the export's read, not a page's)."""
        if not thread_ids:
            return {}
        rows = self.store.read(
            self.project_id,
            f"UNWIND $ids AS tid MATCH (c:Comment {{thread_id: tid}}) RETURN {_COMMENT_FIELDS}, c.seq AS seq",
            {"ids": thread_ids},
        )
        rows.sort(key=lambda r: (r["thread_id"], r.pop("seq")))
        out: dict[str, list[Comment]] = {}
        for comment in self._open(rows):
            out.setdefault(comment.thread_id, []).append(comment)
        return out

    def get_thread(self, thread_id: str, *, offset: int = 0, limit: int | None = None) -> Thread | None:
        """One thread with a page of its comments, oldest first: from
        position ``offset`` (0 is the question), at most ``limit`` (default
        and most ``limits.THREAD_COMMENTS_SHOWN``); ``Thread.omitted`` counts
        the rest. None when it is not this project's."""
        tid = c.text(thread_id, "thread_id").lower()
        limit = c.clamp(limit, limits.THREAD_COMMENTS_SHOWN, limits.THREAD_COMMENTS_SHOWN)
        offset = max(0, c.integer(offset, "offset"))
        rows = self.store.read(
            self.project_id,
            f"MATCH (t:Thread {{id: $id}}) WHERE t.project_id = $p RETURN {_THREAD_FIELDS}",
            {"id": tid, "p": self.project_id},
        )
        if not rows:
            return None
        page = self._window([tid], "i >= $from AND i < $from + $k", {"from": offset, "k": limit})
        return self._thread(rows[0], *page.get(tid, ([], 0)))

    def get_comment(self, comment_id: str) -> Comment | None:
        cid = c.text(comment_id, "comment_id").lower()
        rows = self.store.read(
            self.project_id,
            f"MATCH (c:Comment {{id: $id}}) WHERE c.project_id = $p RETURN {_COMMENT_FIELDS}",
            {"id": cid, "p": self.project_id},
        )
        return self._open(rows)[0] if rows else None

    def summaries(self, decision_ids: list[str]) -> dict[str, CommentSummary]:
        """Per decision id (those with a discussion): the live comment count
        and the latest live comment's first line, in one read for a whole
        queue page."""
        ids = [str(i).lower() for i in decision_ids]
        if not ids:
            return {}
        rows = self.store.read(
            self.project_id,
            "UNWIND $ids AS id MATCH (s:DecisionComments {id: id}) WHERE s.project_id = $p "
            "OPTIONAL MATCH (c:Comment {id: s.last_id}) "
            "RETURN s.id AS decision_id, coalesce(s.count, 0) AS count, c.id AS cid, c.state AS state, "
            "c.body_ct AS body_ct, c.key_slot AS key_slot, c.author AS author, c.at AS at",
            {"ids": ids, "p": self.project_id},
        )
        slots = [r["key_slot"] for r in rows if r["body_ct"] is not None and r["key_slot"] is not None]
        found = keys_of(self.store).keys(slots) if slots else {}
        out = {}
        for r in rows:
            line = None
            if r["cid"] is not None and r["state"] == CommentState.live.value and r["body_ct"] is not None:
                line = first_line(unseal(found.get(r["key_slot"]), _aad(r["cid"]), r["body_ct"]) or UNREADABLE)
            if not r["count"]:
                continue
            out[r["decision_id"]] = CommentSummary(
                decision_id=r["decision_id"],
                count=r["count"],
                latest_line=line,
                latest_author=r["author"] if line is not None else None,
                latest_at=r["at"] if line is not None else None,
            )
        return out

    def comment_context(self, comment_ids: list[str]) -> dict[str, CommentContext]:
        """Per comment id: its thread, its decision and its state, never its
        text (an inbox, a notification, a log line shows these)."""
        ids = [str(i).lower() for i in comment_ids]
        if not ids:
            return {}
        rows = self.store.read(
            self.project_id,
            "UNWIND $ids AS id MATCH (c:Comment {id: id}) WHERE c.project_id = $p "
            "OPTIONAL MATCH (t:Thread {id: c.thread_id}) OPTIONAL MATCH (d:Decision {id: c.decision_id}) "
            "RETURN c.id AS comment_id, c.thread_id AS thread_id, c.decision_id AS decision_id, c.author AS author, "
            "c.at AS at, c.state AS state, t.resolved_at IS NOT NULL AS thread_resolved, "
            "coalesce(d.conclusion, '') AS decision_conclusion",
            {"ids": ids, "p": self.project_id},
        )
        return {
            r["comment_id"]: CommentContext.model_validate(
                {**r, "decision_conclusion": first_line(r["decision_conclusion"]) or ""}
            )
            for r in rows
        }

    def comments_of_entries(self, entries: list[Any]) -> dict[str, CommentContext]:
        """Per activity entry id, the comment a ``comment`` (or
        ``comment_edit``) entry records, as :meth:`comment_context` tells it
        (never its text): the entry names the decision; the comment is the
        one its actor wrote (or edited) at the entry's time. One read."""
        rows = [
            {"e": e.id, "d": e.target_id, "a": e.actor, "at": c.iso(e.at), "edit": e.action == "comment_edit"}
            for e in entries
            if e.action in ("comment", "comment_edit") and e.target_kind == "decision"
        ]
        if not rows:
            return {}
        found = self.store.read(
            self.project_id,
            "UNWIND $rows AS r MATCH (x:Comment {decision_id: r.d}) WHERE x.project_id = $p AND x.author = r.a "
            "AND ((NOT r.edit AND x.at = r.at) OR (r.edit AND x.edited_at = r.at)) RETURN r.e AS entry, x.id AS id",
            {"rows": rows, "p": self.project_id},
        )
        contexts = self.comment_context([r["id"] for r in found])
        return {r["entry"]: contexts[r["id"]] for r in found if r["id"] in contexts}
