"""The knowledge layer decisions cite: documents, versions, evidence ids, fetch."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.knowledge import (
    Graph,
    chunk_offsets,
    decode_evidence_id,
    document_node_id,
    encode_chunk,
    encode_span,
)
from core.models.decision import EvidenceKind
from core.models.knowledge import (
    DocumentErrorCode,
    FetchStatus,
    MalformedEvidenceIdError,
    SourceState,
    VersionStatus,
)
from core.stores import GraphStore

TEXT = "Postgres is our default store.\n\nIt has served the billing team for years.\n\nFalkorDB is fast."


@pytest.fixture
def graph(store: GraphStore, project_id: str) -> Graph:
    return Graph(store, project_id=project_id, agent_id="ingest")


# -- evidence ids (pure) ------------------------------------------------------------


@given(
    doc=st.uuids(),
    seq=st.integers(min_value=1, max_value=10**9),
    start=st.integers(min_value=0, max_value=10**9),
    length=st.integers(min_value=1, max_value=10**6),
)
def test_span_ids_round_trip(doc: uuid.UUID, seq: int, start: int, length: int) -> None:
    ref = decode_evidence_id(encode_span(doc, seq, start, start + length))
    assert (ref.kind, ref.document_node_id, ref.activation_seq, ref.char_start, ref.char_end) == (
        EvidenceKind.span,
        doc,
        seq,
        start,
        start + length,
    )


@given(doc=st.uuids(), seq=st.integers(min_value=1, max_value=10**9), index=st.integers(min_value=0, max_value=10**6))
def test_chunk_ids_round_trip(doc: uuid.UUID, seq: int, index: int) -> None:
    ref = decode_evidence_id(encode_chunk(doc, seq, index))
    assert (ref.kind, ref.document_node_id, ref.activation_seq, ref.chunk_index) == (
        EvidenceKind.chunk,
        doc,
        seq,
        index,
    )


@given(st.text(max_size=80))
def test_anything_else_is_malformed_or_canonical(text: str) -> None:
    try:
        ref = decode_evidence_id(text)
    except MalformedEvidenceIdError:
        return
    again = (
        encode_span(ref.document_node_id, ref.activation_seq, ref.char_start, ref.char_end)
        if ref.kind is EvidenceKind.span
        else encode_chunk(ref.document_node_id, ref.activation_seq, ref.chunk_index)
    )
    assert again == text


@pytest.mark.parametrize(
    "bad",
    [
        "",
        "span:not-a-uuid:1:0-4",
        f"span:{uuid.UUID(int=1)}:1:4-4",  # empty
        f"span:{uuid.UUID(int=1)}:1:9-4",  # reversed
        f"span:{uuid.UUID(int=1)}:0:0-4",  # no version 0
        f"span:{uuid.UUID(int=1)}:01:0-4",  # not canonical
        f"SPAN:{uuid.UUID(int=1)}:1:0-4",
        f"chunk:{uuid.UUID(int=1)}:1:-1",
        "span:ABCDEF00-0000-4000-8000-00000000000A:1:0-4",
    ],
)
def test_malformed_ids_are_refused(bad: str) -> None:
    with pytest.raises(MalformedEvidenceIdError):
        decode_evidence_id(bad)


@settings(max_examples=200)
@given(st.text(alphabet=st.sampled_from("ab \n\n."), max_size=5000), st.integers(min_value=5, max_value=300))
def test_chunks_cover_the_text_without_changing_it(text: str, target: int) -> None:
    starts = chunk_offsets(text, target)
    ends = starts[1:] + [len(text)]
    assert "".join(text[s:e] for s, e in zip(starts, ends)) == text
    assert all(0 < e - s <= target for s, e in zip(starts, ends))


# -- documents on each backend ----------------------------------------------------


def test_versions_hashes_and_activation_sequence(graph: Graph) -> None:
    first = graph.add("adr/db", TEXT)
    assert first.recorded and first.version is not None and first.version.activation_seq == 1
    assert first.version.content_hash == __import__("hashlib").sha256(TEXT.encode()).hexdigest()
    assert graph.add("adr/db", TEXT).version == first.version  # same text: nothing new
    assert graph.add("adr/db", "other").error is DocumentErrorCode.document_exists
    second = graph.update("adr/db", TEXT + " Really.")
    assert second.version is not None and second.version.activation_seq == 2
    assert graph.update("adr/db", TEXT + " Really.").version.activation_seq == 2
    assert [v.activation_seq for v in graph.list_versions("adr/db")] == [2, 1]
    assert graph.version_text("adr/db", 1) == TEXT
    assert graph.update("missing", "x").error is DocumentErrorCode.document_not_found
    assert graph.source_status("adr/db") is SourceState.current
    assert graph.source_status("missing") is SourceState.unknown


def test_fetch_statuses(graph: Graph) -> None:
    graph.add("adr/db", TEXT)
    span = graph.span_evidence_id("adr/db", 0, 8)
    got = graph.fetch(span)
    assert (got.status, got.text, got.version_status, got.activation_seq) == (
        FetchStatus.ok,
        "Postgres",
        VersionStatus.current,
        1,
    )
    assert graph.fetch(span, max_chars=4).status is FetchStatus.truncated
    assert graph.fetch(span, max_chars=4).text == "Post"
    past = encode_span(document_node_id(graph.project_id, "adr/db"), 1, len(TEXT) - 5, len(TEXT) + 50)
    partial = graph.fetch(past)
    assert (partial.status, partial.text) == (FetchStatus.partial, TEXT[-5:])
    assert graph.fetch("nonsense").status is FetchStatus.malformed
    assert graph.fetch(encode_span(uuid.uuid4(), 1, 0, 3)).status is FetchStatus.unavailable
    chunks = graph.chunk_evidence_ids("adr/db")
    assert "".join(graph.fetch(c).text for c in chunks) == TEXT
    graph.update("adr/db", "Rewritten entirely.")
    old = graph.fetch(span)  # the superseded passage can still be read
    assert (old.status, old.text, old.version_status) == (FetchStatus.ok, "Postgres", VersionStatus.superseded)
    graph.delete("adr/db")
    assert graph.fetch(span).status is FetchStatus.unavailable
    assert graph.source_status("adr/db") is SourceState.deleted
    assert graph.delete("adr/db").error is DocumentErrorCode.document_not_found
    again = graph.add("adr/db", "Back again.")
    assert again.version is not None and again.version.activation_seq == 3


def test_another_projects_evidence_is_unavailable(store: GraphStore, graph: Graph, project_id: str) -> None:
    graph.add("adr/db", TEXT)
    span = graph.span_evidence_id("adr/db", 0, 8)
    other = Graph(store, project_id=project_id + "-other", agent_id="x")
    try:
        assert other.fetch(span).status is FetchStatus.unavailable
    finally:
        store.drop_project(project_id + "-other")


def test_document_writes_with_a_request_id_act_once(graph: Graph) -> None:
    first = graph.add("runbook", "v1", request_id="imp-1")
    assert first.recorded and first.version.activation_seq == 1
    assert graph.update("runbook", "v2", request_id="imp-2").version.activation_seq == 2
    assert graph.update("runbook", "v3", request_id="imp-3").version.activation_seq == 3
    # the same requests again (a file imported twice): nothing changes
    assert graph.add("runbook", "v1", request_id="imp-1") == first
    again = graph.update("runbook", "v2", request_id="imp-2")
    assert again.recorded and again.version.activation_seq == 2
    assert graph.get_document("runbook").activation_seq == 3
    assert len(graph.list_versions("runbook")) == 3
    deleted = graph.delete("runbook", request_id="imp-4")
    assert deleted.recorded and graph.delete("runbook", request_id="imp-4") == deleted
    # an id used for something else is refused, bad ids are refused, nothing written
    assert graph.update("runbook", "v9", request_id="imp-3").error is DocumentErrorCode.request_id_reused
    assert graph.add("other", "x", request_id="").error is DocumentErrorCode.invalid_request_id
    assert graph.add("other", "x", request_id="r" * 65).error is DocumentErrorCode.invalid_request_id
    assert graph.get_document("other") is None
