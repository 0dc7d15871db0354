"""The decision workbench's read models (issue 15): what the decision page
and a queue card show a reviewer, already decided. Each decision by name
(never a UUID); the actions that can succeed now and, for the others, why
not, in the words a refusal would use; who took a decision out of review,
when and why; the passages the supersede form offers in the current text
(re-anchored by :func:`core._supports.closest_match`); the support list of
"cite revision N instead". :class:`core.review_views.ReviewViews` mixes
these in; everything here only reads.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from . import _common as c
from ._evidence import encode_span, version_id
from ._supports import cited_bounds, closest_match, find_nearest, searchable
from .decisions import DecisionTraces
from .history import ConversationHistory
from .knowledge import Graph
from .models.decision import (
    Decision,
    DecisionSupport,
    DocumentSupport,
    EventSupport,
    ReviewState,
    Support,
)
from .models.knowledge import DocumentInfo, FetchStatus
from .stores.base import GraphStore
from .textdiff import passage_diff

__all__ = [
    "DecisionName",
    "DecisionPick",
    "Dependant",
    "EventPick",
    "Excerpt",
    "PassagePick",
    "ReviewActions",
    "SupersedeChoices",
    "WorkbenchViews",
    "decision_name",
]


class _View(BaseModel):
    """The base of every read model of the review views (frozen)."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)


#: a long passage is shown as its first and last this many characters
#: (the rest on demand): no page grows with a document
EXCERPT_EDGE = 600
#: the current text the supersede picker shows around its candidate, each
#: side, and at most in all (more on demand, ``PICK_MORE`` at a time)
PICK_CONTEXT = 1500
PICK_SHOWN = 6000
PICK_MORE = 10_000
#: the most of one text a page or a fragment shows at once
TEXT_PAGE = 20_000


class Excerpt(_View):
    """A text as a page shows it: whole when short, else its first and last
    ``EXCERPT_EDGE`` characters with ``hidden`` characters between them
    (``head`` ends at offset ``start + len(head)`` of the text it is from)."""

    head: str
    hidden: int = 0
    tail: str = ""
    start: int = 0

    @property
    def more_at(self) -> int:
        """Where the hidden part begins (in the text the excerpt is from)."""
        return self.start + len(self.head)

    @property
    def tail_at(self) -> int:
        return self.more_at + self.hidden

    @property
    def end(self) -> int:
        return self.tail_at + len(self.tail)


def excerpt(text: str, start: int = 0, edge: int = EXCERPT_EDGE) -> Excerpt:
    """``text`` (which begins at offset ``start`` of its document) as an excerpt."""
    if len(text) <= 2 * edge + 100:  # hiding fewer than a hundred characters helps no one
        return Excerpt(head=text, start=start)
    return Excerpt(head=text[:edge], hidden=len(text) - 2 * edge, tail=text[-edge:], start=start)


class DecisionName(_View):
    """A decision as people read it: ``choice key · task · revision N (status)``."""

    id: str
    choice_key: str
    task: str
    revision: int
    status: str

    @property
    def label(self) -> str:
        return f"{self.choice_key} · {self.task} · revision {self.revision} ({self.status})"

    def __str__(self) -> str:
        return self.label


def decision_name(d: Decision) -> DecisionName:
    return DecisionName(
        id=str(d.id), choice_key=d.choice_key, task=d.task_name, revision=d.revision, status=d.status.value
    )


class ReviewActions(_View):
    """What a reviewer can do to a decision now. ``blocked``: why reaffirming
    cannot succeed (empty when it can); ``settled``: who took the decision
    out of review, when and why, once it is not active."""

    reaffirm: bool = False
    supersede: bool = False
    reject: bool = False
    blocked: list[str] = []
    settled: str | None = None
    replaced_by: DecisionName | None = None
    #: the root cause group it is in (for "and next"), "" when none
    cause: str = ""


class PassagePick(_View):
    """A document support in the supersede form: the current text, and the
    candidate passage to cite in it (where the old passage stands now, or
    its closest match). ``state``: ``current`` (the cited version is still
    current), ``moved`` (found verbatim), ``closest`` (reworded: the words
    the diff maps it to), ``gone`` (every word of it deleted: nothing
    preselected), ``removed`` (the document was deleted: nothing to cite)."""

    index: int
    support: DocumentSupport
    state: Literal["current", "moved", "closest", "gone", "removed"]
    passage: str
    text: str | None = None
    version: int | None = None
    start: int | None = None
    end: int | None = None
    evidence_id: str | None = None
    #: the part of ``text`` the picker shows, ``[shown_start, shown_end)``:
    #: the candidate with some context, never the whole of a long text
    shown_start: int = 0
    shown_end: int = 0
    #: where the passage begins in the recorded version
    passage_start: int = 0

    @property
    def key(self) -> str:
        return self.support.document_key

    @property
    def candidate(self) -> str:
        return self.text[self.start : self.end] if self.text is not None and self.start is not None else ""

    @property
    def quoted(self) -> Excerpt:
        """The recorded passage, as the form quotes it."""
        return excerpt(self.passage, self.passage_start)

    @property
    def offered(self) -> Excerpt:
        """The candidate, as the form quotes it."""
        return excerpt(self.candidate, self.start or 0)

    def _shown(self, a: int, b: int) -> str:
        a, b = max(a, self.shown_start), min(b, self.shown_end)
        return self.text[a:b] if self.text is not None and a < b else ""

    @property
    def before(self) -> str:
        """The shown text before the candidate (all of it when there is none)."""
        return self._shown(self.shown_start, self.start if self.start is not None else self.shown_end)

    @property
    def shown_candidate(self) -> str:
        return self._shown(self.start, self.end or 0) if self.start is not None else ""

    @property
    def after(self) -> str:
        return self._shown(self.end, self.shown_end) if self.end is not None else ""

    @property
    def earlier(self) -> int | None:
        """Where "show more before" starts, None at the text's beginning."""
        return max(0, self.shown_start - PICK_MORE) if self.shown_start > 0 else None

    @property
    def later(self) -> int | None:
        """Where "show more after" ends, None at the text's end."""
        length = len(self.text or "")
        return min(length, self.shown_end + PICK_MORE) if self.shown_end < length else None

    def widened(self, start: int, end: int) -> PassagePick:
        """The pick showing ``[start, end)`` of its text (at most ``TEXT_PAGE``
        characters more than it shows now, the candidate's side kept)."""
        length = len(self.text or "")
        start, end = max(0, min(start, self.shown_start)), min(length, max(end, self.shown_end))
        if end - start > (self.shown_end - self.shown_start) + TEXT_PAGE:
            if start < self.shown_start:
                start = max(start, self.shown_start - TEXT_PAGE)
                end = self.shown_end
            else:
                end = min(end, self.shown_end + TEXT_PAGE)
        return self.model_copy(update={"shown_start": start, "shown_end": end})


def _whole_lines(text: str, lo: int, hi: int, reach: int = 200) -> tuple[int, int]:
    """``[lo, hi)`` widened to whole lines when a line break is within ``reach``."""
    before = text.rfind("\n", max(0, lo - reach), lo) if lo > 0 else -1
    after = text.find("\n", hi, hi + reach) if hi < len(text) else -1
    return (before + 1 if before != -1 else lo), (after if after != -1 else hi)


def pick_window(length: int, start: int | None, end: int | None) -> tuple[int, int]:
    """The part of a text of ``length`` the picker shows first: the
    candidate ``[start, end)`` with ``PICK_CONTEXT`` either side, at most
    ``PICK_SHOWN`` in all (a long candidate shows its beginning); the
    text's beginning when there is no candidate."""
    if start is None or end is None:
        return 0, min(length, PICK_SHOWN)
    lo = max(0, start - PICK_CONTEXT)
    return lo, min(length, end + PICK_CONTEXT, lo + PICK_SHOWN)


class EventPick(_View):
    task: str
    seq: int
    preview: str
    cited: bool
    redacted: bool = False

    @property
    def token(self) -> str:
        return f"event {self.task} {self.seq}"


class DecisionPick(_View):
    """A cited decision: as cited, and the revision the form offers (its
    choice's active revision; None when the choice has none)."""

    cited: DecisionName
    offer: DecisionName | None

    @property
    def token(self) -> str | None:
        return f"decision {self.offer.id}" if self.offer else None


class SupersedeChoices(_View):
    documents: list[PassagePick]
    events: list[EventPick]
    decisions: list[DecisionPick]


class Dependant(_View):
    """A decision citing this one; ``swap``: whether "cite revision N
    instead" can be offered (it is active and this one was replaced)."""

    decision: Decision
    name: DecisionName
    swap: bool = False


class _Facts:
    """What the action rule needs about some decisions, read in a few queries."""

    def __init__(self) -> None:
        self.nodes: dict[str, dict[str, Any]] = {}
        self.docs: dict[str, dict[str, Any]] = {}
        self.texts: dict[tuple[str, int], dict[str, Any]] = {}
        self.events: dict[str, dict[str, Any]] = {}
        self.deps: dict[str, Decision] = {}


def _clock(at: Any) -> str:
    """A moment as a reviewer reads it: ``10:02`` today, else with its date (UTC)."""
    when = datetime.fromisoformat(at) if isinstance(at, str) else at
    if when is None:
        return "an unknown time"
    when = when.astimezone(UTC) if when.tzinfo else when
    if when.date() == datetime.now(UTC).date():
        return f"at {when:%H:%M}"
    return f"on {when:%Y-%m-%d} at {when:%H:%M}"


def _changed_words(old: str, new: str, start: int, end: int) -> str:
    """``15 → 5``: the cited words that changed, as the diff shows them."""
    view = passage_diff(old, new, start, end, context_lines=0)
    removed = " … ".join(p.text for p in view.before if p.kind == "removed" and p.cited)
    added = " … ".join(p.text for p in view.after if p.kind == "added" and p.cited)
    return f"{_clip(removed or '(nothing)', 60)} → {_clip(added or '(nothing)', 60)}"


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class WorkbenchViews:
    """The workbench read models, mixed into :class:`ReviewViews` (which
    gives them ``_version_text`` and ``_cited_range``)."""

    store: GraphStore
    project_id: str
    traces: DecisionTraces
    history: ConversationHistory
    graph: Graph

    # -- names ---------------------------------------------------------------

    def decision_names(self, ids: list[Any]) -> dict[str, DecisionName]:
        """The names of decisions by id (ids of no decision left out)."""
        return {i: decision_name(d) for i, d in self.traces.get_decisions([str(i) for i in ids]).items()}

    # -- what can succeed now -------------------------------------------------------

    def review_actions(self, decision: Decision) -> ReviewActions:
        return self.review_actions_many([decision])[str(decision.id)]

    def review_actions_many(
        self, decisions: list[Decision], *, rows: dict[str, dict[str, Any]] | None = None
    ) -> dict[str, ReviewActions]:
        """The actions that can succeed now on each decision, and why
        reaffirming cannot when it cannot: the rule of ``reaffirm_decision``
        (its review finished, every current support confirmed against the
        current text, every decision it depends on active, clear and
        reviewed), read in a few queries for a whole page of decisions.
        ``rows``: the decisions' rows with their review bookkeeping, as a
        page of the queue read them (``QueuePage.review_rows``), by id."""
        facts = self._facts(decisions, rows=rows)
        return {str(d.id): self._actions(d, facts) for d in decisions}

    def _by_id(self, query: str, ids: list[str]) -> dict[str, dict[str, Any]]:
        """The rows ``query`` reads for ``$ids``, by their ``id``."""
        return {r["id"]: r for r in self.store.read(self.project_id, query, {"ids": ids})}

    def _facts(
        self,
        decisions: list[Decision],
        *,
        rows: dict[str, dict[str, Any]] | None = None,
        documents: dict[str, DocumentInfo | None] | None = None,
    ) -> _Facts:
        """The facts of :meth:`_actions`. ``rows``: decision rows the caller
        read with their review bookkeeping (``_decision_rows.read_decision``),
        by id; ``documents``: documents it read (None: no such document), by
        node id. Those are not read again."""
        f = _Facts()
        if not decisions:
            return f
        f.nodes = {
            i: {
                "id": i,
                "queued": r.get("queued"),
                "cause": r.get("root_cause"),
                "rejected_at": r.get("rejected_at"),
                "superseded_at": r.get("superseded_at"),
                "superseded_by": r.get("superseded_by"),
            }
            for i, r in (rows or {}).items()
        }
        unread = [str(d.id) for d in decisions if str(d.id) not in f.nodes]
        if unread:
            f.nodes.update(
                self._by_id(
                    "UNWIND $ids AS id MATCH (d:Decision {id: id}) RETURN d.id AS id, d.queued AS queued, "
                    "d.root_cause AS cause, d.rejected_at AS rejected_at, d.superseded_at AS superseded_at, "
                    "d.superseded_by AS superseded_by",
                    unread,
                )
            )
        active = [d for d in decisions if d.status.value == "active"]
        docs = [s for d in active for s in d.supports if isinstance(s, DocumentSupport)]
        events = [s for d in active for s in d.supports if isinstance(s, EventSupport)]
        deps = [str(s.decision_id) for d in active for s in d.supports if isinstance(s, DecisionSupport)]
        replaced = [n["superseded_by"] for n in f.nodes.values() if n.get("superseded_by")]
        if docs:
            known = documents or {}
            f.docs = {
                i: {"id": i, "key": info.key, "seq": info.activation_seq, "deleted_at": info.deleted_at}
                for i, info in known.items()
                if info is not None
            }
            unread = sorted({str(s.document_node_id) for s in docs} - set(known))
            if unread:
                f.docs.update(
                    self._by_id(
                        "UNWIND $ids AS id MATCH (d:Document {id: id}) RETURN d.id AS id, d.key AS key, "
                        "d.activation_seq AS seq, d.deleted_at AS deleted_at",
                        unread,
                    )
                )
            wanted: set[tuple[str, int]] = set()
            for s in docs:
                doc = f.docs.get(str(s.document_node_id))
                if doc and doc["deleted_at"] is None and doc["seq"] != s.recorded_activation_seq:
                    wanted |= {(doc["id"], s.recorded_activation_seq or 1), (doc["id"], doc["seq"])}
            if wanted:
                f.texts = {
                    (r["doc"], r["seq"]): r
                    for r in self.store.read(
                        self.project_id,
                        "UNWIND $ids AS vid MATCH (v:DocVersion {id: vid}) RETURN v.document_id AS doc, "
                        "v.activation_seq AS seq, v.text AS text, v.chunk_starts AS starts",
                        {"ids": sorted(version_id(doc, seq) for doc, seq in wanted)},
                    )
                }
                for (doc, seq), r in f.texts.items():
                    if r["text"] is not None:
                        self.graph.keep_version_text(version_id(doc, seq), r["text"])
        if events:
            f.events = self._by_id(
                "UNWIND $ids AS id MATCH (e:Event {id: id}) RETURN e.id AS id, e.redacted_at AS redacted_at",
                sorted({str(s.event_id) for s in events}),
            )
        if deps or replaced:
            f.deps = self.traces.get_decisions([*deps, *replaced])
            queued = (
                {
                    r["id"]
                    for r in self.store.read(
                        self.project_id,
                        "UNWIND $ids AS id MATCH (d:Decision {id: id}) WHERE d.queued = true RETURN d.id AS id",
                        {"ids": sorted(f.deps)},
                    )
                }
                if deps
                else set()
            )
            for i in queued:
                f.nodes.setdefault(i, {"id": i})["queued"] = True
        return f

    def _actions(self, d: Decision, f: _Facts) -> ReviewActions:
        node = f.nodes.get(str(d.id), {})
        cause = node.get("cause") or ""
        if d.status.value == "rejected":
            sentence = f"{d.rejected_by or 'Someone'} rejected this {_clock(node.get('rejected_at'))}"
            return ReviewActions(settled=f"{sentence}: {d.rejection_reason}" if d.rejection_reason else sentence)
        if d.status.value == "superseded":
            new = f.deps.get(node.get("superseded_by") or "")
            if new is None:
                return ReviewActions(settled=f"This revision was superseded {_clock(node.get('superseded_at'))}.")
            return ReviewActions(
                settled=f"{new.author} superseded this {_clock(node.get('superseded_at'))} with revision {new.revision}",
                replaced_by=decision_name(new),
            )
        blocked: list[str] = []
        if node.get("queued"):
            blocked.append("its review is not finished")
        for s in d.supports:
            if not s.current:
                continue
            why = self._why_not(s, f)
            if why:
                blocked.append(why)
        return ReviewActions(reaffirm=not blocked, supersede=True, reject=True, blocked=blocked, cause=cause)

    def _why_not(self, s: Support, f: _Facts) -> str | None:
        """Why this support cannot be confirmed now (None when it can)."""
        if isinstance(s, DocumentSupport):
            doc = f.docs.get(str(s.document_node_id))
            if doc is None or doc["deleted_at"] is not None:
                return f"{s.document_key} was deleted"
            if doc["seq"] == s.recorded_activation_seq:
                return None
            old, new = f.texts.get((doc["id"], s.recorded_activation_seq or 1)), f.texts.get((doc["id"], doc["seq"]))
            if old is None or new is None:
                return f"the cited version of {s.document_key} cannot be read"
            bounds = cited_bounds(s, old["starts"] or [], len(old["text"]))
            if bounds is None:
                return f"the cited passage of {s.document_key} cannot be read"
            start, end = bounds
            if find_nearest(new["text"], old["text"][start:end], start) is not None:
                return None
            if not searchable(new["text"], old["text"][start:end]):
                return f"{s.document_key} is too long to find the cited passage in its current text"
            return (
                f"the cited passage of {s.document_key} changed: {_changed_words(old['text'], new['text'], start, end)}"
            )
        if isinstance(s, EventSupport):
            event = f.events.get(str(s.event_id))
            if event is None:
                return f"event {s.seq} of {s.task_name} is gone"
            return f"event {s.seq} of {s.task_name} was redacted" if event["redacted_at"] is not None else None
        dep = f.deps.get(str(s.decision_id))
        if dep is None:
            return "a decision it depends on is gone"
        if dep.status.value != "active":
            return f"it depends on {dep.choice_key}, which was {dep.status.value}"
        if dep.review_state is not ReviewState.clear:
            return f"it depends on {dep.choice_key}, which {'needs review' if dep.review_state is ReviewState.needs_review else 'reads unknown'}"
        if f.nodes.get(str(dep.id), {}).get("queued"):
            return f"it depends on {dep.choice_key}, whose review is not finished"
        return None

    # -- the supersede form ------------------------------------------------------

    EVENTS_OFFERED = 50

    def supersede_choices(self, decision: Decision) -> SupersedeChoices:
        """What the supersede form offers: each document support at the
        current text with its candidate passage; the task's log (the first
        ``EVENTS_OFFERED`` events) with the cited events marked; each cited
        decision with its choice's active revision."""
        documents = [
            self._pick(i, s) for i, s in enumerate(d for d in decision.supports if isinstance(d, DocumentSupport))
        ]
        cited_events = {(s.task_name, s.seq) for s in decision.supports if isinstance(s, EventSupport)}
        events: list[EventPick] = []
        page = self.history.list_events(decision.task_name, limit=self.EVENTS_OFFERED)
        for e in page.events:
            events.append(
                EventPick(
                    task=decision.task_name,
                    seq=e.seq,
                    preview=_clip(e.payload, 100),
                    cited=(decision.task_name, e.seq) in cited_events,
                    redacted=e.redacted_at is not None,
                )
            )
        shown = {(e.task, e.seq) for e in events}
        for task, seq in sorted(cited_events - shown):
            got = self.history.fetch_event(task, seq).event
            events.append(
                EventPick(
                    task=task,
                    seq=seq,
                    preview=_clip(got.payload, 100) if got else "(gone)",
                    cited=True,
                    redacted=got is None or got.redacted_at is not None,
                )
            )
        cited = self.traces.get_decisions(
            [str(s.decision_id) for s in decision.supports if isinstance(s, DecisionSupport)]
        )
        decisions = [DecisionPick(cited=decision_name(x), offer=self._active_revision(x)) for x in cited.values()]
        return SupersedeChoices(documents=documents, events=events, decisions=decisions)

    def _active_revision(self, d: Decision) -> DecisionName | None:
        if d.status.value == "active":
            return decision_name(d)
        found = self.active_decision(d.task_name, d.choice_key)
        return decision_name(found) if found else None

    def active_decision(self, task: str, choice_key: str) -> Decision | None:
        """The active decision of ``choice_key`` in ``task``, if any."""
        rows = self.store.read(
            self.project_id,
            "MATCH (d:Decision {active_key: $k}) RETURN d.id AS id",
            {"k": f"{c.task_id(self.project_id, task)}\x1f{choice_key}"},
        )
        return self.traces.get_decision(rows[0]["id"]).decision if rows else None

    def _pick(self, index: int, s: DocumentSupport) -> PassagePick:
        # the document with the recorded version's text and the current one's: one read
        info = self.graph.document_with_texts(s.document_key, [s.recorded_activation_seq or 1])
        recorded = self._version_text(s) or ""
        start, end = self._cited_range(s, recorded)
        passage = recorded[start:end]
        if info is None or not info.live:
            return PassagePick(index=index, support=s, state="removed", passage=passage, passage_start=start)
        if info.activation_seq == s.recorded_activation_seq:
            lo, hi = _whole_lines(recorded, *pick_window(len(recorded), start, end))
            return PassagePick(
                index=index,
                support=s,
                state="current",
                passage=passage,
                text=recorded,
                version=info.activation_seq,
                start=start,
                end=end,
                evidence_id=s.evidence_id,
                shown_start=lo,
                shown_end=hi,
                passage_start=start,
            )
        current = self.graph.version_text(s.document_key, info.activation_seq) or ""
        found = closest_match(recorded, current, start, end)
        if found is None:
            lo, hi = _whole_lines(current, *pick_window(len(current), None, None))
            return PassagePick(
                index=index,
                support=s,
                state="gone",
                passage=passage,
                text=current,
                version=info.activation_seq,
                shown_start=lo,
                shown_end=hi,
                passage_start=start,
            )
        state: Literal["moved", "closest"] = "moved" if current[found[0] : found[1]] == passage else "closest"
        lo, hi = _whole_lines(current, *pick_window(len(current), *found))
        return PassagePick(
            index=index,
            support=s,
            state=state,
            passage=passage,
            text=current,
            version=info.activation_seq,
            start=found[0],
            end=found[1],
            evidence_id=encode_span(info.node_id, info.activation_seq, *found),
            shown_start=lo,
            shown_end=hi,
            passage_start=start,
        )

    def cite_selection(self, key: str, version: int, start: int, end: int, text: str | None = None) -> str | None:
        """The evidence id of ``[start, end)`` of version ``version`` of a
        document when that version is still current; a ``text`` that is not
        what those offsets hold (offsets counted another way, as a browser
        may) is found again nearest ``start`` (line breaks posted as CR LF,
        as browsers post them, are the text's own). None when the document is
        not current at ``version`` or the range is empty or out of it."""
        info = self.graph.get_document(key)
        if info is None or not info.live or info.activation_seq != version:
            return None
        current = self.graph.version_text(key, version) or ""
        # a browser posts a form's line breaks as CR LF: the same text, as far as offsets go
        if (
            text
            and current[start:end] != text
            and current[start:end].replace("\r\n", "\n") != text.replace("\r\n", "\n")
        ):
            at = find_nearest(current, text, start)
            if at is None:
                return None
            start, end = at, at + len(text)
        if not 0 <= start < end <= len(current):
            return None
        return encode_span(info.node_id, version, start, end)

    # -- dependants --------------------------------------------------------------------

    def dependants_of(
        self, decision: Decision, actions: ReviewActions | None = None, *, limit: int = 50
    ) -> list[Dependant]:
        """What cites this decision now, named; each active one may "cite
        revision N instead" once this one was superseded by an active revision."""
        return self._named_dependants(self.traces.list_dependants(str(decision.id), limit=limit), actions)

    def _named_dependants(self, found: list[Decision], actions: ReviewActions | None) -> list[Dependant]:
        """``dependants_of`` the decisions already read (``found``)."""
        replaced = actions.replaced_by if actions else None
        return [
            Dependant(
                decision=x,
                name=decision_name(x),
                swap=replaced is not None and replaced.status == "active" and x.status.value == "active",
            )
            for x in found
        ]

    def swapped_supports(self, dependant: Decision, old: Any, new: Any) -> tuple[list[dict[str, Any]], list[Any]] | str:
        """The support inputs of ``dependant`` with decision ``old`` swapped
        for ``new``, every other support kept at the current text (as the
        supersede form's candidates), with the fetch outcomes of its
        document supports; or a sentence saying what cannot be kept."""
        if not any(isinstance(s, DecisionSupport) and str(s.decision_id) == str(old) for s in dependant.supports):
            return f"{decision_name(dependant).label} does not cite that revision"
        if str(old) == str(new):
            return "it already cites that revision"
        inputs: list[dict[str, Any]] = []
        fetched: list[Any] = []
        picks = iter(self.supersede_choices(dependant).documents)
        for s in dependant.supports:
            if isinstance(s, DocumentSupport):
                pick = next(picks)
                if pick.evidence_id is None:
                    return (
                        f"the cited passage of {s.document_key} is gone from its current text: "
                        "supersede it with the full form"
                    )
                got = self.graph.fetch(pick.evidence_id)
                if got.status is not FetchStatus.ok:
                    return f"the cited passage of {s.document_key} cannot be read ({got.status.value})"
                inputs.append({"kind": "document", "evidence_id": pick.evidence_id})
                fetched.append(got)
            elif isinstance(s, EventSupport):
                inputs.append({"kind": "event", "task_name": s.task_name, "seq": s.seq})
            elif str(s.decision_id) == str(old):
                inputs.append({"kind": "decision", "decision_id": str(new)})
            else:
                inputs.append({"kind": "decision", "decision_id": str(s.decision_id)})
        return inputs, fetched

    # -- refusals and typed evidence ------------------------------------------------------

    def refusal(self, decision_id: Any, error: Any) -> str | None:
        """A refused review write as its actual cause, read now: why the
        decision cannot be reaffirmed, or who took it out of review, when
        and why. None when the code has no cause to name beyond its own
        sentence."""
        code = getattr(error, "value", error)
        d = self.traces.get_decision(str(decision_id)).decision
        if d is None:
            return None
        actions = self.review_actions(d)
        if code in ("decision_not_active", "supersede_target_invalid") and actions.settled:
            return actions.settled.rstrip(".") + "."
        if code == "cannot_revalidate" and actions.blocked:
            return "This decision cannot be reaffirmed: " + "; ".join(actions.blocked) + "."
        return None

    def evidence_by_key(self, token: str) -> str | None:
        """A span typed with the document's key, ``span:KEY:VERSION:START-END``
        (as a person reads it), as the evidence id it names; None when it is
        not of that form or names no document."""
        kind, _, rest = token.partition(":")
        key, _, tail = rest.rpartition(":")
        key, _, seq = key.rpartition(":")
        start, _, end = tail.partition("-")
        if kind != "span" or not key or not (seq.isdigit() and start.isdigit() and end.isdigit()):
            return None
        info = self.graph.get_document(key)
        if info is None:
            return None
        return encode_span(info.node_id, int(seq), int(start), int(end))
