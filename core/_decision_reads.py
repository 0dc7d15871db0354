"""The reads of decision traces (seed 001, "Pages and lookups"): a task's
decisions, the review queue, the overview's counts, search, support history,
conflicts, revisions and dependants. :class:`DecisionReads` is the read half
of ``DecisionTraces``; ``review_views`` builds the screens' read models on it.
"""

from __future__ import annotations

import json
import re
import weakref
from collections.abc import Sequence
from typing import Any

from . import _common as c
from . import _conflict_keys, _counters, _review
from ._decision_rows import (
    _DECISION_FIELDS,
    BOOKKEEPING,
    SUPPORT,
    _decision,
    decision_arg,
    decision_map,
    in_queue_order,
    read_decision,
    read_decisions,
)
from .models.decision import (
    ConflictGroup,
    ConflictList,
    Decision,
    DecisionHit,
    DecisionLookup,
    DecisionPage,
    DecisionPageLookup,
    DecisionReviewList,
    ReviewReason,
    ReviewState,
    Revision,
    SupportHistoryPage,
)
from .stores.base import GraphStore

LIST_MAX = 20
REVIEW_MAX = 20
SEARCH_MAX = 100
HISTORY_MAX = 100
CONFLICT_GROUPS_MAX = 50
CONFLICT_DECISIONS_MAX = 50
#: What a task view shows (seed 001, ``get_task``).
VIEW_DECISIONS = 20
VIEW_CONFLICTS = 10
#: Up to this many matching decisions, a queue page sorts them all; beyond,
#: it reads widening ranges of the queue position index.
QUEUE_SORT_LIMIT = 2000
QUEUE_HEADS_KEPT = 10_000
#: The remembered head of each project's review queue, and of each task's
#: part of it (see ``DecisionReads._queue_page``), per store: a hint that
#: goes with the store object.
_QUEUE_HEADS: weakref.WeakKeyDictionary[GraphStore, dict[tuple[str, str | None], int]] = weakref.WeakKeyDictionary()


class DecisionReads:
    """The read methods of ``DecisionTraces`` (one project)."""

    def __init__(self, store: GraphStore, *, project_id: str) -> None:
        self.store = store
        self.project_id = c.text(project_id, "project_id", allow_empty=False)

    def _scope(self, var: str) -> str:
        """The project filter a query needs on a store that keeps every
        project in one graph (nothing on FalkorDB: a graph per project)."""
        return "" if self.store.graph_per_project else f" AND {var}.project_id = $p"

    def get_decision(self, decision_id: str) -> DecisionLookup:
        did = decision_arg(decision_id)
        if did is None:
            return DecisionLookup(found=False)
        row = read_decision(self.store, self.project_id, did)
        return DecisionLookup(found=True, decision=_decision(row)) if row else DecisionLookup(found=False)

    def list_decisions(
        self, task_name: str, *, include_history: bool = True, limit: int = LIST_MAX, offset: int = 0
    ) -> DecisionPageLookup:
        """The decisions of a task, newest first (active only without history)."""
        task_name = c.text(task_name, "task_name")
        if not isinstance(include_history, bool):
            raise ValueError("include_history must be a boolean")
        limit = c.clamp(limit, LIST_MAX, LIST_MAX)
        offset = max(0, c.integer(offset, "offset"))
        tid = c.task_id(self.project_id, task_name)
        known = self.store.read(
            self.project_id,
            "OPTIONAL MATCH (t:Task {id: $tid}) OPTIONAL MATCH (d:Decision {task_id: $tid}) "
            "WHERE d.project_id = $p AND ($all OR d.status = 'active') "
            "RETURN t.id AS task, count(d) AS n",
            {"tid": tid, "p": self.project_id, "all": include_history},
        )[0]
        if known["task"] is None and known["n"] == 0:
            return DecisionPageLookup(found=False)
        decisions = read_decisions(
            self.store,
            self.project_id,
            "MATCH (d:Decision {task_id: $tid}) WHERE d.project_id = $p AND ($all OR d.status = 'active') "
            f"WITH d ORDER BY d.created_at DESC, d.id SKIP $skip LIMIT $n RETURN {_DECISION_FIELDS}",
            {"tid": tid, "p": self.project_id, "all": include_history, "skip": offset, "n": limit},
        )
        return DecisionPageLookup(
            found=True,
            page=DecisionPage(decisions=decisions, count=known["n"], truncated=offset + len(decisions) < known["n"]),
        )

    def list_decisions_for_review(
        self,
        task_name: str | None = None,
        *,
        limit: int = REVIEW_MAX,
        offset: int = 0,
        reason: ReviewReason | str | None = None,
        state: ReviewState | str | None = None,
        root_cause: str | None = None,
    ) -> DecisionReviewList:
        """Active decisions that need review (or read unknown), oldest flag
        first. Beyond the seed: ``offset`` pages on, ``reason``, ``state`` and
        ``root_cause`` filter."""
        return self._review_list(
            task_name, limit=limit, offset=offset, reason=reason, state=state, root_cause=root_cause
        )

    def _review_list(
        self,
        task_name: str | None = None,
        *,
        limit: int = REVIEW_MAX,
        offset: int = 0,
        reason: ReviewReason | str | None = None,
        state: ReviewState | str | None = None,
        root_cause: str | None = None,
        queue_size: int | None = None,
        rows: dict[str, dict[str, Any]] | None = None,
        count_after: bool = False,
        task_open: int | None = None,
    ) -> DecisionReviewList:
        """``list_decisions_for_review``; ``queue_size``: the kept count of
        the whole queue when the caller has just read it (a page that shows
        the counters too), which saves reading it again; ``task_open``: the
        same for the task's part of the queue (its kept ``open``);
        ``rows``: filled with each listed decision's row, by id: its fields
        and its review bookkeeping (``cause``: its root cause, "" for none,
        and what ``_workbench`` reads for its actions). ``count_after``: the caller reads the kept counters
        after the page (with its groups' sizes, in one round trip): on Neo4j,
        whose page of the whole queue (or of one task's) needs no count, it
        is read without one, and ``count`` and ``truncated`` say only what
        the page holds until the caller sets them."""
        task_name = c.optional_text(task_name, "task_name")
        limit = c.clamp(limit, REVIEW_MAX, REVIEW_MAX)
        offset = max(0, c.integer(offset, "offset"))
        reason_value = c.enum_value(ReviewReason, reason, "reason").value if reason is not None else None
        state_value = c.enum_value(ReviewState, state, "state").value if state is not None else None
        root_cause = c.optional_text(root_cause, "root_cause")
        where = ["d.review_open = true"] + ([] if self.store.graph_per_project else ["d.project_id = $p"])
        params: dict[str, Any] = {"p": self.project_id, "skip": offset, "n": limit}
        if task_name is not None:
            where.append("d.task_id = $tid")
            params["tid"] = c.task_id(self.project_id, task_name)
        if reason_value is not None:
            where.append("d.review_reason = $reason")
            params["reason"] = reason_value
        if state_value is not None:
            where.append("d.review_state = $state")
            params["state"] = state_value
        if root_cause is not None:
            where.append("d.root_cause = $cause")
            params["cause"] = root_cause
        match = f"MATCH (d:Decision) WHERE {' AND '.join(where)}"
        base = 1 if self.store.graph_per_project else 2
        whole_queue = len(where) == base
        task_only = task_name is not None and len(where) == base + 1
        kept: int | None = None
        if (whole_queue or task_only) and count_after and queue_size is None and not self.store.graph_per_project:
            decisions = self._queue_page(where[1:], params, 0, scope=None, rows=rows)
            return DecisionReviewList(decisions=decisions, count=offset + len(decisions))
        if whole_queue:
            kept = queue_size if queue_size is not None else _counters.open_count(self.store, self.project_id)
        elif task_only:
            kept = (
                task_open
                if task_open is not None
                else _counters.task_state(self.store, self.project_id, params["tid"])["open"]
            )
        elif root_cause and len(where) == base + 1:  # one root cause's group
            kept = _counters.cause_sizes(self.store, self.project_id, [root_cause])[root_cause]
        count = (
            kept
            if kept is not None
            else self.store.read(self.project_id, f"{match} RETURN count(d) AS n", params)[0]["n"]
        )
        if not count or offset >= count:
            return DecisionReviewList(count=count)
        scope = "" if whole_queue else params["tid"] if task_only else None
        decisions = self._queue_page(where[1:], params, count, scope=scope, rows=rows)
        return DecisionReviewList(decisions=decisions, count=count, truncated=offset + len(decisions) < count)

    def _queue_page(
        self,
        where: list[str],
        params: dict[str, Any],
        count: int,
        *,
        scope: str | None,
        rows: dict[str, dict[str, Any]] | None = None,
    ) -> list[Decision]:
        """One page of the queue in ``queue_pos`` order.

        On Neo4j, one read in the order of the position index. On FalkorDB
        (whose range index gives no order), sorting every flagged decision
        costs time in proportion to the queue, so a long queue is read through widening ranges of the position index
        from its head; a range that yields a full page holds every decision
        before the page's end, so the page is exact. The head (the lowest
        position still queued) is remembered per project, and per task for
        a queue of one task (``scope``: "" for the whole queue, a task id, or
        None for other filters, which start from the whole queue's head), and
        checked with a count of the empty range below it: positions only
        grow, and a decision leaving the queue only moves the head up.
        ``rows`` (when given) is filled with each decision's row."""
        found = self._queue_rows(where, params, count, scope=scope)
        if rows is not None:
            rows.update((r["id"], r) for r in found)
        return [_decision(r) for r in found]

    def _queue_rows(
        self, where: list[str], params: dict[str, Any], count: int, *, scope: str | None
    ) -> list[dict[str, Any]]:
        fields = (
            f"{_DECISION_FIELDS}, coalesce(d.root_cause, '') AS cause, d.root_cause AS root_cause, "
            "d.queued AS queued, d.rejected_at AS rejected_at, d.superseded_at AS superseded_at, "
            "d.superseded_by AS superseded_by"
        )
        order = f"WITH d ORDER BY d.queue_pos, d.id SKIP $skip LIMIT $n RETURN {fields}"
        filters = "".join(f" AND {w}" for w in where)
        if not self.store.graph_per_project:
            # Neo4j walks the project's (or the task's) part of a composite
            # position index in its order when the ORDER BY names the
            # index's leading property too: the page reads its own rows and
            # those it skips, however long the queue (no head, no ranges).
            # A decision has a position exactly while it is in the queue
            # (``_review.LEAVE_QUEUE``), so the walk asks nothing else of the
            # entries it skips: a page deep in the queue reads only the index.
            match, ordered = in_queue_order("task_id" if "tid" in params else "project_id")
            return self.store.read(
                self.project_id,
                f"{match} {' AND '.join(where)} WITH d ORDER BY {ordered} SKIP $skip LIMIT $n RETURN {fields}",
                params,
            )
        if count > QUEUE_SORT_LIMIT:
            heads = _QUEUE_HEADS.setdefault(self.store, {})
            key = (self.project_id, scope)
            head = self._queue_head(heads, key, filters, params)
            if head is not None and head < (end := _review.Positions.horizon()):
                span = f"MATCH (d:Decision) WHERE d.queue_pos >= $lo AND d.queue_pos < $top{filters}"

                def read(lo: int, hi: int) -> list[dict[str, Any]]:
                    rows = self.store.read(
                        self.project_id, f"{span} {order}, d.queue_pos AS pos", {**params, "lo": lo, "top": hi + 1}
                    )
                    if rows and scope is not None and params["skip"] == 0:
                        _remember_head(heads, key, rows[0]["pos"])  # the head of this queue
                    return rows

                return c.widening(
                    read,
                    n=params["n"],
                    near=head,
                    far=end - 1,
                    width=1024,
                    skip=params["skip"],
                    count=lambda lo, hi: self.store.read(
                        self.project_id, f"{span} RETURN count(d) AS n", {**params, "lo": lo, "top": hi + 1}
                    )[0]["n"],
                    bounded=False,
                )
        return self.store.read(
            self.project_id, f"MATCH (d:Decision) WHERE d.review_open = true{filters} {order}", params
        )

    def _queue_head(
        self,
        heads: dict[tuple[str, str | None], int],
        key: tuple[str, str | None],
        filters: str,
        params: dict[str, Any],
    ) -> int | None:
        """Where the queue's ranges start: the head remembered for ``key``
        (or the whole queue's, for other filters: see ``_queue_page``) while
        nothing lies below it, else the lowest position queued with these
        filters, read from the index (None when none is)."""
        scope = key[1]
        head = heads.get(key)
        project = self._scope("d")
        below = filters if scope else project
        if head is None and scope is None:
            head, below = heads.get((self.project_id, "")), project
        if (
            head is not None
            and self.store.read(
                self.project_id,
                f"MATCH (d:Decision) WHERE d.queue_pos < $head{below} RETURN count(d) AS n",
                {**params, "head": head},
            )[0]["n"]
        ):
            head = None  # something entered below it (a clock set back): find it again
        if head is None:
            head = self.store.read(
                self.project_id,
                f"MATCH (d:Decision) WHERE d.review_open = true{filters} RETURN min(d.queue_pos) AS lo",
                params,
            )[0]["lo"]
            if head is not None and scope is not None:
                # remembered as a first page's read remembers it: a worker
                # that only ever serves later pages scanned for it each time
                _remember_head(heads, key, head)
        return head

    def review_summary(self, *, causes: int = 50) -> tuple[dict[str, int], list[tuple[str, int]]]:
        """For an overview: the counts of ``review_counts`` and the root
        causes of ``review_root_causes``, the causes in one pass over the
        review queue."""
        causes = c.clamp(causes, 50, 200, "causes")
        both = _counters.counts_and_top_causes(self.store, self.project_id, causes)
        if both is not None:  # both kept: one round trip
            return both
        return self.review_counts(), self._open_causes(causes)

    def _open_causes(self, limit: int) -> list[tuple[str, int]]:
        """The root causes of the review queue with how many each, most
        first: kept counts (``_counters.top_causes``), not a pass over the
        queue."""
        return _counters.top_causes(self.store, self.project_id, limit)

    def review_counts(self) -> dict[str, int]:
        """For an overview: decisions needing review, reading unknown, still
        queued for review (review incomplete), and choice keys in conflict.
        The kept counters are read, not counted: one round trip."""
        counts = _counters.queue_counts(self.store, self.project_id)
        if counts is not None:
            return counts
        kept = _counters.kept_counts(self.store, self.project_id)  # never counted: count first
        return {
            "needs_review": kept["needs_review"],
            "unknown": kept["unknown"],
            "queued": kept["queued"],
            "conflicts": _counters.conflict_count(self.store, self.project_id),
        }

    def review_root_causes(self, *, limit: int = 50) -> list[tuple[str, int]]:
        """What flagged the decisions in the review queue, with how many each
        (most first): the roots a reviewer settles first."""
        return self.review_summary(causes=limit)[1]

    def search_decisions(self, query: str, *, task_name: str | None = None, limit: int = 20) -> list[DecisionHit]:
        """Full-text search over conclusions and rationales of active
        decisions, flagged or not (each carries its review state)."""
        query = c.text(query, "query")
        task_name = c.optional_text(task_name, "task_name")
        limit = c.clamp(limit, 20, SEARCH_MAX)
        words = [w.lower() for w in re.findall(r"\w+", query)][:16]
        if not words:
            return []
        params: dict[str, Any] = {"q": self.store.fulltext_expression(words), "p": self.project_id, "n": limit}
        task_filter = ""
        if task_name is not None:
            task_filter = " AND d.task_id = $tid"
            params["tid"] = c.task_id(self.project_id, task_name)
        rows = self.store.read(
            self.project_id,
            f"{self.store.fulltext_query('Decision', 'd')} "
            f"WITH d, score WHERE d.project_id = $p AND d.status = 'active'{task_filter} "
            "WITH d, score ORDER BY score DESC, d.id LIMIT $n "
            f"OPTIONAL MATCH (t:Task {{id: d.task_id}}) RETURN {_DECISION_FIELDS}, t.goal AS goal",
            params,
        )
        return [DecisionHit(decision=_decision(r), task_goal=r["goal"] or "") for r in rows]

    def list_support_history(self, decision_id: str, *, after_ordinal: int = -1, limit: int = 20) -> SupportHistoryPage:
        """Every support the decision has had, current or replaced at a review,
        in the order they were recorded."""
        did = decision_arg(decision_id)
        after_ordinal = c.integer(after_ordinal, "after_ordinal")
        limit = c.clamp(limit, 20, HISTORY_MAX)
        if did is None:
            return SupportHistoryPage()
        rows = self.store.read(
            self.project_id,
            "MATCH (r:SupportRecord {decision_id: $id}) WHERE r.project_id = $p AND r.ordinal > $after "
            f"RETURN {_RECORD_FIELDS} ORDER BY r.ordinal LIMIT $n",
            {"id": did, "p": self.project_id, "after": after_ordinal, "n": limit + 1},
        )
        return _history_page(rows, limit)

    def _decision_page_reads(
        self, decision_id: Any, *, history: int, dependants: int
    ) -> tuple[dict[str, Any], SupportHistoryPage, list[Revision], list[Decision]] | None:
        """What a decision's page reads about it, in one round trip: its row
        with its review bookkeeping (``read_decision``), the first
        ``history`` records of its support history
        (``list_support_history``), its revisions (``list_revisions``) and
        its newest ``dependants`` (``list_dependants``). None when the
        project has no such decision. Each part is read from the decision's
        own index entries (its records, its choice in its task, the edges
        into it), one after the other, each cut before the next."""
        did = decision_arg(decision_id)
        if did is None:
            return None
        rows = self.store.read(
            self.project_id,
            "MATCH (d:Decision {id: $id}) WHERE d.project_id = $p "
            "OPTIONAL MATCH (r:SupportRecord {decision_id: $id}) WHERE r.project_id = $p "
            "WITH d, r ORDER BY r.ordinal LIMIT $h "
            f"WITH d, collect({_RECORD_MAP}) AS history "
            "OPTIONAL MATCH (v:Decision {task_id: d.task_id}) WHERE v.choice_key = d.choice_key AND v.project_id = $p "
            "WITH d, history, v ORDER BY v.revision "
            f"WITH d, history, collect({decision_map('v', explanation='v.explanation')}) AS revisions "
            "OPTIONAL MATCH (d)<-[:DEPENDS_ON]-(x:Decision) WHERE x.project_id = $p "
            "WITH d, history, revisions, x ORDER BY x.created_at DESC LIMIT $n "
            f"WITH d, history, revisions, collect({decision_map('x')}) AS dependants "
            f"RETURN {_DECISION_FIELDS}, {BOOKKEEPING}, history, revisions, dependants",
            {"id": did, "p": self.project_id, "h": history + 1, "n": dependants},
        )
        if not rows:
            return None
        row = rows[0]
        # (an optional match that found nothing leaves one map of nulls)
        records = [r for r in row.pop("history") if r["ordinal"] is not None]
        revisions = [
            Revision(decision=_decision(r), explanation=r["explanation"])
            for r in row.pop("revisions")
            if r["id"] is not None
        ]
        found = [_decision(r) for r in row.pop("dependants") if r["id"] is not None]
        return row, _history_page(records, history), revisions, found

    def list_conflicts(
        self, *, task_name: str | None = None, max_groups: int = CONFLICT_GROUPS_MAX, after_key: str | None = None
    ) -> ConflictList:
        """Choice keys whose active decisions in different tasks reach
        different conclusions: at most 50 groups of at most 50 decisions.
        Beyond the seed: ``after_key`` pages on through the groups."""
        return self._conflicts(task_name=task_name, max_groups=max_groups, after_key=after_key)

    def _conflicts(
        self,
        *,
        task_name: str | None = None,
        max_groups: int = CONFLICT_GROUPS_MAX,
        after_key: str | None = None,
        few_active: bool | None = None,
    ) -> ConflictList:
        """``list_conflicts``; ``few_active``: :meth:`_few_active` when the
        caller has just read the counts it compares (the task view)."""
        task_name = c.optional_text(task_name, "task_name")
        after_key = c.optional_text(after_key, "after_key")
        max_groups = c.clamp(max_groups, CONFLICT_GROUPS_MAX, CONFLICT_GROUPS_MAX, "max_groups")
        # Neo4j reads a project's conflicted choices in key order from their
        # index when the ORDER BY names its leading properties: a page of
        # keys reads that page, not every conflict; FalkorDB reads them from
        # the key-ordered buckets it keeps (``_conflict_keys``)
        if task_name is None and _conflict_keys.kept(self.store):
            keys = [{"key": k} for k in _conflict_keys.page(self.store, self.project_id, after_key, max_groups + 1)]
        elif task_name is None:
            keys = self.store.read(
                self.project_id,
                "MATCH (ch:Choice) USING INDEX SEEK ch:Choice(project_id, conflict, key) "
                "WHERE ch.project_id = $p AND ch.conflict = true AND ch.key > coalesce($after, '') "
                "WITH ch ORDER BY ch.project_id, ch.conflict, ch.key LIMIT $n RETURN ch.key AS key",
                {"p": self.project_id, "n": max_groups + 1, "after": after_key},
            )
        elif few_active if few_active is not None else self._few_active(task_name):
            # the task's active decisions are fewer than the conflicts: each
            # one's choice, by its id
            keys = self.store.read(
                self.project_id,
                "MATCH (d:Decision {task_id: $tid}) WHERE d.status = 'active' "
                "WITH d MATCH (ch:Choice {id: d.choice_id}) WHERE ch.conflict = true "
                "RETURN DISTINCT ch.key AS key ORDER BY key LIMIT $n",
                {"tid": c.task_id(self.project_id, task_name), "n": max_groups + 1},
            )
        elif _conflict_keys.kept(self.store):
            # From the conflicted choices in key order (fewer than the task's
            # active decisions), each checked for an active decision of the
            # task by its unique active key, until a page is found.
            keys = _conflict_keys.walk(
                self.store,
                self.project_id,
                "MATCH (d:Decision {active_key: $tid + $sep + key}) RETURN key LIMIT $n",
                {"tid": c.task_id(self.project_id, task_name), "sep": "\x1f", "n": max_groups + 1},
            )
        else:
            # (the same, in key order from the index)
            keys = self.store.read(
                self.project_id,
                "MATCH (ch:Choice) USING INDEX SEEK ch:Choice(project_id, conflict, key) WHERE ch.conflict = true "
                "AND ch.project_id = $p AND ch.key IS NOT NULL WITH ch ORDER BY ch.project_id, ch.conflict, ch.key "
                "MATCH (d:Decision {active_key: $tid + $sep + ch.key}) RETURN ch.key AS key LIMIT $n",
                {
                    "tid": c.task_id(self.project_id, task_name),
                    "sep": "\x1f",
                    "p": self.project_id,
                    "n": max_groups + 1,
                },
            )
        shown = [k["key"] for k in keys[:max_groups]]
        if not shown:
            return ConflictList()
        rows = self.store.read(
            self.project_id,
            "UNWIND $keys AS key MATCH (d:Decision {choice_key: key}) WHERE d.project_id = $p AND d.status = 'active' "
            f"WITH key, d ORDER BY key, d.task_name, d.id RETURN key AS group_key, {_DECISION_FIELDS}",
            {"keys": shown, "p": self.project_id},
        )
        grouped: dict[str, list[Decision]] = {k: [] for k in shown}
        for r in rows:
            grouped[r.pop("group_key")].append(_decision(r))
        groups = [
            ConflictGroup(
                choice_key=k,
                decisions=grouped[k][:CONFLICT_DECISIONS_MAX],
                truncated=len(grouped[k]) > CONFLICT_DECISIONS_MAX,
            )
            for k in shown
        ]
        return ConflictList(groups=groups, truncated=len(keys) > max_groups)

    def _few_active(self, task_name: str) -> bool:
        """Whether the task has fewer active decisions than the project has
        choices in conflict (both kept counts): then a task's conflicts are
        found from its decisions, else from the conflicts. Either way the
        read is bounded by the smaller, not by the project."""
        active = _counters.task_state(self.store, self.project_id, c.task_id(self.project_id, task_name))["active"]
        return active <= _counters.conflict_count(self.store, self.project_id)

    def list_revisions(self, decision_id: str) -> list[Revision]:
        """Every revision of the decision's choice in its task, first to
        last, each with the explanation that superseded the one before."""
        did = decision_arg(decision_id)
        if did is None:
            return []
        row = read_decision(self.store, self.project_id, did)
        if row is None:
            return []
        return self._revisions(row["task_id"], row["choice_key"])

    def _revisions(self, tid: str, choice_key: str) -> list[Revision]:
        """``list_revisions`` of a decision already read: its task id and
        choice key."""
        rows = self.store.read(
            self.project_id,
            "MATCH (d:Decision {task_id: $tid}) WHERE d.choice_key = $key AND d.project_id = $p "
            f"RETURN {_DECISION_FIELDS}, d.explanation AS explanation ORDER BY d.revision",
            {"tid": tid, "key": choice_key, "p": self.project_id},
        )
        return [Revision(decision=_decision(r), explanation=r["explanation"]) for r in rows]

    def list_dependants(self, decision_id: str, *, limit: int = 50) -> list[Decision]:
        """Decisions whose current supports cite this one."""
        did = decision_arg(decision_id)
        limit = c.clamp(limit, 50, 200)
        if did is None:
            return []
        return read_decisions(
            self.store,
            self.project_id,
            "MATCH (x:Decision {id: $id}) WITH x MATCH (x)<-[:DEPENDS_ON]-(d:Decision) WHERE d.project_id = $p "
            f"WITH d ORDER BY d.created_at DESC LIMIT $n RETURN {_DECISION_FIELDS}",
            {"id": did, "p": self.project_id, "n": limit},
        )

    def get_decisions(self, ids: Sequence[str]) -> dict[str, Decision]:
        """Several decisions by id (unknown ids are left out)."""
        wanted = [i.lower() for i in ids if isinstance(i, str) and c.is_uuid(i)]
        if not wanted:
            return {}
        found = read_decisions(
            self.store,
            self.project_id,
            f"UNWIND $ids AS id MATCH (d:Decision {{id: id}}) WHERE d.project_id = $p RETURN {_DECISION_FIELDS}",
            {"ids": wanted, "p": self.project_id},
        )
        return {str(d.id): d for d in found}

    def task_view_decisions(self, task_name: str, *, kept: dict[str, Any] | None = None) -> dict[str, Any]:
        """Active decisions (newest first), those needing review (the head of
        the task's review queue) and the conflicts that involve the task,
        each bounded as the seed says: the decision fields of ``get_task``'s
        view (empty when the task has no active decision). ``kept``: a row
        with the columns of ``_counters.TASK_VIEW_FIELDS`` the caller read
        with the task (else they are read here, in one round trip): the
        task's counters are read once for the whole view."""
        tid = c.task_id(self.project_id, task_name)
        state = _counters.task_view_state(self.store, self.project_id, tid, kept)
        count = state["active"]
        if not count:
            return {}
        active = self._newest_active(tid, state["seq"])
        review = (
            self._review_list(task_name, limit=VIEW_DECISIONS, task_open=state["open"]).decisions
            if state["open"]
            else []
        )
        conflicts_kept = state.get("conflicts")
        if conflicts_kept is None:
            conflicts_kept = _counters.conflict_count(self.store, self.project_id)
        conflicts = self._conflicts(task_name=task_name, max_groups=VIEW_CONFLICTS, few_active=count <= conflicts_kept)
        return {
            "decisions": active,
            "decision_count": count,
            "decisions_truncated": count > len(active),
            "review_decisions": review,
            "conflicts": conflicts.groups,
            "conflicts_truncated": conflicts.truncated,
        }

    def _newest_active(self, tid: str, top: int) -> list[Any]:
        """The newest active decisions of a task whose active decisions carry
        their creation numbers (``active_seq``, at most ``top``): read from
        widening ranges below ``top``, so not every one is sorted. A range
        that fills the page holds every decision newer than the page's last,
        so the page is exact."""
        if not self.store.graph_per_project:
            # Neo4j walks the task's part of the (task_id, active_seq) index
            # backwards in its order (the ORDER BY names the leading property
            # too): it reads the page's rows and no others
            return read_decisions(
                self.store,
                self.project_id,
                "MATCH (d:Decision) USING INDEX SEEK d:Decision(task_id, active_seq) "
                "WHERE d.task_id = $tid AND d.active_seq IS NOT NULL "
                f"WITH d ORDER BY d.task_id DESC, d.active_seq DESC LIMIT $n RETURN {_DECISION_FIELDS}",
                {"tid": tid, "n": VIEW_DECISIONS},
            )
        return c.widening(
            lambda lo, _hi: read_decisions(  # (nothing is above top)
                self.store,
                self.project_id,
                "MATCH (d:Decision) WHERE d.task_id = $tid AND d.active_seq >= $low "
                f"WITH d ORDER BY d.active_seq DESC LIMIT $n RETURN {_DECISION_FIELDS}",
                {"tid": tid, "low": lo, "n": VIEW_DECISIONS},
            ),
            n=VIEW_DECISIONS,
            near=top,
            far=0,
            width=4 * VIEW_DECISIONS,
        )


#: A support record's columns (``r``), and the same as a map.
_RECORD_FIELDS = (
    "r.ordinal AS ordinal, r.data AS data, r.current AS current, r.reviewed_by AS reviewed_by, "
    "r.reviewed_at AS reviewed_at, r.review_explanation AS review_explanation"
)
_RECORD_MAP = (
    "{ordinal: r.ordinal, data: r.data, current: r.current, reviewed_by: r.reviewed_by, "
    "reviewed_at: r.reviewed_at, review_explanation: r.review_explanation}"
)


def _remember_head(heads: dict[tuple[str, str | None], int], key: tuple[str, str | None], pos: int) -> None:
    if len(heads) >= QUEUE_HEADS_KEPT:
        heads.clear()  # a hint: forgetting costs one scan each
    heads[key] = pos


def _history_page(rows: list[dict[str, Any]], limit: int) -> SupportHistoryPage:
    """A page of support history from up to ``limit + 1`` rows of
    :data:`_RECORD_FIELDS` in ordinal order (one more: there are more)."""
    supports = []
    for r in rows[:limit]:
        data = json.loads(r["data"])
        data["current"] = r["current"]
        if r["reviewed_by"] is not None:
            data.update(
                reviewed_by=r["reviewed_by"],
                reviewed_at=r["reviewed_at"],
                review_explanation=r["review_explanation"],
            )
        supports.append(SUPPORT.validate_python(data))
    truncated = len(rows) > limit
    return SupportHistoryPage(
        supports=supports, truncated=truncated, next_after_ordinal=rows[limit - 1]["ordinal"] if truncated else None
    )
