"""Step results and their supports (seed 000, "Steps"; seed 001, "Step",
``StepResultValidity``): which supports a step result may cite, and whether
a completed result can still be reused when a task view or step list is read.
"""

from __future__ import annotations

from typing import Any

from . import _common as c
from ._evidence import chunk_range, decode_evidence_id, version_id
from ._supports import document_support
from .models.decision import (
    DecisionStatus,
    DecisionSupport,
    DecisionSupportInput,
    DocumentSupport,
    DocumentSupportInput,
    EventSupport,
    EventSupportInput,
    ReviewState,
    Support,
)
from .models.knowledge import MalformedEvidenceIdError
from .models.task import StepResultBasis, StepResultValidity, StepState
from .stores.base import GraphStore, Tx


def resolve_step_supports(tx: Tx, project_id: str, inputs: list[Any]) -> list[Support] | None:
    """Stored supports for step-result inputs, or None when one matches
    nothing in the project (the write is refused ``support_invalid``)."""
    supports: list[Support] = []
    for item in inputs:
        if isinstance(item, EventSupportInput):
            eid = c.event_id(c.task_id(project_id, item.task_name), item.seq)
            if not tx.read("MATCH (e:Event {id: $id}) RETURN e.id AS id", {"id": eid}):
                return None
            supports.append(EventSupport(event_id=eid, task_name=item.task_name, seq=item.seq))
        elif isinstance(item, DecisionSupportInput):
            rows = tx.read(
                "MATCH (d:Decision {id: $id, project_id: $p}) RETURN d.id AS id",
                {"id": item.decision_id, "p": project_id},
            )
            if not rows:
                return None
            supports.append(DecisionSupport(decision_id=rows[0]["id"]))
        elif isinstance(item, DocumentSupportInput):
            support = _document_step_support(tx, project_id, item)
            if support is None:
                return None
            supports.append(support)
    return supports


def _document_step_support(tx: Tx, project_id: str, item: DocumentSupportInput) -> DocumentSupport | None:
    """A document support of a step result: the cited text must be in the
    cited version (a span inside it, a chunk it has)."""
    try:
        ref = decode_evidence_id(item.evidence_id)
    except MalformedEvidenceIdError:
        return None
    rows = tx.read(
        "MATCH (v:DocVersion {id: $vid}) WHERE v.project_id = $p "
        "MATCH (d:Document {id: v.document_id}) WHERE d.deleted_at IS NULL "
        "RETURN v.key AS key, v.content_hash AS hash, v.length AS length, v.chunk_starts AS starts",
        {"vid": version_id(str(ref.document_node_id), ref.activation_seq), "p": project_id},
    )
    if not rows:
        return None
    row = rows[0]
    if ref.chunk_index is None:
        if (ref.char_end or 0) > row["length"]:
            return None
    elif chunk_range(row["starts"], row["length"], ref.chunk_index) is None:
        return None
    return document_support(item.evidence_id, ref, key=row["key"], content_hash=row["hash"])


def step_validities(store: GraphStore, project_id: str, steps: list[dict[str, Any]]) -> dict[str, StepResultValidity]:
    """Check the supports of completed step results again (seed 000, "Steps").
    ``steps``: maps with ``name``, ``state``, ``result_basis`` (stored
    strings) and ``result_supports`` (parsed). What the supports cite is read
    in one query per kind for all the steps."""
    cited = _Cited.read(store, project_id, [s for step in steps for s in step["result_supports"]])
    return {step["name"]: _validity(step, cited) for step in steps}


class _Cited:
    """What step supports cite, by id: events, decisions, documents."""

    def __init__(self) -> None:
        self.events: dict[str, dict[str, Any]] = {}
        self.decisions: dict[str, dict[str, Any]] = {}
        self.documents: dict[str, dict[str, Any]] = {}

    @classmethod
    def read(cls, store: GraphStore, project_id: str, supports: list[Support]) -> _Cited:
        out = cls()

        def by_id(query: str, ids: set[str]) -> dict[str, dict[str, Any]]:
            if not ids:
                return {}
            return {r["id"]: r for r in store.read(project_id, query, {"ids": sorted(ids), "p": project_id})}

        out.events = by_id(
            "UNWIND $ids AS id MATCH (e:Event {id: id}) RETURN e.id AS id, e.redacted_at AS redacted_at, "
            "e.truncated AS truncated",
            {str(s.event_id) for s in supports if isinstance(s, EventSupport)},
        )
        out.decisions = by_id(
            "UNWIND $ids AS id MATCH (d:Decision {id: id, project_id: $p}) "
            "RETURN d.id AS id, d.status AS status, d.review_state AS review_state",
            {str(s.decision_id) for s in supports if isinstance(s, DecisionSupport)},
        )
        out.documents = by_id(
            "UNWIND $ids AS id MATCH (d:Document {id: id}) WHERE d.project_id = $p "
            "RETURN d.id AS id, d.activation_seq AS seq, d.deleted_at AS deleted_at",
            {str(s.document_node_id) for s in supports if isinstance(s, DocumentSupport)},
        )
        return out


def _validity(step: dict[str, Any], cited: _Cited) -> StepResultValidity:
    if step["state"] != StepState.completed.value:
        return StepResultValidity.unknown
    if step["result_basis"] == StepResultBasis.independent.value:
        return StepResultValidity.reusable
    if step["result_basis"] == StepResultBasis.unknown.value or not step["result_supports"]:
        return StepResultValidity.unknown
    verdict = StepResultValidity.reusable
    for s in step["result_supports"]:
        if isinstance(s, EventSupport):
            event = cited.events.get(str(s.event_id))
            if event is None or event["redacted_at"] is not None or event["truncated"]:
                return StepResultValidity.unavailable
        elif isinstance(s, DecisionSupport):
            decision = cited.decisions.get(str(s.decision_id))
            if decision is None:
                return StepResultValidity.unavailable
            if decision["status"] != DecisionStatus.active.value or decision["review_state"] != ReviewState.clear.value:
                verdict = StepResultValidity.needs_review
        else:
            doc = cited.documents.get(str(s.document_node_id))
            if doc is None or doc["deleted_at"] is not None:
                return StepResultValidity.unavailable
            if doc["seq"] != s.recorded_activation_seq:
                verdict = StepResultValidity.needs_review
    return verdict
