"""The knowledge layer that decisions cite: documents by a stable key, their
versions, chunks, canonical evidence ids, and fetch (seed 001, "Verdicts and
source states"; ARCHITECTURE.md, "The public API of the core").

A document has one version per distinct text it has had. Each version keeps
its text (so a superseded passage can still be read), its SHA-256 content
hash, its activation sequence (1, then one more at every new current version)
and the offsets of its chunks. An evidence id names a span (character offsets)
or a chunk of one version:

    span:<document node id>:<activation seq>:<char_start>-<char_end>
    chunk:<document node id>:<activation seq>:<chunk index>

An update flags the active decisions that cite an older version
(``source_changed``); a delete flags every active decision that cites the
document (``source_removed``); both queue the decisions that depend on them
for ``DecisionTraces.continue_decision_review``. They flag in bounded units
(``_flag_jobs``): the first writes the change and flags the first batch,
and a document cited by more keeps an open flag job (``source_status``
``pending``, or ``failed`` once its writer stopped) until the last unit.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from . import _causes, _citations, _counters, _flag_jobs, limits
from . import _common as c
from ._evidence import (
    CHUNK_TARGET,
    VERSION_FIELDS,
    chunk_id,
    chunk_offsets,
    chunk_range,
    content_hash,
    decode_evidence_id,
    document_node_id,
    encode_chunk,
    encode_span,
    version_id,
)
from ._schema import CORE_SCHEMA
from .models.decision import EvidenceKind, ReviewReason
from .models.knowledge import (
    DocumentErrorCode,
    DocumentInfo,
    DocumentVersion,
    DocumentWriteResult,
    FetchResult,
    FetchStatus,
    MalformedEvidenceIdError,
    SourceState,
    VersionStatus,
)
from .stores.base import GraphStore, Tx

__all__ = [
    "CHUNK_TARGET",
    "Graph",
    "MalformedEvidenceIdError",
    "chunk_id",
    "chunk_offsets",
    "decode_evidence_id",
    "document_node_id",
    "encode_chunk",
    "encode_span",
]


def _document_reused() -> DocumentWriteResult:
    return DocumentWriteResult(recorded=False, error=DocumentErrorCode.request_id_reused)


class _Wait(Enum):
    """A document write's first unit that could not go ahead: an earlier
    write's flag job is open, or the citations were never numbered."""

    job_open = "job_open"
    unnumbered = "unnumbered"


_JOB_OPEN, _UNNUMBERED = _Wait.job_open, _Wait.unnumbered


@dataclass
class _Opened:
    """A write whose flag job is open: its first unit's result, the job's
    root cause and the request record (None without a request id)."""

    result: DocumentWriteResult
    cause: str
    request: str | None


def _job(key: str, reason: ReviewReason, cause: str, at: str, ends: list[int]) -> dict[str, Any]:
    """A new flag job (``_flag_jobs``), its cursor before the first citation."""
    return {"key": key, "reason": reason.value, "cause": cause, "at": at, "ends": ends, "vseq": 1, "pos": 0}


# -- the service ---------------------------------------------------------------------


#: version texts one Graph keeps (read once per object; a version never changes)
_KEPT_TEXTS, _KEPT_CHARS = 8, 8_000_000


class Graph:
    """Documents of one project, as the decisions of that project cite them."""

    def __init__(self, store: GraphStore, *, project_id: str, agent_id: str | None = None) -> None:
        self.store = store
        self.project_id = c.text(project_id, "project_id", allow_empty=False)
        self.agent_id = c.optional_text(agent_id, "agent_id")
        # version texts read by this object: a version's text never changes,
        # and a review page reads the same two versions for the support, its
        # diff, the reason it cannot be reaffirmed and the picker
        self._texts: OrderedDict[str, str] = OrderedDict()
        self._ordered = not store.graph_per_project  # the citations' index gives its order (Neo4j)
        store.ensure_schema(self.project_id, CORE_SCHEMA)

    # -- writes -----------------------------------------------------------

    def add(self, key: str, text: str, *, request_id: str | None = None) -> DocumentWriteResult:
        """A new document. The same key with the same text returns the
        current version; with another text it is refused (use ``update``).
        A deleted key can be added again: it continues its versions.

        ``request_id``, as on every other write: the same id with the same
        arguments returns the first result and writes nothing."""
        return self._write(key, text, mode="add", request_id=request_id)

    def update(self, key: str, text: str, *, request_id: str | None = None) -> DocumentWriteResult:
        """A new current version. The same text as the current one changes
        nothing. Active decisions citing an older version are flagged."""
        return self._write(key, text, mode="update", request_id=request_id)

    def _write(self, key: str, text: str, *, mode: str, request_id: str | None) -> DocumentWriteResult:
        key = c.text(key, "key", allow_empty=False)
        text = c.text(text, "text")
        if not c.check_request_id(request_id):
            return DocumentWriteResult(recorded=False, error=DocumentErrorCode.invalid_request_id)
        if limits.any_over(
            (self.project_id, limits.PROJECT_ID_MAX),
            (self.agent_id, limits.AGENT_ID_MAX),
            (key, limits.DOCUMENT_KEY_MAX),
            (text, limits.DOCUMENT_MAX),
        ):
            return DocumentWriteResult(recorded=False, error=DocumentErrorCode.value_too_long)
        digest = content_hash(text)
        doc_id = document_node_id(self.project_id, key)
        starts = chunk_offsets(text)
        replay = c.Replay(self.project_id, self.agent_id, request_id, f"{mode}_document", {"key": key, "hash": digest})

        def write(tx: Tx) -> DocumentWriteResult | _Opened | _Wait:
            rows = tx.read(
                "MATCH (d:Document {id: $id}) RETURN d.activation_seq AS seq, d.content_hash AS hash, "
                "d.deleted_at AS deleted_at",
                {"id": doc_id},
            )
            doc = rows[0] if rows else None
            live = doc is not None and doc["deleted_at"] is None
            if mode == "add" and live:
                if doc["hash"] != digest:
                    return DocumentWriteResult(recorded=False, error=DocumentErrorCode.document_exists)
                return DocumentWriteResult(recorded=True, version=self._version(tx, doc_id, doc["seq"]))
            if mode == "update" and not live:
                return DocumentWriteResult(recorded=False, error=DocumentErrorCode.document_not_found)
            if live and doc["hash"] == digest:
                return DocumentWriteResult(recorded=True, version=self._version(tx, doc_id, doc["seq"]))
            seq = (doc["seq"] if doc else 0) + 1
            at = c.iso(c.now())
            job: dict[str, Any] | None = None
            flagged: list[str] = []
            cursor: dict[str, Any] | None = None
            if doc is not None and live:
                ends = _flag_jobs.version_ends(tx, doc_id, seq)
                if ends is None:
                    return _UNNUMBERED
                cause = _causes.document_cause(key, seq)
                job = _job(key, ReviewReason.source_changed, cause, at, ends)
                flagged, cursor = _flag_jobs.flag_batch(tx, self.project_id, doc_id, job, ordered=self._ordered)
            self._write_version(tx, doc_id, key, text, seq=seq, digest=digest, starts=starts, at=at, new=doc is None)
            version = DocumentVersion(
                document_key=key,
                document_node_id=doc_id,
                activation_seq=seq,
                content_hash=digest,
                length=len(text),
                chunk_count=len(starts),
                created_at=at,
                author=self.agent_id,
            )
            result = DocumentWriteResult(recorded=True, version=version, flagged_decision_ids=sorted(flagged))
            if job is not None and cursor is not None:
                return self._open(tx, doc_id, job, cursor, replay, result)
            return result

        return self._unit(doc_id, replay, write)

    def _write_version(
        self,
        tx: Tx,
        doc_id: str,
        key: str,
        text: str,
        *,
        seq: int,
        digest: str,
        starts: list[int],
        at: str,
        new: bool,
    ) -> None:
        """The writes of a new current version: the document (created, or
        moved on to the version with the one before it superseded) and the
        version with its text and chunk offsets."""
        if new:
            tx.write(
                "CREATE (:Document {id: $id, project_id: $p, key: $key, activation_seq: $seq, "
                "content_hash: $hash, created_at: $at, updated_at: $at})",
                {"id": doc_id, "p": self.project_id, "key": key, "seq": seq, "hash": digest, "at": at},
            )
        else:
            tx.write(
                "MATCH (d:Document {id: $id}) SET d.activation_seq = $seq, d.content_hash = $hash, "
                "d.updated_at = $at, d.deleted_at = null",
                {"id": doc_id, "seq": seq, "hash": digest, "at": at},
            )
            tx.write(
                "MATCH (v:DocVersion {document_id: $id}) WHERE v.superseded_at IS NULL SET v.superseded_at = $at",
                {"id": doc_id, "at": at},
            )
        # no decision cites a new version yet: its citations are numbered
        # and counted from the start (``_citations``)
        tx.write(
            "CREATE (:DocVersion {id: $vid, project_id: $p, document_id: $id, key: $key, activation_seq: $seq, "
            "content_hash: $hash, text: $text, length: $length, chunk_starts: $starts, created_at: $at, "
            "author: $author, cite_last: 0, citers: 0})",
            {
                "vid": version_id(doc_id, seq),
                "p": self.project_id,
                "id": doc_id,
                "key": key,
                "seq": seq,
                "hash": digest,
                "text": text,
                "length": len(text),
                "starts": starts,
                "at": at,
                "author": self.agent_id,
            },
        )

    def delete(self, key: str, *, request_id: str | None = None) -> DocumentWriteResult:
        """The document is gone from the graph's current state (its versions
        are kept for the record); every active decision citing it is flagged."""
        key = c.text(key, "key", allow_empty=False)
        if not c.check_request_id(request_id):
            return DocumentWriteResult(recorded=False, error=DocumentErrorCode.invalid_request_id)
        doc_id = document_node_id(self.project_id, key)
        replay = c.Replay(self.project_id, self.agent_id, request_id, "delete_document", {"key": key})

        def write(tx: Tx) -> DocumentWriteResult | _Opened | _Wait:
            rows = tx.read(
                "MATCH (d:Document {id: $id}) WHERE d.deleted_at IS NULL RETURN d.activation_seq AS seq", {"id": doc_id}
            )
            if not rows:
                return DocumentWriteResult(recorded=False, error=DocumentErrorCode.document_not_found)
            seq = rows[0]["seq"]
            ends = _flag_jobs.version_ends(tx, doc_id, seq + 1)
            if ends is None:
                return _UNNUMBERED
            at = c.iso(c.now())
            job = _job(key, ReviewReason.source_removed, _causes.document_deleted_cause(key, seq), at, ends)
            flagged, cursor = _flag_jobs.flag_batch(tx, self.project_id, doc_id, job, ordered=self._ordered)
            tx.write(
                "MATCH (d:Document {id: $id}) SET d.deleted_at = $at, d.updated_at = $at", {"id": doc_id, "at": at}
            )
            tx.write(
                "MATCH (v:DocVersion {document_id: $id}) WHERE v.superseded_at IS NULL SET v.superseded_at = $at",
                {"id": doc_id, "at": at},
            )
            result = DocumentWriteResult(recorded=True, flagged_decision_ids=sorted(flagged))
            if cursor is not None:
                return self._open(tx, doc_id, job, cursor, replay, result)
            return result

        return self._unit(doc_id, replay, write)

    def _open(
        self,
        tx: Tx,
        doc_id: str,
        job: dict[str, Any],
        cursor: dict[str, Any],
        replay: c.Replay,
        result: DocumentWriteResult,
    ) -> _Opened:
        """Queue the open job of a write whose citers did not fit its unit
        (``_flag_jobs``); the request record, when there is one, says so."""
        request = replay.node_id
        job = {**job, "flagged": len(result.flagged_decision_ids)}
        _flag_jobs.open_job(tx, self.project_id, doc_id, job, cursor, request)
        if request is not None:
            replay.remember(tx, result)
            tx.write("MATCH (r:Request {id: $id}) SET r.flag_job = $cause", {"id": request, "cause": job["cause"]})
        return _Opened(result, job["cause"], request)

    def _unit(
        self, doc_id: str, replay: c.Replay, write: Callable[[Tx], DocumentWriteResult | _Opened | _Wait]
    ) -> DocumentWriteResult:
        """A document write: its first unit locks the document, answers a
        repeated request, else writes and remembers the result with the
        write. A job left open (``_flag_jobs``: the citers did not fit one
        unit) is run to its end before the call returns, in units of its
        own; an open job of an earlier write of the document is waited for
        while its writer lives (its lease holds) and finished first once it
        stopped, and the job of a repeated request is finished first."""

        def work(tx: Tx) -> DocumentWriteResult | _Opened | _Wait:
            # the kept counters' lock first, as every unit that may change
            # them (a revision flags what cites the document); a decision
            # written meanwhile locks the document after it (its citation)
            _counters.lock(tx, self.project_id)
            tx.lock("Document", doc_id)
            earlier = c.replayed(tx, replay, DocumentWriteResult, _document_reused)
            if earlier is not None:
                if earlier.recorded and replay.request_id is not None:
                    request = replay.node_id
                    rows = tx.read("MATCH (r:Request {id: $id}) RETURN r.flag_job AS cause", {"id": request})
                    if rows and rows[0]["cause"]:
                        return _Opened(earlier, rows[0]["cause"], request)
                return earlier
            if _flag_jobs.read_job(tx, doc_id) is not None:
                return _JOB_OPEN
            result = write(tx)
            if isinstance(result, DocumentWriteResult) and result.recorded:
                replay.remember(tx, result)
            return result

        while True:
            out = self.store.transact(self.project_id, work)
            if out is _JOB_OPEN:
                _flag_jobs.finish_earlier(self.store, self.project_id, doc_id)
            elif out is _UNNUMBERED:
                _citations.number(self.store, self.project_id, doc_id)  # a store from before the numbers
            elif isinstance(out, _Opened):
                flagged = _flag_jobs.finish(self.store, self.project_id, doc_id, cause=out.cause)
                if out.request is None:
                    ids = [*out.result.flagged_decision_ids, *flagged]
                else:  # the whole call's, whoever ran its units
                    ids = [
                        *out.result.flagged_decision_ids,
                        *_flag_jobs.kept_ids(self.store, self.project_id, out.request),
                    ]
                return out.result.model_copy(update={"flagged_decision_ids": sorted(set(ids))})
            else:
                assert isinstance(out, DocumentWriteResult)
                return out

    # -- reads ------------------------------------------------------------

    def _version(self, tx: Tx | None, doc_id: str, seq: int) -> DocumentVersion | None:
        query = f"MATCH (v:DocVersion {{id: $vid}}) RETURN {VERSION_FIELDS}"
        params = {"vid": version_id(doc_id, seq)}
        rows = tx.read(query, params) if tx is not None else self.store.read(self.project_id, query, params)
        return DocumentVersion.model_validate(rows[0]) if rows else None

    def fetch(self, evidence_id: str, *, max_chars: int | None = None) -> FetchResult:
        """The text an evidence id names, with the version it was read from."""
        if max_chars is not None:
            max_chars = c.integer(max_chars, "max_chars", minimum=1)
        try:
            ref = decode_evidence_id(evidence_id)
        except MalformedEvidenceIdError:
            return FetchResult(evidence_id=str(evidence_id)[:200], status=FetchStatus.malformed)
        rows = self.store.read(
            self.project_id,
            "MATCH (v:DocVersion {id: $vid}) WHERE v.project_id = $p "
            "MATCH (d:Document {id: v.document_id}) WHERE d.deleted_at IS NULL "
            "RETURN v.key AS key, v.text AS text, v.content_hash AS hash, v.chunk_starts AS starts, "
            "v.activation_seq AS seq, d.activation_seq AS current_seq",
            {"vid": version_id(str(ref.document_node_id), ref.activation_seq), "p": self.project_id},
        )
        if not rows:
            return FetchResult(evidence_id=evidence_id, status=FetchStatus.unavailable)
        row = rows[0]
        text: str = row["text"]
        if ref.kind is EvidenceKind.span:
            start, end = ref.char_start or 0, ref.char_end or 0
        else:
            bounds = chunk_range(row["starts"], len(text), ref.chunk_index or 0)
            if bounds is None:
                return FetchResult(evidence_id=evidence_id, status=FetchStatus.unavailable)
            start, end = bounds
        if start >= len(text):
            return FetchResult(evidence_id=evidence_id, status=FetchStatus.unavailable)
        status = FetchStatus.ok
        if end > len(text):
            end, status = len(text), FetchStatus.partial
        passage = text[start:end]
        if max_chars is not None and len(passage) > max_chars:
            passage, status = passage[:max_chars], FetchStatus.truncated
        return FetchResult(
            evidence_id=evidence_id,
            status=status,
            text=passage,
            document_key=row["key"],
            content_hash=row["hash"],
            activation_seq=row["seq"],
            version_status=VersionStatus.current if row["seq"] == row["current_seq"] else VersionStatus.superseded,
            char_start=start,
            char_end=start + len(passage),
        )

    def document_key_by_id(self, node_id: str) -> str | None:
        """The key of the document with this node id (None: none, or not an
        id): how the dashboard opens a document whose key, written before
        the limits, is too long for a URL."""
        node_id = c.text(node_id, "node_id")
        if not c.is_uuid(node_id):
            return None
        rows = self.store.read(
            self.project_id,
            "MATCH (d:Document {id: $id}) WHERE d.project_id = $p RETURN d.key AS key",
            {"id": node_id.lower(), "p": self.project_id},
        )
        return rows[0]["key"] if rows else None

    def source_status(self, key: str) -> SourceState:
        info = self.get_document(key)
        return SourceState.unknown if info is None else info.state

    def get_document(self, key: str) -> DocumentInfo | None:
        """The document's current state: ``current`` or ``deleted`` once its
        last write is complete; while that write's flag job is open
        (``_flag_jobs``: its citers are flagged in units) ``pending``, or
        ``failed`` when the job's lease expired (its writer stopped; the
        next write of the document, a retry or the review sweep finishes
        it). ``deleted_at`` tells whether a version is live meanwhile."""
        return self.document_with_texts(key, ())

    def document_with_texts(self, key: str, versions: Sequence[int]) -> DocumentInfo | None:
        """:meth:`get_document`, reading in the same statement the texts of
        the current version and of ``versions`` (activation seqs), kept for
        :meth:`version_text`: a caller about to compare a cited version
        with the current one reads once."""
        key = c.text(key, "key")
        seqs = sorted({c.integer(seq, "activation_seq") for seq in versions})
        texts = (
            "WITH d, j OPTIONAL MATCH (v:DocVersion {document_id: $id}) "
            "WHERE v.activation_seq = d.activation_seq OR v.activation_seq IN $seqs "
            if seqs
            else ""
        )
        rows = self.store.read(
            self.project_id,
            "MATCH (d:Document {id: $id}) OPTIONAL MATCH (j:FlagJob {id: $id}) "
            f"{texts}RETURN d.key AS key, d.id AS node_id, d.activation_seq AS activation_seq, "
            "d.content_hash AS content_hash, d.updated_at AS updated_at, d.deleted_at AS deleted_at, "
            "j.lease_until AS lease_until" + (", collect([v.id, v.text]) AS texts" if seqs else ""),
            {"id": document_node_id(self.project_id, key), **({"seqs": seqs} if seqs else {})},
        )
        if not rows:
            return None
        row = rows[0]
        for vid, text in row.pop("texts", None) or []:
            if vid is not None and text is not None:
                self.keep_version_text(vid, text)
        lease = row.pop("lease_until")
        if lease is not None:
            state = SourceState.failed if _flag_jobs.lease_expired(lease) else SourceState.pending
        else:
            state = SourceState.deleted if row["deleted_at"] is not None else SourceState.current
        return DocumentInfo.model_validate({**row, "state": state})

    def list_versions(self, key: str) -> list[DocumentVersion]:
        """Every version, newest first."""
        key = c.text(key, "key")
        rows = self.store.read(
            self.project_id,
            f"MATCH (v:DocVersion {{document_id: $id}}) RETURN {VERSION_FIELDS} ORDER BY v.activation_seq DESC",
            {"id": document_node_id(self.project_id, key)},
        )
        return [DocumentVersion.model_validate(r) for r in rows]

    def version_text(self, key: str, activation_seq: int) -> str | None:
        """The whole text of one version, current, superseded or deleted."""
        key = c.text(key, "key")
        activation_seq = c.integer(activation_seq, "activation_seq")
        vid = version_id(document_node_id(self.project_id, key), activation_seq)
        if vid in self._texts:
            self._texts.move_to_end(vid)
            return self._texts[vid]
        rows = self.store.read(
            self.project_id,
            "MATCH (v:DocVersion {id: $vid}) WHERE v.project_id = $p RETURN v.text AS text",
            {"vid": vid, "p": self.project_id},
        )
        text = rows[0]["text"] if rows else None
        if text is not None:
            self.keep_version_text(vid, text)
        return text

    def keep_version_text(self, version_node_id: str, text: str) -> None:
        """Keep a version's text that a caller read in a batch of its own, so
        :meth:`version_text` answers it without a read (the last few kept)."""
        self._texts[version_node_id] = text
        self._texts.move_to_end(version_node_id)
        while len(self._texts) > 1 and (
            len(self._texts) > _KEPT_TEXTS or sum(map(len, self._texts.values())) > _KEPT_CHARS
        ):
            self._texts.popitem(last=False)

    def current_text(self, key: str) -> str | None:
        info = self.get_document(key)
        if info is None or not info.live:
            return None
        return self.version_text(key, info.activation_seq)

    def span_evidence_id(self, key: str, char_start: int, char_end: int) -> str:
        """The evidence id of ``[char_start, char_end)`` of the current version."""
        info = self.get_document(key)
        if info is None or not info.live:
            raise KeyError(f"no current document {key!r}")
        return encode_span(info.node_id, info.activation_seq, char_start, char_end)

    def chunk_evidence_ids(self, key: str) -> list[str]:
        """The evidence ids of the chunks of the current version, in order."""
        info = self.get_document(key)
        if info is None or not info.live:
            raise KeyError(f"no current document {key!r}")
        version = self._version(None, str(info.node_id), info.activation_seq)
        count = version.chunk_count if version else 0
        return [encode_chunk(info.node_id, info.activation_seq, i) for i in range(count)]
