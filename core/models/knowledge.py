"""The part of the knowledge layer that decisions cite (seed 001, "Verdicts
and source states"): documents, their versions, evidence ids, fetch outcomes."""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from uuid import UUID

from ._base import Model
from .decision import EvidenceKind

__all__ = [
    "DocumentErrorCode",
    "DocumentInfo",
    "DocumentVersion",
    "DocumentWriteResult",
    "EvidenceRef",
    "FetchResult",
    "FetchStatus",
    "MalformedEvidenceIdError",
    "SourceState",
    "VersionStatus",
]


class MalformedEvidenceIdError(ValueError):
    """An evidence id is not in the canonical form, or it names an empty or
    reversed range. History and decision writes convert it to support_malformed."""


class SourceState(str, Enum):
    current = "current"
    pending = "pending"
    failed = "failed"
    deleted = "deleted"
    unknown = "unknown"


class FetchStatus(str, Enum):
    ok = "ok"
    partial = "partial"
    truncated = "truncated"
    unavailable = "unavailable"
    malformed = "malformed"
    index_not_ready = "index_not_ready"
    failed = "failed"


class VersionStatus(str, Enum):
    current = "current"
    superseded = "superseded"


class DocumentErrorCode(str, Enum):
    document_exists = "document_exists"
    document_not_found = "document_not_found"
    request_id_reused = "request_id_reused"
    invalid_request_id = "invalid_request_id"
    #: ours: the key or the text is longer than its limit (core/limits.py)
    value_too_long = "value_too_long"


class EvidenceRef(Model):
    """A decoded evidence id: a span (character offsets) or a chunk of one
    version of one document."""

    kind: EvidenceKind
    document_node_id: UUID
    activation_seq: int
    char_start: int | None = None
    char_end: int | None = None
    chunk_index: int | None = None


class FetchResult(Model):
    """What ``Graph.fetch`` returns; a decision write takes these back as
    ``fetched=[...]`` for its document supports."""

    evidence_id: str
    status: FetchStatus
    text: str = ""
    document_key: str | None = None
    content_hash: str | None = None
    activation_seq: int | None = None
    version_status: VersionStatus | None = None
    char_start: int | None = None
    char_end: int | None = None


class DocumentVersion(Model):
    document_key: str
    document_node_id: UUID
    activation_seq: int
    content_hash: str
    length: int
    chunk_count: int
    created_at: datetime
    author: str | None = None
    superseded_at: datetime | None = None


class DocumentInfo(Model):
    key: str
    node_id: UUID
    state: SourceState
    activation_seq: int
    content_hash: str | None
    updated_at: datetime
    deleted_at: datetime | None = None

    @property
    def live(self) -> bool:
        """Whether the document has a current version (not deleted), whatever
        ``state`` says of its last write's flagging (``pending``/``failed``)."""
        return self.deleted_at is None


class DocumentWriteResult(Model):
    recorded: bool
    error: DocumentErrorCode | None = None
    version: DocumentVersion | None = None
    flagged_decision_ids: list[str] = []
