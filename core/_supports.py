"""Supports: how a decision's support inputs are checked and stored, and how
a stored support is confirmed against the current text (seed 000, "Decisions"
and "Review after a source change"; seed 001, "Supports", "Support inputs").

One builder of a stored document support (:func:`document_support`) and one
re-anchoring rule (:func:`find_nearest`) serve recording, bulk loading,
reaffirming and every page that shows where a cited passage is now.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic import TypeAdapter, ValidationError

from . import _citations
from . import _common as c
from ._evidence import (
    chunk_id,
    chunk_range,
    decode_evidence_id,
    encode_span,
    version_id,
)
from .models.decision import (
    DecisionStatus,
    DecisionSupport,
    DecisionSupportInput,
    DocumentSupport,
    DocumentSupportInput,
    EventSupport,
    EventSupportInput,
    EvidenceKind,
    ReviewState,
    Support,
    SupportInput,
)
from .models.knowledge import (
    EvidenceRef,
    FetchResult,
    FetchStatus,
    MalformedEvidenceIdError,
)
from .models.write_result import WriteErrorCode
from .stores.base import Tx

_FETCHED: TypeAdapter[list[FetchResult]] = TypeAdapter(list[FetchResult])
_SUPPORT_INPUTS: TypeAdapter[list[Any]] = TypeAdapter(list[SupportInput])


class Refused(Exception):
    """A support input the write must refuse with the seed's ``code``."""

    def __init__(self, code: WriteErrorCode) -> None:
        super().__init__(code.value)
        self.code = code


class Resolved:
    """Supports checked inside a unit: what to store and what to link."""

    def __init__(self) -> None:
        self.supports: list[Support] = []
        self.docs: list[dict[str, Any]] = []
        self.events: list[str] = []
        self.deps: list[str] = []
        self.changed_during_recording = False
        self.dependency_flagged = False

    def add_document(self, support: DocumentSupport) -> None:
        self.supports.append(support)
        self.docs.append({"doc": str(support.document_node_id), "seq": support.recorded_activation_seq})

    def add_event(self, event_id: str, task_name: str, seq: int) -> None:
        self.supports.append(EventSupport(event_id=event_id, task_name=task_name, seq=seq))
        self.events.append(event_id)

    def add_decision(self, decision_id: str, *, clear: bool) -> None:
        self.supports.append(DecisionSupport(decision_id=decision_id))
        self.deps.append(decision_id)
        self.dependency_flagged |= not clear


class MalformedSupportError(ValueError):
    """A support input of invalid form (a missing or mistyped field, an
    unknown kind). The writes refuse it with a code (``support_malformed``
    for decisions, ``support_invalid`` for step results): never raised to
    their callers."""


def parse_support_inputs(supports: Any, field: str = "supports") -> list[Any]:
    """Support inputs as models; dicts are accepted. A ``supports`` that is
    not a list raises ValueError; an item of invalid form raises
    :class:`MalformedSupportError`."""
    if supports is None:
        return []
    if isinstance(supports, (str, bytes)) or not isinstance(supports, Sequence):
        raise ValueError(f"{field} must be a list of support inputs")
    items = [s.model_dump() if hasattr(s, "model_dump") else s for s in supports]
    try:
        return _SUPPORT_INPUTS.validate_python(items)
    except ValidationError as exc:
        raise MalformedSupportError(f"{field}: {exc.errors()[0]['msg']}") from exc


def parse_fetched(fetched: Any) -> list[FetchResult]:
    """The ``fetched=[...]`` argument of a decision write, validated."""
    if fetched is None:
        return []
    if isinstance(fetched, (str, bytes)) or not isinstance(fetched, Sequence):
        raise ValueError("fetched must be a list of fetch results")
    items = [f.model_dump() if hasattr(f, "model_dump") else f for f in fetched]
    try:
        return _FETCHED.validate_python(items)
    except ValidationError as exc:
        raise ValueError(f"fetched: {exc.errors()[0]['msg']}") from exc


def document_support(
    evidence_id: str, ref: EvidenceRef, *, key: str, content_hash: str, **review: Any
) -> DocumentSupport:
    """The stored form of a document support citing ``ref`` of the version
    whose key and content hash are given."""
    doc_id = str(ref.document_node_id)
    return DocumentSupport(
        evidence_id=evidence_id,
        document_key=key,
        document_node_id=doc_id,
        content_hash_prefix=content_hash[:16],
        content_hash=content_hash,
        reference_kind=ref.kind,
        char_start=ref.char_start,
        char_end=ref.char_end,
        chunk_id=chunk_id(doc_id, ref.activation_seq, ref.chunk_index) if ref.kind is EvidenceKind.chunk else None,
        recorded_activation_seq=ref.activation_seq,
        **review,
    )


def decode_or_refuse(evidence_id: str) -> EvidenceRef:
    try:
        return decode_evidence_id(evidence_id)
    except MalformedEvidenceIdError:
        raise Refused(WriteErrorCode.support_malformed) from None


def resolve(tx: Tx, project_id: str, inputs: list[Any], fetched: list[FetchResult]) -> Resolved:
    """Check every support input inside a unit; raises :class:`Refused` with
    the seed's code for the first one that cannot be cited."""
    ok_fetches: dict[str, FetchResult] = {}
    for outcome in fetched:
        if outcome.status is FetchStatus.ok:
            ok_fetches.setdefault(outcome.evidence_id, outcome)
    out = Resolved()
    for item in inputs:
        if isinstance(item, DocumentSupportInput):
            _resolve_document(tx, project_id, item, ok_fetches, out)
        elif isinstance(item, EventSupportInput):
            eid = c.event_id(c.task_id(project_id, item.task_name), item.seq)
            if not tx.read(
                "MATCH (e:Event {id: $id}) WHERE e.project_id = $p AND e.redacted_at IS NULL RETURN e.id AS id",
                {"id": eid, "p": project_id},
            ):
                raise Refused(WriteErrorCode.support_event_not_found)
            out.add_event(eid, item.task_name, item.seq)
        elif isinstance(item, DecisionSupportInput):
            if not c.is_uuid(item.decision_id):
                raise Refused(WriteErrorCode.support_malformed)
            did = item.decision_id.lower()
            rows = tx.read(
                "MATCH (d:Decision {id: $id}) WHERE d.project_id = $p "
                "RETURN d.status AS status, d.review_state AS review_state",
                {"id": did, "p": project_id},
            )
            if not rows:
                raise Refused(WriteErrorCode.support_decision_not_found)
            if rows[0]["status"] != DecisionStatus.active.value:
                raise Refused(WriteErrorCode.support_decision_not_active)
            out.add_decision(did, clear=rows[0]["review_state"] == ReviewState.clear.value)
    return out


def _resolve_document(
    tx: Tx, project_id: str, item: DocumentSupportInput, ok_fetches: dict[str, FetchResult], out: Resolved
) -> None:
    ref = decode_or_refuse(item.evidence_id)
    outcome = ok_fetches.get(item.evidence_id)
    if outcome is None:
        raise Refused(WriteErrorCode.support_not_fetched)
    doc_id = str(ref.document_node_id)
    tx.lock("Document", doc_id)
    rows = tx.read(
        "MATCH (v:DocVersion {id: $vid}) WHERE v.project_id = $p "
        "MATCH (d:Document {id: v.document_id}) WHERE d.deleted_at IS NULL "
        "RETURN v.key AS key, v.content_hash AS hash, v.length AS length, v.chunk_starts AS starts, "
        "d.activation_seq AS current_seq",
        {"vid": version_id(doc_id, ref.activation_seq), "p": project_id},
    )
    if not rows:
        raise Refused(WriteErrorCode.support_document_not_found)
    row = rows[0]
    if ref.kind is EvidenceKind.span:
        if (ref.char_end or 0) > row["length"]:
            raise Refused(WriteErrorCode.support_not_fetched)
    elif chunk_range(row["starts"], row["length"], ref.chunk_index or 0) is None:
        raise Refused(WriteErrorCode.support_not_fetched)
    if row["current_seq"] != ref.activation_seq or outcome.content_hash != row["hash"]:
        out.changed_during_recording = True
    out.add_document(document_support(item.evidence_id, ref, key=row["key"], content_hash=row["hash"]))


def revalidate(
    tx: Tx, supports: list[Support], *, reviewer: str, explanation: str, at: str
) -> tuple[list[Support], list[dict[str, Any]]] | None:
    """The current supports that confirm ``supports`` now, with the review
    fields of this reaffirmation, and the document links they need; None
    when one cannot be confirmed (seed: ``cannot_revalidate``)."""
    review = {"reviewed_by": reviewer, "reviewed_at": datetime.fromisoformat(at), "review_explanation": explanation}
    renewed: list[Support] = []
    links: list[dict[str, Any]] = []
    for s in supports:
        if isinstance(s, DocumentSupport):
            confirmed = _revalidate_document(tx, s, review)
            if confirmed is None:
                return None
            renewed.append(confirmed)
            links.append({"doc": str(s.document_node_id), "seq": confirmed.recorded_activation_seq})
        elif isinstance(s, EventSupport):
            if not tx.read(
                "MATCH (e:Event {id: $id}) WHERE e.redacted_at IS NULL RETURN e.id AS id", {"id": str(s.event_id)}
            ):
                return None
            renewed.append(s.model_copy(update={"current": True, **review}))
        else:
            rows = tx.read(
                "MATCH (d:Decision {id: $id}) RETURN d.status AS status, d.review_state AS state, d.queued AS queued",
                {"id": str(s.decision_id)},
            )
            if (
                not rows
                or rows[0]["status"] != DecisionStatus.active.value
                or rows[0]["state"] != ReviewState.clear.value
                or rows[0]["queued"]
            ):
                return None
            renewed.append(s.model_copy(update={"current": True, **review}))
    return renewed, links


def _revalidate_document(tx: Tx, s: DocumentSupport, review: dict[str, Any]) -> DocumentSupport | None:
    """The support confirmed against its document's current version: itself
    when that is the version it cites, else a span of the current version
    where the cited passage stands now (nearest its old place)."""
    doc_id = str(s.document_node_id)
    tx.lock("Document", doc_id)
    rows = tx.read(
        "MATCH (d:Document {id: $id}) WHERE d.deleted_at IS NULL RETURN d.activation_seq AS seq", {"id": doc_id}
    )
    if not rows:
        return None
    seq = rows[0]["seq"]
    recorded_seq = s.recorded_activation_seq or seq
    rows = tx.read(
        "UNWIND $ids AS vid MATCH (v:DocVersion {id: vid}) RETURN v.id AS id, v.activation_seq AS seq, "
        "v.text AS text, v.content_hash AS hash, v.chunk_starts AS starts, v.cite_last AS last",
        {"ids": sorted({version_id(doc_id, seq), version_id(doc_id, recorded_seq)})},
    )
    _citations.note_last(tx, {r["id"]: r["last"] for r in rows})  # the citation this unit adds is numbered from here
    versions = {r["seq"]: r for r in rows}
    recorded, now_version = versions.get(recorded_seq), versions.get(seq)
    if recorded is None or now_version is None:
        return None
    bounds = cited_bounds(s, recorded["starts"], len(recorded["text"]))
    if bounds is None:
        return None
    start, end = bounds
    passage = recorded["text"][start:end]
    found = find_nearest(now_version["text"], passage, start)
    if found is None:
        return None
    if seq == s.recorded_activation_seq:
        return s.model_copy(update={"current": True, **review})
    evidence = encode_span(doc_id, seq, found, found + len(passage))
    return document_support(
        evidence, decode_evidence_id(evidence), key=s.document_key, content_hash=now_version["hash"], **review
    )


def cited_bounds(s: DocumentSupport, chunk_starts: list[int], length: int) -> tuple[int, int] | None:
    """The character range a stored document support cites in its recorded
    version (a span's offsets, or its chunk's range)."""
    if s.reference_kind is EvidenceKind.span:
        return s.char_start or 0, s.char_end or 0
    return chunk_range(chunk_starts, length, chunk_index(s))


def chunk_index(support: DocumentSupport) -> int:
    """The chunk index a chunk support names (-1 when it names none)."""
    try:
        ref = decode_evidence_id(support.evidence_id)
    except MalformedEvidenceIdError:
        return -1
    return ref.chunk_index if ref.chunk_index is not None else -1


#: The longest text (with its passage) re-anchoring searches, in
#: characters: past it, a support reads as not re-anchorable (the page says
#: why, reaffirming refuses ``cannot_revalidate``). Every search is linear,
#: so this caps the work one support may cost at a few passes over it.
SEARCH_LIMIT = 8 * 2**20
#: the first radius around the recorded offset searched (then doubled)
_RADIUS = 4096


def searchable(text: str, passage: str) -> bool:
    """Whether :func:`find_nearest` searches ``text`` for ``passage`` at all
    (within :data:`SEARCH_LIMIT`)."""
    return len(text) + len(passage) <= SEARCH_LIMIT


def find_nearest(text: str, passage: str, near: int) -> int | None:
    """The offset of ``passage`` in ``text`` closest to ``near`` (of two as
    close, the earlier): the one rule for where a cited passage stands in a
    newer version. None when it is not in ``text``, or the text is past
    :data:`SEARCH_LIMIT`.

    The nearest occurrence is the last one at or before ``near`` or the
    first one after it, so the search goes outward from ``near`` in rings
    of doubling radius (from at least the passage's length): the first ring
    holding an occurrence on either side settles it, since anything farther
    out is farther away. Each ring is searched once, forwards with
    ``str.find`` and backwards as ``str.find`` over its reversed text
    (CPython's search of a long needle is the two-way algorithm, linear in
    the text and the needle; ``str.rfind`` is not), so overlapping
    occurrences of a self-repeating passage cost nothing more: the work is
    linear in the text searched, and a passage still at its old place costs
    one comparison."""
    if not searchable(text, passage):
        return None
    return _kept_nearest(text, passage, near)


@functools.lru_cache(maxsize=8)
def _kept_nearest(text: str, passage: str, near: int) -> int | None:
    """The last few answers kept: a page asks the same question of one
    support for its view, its actions and its supersede choice (the texts
    are the same objects, so a kept answer is found without comparing them)."""
    return _nearest(text, passage, near, _RADIUS)


def _nearest(text: str, passage: str, near: int, radius: int) -> int | None:
    """:func:`find_nearest` with its first ``radius`` given (tests try small ones)."""
    n, m = len(text), len(passage)
    if m == 0:
        return min(max(near, 0), n)
    if m > n:
        return None
    near = min(max(near, 0), n - m)
    if text.startswith(passage, near):
        return near
    backwards = passage[::-1]
    low = high = near  # every start in [low, high] is searched
    radius = max(radius, m, 1)
    while low > 0 or high < n - m:
        lo, hi = max(0, near - radius), min(n - m, near + radius)
        after = text.find(passage, high + 1, hi + m) if hi > high else -1
        before = -1
        if lo < low:
            # the starts in [lo, low): the first match in the reversed window is the last one
            r = text[lo : low - 1 + m][::-1].find(backwards)
            before = low - 1 - r if r != -1 else -1
        if before != -1 and (after == -1 or near - before <= after - near):
            return before
        if after != -1:
            return after
        low, high = lo, hi
        radius *= 2
    return None


def closest_match(old: str, new: str, start: int, end: int) -> tuple[int, int] | None:
    """Where ``old[start:end]`` stands in ``new``: the passage itself,
    nearest its old place (:func:`find_nearest`); else the words of ``new``
    that the word diff maps the passage's words to (a reworded passage
    reads as its rewording). None when every word of it was deleted. The
    diff's cost is bounded by the texts' length (:mod:`core.textdiff`), so
    a page may call this for any document."""
    from .textdiff import word_diff

    passage = old[start:end]
    if not passage.strip() or not searchable(new, passage) or not searchable(old, ""):
        return None  # past the search limit nothing is offered: never a guess
    at = find_nearest(new, passage, start)
    if at is not None:
        return at, at + len(passage)
    ops, a_spans, b_spans = word_diff(old, new)
    inside = [i for i, (s, e) in enumerate(a_spans) if s < end and e > start]
    if not inside or not b_spans:
        return None
    first, last = inside[0], inside[-1]
    j0 = j1 = None
    lead = trail = 0
    for op in ops:
        if op.a0 <= first < op.a1 or (j0 is None and op.a0 > first):  # noqa: SIM102 (the inner test reads as its own step)
            if j0 is None:
                if op.tag == "equal" and op.a0 <= first:
                    j0 = op.b0 + first - op.a0
                    lead = max(0, start - a_spans[first][0])
                else:
                    j0 = op.b0
        if op.a0 <= last < op.a1:
            if op.tag == "equal":
                j1 = op.b0 + last - op.a0 + 1
                trail = max(0, a_spans[last][1] - end)
            else:
                j1 = op.b1
            break
    if j0 is None or j1 is None or j1 <= j0:
        return None
    s0 = b_spans[j0][0] + (lead if lead < b_spans[j0][1] - b_spans[j0][0] else 0)
    e1 = b_spans[j1 - 1][1] - (trail if trail < b_spans[j1 - 1][1] - b_spans[j1 - 1][0] else 0)
    return (s0, e1) if e1 > s0 else None


class BatchSupports:
    """What a bulk load's supports cite, read in a few queries for the whole
    batch; :meth:`resolve` then checks one item's supports against it."""

    def __init__(self) -> None:
        self.project_id = ""
        self.generations: dict[str, int] = {}
        self.events: set[str] = set()
        self.deps: dict[str, dict[str, Any]] = {}
        self.refs: dict[str, Any] = {}
        self.versions: dict[str, dict[str, Any]] = {}

    @classmethod
    def read(cls, tx: Tx, project_id: str, planned: list[dict[str, Any]]) -> BatchSupports:
        out = cls()
        out.project_id = project_id
        tids = sorted({c.task_id(project_id, p["task_name"]) for p in planned})
        out.generations = {
            r["id"]: r["g"] or 0
            for r in tx.read(
                "UNWIND $ids AS id MATCH (t:Task {id: id}) RETURN t.id AS id, t.generation AS g", {"ids": tids}
            )
        }
        if len(out.generations) != len(tids):
            raise ValueError(WriteErrorCode.task_not_found.value)
        keys = [f"{c.task_id(project_id, p['task_name'])}\x1f{p['choice_key']}" for p in planned]
        if len(set(keys)) != len(keys) or tx.read(
            "UNWIND $keys AS k MATCH (d:Decision {active_key: k}) RETURN d.id AS id LIMIT 1", {"keys": keys}
        ):
            raise ValueError(WriteErrorCode.choice_exists.value)
        inputs = [i for p in planned for i in p["inputs"]]
        event_ids = sorted({out._event_id(i) for i in inputs if isinstance(i, EventSupportInput)})
        if event_ids:
            out.events = {
                r["id"]
                for r in tx.read(
                    "UNWIND $ids AS id MATCH (e:Event {id: id}) WHERE e.project_id = $p AND e.redacted_at IS NULL "
                    "RETURN e.id AS id",
                    {"ids": event_ids, "p": project_id},
                )
            }
        dep_ids = sorted({i.decision_id.lower() for i in inputs if isinstance(i, DecisionSupportInput)})
        if dep_ids:
            out.deps = {
                r["id"]: r
                for r in tx.read(
                    "UNWIND $ids AS id MATCH (d:Decision {id: id}) WHERE d.project_id = $p "
                    "RETURN d.id AS id, d.status AS status, d.review_state AS state",
                    {"ids": dep_ids, "p": project_id},
                )
            }
        for i in inputs:
            if isinstance(i, DocumentSupportInput):
                try:
                    out.refs[i.evidence_id] = decode_evidence_id(i.evidence_id)
                except MalformedEvidenceIdError:
                    raise ValueError(WriteErrorCode.support_malformed.value) from None
        if out.refs:
            vids = sorted({version_id(str(r.document_node_id), r.activation_seq) for r in out.refs.values()})
            out.versions = {
                r["vid"]: r
                for r in tx.read(
                    "UNWIND $ids AS vid MATCH (v:DocVersion {id: vid}) WHERE v.project_id = $p "
                    "MATCH (d:Document {id: v.document_id}) "
                    "WHERE d.deleted_at IS NULL AND d.activation_seq = v.activation_seq "
                    "RETURN vid, v.key AS key, v.content_hash AS hash",
                    {"ids": vids, "p": project_id},
                )
            }
        return out

    def _event_id(self, i: EventSupportInput) -> str:
        return c.event_id(c.task_id(self.project_id, i.task_name), i.seq)

    def resolve(self, inputs: list[Any]) -> Resolved:
        resolved = Resolved()
        for i in inputs:
            if isinstance(i, EventSupportInput):
                eid = self._event_id(i)
                if eid not in self.events:
                    raise ValueError(WriteErrorCode.support_event_not_found.value)
                resolved.add_event(eid, i.task_name, i.seq)
            elif isinstance(i, DecisionSupportInput):
                row = self.deps.get(i.decision_id.lower())
                if row is None or row["status"] != DecisionStatus.active.value:
                    raise ValueError(WriteErrorCode.support_decision_not_active.value)
                resolved.add_decision(row["id"], clear=row["state"] == ReviewState.clear.value)
            else:
                ref = self.refs[i.evidence_id]
                version = self.versions.get(version_id(str(ref.document_node_id), ref.activation_seq))
                if version is None:
                    raise ValueError(WriteErrorCode.support_document_not_found.value)
                resolved.add_document(
                    document_support(i.evidence_id, ref, key=version["key"], content_hash=version["hash"])
                )
        return resolved
