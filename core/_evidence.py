"""Evidence ids and the arithmetic of versions and chunks (seed 001,
"Verdicts and source states"): derived ids of documents, versions and
chunks, the canonical evidence id of a span or a chunk of one version, chunk
offsets, and the content hash. Pure functions: no store, no service.

    span:<document node id>:<activation seq>:<char_start>-<char_end>
    chunk:<document node id>:<activation seq>:<chunk index>
"""

from __future__ import annotations

import hashlib
import re
import uuid
from typing import Any

from . import _common as c
from .models.decision import EvidenceKind
from .models.knowledge import EvidenceRef, MalformedEvidenceIdError

#: The fields of a ``DocumentVersion`` read from a ``DocVersion`` node ``v``.
VERSION_FIELDS = (
    "v.key AS document_key, v.document_id AS document_node_id, v.activation_seq AS activation_seq, "
    "v.content_hash AS content_hash, v.length AS length, size(v.chunk_starts) AS chunk_count, "
    "v.created_at AS created_at, v.author AS author, v.superseded_at AS superseded_at"
)

#: Chunks end at a paragraph break when one falls before this many characters.
CHUNK_TARGET = 1200

_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_NUM = r"(?:0|[1-9][0-9]{0,17})"
_SPAN = re.compile(rf"span:({_UUID}):({_NUM}):({_NUM})-({_NUM})")
_CHUNK = re.compile(rf"chunk:({_UUID}):({_NUM}):({_NUM})")


def document_node_id(project_id: str, key: str) -> str:
    return str(uuid.uuid5(c.NAMESPACE, f"document\x1f{project_id}\x1f{key}"))


def version_id(document_id: str, activation_seq: int) -> str:
    return str(uuid.uuid5(c.NAMESPACE, f"version\x1f{document_id}\x1f{activation_seq}"))


def chunk_id(document_id: str, activation_seq: int, index: int) -> str:
    return str(uuid.uuid5(c.NAMESPACE, f"chunk\x1f{version_id(document_id, activation_seq)}\x1f{index}"))


def encode_span(document_id: str | uuid.UUID, activation_seq: int, char_start: int, char_end: int) -> str:
    """The canonical evidence id of ``text[char_start:char_end]`` of one version."""
    if not (0 <= char_start < char_end) or activation_seq < 1:
        raise MalformedEvidenceIdError(
            "a span needs 0 <= start < end and a version from 1, "
            f"not {char_start}-{char_end} of version {activation_seq}"
        )
    return f"span:{uuid.UUID(str(document_id))}:{activation_seq}:{char_start}-{char_end}"


def encode_chunk(document_id: str | uuid.UUID, activation_seq: int, index: int) -> str:
    if index < 0 or activation_seq < 1:
        raise MalformedEvidenceIdError(f"no chunk {index} of version {activation_seq}")
    return f"chunk:{uuid.UUID(str(document_id))}:{activation_seq}:{index}"


def decode_evidence_id(evidence_id: Any) -> EvidenceRef:
    """Decode a canonical evidence id; anything else raises
    :class:`MalformedEvidenceIdError` (also an empty or reversed range)."""
    if not isinstance(evidence_id, str):
        raise MalformedEvidenceIdError("an evidence id is a string")
    span = _SPAN.fullmatch(evidence_id)
    if span:
        doc, seq, start, end = span.group(1), int(span.group(2)), int(span.group(3)), int(span.group(4))
        if start >= end:
            raise MalformedEvidenceIdError(f"the range {start}-{end} is empty or reversed")
        if seq < 1:
            raise MalformedEvidenceIdError("versions are numbered from 1")
        return EvidenceRef(
            kind=EvidenceKind.span, document_node_id=doc, activation_seq=seq, char_start=start, char_end=end
        )
    chunk = _CHUNK.fullmatch(evidence_id)
    if chunk:
        doc, seq, index = chunk.group(1), int(chunk.group(2)), int(chunk.group(3))
        if seq < 1:
            raise MalformedEvidenceIdError("versions are numbered from 1")
        return EvidenceRef(kind=EvidenceKind.chunk, document_node_id=doc, activation_seq=seq, chunk_index=index)
    raise MalformedEvidenceIdError(f"not an evidence id: {evidence_id[:80]!r}")


def chunk_offsets(text: str, target: int = CHUNK_TARGET) -> list[int]:
    """Start offsets of the chunks of ``text``: consecutive, covering it all,
    never changing it. A chunk ends after a paragraph break (a blank line)
    when one falls within ``target`` characters, else after the last
    whitespace, else at ``target``."""
    starts: list[int] = []
    pos = 0
    while pos < len(text):
        starts.append(pos)
        if len(text) - pos <= target:
            break
        window = text[pos : pos + target]
        cut = window.rfind("\n\n")
        if cut > 0:
            end = pos + cut + 2
        else:
            space = max(window.rfind(" "), window.rfind("\n"))
            end = pos + space + 1 if space > 0 else pos + target
        pos = end
    return starts


def chunk_range(starts: list[int], length: int, index: int) -> tuple[int, int] | None:
    """The character range of chunk ``index`` of a version, or None when the
    version has no such chunk."""
    if not 0 <= index < len(starts):
        return None
    return starts[index], starts[index + 1] if index + 1 < len(starts) else length


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
