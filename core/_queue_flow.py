"""The review queue's flow (issue 15), the half of ``ReviewViews`` that
works through a root-cause group: why reaffirming cannot succeed now, who
settled a decision first, a group's preview, where "and next" lands, the
progress line, group sizes, the queue filtered by a task name that contains
some text, how a root cause reads, and what a redaction will flag.
``ReviewViews`` inherits it.
"""

from __future__ import annotations

from typing import Any

from . import _common as c
from . import _counters
from ._causes import describe_cause
from ._decision_rows import _DECISION_FIELDS, _decision, in_queue_order
from ._review import Positions
from ._workbench import _View
from .knowledge import Graph
from .models.decision import (
    Decision,
    DecisionReviewList,
    DocumentSupport,
    EventSupport,
    ReviewReason,
    ReviewState,
)

#: Queue positions are 64-bit; FalkorDB's range index compares them as
#: doubles (a step of 256 at their size), so a range lookup takes a margin
#: and the exact order is decided on the value itself (``+ 0`` keeps the
#: comparison off the index). A CASE rather than an OR: Neo4j's planner may
#: split an OR into a union of two index seeks, whose rows it must then sort.
_MARGIN = 1024
_AFTER = "CASE WHEN d.queue_pos + 0 > $pos THEN true WHEN d.queue_pos + 0 = $pos THEN d.id > $id ELSE false END"
_BEFORE = "CASE WHEN d.queue_pos + 0 < $pos THEN true WHEN d.queue_pos + 0 = $pos THEN d.id < $id ELSE false END"


class GroupItem(_View):
    decision: Decision
    #: why reaffirming it cannot succeed now, or None when it can
    reaffirm_refusal: str | None = None


class GroupReview(_View):
    """A root-cause group as a group action previews it."""

    cause: str
    label: str
    action: str
    items: list[GroupItem]
    #: open decisions in the group (``items`` holds the first ``GROUP_SHOWN``)
    count: int
    truncated: bool

    @property
    def reaffirmable(self) -> list[GroupItem]:
        return [i for i in self.items if i.reaffirm_refusal is None]

    @property
    def not_reaffirmable(self) -> list[GroupItem]:
        return [i for i in self.items if i.reaffirm_refusal is not None]


class QueueProgress(_View):
    cause: str | None
    position: int
    group_total: int
    group_left: int
    queue_left: int
    next_id: str | None = None


class QueuePage(_View):
    """One page of the review queue, grouped by root cause in queue order."""

    result: DecisionReviewList
    #: (root cause, the decisions flagged by it), consecutive runs in queue order
    groups: list[tuple[str, list[Decision]]]
    filters: dict[str, str]
    page: int
    pages: int
    counts: dict[str, int]
    #: how many open decisions each of the page's root causes holds now
    sizes: dict[str, int] = {}
    #: each decision's row as read with the page, by id: what its actions
    #: need (``review_actions_many(..., rows=)``) is not read again
    review_rows: dict[str, dict[str, Any]] = {}


class _Memo:
    """The knowledge layer with its document and version reads remembered,
    for one read model over many decisions citing the same versions."""

    def __init__(self, graph: Graph) -> None:
        self._graph = graph
        self._seen: dict[tuple[str, tuple[Any, ...]], Any] = {}

    def __getattr__(self, name: str) -> Any:
        real = getattr(self._graph, name)
        if name == "document_with_texts":
            # the document as this read model first read it (its texts, when
            # that read did not bring them, are read by ``version_text``)
            def with_texts(key: str, versions: Any) -> Any:
                seen = ("get_document", (key,))
                if seen not in self._seen:
                    self._seen[seen] = real(key, versions)
                return self._seen[seen]

            return with_texts
        if name not in ("get_document", "version_text"):
            return real

        def remembered(*args: Any) -> Any:
            key = (name, args)
            if key not in self._seen:
                self._seen[key] = real(*args)
            return self._seen[key]

        return remembered


class QueueFlowViews:
    """Read models of the queue's flow; mixed into ``ReviewViews``, whose
    ``store``, ``project_id``, ``traces``, ``history`` and ``graph`` they use."""

    # ``reaffirm_refusal`` is the one
    # place that says whether reaffirming can succeed now; a per-decision
    # "what can succeed now and why not" model may later answer it instead.

    #: a group action previews and acts on this many at a time (the page stays fast; the rest follow)
    GROUP_SHOWN = 50

    def reaffirm_refusal(self, decision: Decision, *, queued: bool = False) -> str | None:
        """Why reaffirming ``decision`` cannot succeed now, or None when it can:
        the rule ``reaffirm_decision`` applies (active, review finished, every
        current support holding), in a sentence."""
        d = decision
        if d.status.value != "active":
            return f"it is {d.status.value}, no longer the active revision"
        if queued or d.review_state is ReviewState.unknown:
            return "its review is not finished"
        for s in d.supports:
            if not s.current:
                continue
            v = self.support_view(s)
            if v.holds:
                continue
            if isinstance(s, DocumentSupport):
                if v.state == "removed":
                    return f"{s.document_key} was deleted"
                return (
                    f"the cited passage of {s.document_key} changed (version {s.recorded_activation_seq} → "
                    f"{v.current_version})"
                )
            if isinstance(s, EventSupport):
                return f"event #{s.seq} of {s.task_name} was {'redacted' if v.state == 'redacted' else 'removed'}"
            dep = v.decision
            if dep is None:
                return "a decision it depends on no longer exists"
            if dep.status.value != "active":
                return f"it depends on {dep.choice_key}, which was {dep.status.value}"
            return f"it depends on {dep.choice_key}, which needs review"
        return None

    def retired_by(self, decision_id: str) -> str | None:
        """Who took ``decision_id`` out of review, in a sentence ("carol
        rejected it: duplicate", "it was superseded by revision 2"), or None
        while it is active: what a refusal caused by another person says."""
        d = self.traces.get_decision(str(decision_id)).decision
        if d is None:
            return "it no longer exists"
        if d.status.value == "rejected":
            return f"{d.rejected_by} rejected it" + (f": {d.rejection_reason}" if d.rejection_reason else "")
        if d.status.value == "superseded":
            return f"it was superseded by revision {d.revision + 1}"
        return None

    def group_review(self, cause: str, *, action: str = "reaffirm") -> GroupReview:
        """The open decisions of one root-cause group (queue order, the first
        ``GROUP_SHOWN``), each with why reaffirming it cannot succeed now: what
        a group action previews and then acts on, one decision at a time."""
        where, params = self._flow_where(cause=cause)
        match, order = self._in_order(cause=cause)
        rows = self.store.read(
            self.project_id,
            f"{match} {where} WITH d ORDER BY {order} LIMIT $n RETURN {_DECISION_FIELDS}, d.queued AS queued",
            {**params, "n": self.GROUP_SHOWN + 1},
        )
        count = self.group_sizes([cause])[cause]
        memo = _Memo(self.graph)
        real, self.graph = self.graph, memo  # many decisions of a group cite the same versions
        try:
            decisions = [(_decision(r), bool(r["queued"])) for r in rows[: self.GROUP_SHOWN]]
            items = [GroupItem(decision=d, reaffirm_refusal=self.reaffirm_refusal(d, queued=q)) for d, q in decisions]
        finally:
            self.graph = real
        return GroupReview(
            cause=cause,
            label=self.cause_labels([cause])[cause],
            action=action,
            items=items,
            count=count,
            truncated=len(rows) > self.GROUP_SHOWN,
        )

    def next_after_in_group(self, decision_id: str, cause: str) -> str | None:
        """The open decision after ``decision_id`` in its root-cause group
        (queue order), read before acting on it: where "and next" lands."""
        rows = self.store.read(
            self.project_id, "MATCH (x:Decision {id: $id}) RETURN x.queue_pos AS pos", {"id": str(decision_id)}
        )
        if not rows or rows[0]["pos"] is None:
            return None
        where, params = self._flow_where(cause=cause)
        pos = rows[0]["pos"]
        if not self.store.graph_per_project:  # Neo4j: the group's positions after it, in index order
            match, order = self._in_order(cause=cause)
            after = self.store.read(
                self.project_id,
                f"{match} {where} AND d.queue_pos >= $pos WITH d WHERE {_AFTER} "
                f"WITH d ORDER BY {order} LIMIT 1 RETURN d.id AS id",
                {**params, "id": str(decision_id), "pos": pos},
            )
            return after[0]["id"] if after else None
        # widening ranges of the position index after it, as the queue's pages are read
        after = c.widening(
            lambda lo, hi: self.store.read(
                self.project_id,
                f"MATCH (d:Decision) WHERE {where} AND d.queue_pos >= $lo AND d.queue_pos < $hi "
                f"WITH d WHERE {_AFTER} WITH d ORDER BY d.queue_pos, d.id LIMIT 1 RETURN d.id AS id",
                {**params, "id": str(decision_id), "pos": pos, "lo": lo, "hi": hi + 1},
            ),
            n=1,
            near=pos - _MARGIN,
            far=Positions.horizon() - 1,
            width=_MARGIN + 4096,
            bounded=False,
        )
        return after[0]["id"] if after else None

    def queue_progress(
        self,
        cause: str | None,
        *,
        group_total: int = 0,
        filters: dict[str, str] | None = None,
        next_id: str | None = None,
        counts: dict[str, int] | None = None,
    ) -> QueueProgress:
        """The line "3 of 8 in this group, 5 left in the queue": ``group_total``
        is the group's size when the page was read (carried by its forms), so
        the position counts what was settled since, by anyone."""
        left_in_group = 0
        if cause is not None:
            left_in_group = self.group_sizes([cause])[cause]
        total = max(group_total, left_in_group)
        f = filters or {}
        if counts is not None and not f:
            left = counts["needs_review"] + counts["unknown"]
        else:
            left = self.queue_count(
                task=f.get("task"), reason=f.get("reason"), state=f.get("state"), cause=f.get("cause")
            )
        # where the next decision stands in the group as the page showed it:
        # what was settled since, and what is still open before it
        ahead = self._open_before(next_id, cause) if next_id and cause is not None else 0
        position = min(total, total - left_in_group + ahead + 1) if left_in_group else total
        return QueueProgress(
            cause=cause,
            position=position,
            group_total=total,
            group_left=left_in_group,
            queue_left=left,
            next_id=next_id,
        )

    def _open_before(self, decision_id: str, cause: str) -> int:
        """How many open decisions of the group stand before ``decision_id``
        in queue order (exact on 64-bit positions, see ``next_after_in_group``)."""
        rows = self.store.read(
            self.project_id, "MATCH (x:Decision {id: $id}) RETURN x.queue_pos AS pos", {"id": str(decision_id)}
        )
        if not rows or rows[0]["pos"] is None:
            return 0
        where, params = self._flow_where(cause=cause)
        match, _order = self._in_order(cause=cause)
        return self.store.read(
            self.project_id,
            f"{match} {where} AND d.queue_pos <= $hi WITH d WHERE {_BEFORE} RETURN count(d) AS n",
            {**params, "id": str(decision_id), "pos": rows[0]["pos"], "hi": rows[0]["pos"] + _MARGIN},
        )[0]["n"]

    def group_sizes(self, causes: list[str]) -> dict[str, int]:
        """How many open decisions each root cause ("" for none) holds now:
        the kept counts (``_counters.cause_sizes``)."""
        return _counters.cause_sizes(self.store, self.project_id, list(dict.fromkeys(causes)))

    def queue_count(
        self, *, task: str | None = None, reason: str | None = None, state: str | None = None, cause: str | None = None
    ) -> int:
        """How many decisions the queue holds with these filters (the task
        matched like the Tasks page: name contains, any case)."""
        if not (task or reason or state or cause):
            counts = self.traces.review_counts()
            return counts["needs_review"] + counts["unknown"]
        if cause is not None and not (task or reason or state):
            return self.group_sizes([cause])[cause]
        where, params = self._flow_where(task=task, reason=reason, state=state, cause=cause)
        return self._count(where, params)

    def queue_page_matching(
        self,
        *,
        task: str,
        reason: str | None = None,
        state: str | None = None,
        cause: str | None = None,
        page: int = 1,
        page_size: int = 20,
    ) -> QueuePage:
        """``queue_page`` with the task matched like the Tasks page: every
        task whose name contains ``task``, any case."""
        if reason not in (None, *[r.value for r in ReviewReason]):
            reason = None
        if state not in (None, ReviewState.needs_review.value, ReviewState.unknown.value):
            state = None
        page = max(1, page)
        tasks, more = self.history.list_tasks(search=task, limit=50)
        if len(tasks) == 1 and tasks[0].name == task:  # the one task: its kept count and remembered head
            return self.queue_page(task=task, reason=reason, state=state, cause=cause, page=page, page_size=page_size)
        where, params = self._flow_where(task=task, reason=reason, state=state, cause=cause)
        if not more:  # a few tasks: their queues through the task index
            where = where.replace("toLower(d.task_name) CONTAINS toLower($task)", "d.task_id IN $tids")
            params["tids"] = [c.task_id(self.project_id, t.name) for t in tasks]
        count = self._count(where, params)
        match, order = self._in_order(cause=cause)
        rows = (
            self.store.read(
                self.project_id,
                f"{match} {where} WITH d ORDER BY {order} SKIP $skip LIMIT $n "
                f"RETURN {_DECISION_FIELDS}, coalesce(d.root_cause, '') AS cause",
                {**params, "skip": (page - 1) * page_size, "n": page_size},
            )
            if count
            else []
        )
        groups: list[tuple[str, list[Decision]]] = []
        for r in rows:
            d = _decision(r)
            if groups and groups[-1][0] == r["cause"]:
                groups[-1][1].append(d)
            else:
                groups.append((r["cause"], [d]))
        decisions = [d for _, ds in groups for d in ds]
        filters = {k: v for k, v in (("task", task), ("reason", reason), ("state", state), ("cause", cause)) if v}
        result = DecisionReviewList(
            decisions=decisions, count=count, truncated=(page - 1) * page_size + len(decisions) < count
        )
        return QueuePage(
            result=result,
            groups=groups,
            filters=filters,
            page=page,
            pages=max(1, -(-count // page_size)),
            counts=self.traces.review_counts(),
            sizes=self.group_sizes([cause for cause, _ in groups]),
        )

    def _count(self, where: str, params: dict[str, Any]) -> int:
        return self.store.read(self.project_id, f"MATCH (d:Decision) WHERE {where} RETURN count(d) AS n", params)[0][
            "n"
        ]

    def _in_order(self, *, cause: str | None = None) -> tuple[str, str]:
        """The MATCH of a read of the queue in queue order, up to its
        WHERE's first condition, and its ORDER BY.
        On Neo4j, a walk of a composite position index in its order (the
        ORDER BY names the index's leading property, so the planner reads
        the index in order instead of sorting what matched): a root-cause
        group's part of it, or the project's; on FalkorDB, a sort."""
        if self.store.graph_per_project:
            return "MATCH (d:Decision) WHERE", "d.queue_pos, d.id"
        return in_queue_order("root_cause" if cause else "project_id")

    def _flow_where(
        self, *, task: str | None = None, reason: str | None = None, state: str | None = None, cause: str | None = None
    ) -> tuple[str, dict[str, Any]]:
        where = ["d.review_open = true"] + ([] if self.store.graph_per_project else ["d.project_id = $p"])
        params: dict[str, Any] = {"p": self.project_id}
        if task:
            where.append("toLower(d.task_name) CONTAINS toLower($task)")
            params["task"] = task
        if reason:
            where.append("d.review_reason = $reason")
            params["reason"] = reason
        if state:
            where.append("d.review_state = $state")
            params["state"] = state
        if cause:
            where.append("d.root_cause = $cause")
            params["cause"] = cause
        elif cause is not None:
            where.append("d.root_cause IS NULL")
        return " AND ".join(where), params

    def cause_labels(self, causes: list[str]) -> dict[str, str]:
        """Each root cause as a reviewer reads it; a redaction names its
        event and who redacted it ("event #5 of incident-2026-11-12 redacted
        by Dana"), so two redactions read as two groups."""
        labels = {cause: describe_cause(cause) for cause in causes}
        events = {cause.partition(":")[2]: cause for cause in causes if cause.startswith("redaction:")}
        if events:
            rows = self.store.read(
                self.project_id,
                "UNWIND $ids AS id MATCH (e:Event {id: id}) OPTIONAL MATCH (t:Task {id: e.task_id}) "
                "RETURN e.id AS id, e.seq AS seq, t.name AS task, e.redacted_by AS by",
                {"ids": list(events)},
            )
            for r in rows:
                task = f" of {r['task']}" if r["task"] else ""
                by = f" by {r['by']}" if r["by"] else ""
                labels[events[r["id"]]] = f"Event #{r['seq']}{task} redacted{by}"
        return labels

    def redaction_flags(self, event_id: str) -> list[Decision]:
        """The decisions a redaction of ``event_id`` would flag: the active
        ones citing it, as ``redact_event`` finds them (up to ``CITERS_SHOWN``)."""
        if not c.is_uuid(event_id):
            return []
        return [
            _decision(r)
            for r in self.store.read(
                self.project_id,
                "MATCH (e:Event {id: $id}) WHERE e.project_id = $p WITH e MATCH (e)<-[:CITES_EVENT]-(d:Decision) "
                f"WHERE d.status = 'active' WITH DISTINCT d ORDER BY d.choice_key, d.task_name LIMIT {self.CITERS_SHOWN} "
                f"RETURN {_DECISION_FIELDS}",
                {"id": str(event_id).lower(), "p": self.project_id},
            )
        ]
