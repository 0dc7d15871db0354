"""Read models: everything a review screen shows, already decided.

The dashboard (and later the agents' API) asks these for what to show and
does no review reasoning of its own: which state each support of a decision
is in, which passage it cites against the current text, which supports a
reviewer may keep when superseding (re-anchored by the same rule reaffirming
uses, :func:`core._supports.find_nearest`), the review queue grouped by root
cause, the decisions that cite each version of a document, and the event a
redaction would blank. Everything here only reads.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

from . import _citations, _counters
from . import _common as c
from ._causes import describe_cause
from ._copies import SHOWN as COPIES_SHOWN  # noqa: F401  (re-exported: the most one redaction lists)
from ._copies import CopySearch, EventCopy, find_copies  # noqa: F401  (EventCopy: re-exported)
from ._decision_rows import _decision
from ._evidence import chunk_range, decode_evidence_id, encode_span, version_id
from ._queue_flow import (  # noqa: F401  (GroupItem, GroupReview, QueueProgress: re-exported)
    GroupItem,
    GroupReview,
    QueueFlowViews,
    QueuePage,
    QueueProgress,
    _Memo,
)
from ._supports import find_nearest
from ._workbench import (
    EXCERPT_EDGE,
    DecisionName,
    DecisionPick,
    Dependant,
    EventPick,
    Excerpt,
    PassagePick,
    ReviewActions,
    SupersedeChoices,
    WorkbenchViews,
    _View,
    decision_name,
    excerpt,
)
from .decisions import DecisionTraces
from .history import ConversationHistory
from .knowledge import Graph
from .models.decision import (
    Decision,
    DecisionSupport,
    DocumentSupport,
    EventSupport,
    EvidenceKind,
    ReviewReason,
    ReviewState,
    Revision,
    Support,
    SupportHistoryPage,
)
from .models.knowledge import (
    DocumentInfo,
    DocumentVersion,
    MalformedEvidenceIdError,
)
from .models.retention import DiskPurge
from .models.task import Event
from .retention import disk_pending
from .stores.base import GraphStore
from .textdiff import PassageDiff, Piece, passage_diff

__all__ = [
    "CitingDecision",
    "DecisionName",
    "DecisionPick",
    "DecisionReview",
    "Dependant",
    "DocumentPage",
    "EventPick",
    "Excerpt",
    "PassagePick",
    "QueuePage",
    "RedactionPreview",
    "ReviewActions",
    "ReviewViews",
    "SupersedeChoices",
    "SupportChoice",
    "SupportView",
    "VersionCiters",
    "decision_name",
    "describe_cause",
]

#: The state a support is shown in. ``moved``: the document changed but the
#: cited passage is still in the current text (reaffirming re-anchors it);
#: ``changed``: the passage is gone from the current text, or a decision it
#: cites is no longer active; ``flagged``: a decision it cites is active but
#: itself needs review (nothing changed yet).
SupportState = Literal["current", "moved", "changed", "flagged", "removed", "redacted"]


class SupportView(_View):
    """One support of a decision as a reviewer sees it now."""

    support: Support
    state: SupportState
    #: document supports: the cited passage as recorded (span or chunk),
    #: and where it begins in the recorded version
    passage: str | None = None
    passage_start: int = 0
    #: document supports whose document has a newer version: both whole texts,
    #: to show what changed
    recorded_text: str | None = None
    current_text: str | None = None
    current_version: int | None = None
    #: event supports: the event (its body reads "[REDACTED]" once redacted)
    event: Event | None = None
    #: decision supports: the decision it cites, if it still exists
    decision: Decision | None = None
    #: document supports whose document has a newer version: the cited
    #: passage of the recorded text against the current text (core.textdiff)
    diff: PassageDiff | None = None

    @property
    def kind(self) -> str:
        return self.support.kind

    @property
    def document_key(self) -> str | None:
        return self.support.document_key if isinstance(self.support, DocumentSupport) else None

    @property
    def excerpt(self) -> Excerpt:
        """The passage as a page shows it (a long one by its ends)."""
        return excerpt(self.passage or "", self.passage_start)

    @property
    def holds(self) -> bool:
        """Whether reaffirming would keep this support as it stands or re-anchored."""
        return self.state in ("current", "moved")


#: the most characters of each side of a passage diff a page shows
DIFF_SHOWN = 8 * EXCERPT_EDGE


def bounded(diff: PassageDiff, budget: int = DIFF_SHOWN) -> PassageDiff:
    """``diff`` as a page shows it: each long piece by its ends, and past
    ``budget`` characters a side the rest as one gap (a diff of a long
    passage would otherwise write the passage out in full, twice)."""

    def side(pieces: list[Piece]) -> list[Piece]:
        out: list[Piece] = []
        left = budget
        for p in pieces:
            if left <= 0:
                out.append(Piece("…", "gap"))
                break
            cut = excerpt(p.text)
            if cut.hidden:
                out += [Piece(cut.head, p.kind, p.cited), Piece("…", "gap"), Piece(cut.tail, p.kind, p.cited, p.sep)]
                left -= 2 * EXCERPT_EDGE
            else:
                out.append(p)
                left -= len(p.text)
        return out

    return PassageDiff(before=side(diff.before), after=side(diff.after), changed=diff.changed)


class SupportChoice(_View):
    """A support a reviewer may keep when superseding: ``token`` is what the
    supersede form sends back (an evidence id of the current text, ``event
    TASK SEQ`` or ``decision ID``)."""

    token: str
    support: Support
    #: document supports: the passage the token names in the current text
    passage: str | None = None

    @property
    def kind(self) -> str:
        return self.support.kind


class DecisionReview(_View):
    """The decision page: the decision, its supports now, what it depends on
    and what depends on it, its revisions and support history, and what a
    reviewer can do now."""

    decision: Decision
    supports: list[SupportView]
    depends_on: list[Decision]
    dependants: list[Decision]
    revisions: list[Revision]
    history: SupportHistoryPage
    choices: list[SupportChoice]
    #: the workbench (core._workbench): its name, what can be done now,
    #: every decision the page mentions by name, the dependants named
    name: DecisionName | None = None
    actions: ReviewActions = ReviewActions()
    names: dict[str, DecisionName] = {}
    dependant_views: list[Dependant] = []

    @property
    def can_act(self) -> bool:
        """Only the active revision is reviewed; others are history."""
        return self.decision.status.value == "active"

    @property
    def can_reaffirm(self) -> bool:
        """Whether reaffirming can succeed now (``actions.blocked`` says why not)."""
        return self.actions.reaffirm


class CitingDecision(_View):
    id: str
    key: str
    task: str
    state: str
    revision: int = 1
    status: str = "active"


class VersionCiters(_View):
    """One version of a document and the decisions that cite it now, newest
    citation first: ``count`` of them in all (a kept count), of which
    ``citing`` are shown; ``older``: where the next page of older ones
    starts (its ``before``), None when none is left."""

    version: DocumentVersion
    citing: list[CitingDecision]
    count: int
    older: int | None = None


class DocumentPage(_View):
    """A document's versions, newest first, each with the decisions that
    cite it now (the newest few of each; ``paged``: one version's, a page
    of them, below ``before``)."""

    info: DocumentInfo
    versions: list[VersionCiters]
    #: a window of the current text (``TEXT_WINDOW`` characters from
    #: ``text_from``), or None once the document is deleted (and on a page of
    #: one version's citers): the page does not grow with the document
    text: str | None
    paged: int | None = None
    before: int | None = None
    text_from: int = 0
    #: the current text's whole length
    text_length: int = 0


class RedactionPreview(_View):
    """The event a redaction would blank, and where it is; the other events
    that hold its text (``copies``: None when not asked); and what the
    redaction will show on disk until a purge round covers it
    (``disk``: ``rewrite_pending`` on a store that rewrites its files,
    ``key_pending`` on Neo4j)."""

    event_id: str
    task_name: str
    seq: int
    event: Event | None
    disk: DiskPurge
    copies: CopySearch | None = None


class ReviewViews(WorkbenchViews, QueueFlowViews):
    """The read models of one project, read as ``agent_id``."""

    CITERS_SHOWN = 200
    #: the newest citers of each version on a document's page, and a page
    #: of one version's citers
    VERSION_CITERS = 20
    CITERS_PAGE = 100

    def __init__(
        self,
        store: GraphStore,
        *,
        project_id: str,
        agent_id: str | None = None,
        traces: DecisionTraces | None = None,
        history: ConversationHistory | None = None,
        graph: Graph | None = None,
    ) -> None:
        self.store = store
        self.project_id = project_id
        agent = agent_id or "reviewer"
        self.traces = traces or DecisionTraces(store, project_id=project_id, agent_id=agent)
        self.history = history or ConversationHistory(store, project_id=project_id, agent_id=agent)
        self.graph = graph or Graph(store, project_id=project_id, agent_id=agent)

    # -- the review queue ------------------------------------------------------

    def queue_page(
        self,
        *,
        task: str | None = None,
        reason: str | None = None,
        state: str | None = None,
        cause: str | None = None,
        page: int = 1,
        page_size: int = 20,
    ) -> QueuePage:
        """A page of the queue; a ``reason`` or ``state`` that is not a queue
        filter is ignored (the page shows the whole queue)."""
        if reason not in (None, *[r.value for r in ReviewReason]):
            reason = None
        if state not in (None, ReviewState.needs_review.value, ReviewState.unknown.value):
            state = None
        page = max(1, page)
        # the whole queue, or one task's, on Neo4j: the page first (it needs
        # no count), then the counters with the page's group sizes (and the
        # task's count) in one round trip; else the counters first (the
        # page's count), the sizes after
        later = not (reason or state or cause) and not self.store.graph_per_project
        counts = None if later else self.traces.review_counts()
        rows: dict[str, dict[str, Any]] = {}
        offset = (page - 1) * page_size
        result = self.traces._review_list(
            task,
            limit=page_size,
            offset=offset,
            reason=reason,
            state=state,
            root_cause=cause,
            queue_size=None if counts is None else counts["needs_review"] + counts["unknown"],
            rows=rows,
            count_after=later,
        )
        groups: list[tuple[str, list[Decision]]] = []
        for d in result.decisions:
            key = rows[str(d.id)]["cause"] if str(d.id) in rows else ""
            if groups and groups[-1][0] == key:
                groups[-1][1].append(d)
            else:
                groups.append((key, [d]))
        keys = list(dict.fromkeys(key for key, _ in groups))
        tid = c.task_id(self.project_id, task) if task else None
        kept = _counters.counts_and_sizes(self.store, self.project_id, keys, tid) if counts is None else None
        if kept is not None:
            counts, sizes, task_open = kept
        else:
            counts = counts if counts is not None else self.traces.review_counts()
            sizes = self.group_sizes(keys)
            task_open = _counters.task_state(self.store, self.project_id, tid)["open"] if later and tid else None
        if later:
            size = task_open if task_open is not None else counts["needs_review"] + counts["unknown"]
            result = result.model_copy(update={"count": size, "truncated": offset + len(result.decisions) < size})
        filters = {k: v for k, v in (("task", task), ("reason", reason), ("state", state), ("cause", cause)) if v}
        return QueuePage(
            result=result,
            groups=groups,
            filters=filters,
            page=page,
            pages=max(1, -(-result.count // page_size)),
            counts=counts,
            sizes=sizes,
            review_rows=rows,
        )

    # -- a decision --------------------------------------------------------------

    @contextmanager
    def remembering(self) -> Iterator[None]:
        """Inside, each document's state and each version's text are read
        once: for a page built from several read models over the same
        supports (the decision page's review and its supersede choices)."""
        if isinstance(self.graph, _Memo):
            yield
            return
        real, self.graph = self.graph, _Memo(self.graph)  # type: ignore[assignment]
        try:
            yield
        finally:
            self.graph = real

    def decision_review(self, decision: Decision) -> DecisionReview:
        # the supports' views, the supersede choices and the actions each
        # read the documents cited: once each here
        with self.remembering():
            return self._decision_review(decision)

    def decision_review_of(self, decision_id: Any) -> DecisionReview | None:
        """:meth:`decision_review` of the decision ``decision_id`` names in
        this project (None when none): the decision is read once, with the
        review bookkeeping its actions need (so a page that starts from an id
        reads the decision, its support history, revisions and dependants
        in one round trip, not five)."""
        read = self.traces._decision_page_reads(
            decision_id, history=self.HISTORY_SHOWN, dependants=self.DEPENDANTS_SHOWN
        )
        if read is None:
            return None
        with self.remembering():
            return self._decision_review(_decision(read[0]), read=read)

    #: the support history and the dependants a decision's review shows
    HISTORY_SHOWN = 50
    DEPENDANTS_SHOWN = 50

    def _decision_review(
        self,
        decision: Decision,
        *,
        read: tuple[dict[str, Any], SupportHistoryPage, list[Revision], list[Decision]] | None = None,
    ) -> DecisionReview:
        """``read``: what ``DecisionReads._decision_page_reads`` read of the
        decision, when the caller read it (else each part is read here)."""
        d = decision
        row = read[0] if read is not None else None
        depends = self.traces.get_decisions([str(s.decision_id) for s in d.supports if isinstance(s, DecisionSupport)])
        history = (
            read[1]
            if read is not None
            else self.traces.list_support_history(str(d.id), after_ordinal=-1, limit=self.HISTORY_SHOWN)
        )
        # each cited document once: the actions' rule and the supports' views
        # below read it from here (``remembering``), not once each
        documents = {
            str(s.document_node_id): self.graph.get_document(s.document_key)
            for s in d.supports
            if isinstance(s, DocumentSupport)
        }
        facts = self._facts([d], rows={str(d.id): row} if row is not None else None, documents=documents)
        actions = self._actions(d, facts)
        dependants = (
            self._named_dependants(read[3], actions)
            if read is not None
            else self.dependants_of(d, actions, limit=self.DEPENDANTS_SHOWN)
        )
        names = self.decision_names(
            [
                str(s.decision_id)
                for s in history.supports
                if isinstance(s, DecisionSupport) and str(s.decision_id) not in depends
            ]
        )
        names.update({i: decision_name(x) for i, x in depends.items()})
        return DecisionReview(
            decision=d,
            supports=[self.support_view(s) for s in d.supports],
            depends_on=list(depends.values()),
            dependants=[x.decision for x in dependants],
            revisions=read[2] if read is not None else self.traces._revisions(str(d.task_id), d.choice_key),
            history=history,
            choices=self.support_choices(d),
            name=decision_name(d),
            actions=actions,
            names=names,
            dependant_views=dependants,
        )

    def support_view(self, s: Support) -> SupportView:
        if isinstance(s, DocumentSupport):
            return self._document_view(s)
        if isinstance(s, EventSupport):
            got = self.history.fetch_event(s.task_name, s.seq)
            if not got.found or got.event is None:
                return SupportView(support=s, state="removed")
            state: SupportState = "redacted" if got.event.redacted_at is not None else "current"
            return SupportView(support=s, state=state, event=got.event)
        dep = self.traces.get_decision(str(s.decision_id)).decision
        if dep is None:
            return SupportView(support=s, state="removed")
        if dep.status.value != "active":
            return SupportView(support=s, state="changed", decision=dep)
        state = "current" if dep.review_state is ReviewState.clear else "flagged"
        return SupportView(support=s, state=state, decision=dep)

    def _document_view(self, s: DocumentSupport) -> SupportView:
        info = self.graph.get_document(s.document_key)
        recorded = self._version_text(s)
        start, end = self._cited_range(s, recorded)
        passage = recorded[start:end] if recorded is not None else ""
        if info is None or not info.live:
            return SupportView(support=s, state="removed", passage=passage, passage_start=start)
        if info.activation_seq == s.recorded_activation_seq:
            return SupportView(support=s, state="current", passage=passage, passage_start=start)
        current = self.graph.version_text(s.document_key, info.activation_seq) or ""
        moved = find_nearest(current, passage, start) is not None
        return SupportView(
            support=s,
            state="moved" if moved else "changed",
            passage=passage,
            passage_start=start,
            recorded_text=recorded or "",
            current_text=current,
            current_version=info.activation_seq,
            diff=bounded(passage_diff(recorded or "", current, start, end)),
        )

    def support_choices(self, decision: Decision) -> list[SupportChoice]:
        """The supports a reviewer may keep when superseding, document
        passages cited at the current text: where the document changed, the
        passage is found again as reaffirming finds it (nearest to where it
        was); a passage that is gone, or a deleted document, is not offered."""
        choices: list[SupportChoice] = []
        for s in decision.supports:
            if isinstance(s, DocumentSupport):
                info = self.graph.get_document(s.document_key)
                if info is None or not info.live:
                    continue
                recorded = self._version_text(s)
                if recorded is None:
                    continue
                start, end = self._cited_range(s, recorded)
                passage = recorded[start:end]
                evidence = s.evidence_id
                if info.activation_seq != s.recorded_activation_seq:
                    current = self.graph.version_text(s.document_key, info.activation_seq) or ""
                    at = find_nearest(current, passage, start) if passage else None
                    if at is None:
                        continue
                    # the version whose text was searched (reading the document again would cost
                    # a round trip, and could name a newer version than the one searched)
                    evidence = encode_span(info.node_id, info.activation_seq, at, at + len(passage))
                choices.append(SupportChoice(token=evidence, support=s, passage=passage))
            elif isinstance(s, EventSupport):
                choices.append(SupportChoice(token=f"event {s.task_name} {s.seq}", support=s))
            elif isinstance(s, DecisionSupport):
                choices.append(SupportChoice(token=f"decision {s.decision_id}", support=s))
        return choices

    def _version_text(self, s: DocumentSupport) -> str | None:
        return self.graph.version_text(s.document_key, s.recorded_activation_seq or 1)

    def _cited_range(self, s: DocumentSupport, recorded: str | None) -> tuple[int, int]:
        """Where the support's passage is in the version it was recorded on:
        its span, or its chunk's range (from the version's chunk offsets)."""
        if s.reference_kind is EvidenceKind.span:
            return s.char_start or 0, s.char_end or 0
        try:
            index = decode_evidence_id(s.evidence_id).chunk_index
        except MalformedEvidenceIdError:
            return 0, 0
        rows = self.store.read(
            self.project_id,
            "MATCH (v:DocVersion {id: $vid}) RETURN v.chunk_starts AS starts",
            {"vid": version_id(str(s.document_node_id), s.recorded_activation_seq or 1)},
        )
        if not rows or recorded is None or index is None:
            return 0, 0
        return chunk_range(rows[0]["starts"] or [], len(recorded), index) or (0, 0)

    # -- documents and events ------------------------------------------------------

    #: characters of a document's current text its page shows at once
    TEXT_WINDOW = 20_000

    def document_page(
        self, key: str, *, version: int | None = None, before: int | None = None, text_from: int = 0
    ) -> DocumentPage | None:
        """None when there is no such document (or no such ``version``).
        Every version with its newest ``VERSION_CITERS`` citers, or with
        ``version`` that version's alone, ``CITERS_PAGE`` of them placed
        below ``before`` (the newest when None). The citers come from a
        narrow range of the citations' index and the counts are kept
        (``_citations``): the page reads the same however many cite it."""
        info = self.graph.get_document(key) if key else None
        if info is None:
            return None
        doc_id = str(info.node_id)
        shown = self.VERSION_CITERS if version is None else self.CITERS_PAGE
        sections: list[VersionCiters] = []
        for v, last, count in _citations.versions(self.store, self.project_id, doc_id):
            if version is not None and v.activation_seq != version:
                continue
            rows = []
            if count:
                below = before if version is not None else None
                vid = version_id(doc_id, v.activation_seq)
                rows = _citations.newest(self.store, self.project_id, vid, last=last, below=below, n=shown + 1)
            citing = [
                CitingDecision(
                    id=r["id"],
                    key=r["key"],
                    task=r["task"],
                    state=r["state"],
                    revision=r["revision"],
                    status=r["status"],
                )
                for r in rows[:shown]
            ]
            older = rows[shown - 1]["pos"] if len(rows) > shown else None
            sections.append(VersionCiters(version=v, citing=citing, count=count, older=older))
        if version is not None:
            if not sections:
                return None
            return DocumentPage(info=info, versions=sections, text=None, paged=version, before=before)
        whole = self.graph.version_text(key, info.activation_seq) if info.live else None
        if whole is None:
            return DocumentPage(info=info, versions=sections, text=None)
        start = min(max(0, text_from), max(0, len(whole) - 1))
        window = whole[start : start + self.TEXT_WINDOW]
        return DocumentPage(info=info, versions=sections, text=window, text_from=start, text_length=len(whole))

    def redaction_preview(self, event_id: Any, *, copies: bool = True) -> RedactionPreview | None:
        """The event ``event_id`` names in this project, or None; with
        ``copies``, the other events that hold its text (``core._copies``:
        bounded, it says when it stopped short)."""
        if not c.is_uuid(event_id):
            return None
        rows = self.store.read(
            self.project_id,
            "MATCH (e:Event {id: $id}) WHERE e.project_id = $p MATCH (t:Task {id: e.task_id}) "
            "RETURN t.name AS task, e.seq AS seq",
            {"id": str(event_id).lower(), "p": self.project_id},
        )
        if not rows:
            return None
        task_name, seq = rows[0]["task"], rows[0]["seq"]
        event = self.history.fetch_event(task_name, seq).event
        found = None
        if copies and event is not None and event.redacted_at is None:
            found = find_copies(
                self.store,
                self.project_id,
                event_id=str(event_id).lower(),
                task_id=c.task_id(self.project_id, task_name),
                seq=seq,
                text=event.payload,
            )
        return RedactionPreview(
            event_id=str(event_id),
            task_name=task_name,
            seq=seq,
            event=event,
            disk=disk_pending(self.store),
            copies=found,
        )
