"""Decision traces: conclusions for one choice in one task, the supports they
cite, and their review (seed 000 "Decisions", "Review after a source change";
seed 001 "Decisions", "Supports", "Decision write results").

Writes return a result with ``recorded`` and ``error`` and never raise for a
refused write; arguments of the wrong type raise ``ValueError`` before
anything is written; store failures raise ``GraphStoreError``.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic import TypeAdapter, ValidationError

from . import _common as c
from . import _review
from .history import HISTORY_SCHEMA, MalformedSupportError, parse_support_inputs
from .knowledge import (
    KNOWLEDGE_SCHEMA,
    _chunk_range,
    chunk_id,
    decode_evidence_id,
    encode_span,
    version_id,
)
from .models.decision import (
    MAX_SUPPORTS,
    ConflictGroup,
    ConflictList,
    Decision,
    DecisionHit,
    DecisionLookup,
    DecisionPage,
    DecisionPageLookup,
    DecisionReviewList,
    DecisionStatus,
    DecisionSupport,
    DecisionSupportInput,
    DocumentSupport,
    DocumentSupportInput,
    EventSupport,
    EventSupportInput,
    EvidenceKind,
    ReviewProgress,
    ReviewReason,
    ReviewState,
    Revision,
    Support,
    SupportHistoryPage,
)
from .models.knowledge import FetchResult, FetchStatus, MalformedEvidenceIdError
from .models.write_result import (
    ReaffirmDecisionResult,
    RecordDecisionResult,
    RejectDecisionResult,
    WriteErrorCode,
)
from .stores.base import GraphStore, Tx

__all__ = ["DecisionTraces", "DEFAULT_REAFFIRM_EXPLANATION", "decision_fields", "read_decisions"]

DEFAULT_REAFFIRM_EXPLANATION = "Reaffirmed after review."
LIST_MAX = 20
REVIEW_MAX = 20
SEARCH_MAX = 100
HISTORY_MAX = 100
REVIEW_BATCH_MAX = 100
CONFLICT_GROUPS_MAX = 50
CONFLICT_DECISIONS_MAX = 50
#: Up to this many matching decisions, a queue page sorts them all; beyond,
#: it reads widening ranges of the queue position index.
QUEUE_SORT_LIMIT = 2000
#: The remembered head of each project's review queue, and of each task's
#: part of it (see ``_queue_page``).
_QUEUE_HEADS: dict[tuple[int, str, str | None], int] = {}
QUEUE_HEADS_KEPT = 10_000

_SUPPORTS: TypeAdapter[list[Support]] = TypeAdapter(list[Support])
_SUPPORT: TypeAdapter[Support] = TypeAdapter(Support)
_FETCHED: TypeAdapter[list[FetchResult]] = TypeAdapter(list[FetchResult])

_DECISION_FIELDS = (
    "d.id AS id, d.task_id AS task_id, d.task_name AS task_name, d.choice_key AS choice_key, "
    "d.revision AS revision, d.conclusion AS conclusion, d.rationale AS rationale, "
    "d.assumptions AS assumptions, d.open_questions AS open_questions, d.author AS author, "
    "d.status AS status, d.review_state AS review_state, d.review_reason AS review_reason, "
    "d.rejection_reason AS rejection_reason, d.rejected_by AS rejected_by, d.created_at AS created_at, "
    "d.supports AS supports"
)


def decision_fields(var: str = "d") -> str:
    """The Cypher projection of a decision node into ``Decision`` fields."""
    return _DECISION_FIELDS.replace("d.", f"{var}.")


def support_record_id(decision: str, ordinal: int) -> str:
    return str(uuid.uuid5(c.NAMESPACE, f"support\x1f{decision}\x1f{ordinal}"))


def normalized(conclusion: str) -> str:
    """Conclusions that differ only in case or spacing agree."""
    return " ".join(conclusion.casefold().split())


_FIELDS = frozenset(Decision.model_fields)


def _decision(row: dict[str, Any]) -> Decision:
    """A Decision from a row of ``decision_fields()`` (other columns ignored)."""
    fields = {k: v for k, v in row.items() if k in _FIELDS}
    fields["supports"] = _SUPPORTS.validate_json(row["supports"]) if row.get("supports") else []
    return Decision.model_validate(fields)


def read_decisions(store: GraphStore, project_id: str, query: str, params: dict[str, Any]) -> list[Decision]:
    return [_decision(r) for r in store.read(project_id, query, params)]


def _text_list(value: Any, field: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise ValueError(f"{field} must be a list of strings")
    return [c.text(v, field) for v in value]


def _parse_fetched(fetched: Any) -> list[FetchResult]:
    if fetched is None:
        return []
    if isinstance(fetched, (str, bytes)) or not isinstance(fetched, Sequence):
        raise ValueError("fetched must be a list of fetch results")
    items = [f.model_dump() if hasattr(f, "model_dump") else f for f in fetched]
    try:
        return _FETCHED.validate_python(items)
    except ValidationError as exc:
        raise ValueError(f"fetched: {exc.errors()[0]['msg']}") from exc


class _Refused(Exception):
    def __init__(self, code: WriteErrorCode) -> None:
        super().__init__(code.value)
        self.code = code


class _Resolved:
    """Supports checked inside a unit: what to store and what to link."""

    def __init__(self) -> None:
        self.supports: list[Support] = []
        self.docs: list[dict[str, Any]] = []
        self.events: list[str] = []
        self.deps: list[str] = []
        self.changed_during_recording = False
        self.dependency_flagged = False


class DecisionTraces:
    """The decisions of one project, written as one agent (or person)."""

    def __init__(self, store: GraphStore, *, project_id: str, agent_id: str) -> None:
        self.store = store
        self.project_id = c.text(project_id, "project_id", allow_empty=False)
        self.agent_id = c.text(agent_id, "agent_id", allow_empty=False)
        store.ensure_schema(self.project_id, HISTORY_SCHEMA + KNOWLEDGE_SCHEMA + _review.DECISION_SCHEMA)

    def _scope(self, var: str) -> str:
        """The project filter a query needs on a store that keeps every
        project in one graph (nothing on FalkorDB: a graph per project)."""
        return "" if self.store.graph_per_project else f" AND {var}.project_id = $p"

    # -- supports ---------------------------------------------------------

    def _resolve(self, tx: Tx, inputs: list[Any], fetched: list[FetchResult]) -> _Resolved:
        """Check every support input; raises _Refused with the seed's code."""
        ok_fetches: dict[str, FetchResult] = {}
        for outcome in fetched:
            if outcome.status is FetchStatus.ok:
                ok_fetches.setdefault(outcome.evidence_id, outcome)
        out = _Resolved()
        for item in inputs:
            if isinstance(item, DocumentSupportInput):
                try:
                    ref = decode_evidence_id(item.evidence_id)
                except MalformedEvidenceIdError:
                    raise _Refused(WriteErrorCode.support_malformed) from None
                outcome = ok_fetches.get(item.evidence_id)
                if outcome is None:
                    raise _Refused(WriteErrorCode.support_not_fetched)
                doc_id = str(ref.document_node_id)
                tx.lock("Document", doc_id)
                rows = tx.read(
                    "MATCH (v:DocVersion {id: $vid}) WHERE v.project_id = $p "
                    "MATCH (d:Document {id: v.document_id}) WHERE d.deleted_at IS NULL "
                    "RETURN v.key AS key, v.content_hash AS hash, v.length AS length, v.chunk_starts AS starts, "
                    "d.activation_seq AS current_seq",
                    {"vid": version_id(doc_id, ref.activation_seq), "p": self.project_id},
                )
                if not rows:
                    raise _Refused(WriteErrorCode.support_document_not_found)
                row = rows[0]
                if ref.kind is EvidenceKind.span:
                    if (ref.char_end or 0) > row["length"]:
                        raise _Refused(WriteErrorCode.support_not_fetched)
                elif _chunk_range(row["starts"], row["length"], ref.chunk_index or 0) is None:
                    raise _Refused(WriteErrorCode.support_not_fetched)
                if row["current_seq"] != ref.activation_seq or outcome.content_hash != row["hash"]:
                    out.changed_during_recording = True
                out.supports.append(
                    DocumentSupport(
                        evidence_id=item.evidence_id, document_key=row["key"], document_node_id=doc_id,
                        content_hash_prefix=row["hash"][:16], content_hash=row["hash"],
                        reference_kind=ref.kind, char_start=ref.char_start, char_end=ref.char_end,
                        chunk_id=chunk_id(doc_id, ref.activation_seq, ref.chunk_index)
                        if ref.kind is EvidenceKind.chunk else None,
                        recorded_activation_seq=ref.activation_seq,
                    )
                )
                out.docs.append({"doc": doc_id, "seq": ref.activation_seq})
            elif isinstance(item, EventSupportInput):
                eid = c.event_id(c.task_id(self.project_id, item.task_name), item.seq)
                rows = tx.read(
                    "MATCH (e:Event {id: $id}) WHERE e.project_id = $p AND e.redacted_at IS NULL RETURN e.id AS id",
                    {"id": eid, "p": self.project_id},
                )
                if not rows:
                    raise _Refused(WriteErrorCode.support_event_not_found)
                out.supports.append(EventSupport(event_id=eid, task_name=item.task_name, seq=item.seq))
                out.events.append(eid)
            elif isinstance(item, DecisionSupportInput):
                if not c.is_uuid(item.decision_id):
                    raise _Refused(WriteErrorCode.support_malformed)
                did = item.decision_id.lower()
                rows = tx.read(
                    "MATCH (d:Decision {id: $id}) WHERE d.project_id = $p "
                    "RETURN d.status AS status, d.review_state AS review_state",
                    {"id": did, "p": self.project_id},
                )
                if not rows:
                    raise _Refused(WriteErrorCode.support_decision_not_found)
                if rows[0]["status"] != DecisionStatus.active.value:
                    raise _Refused(WriteErrorCode.support_decision_not_active)
                if rows[0]["review_state"] != ReviewState.clear.value:
                    out.dependency_flagged = True
                out.supports.append(DecisionSupport(decision_id=did))
                out.deps.append(did)
        return out

    def _read_decision(self, tx: Tx | None, did: str) -> dict[str, Any] | None:
        query = (
            f"MATCH (d:Decision {{id: $id}}) WHERE d.project_id = $p RETURN {_DECISION_FIELDS}, "
            "d.queued AS queued, d.support_seq AS support_seq, d.root_cause AS root_cause, d.review_open AS review_open"
        )
        params = {"id": did, "p": self.project_id}
        rows = tx.read(query, params) if tx is not None else self.store.read(self.project_id, query, params)
        return rows[0] if rows else None

    def _choice_state(self, tx: Tx, choice_key: str) -> list[dict[str, Any]]:
        """The active decisions of a choice key, for its conflict flag."""
        return tx.read(
            "MATCH (d:Decision {choice_key: $key}) WHERE d.project_id = $p AND d.status = 'active' "
            "RETURN d.id AS id, d.conclusion_norm AS norm",
            {"key": choice_key, "p": self.project_id},
        )

    def _write_choice(self, tx: Tx, choice_key: str, active: list[dict[str, Any]], at: str) -> None:
        norms = {a["norm"] for a in active}
        tx.write(
            "MERGE (ch:Choice {id: $id}) SET ch.project_id = $p, ch.key = $key, ch.active = $n, "
            "ch.conflict = $conflict, ch.updated_at = $at",
            {"id": c.choice_node_id(self.project_id, choice_key), "p": self.project_id, "key": choice_key,
             "n": len(active), "conflict": True if len(norms) > 1 else None, "at": at},
        )

    def _create(
        self,
        tx: Tx,
        *,
        task_id: str,
        task_name: str,
        choice_key: str,
        revision: int,
        conclusion: str,
        rationale: str,
        assumptions: list[str],
        open_questions: list[str],
        resolved: _Resolved,
        explanation: str | None,
        supersedes: str | None,
        at: str,
        numbers: dict[str, int] | None = None,
        generation: int = 0,
    ) -> Decision:
        state, reason = ReviewState.clear, None
        if resolved.changed_during_recording:
            state, reason = ReviewState.needs_review, ReviewReason.source_changed_during_recording
        elif resolved.dependency_flagged:
            state, reason = ReviewState.needs_review, ReviewReason.dependency_review
        decision = Decision(
            id=c.decision_id(task_id, choice_key, revision, generation), task_id=task_id, task_name=task_name,
            choice_key=choice_key, revision=revision, conclusion=conclusion, rationale=rationale,
            assumptions=assumptions, open_questions=open_questions, author=self.agent_id,
            status=DecisionStatus.active, review_state=state, review_reason=reason, created_at=at,
            supports=resolved.supports,
        )
        write_new_decisions(tx, self.project_id, [(decision, resolved, explanation, supersedes)], numbers)
        return decision

    def _begin_decision_write(
        self, tx: Tx, target: str, replay: c.Replay, result_type: type[Any], *, missing: WriteErrorCode,
        inactive: WriteErrorCode,
    ) -> tuple[Any, dict[str, Any]]:
        """The start of a write to an existing decision: lock it, answer a
        repeated request, refuse a missing or inactive one. Returns (answer,
        decision row); the write goes ahead when the answer is None."""
        tx.lock("Decision", target)
        earlier = c.replayed(tx, replay, result_type, _reused(result_type))
        if earlier is not None:
            return earlier, {}
        old = self._read_decision(tx, target)
        if old is None:
            return result_type(recorded=False, error=missing), {}
        if old["status"] != DecisionStatus.active.value:
            return result_type(recorded=False, error=inactive), {}
        return None, old

    def _activity(self, tx: Tx, action: str, target: str, summary: str, reason: str | None, at: str) -> None:
        _review.log_activity(tx, self.project_id, self.agent_id, action, "decision", target, summary, reason, at)

    # -- writes -----------------------------------------------------------

    def record_decision(
        self,
        task_name: str,
        *,
        choice_key: str,
        conclusion: str,
        rationale: str,
        supports: Sequence[Any],
        assumptions: Sequence[str] | None = None,
        open_questions: Sequence[str] | None = None,
        fetched: Sequence[Any] | None = None,
        request_id: str | None = None,
    ) -> RecordDecisionResult:
        task_name = c.text(task_name, "task_name")
        choice_key = c.text(choice_key, "choice_key", allow_empty=False)
        conclusion = c.text(conclusion, "conclusion")
        rationale = c.text(rationale, "rationale")
        assumption_list = _text_list(assumptions, "assumptions")
        question_list = _text_list(open_questions, "open_questions")
        try:
            inputs: list[Any] | None = parse_support_inputs(supports)
        except MalformedSupportError:
            inputs = None
        outcomes = _parse_fetched(fetched)
        if not c.check_request_id(request_id):
            return RecordDecisionResult(recorded=False, error=WriteErrorCode.invalid_request_id)
        if inputs is None:
            return RecordDecisionResult(recorded=False, error=WriteErrorCode.support_malformed)
        replay = c.Replay(
            self.project_id, request_id, "record_decision",
            {"task": task_name, "key": choice_key, "conclusion": conclusion, "rationale": rationale,
             "assumptions": assumption_list, "questions": question_list,
             "supports": [i.model_dump() for i in inputs]},
        )
        tid = c.task_id(self.project_id, task_name)

        def work(tx: Tx) -> RecordDecisionResult:
            tx.lock("Task", tid)
            earlier = c.replayed(tx, replay, RecordDecisionResult, _reused(RecordDecisionResult))
            if earlier is not None:
                return earlier
            task = tx.read("MATCH (t:Task {id: $id}) RETURN t.id AS id, t.generation AS g", {"id": tid})
            if not task:
                return RecordDecisionResult(recorded=False, error=WriteErrorCode.task_not_found)
            if not 1 <= len(inputs) <= MAX_SUPPORTS:
                return RecordDecisionResult(recorded=False, error=WriteErrorCode.support_required)
            active = self._choice_state(tx, choice_key)
            if any(
                tx.read(
                    "MATCH (d:Decision {active_key: $k}) RETURN d.id AS id", {"k": f"{tid}\x1f{choice_key}"}
                )
            ):
                return RecordDecisionResult(recorded=False, error=WriteErrorCode.choice_exists)
            revisions = tx.read(
                "MATCH (d:Decision {task_id: $tid}) WHERE d.choice_key = $key RETURN max(d.revision) AS rev",
                {"tid": tid, "key": choice_key},
            )
            try:
                resolved = self._resolve(tx, inputs, outcomes)
            except _Refused as refused:
                return RecordDecisionResult(recorded=False, error=refused.code)
            at = c.iso(c.now())
            decision = self._create(
                tx, task_id=tid, task_name=task_name, choice_key=choice_key,
                revision=(revisions[0]["rev"] or 0) + 1 if revisions else 1,
                conclusion=conclusion, rationale=rationale, assumptions=assumption_list,
                open_questions=question_list, resolved=resolved, explanation=None, supersedes=None, at=at,
                generation=task[0]["g"] or 0,
            )
            self._write_choice(tx, choice_key, [*active, {"id": str(decision.id), "norm": normalized(conclusion)}], at)
            warnings = [ReviewReason.source_changed_during_recording.value] if resolved.changed_during_recording else []
            result = RecordDecisionResult(recorded=True, decision=decision, warnings=warnings)
            replay.remember(tx, result)
            return result

        return self.store.transact(self.project_id, work)

    def supersede_decision(
        self,
        decision_id: str,
        *,
        conclusion: str,
        rationale: str,
        explanation: str,
        supports: Sequence[Any],
        assumptions: Sequence[str] | None = None,
        open_questions: Sequence[str] | None = None,
        fetched: Sequence[Any] | None = None,
        request_id: str | None = None,
    ) -> RecordDecisionResult:
        target = _decision_arg(decision_id)
        conclusion = c.text(conclusion, "conclusion")
        rationale = c.text(rationale, "rationale")
        explanation = c.text(explanation, "explanation")
        assumption_list = _text_list(assumptions, "assumptions")
        question_list = _text_list(open_questions, "open_questions")
        try:
            inputs: list[Any] | None = parse_support_inputs(supports)
        except MalformedSupportError:
            inputs = None
        outcomes = _parse_fetched(fetched)
        if not c.check_request_id(request_id):
            return RecordDecisionResult(recorded=False, error=WriteErrorCode.invalid_request_id)
        if inputs is None:
            return RecordDecisionResult(recorded=False, error=WriteErrorCode.support_malformed)
        if not explanation.strip():
            return RecordDecisionResult(recorded=False, error=WriteErrorCode.explanation_required)
        if target is None:
            return RecordDecisionResult(recorded=False, error=WriteErrorCode.supersede_target_invalid)
        replay = c.Replay(
            self.project_id, request_id, "supersede_decision",
            {"target": target, "conclusion": conclusion, "rationale": rationale, "explanation": explanation,
             "assumptions": assumption_list, "questions": question_list,
             "supports": [i.model_dump() for i in inputs]},
        )

        def work(tx: Tx) -> RecordDecisionResult:
            answer, old = self._begin_decision_write(
                tx, target, replay, RecordDecisionResult,
                missing=WriteErrorCode.supersede_target_invalid, inactive=WriteErrorCode.supersede_target_invalid,
            )
            if answer is not None:
                return answer
            if not 1 <= len(inputs) <= MAX_SUPPORTS:
                return RecordDecisionResult(recorded=False, error=WriteErrorCode.support_required)
            if target in {i.decision_id.lower() for i in inputs if isinstance(i, DecisionSupportInput)}:
                return RecordDecisionResult(recorded=False, error=WriteErrorCode.support_decision_not_active)
            active = [a for a in self._choice_state(tx, old["choice_key"]) if a["id"] != target]
            try:
                resolved = self._resolve(tx, inputs, outcomes)
            except _Refused as refused:
                return RecordDecisionResult(recorded=False, error=refused.code)
            at = c.iso(c.now())
            # what depended on the old revision should be looked at again
            queued = _review.dependants(tx, [{"id": target, "cause": f"superseded:{target}", "depth": 0}])
            tally = _review.Tally(tx, self.project_id, [target, *(q["id"] for q in queued)], known=queued)
            numbers = _review.take_numbers(tx, [old["task_id"]])
            generation = _review.task_generation(tx, old["task_id"])
            tx.write(
                "MATCH (d:Decision {id: $id}) SET d.status = 'superseded', d.superseded_at = $at "
                + _review.unset("d", ("active_key", "active_seq", "queued", "queued_at", *_review.LEAVE_QUEUE)),
                {"id": target, "at": at},
            )
            decision = self._create(
                tx, task_id=old["task_id"], task_name=old["task_name"], choice_key=old["choice_key"],
                revision=old["revision"] + 1, conclusion=conclusion, rationale=rationale,
                assumptions=assumption_list, open_questions=question_list, resolved=resolved,
                explanation=explanation, supersedes=target, at=at, numbers=numbers, generation=generation,
            )
            tx.write(
                "MATCH (o:Decision {id: $old}) SET o.superseded_by = $new", {"old": target, "new": str(decision.id)}
            )
            _review.enqueue(tx, self.project_id, queued, at, _review.Positions(), tally=tally)
            self._write_choice(
                tx, old["choice_key"], [*active, {"id": str(decision.id), "norm": normalized(conclusion)}], at
            )
            self._activity(tx, "supersede", target, f"{old['choice_key']}: revision {decision.revision}", explanation, at)
            warnings = [ReviewReason.source_changed_during_recording.value] if resolved.changed_during_recording else []
            result = RecordDecisionResult(recorded=True, decision=decision, warnings=warnings)
            replay.remember(tx, result)
            return result

        return self.store.transact(self.project_id, work)

    def reject_decision(
        self, decision_id: str, *, reason: str, request_id: str | None = None
    ) -> RejectDecisionResult:
        target = _decision_arg(decision_id)
        reason = c.text(reason, "reason", allow_empty=False)
        if not c.check_request_id(request_id):
            return RejectDecisionResult(recorded=False, error=WriteErrorCode.invalid_request_id)
        if target is None:
            return RejectDecisionResult(recorded=False, error=WriteErrorCode.decision_not_found)
        replay = c.Replay(self.project_id, request_id, "reject_decision", {"target": target, "reason": reason})

        def work(tx: Tx) -> RejectDecisionResult:
            answer, old = self._begin_decision_write(
                tx, target, replay, RejectDecisionResult,
                missing=WriteErrorCode.decision_not_found, inactive=WriteErrorCode.decision_not_active,
            )
            if answer is not None:
                return answer
            active = [a for a in self._choice_state(tx, old["choice_key"]) if a["id"] != target]
            at = c.iso(c.now())
            queued = _review.dependants(tx, [{"id": target, "cause": f"rejected:{target}", "depth": 0}])
            tally = _review.Tally(tx, self.project_id, [target, *(q["id"] for q in queued)], known=queued)
            tx.write(
                "MATCH (d:Decision {id: $id}) SET d.status = 'rejected', d.rejection_reason = $reason, "
                "d.rejected_by = $by, d.rejected_at = $at, d.review_state = 'clear' "
                + _review.unset("d", ("review_reason", "active_key", "active_seq", "queued", "queued_at",
                                      *_review.LEAVE_QUEUE)),
                {"id": target, "reason": reason, "by": self.agent_id, "at": at},
            )
            _review.enqueue(tx, self.project_id, queued, at, _review.Positions(), tally=tally)
            self._write_choice(tx, old["choice_key"], active, at)
            self._activity(tx, "reject", target, old["choice_key"], reason, at)
            decision = _decision(
                {**old, "status": DecisionStatus.rejected.value, "rejection_reason": reason,
                 "rejected_by": self.agent_id, "review_state": ReviewState.clear.value, "review_reason": None}
            )
            result = RejectDecisionResult(recorded=True, decision=decision)
            replay.remember(tx, result)
            return result

        return self.store.transact(self.project_id, work)

    def reaffirm_decision(
        self,
        decision_id: str,
        *,
        explanation: str = DEFAULT_REAFFIRM_EXPLANATION,
        request_id: str | None = None,
    ) -> ReaffirmDecisionResult:
        """Confirm the decision against the current text of what it cites: new
        current supports, the old ones kept in its support history."""
        target = _decision_arg(decision_id)
        explanation = c.text(explanation, "explanation")
        if not explanation.strip():
            explanation = DEFAULT_REAFFIRM_EXPLANATION
        if not c.check_request_id(request_id):
            return ReaffirmDecisionResult(recorded=False, error=WriteErrorCode.invalid_request_id)
        if target is None:
            return ReaffirmDecisionResult(recorded=False, error=WriteErrorCode.decision_not_found)
        replay = c.Replay(self.project_id, request_id, "reaffirm_decision", {"target": target, "explanation": explanation})

        def work(tx: Tx) -> ReaffirmDecisionResult:
            answer, old = self._begin_decision_write(
                tx, target, replay, ReaffirmDecisionResult,
                missing=WriteErrorCode.decision_not_found, inactive=WriteErrorCode.decision_not_active,
            )
            if answer is not None:
                return answer
            if old["queued"]:
                return ReaffirmDecisionResult(recorded=False, error=WriteErrorCode.cannot_revalidate)
            at = c.iso(c.now())
            current = _SUPPORTS.validate_json(old["supports"]) if old["supports"] else []
            renewed = self._revalidate(tx, current, explanation, at)
            if renewed is None:
                return ReaffirmDecisionResult(recorded=False, error=WriteErrorCode.cannot_revalidate)
            supports, links = renewed
            first = old["support_seq"] or 0
            tally = _review.Tally(tx, self.project_id, [target])
            tx.write(
                "MATCH (r:SupportRecord {decision_id: $id}) WHERE r.current = true SET r.current = false, "
                "r.reviewed_by = $by, r.reviewed_at = $at, r.review_explanation = $explanation",
                {"id": target, "by": self.agent_id, "at": at, "explanation": explanation},
            )
            tx.write(
                "UNWIND $rows AS r CREATE (:SupportRecord {id: r.id, project_id: $p, decision_id: $did, "
                "ordinal: r.ordinal, current: true, data: r.data})",
                {"p": self.project_id, "did": target,
                 "rows": [{"id": support_record_id(target, first + i), "ordinal": first + i,
                           "data": s.model_dump_json()} for i, s in enumerate(supports)]},
            )
            tx.write("MATCH (d:Decision {id: $id})-[r:CITES_DOC]->() DELETE r", {"id": target})
            if links:
                tx.write(
                    "MATCH (d:Decision {id: $id}) UNWIND $docs AS s MATCH (doc:Document {id: s.doc}) "
                    "CREATE (d)-[:CITES_DOC {seq: s.seq}]->(doc)",
                    {"id": target, "docs": links},
                )
            tx.write(
                "MATCH (d:Decision {id: $id}) SET d.supports = $supports, d.support_seq = $n, "
                "d.review_state = 'clear', d.reaffirmed_at = $at, d.reaffirmed_by = $by "
                + _review.unset("d", ("review_reason", *_review.LEAVE_QUEUE)),
                {"id": target, "supports": _dump_supports(supports), "n": first + len(supports), "at": at,
                 "by": self.agent_id},
            )
            tally.settle(tx)
            self._activity(tx, "reaffirm", target, old["choice_key"], explanation, at)
            decision = _decision(
                {**old, "review_state": ReviewState.clear.value, "review_reason": None,
                 "supports": _dump_supports(supports)}
            )
            result = ReaffirmDecisionResult(recorded=True, decision=decision)
            replay.remember(tx, result)
            return result

        return self.store.transact(self.project_id, work)

    def _revalidate(
        self, tx: Tx, supports: list[Support], explanation: str, at: str
    ) -> tuple[list[Support], list[dict[str, Any]]] | None:
        """The current supports that confirm ``supports`` now, or None when
        one cannot be confirmed."""
        review = {"reviewed_by": self.agent_id, "reviewed_at": datetime.fromisoformat(at),
                  "review_explanation": explanation}
        renewed: list[Support] = []
        links: list[dict[str, Any]] = []
        for s in supports:
            if isinstance(s, DocumentSupport):
                doc_id = str(s.document_node_id)
                tx.lock("Document", doc_id)
                rows = tx.read(
                    "MATCH (d:Document {id: $id}) WHERE d.deleted_at IS NULL RETURN d.activation_seq AS seq",
                    {"id": doc_id},
                )
                if not rows:
                    return None
                seq = rows[0]["seq"]
                versions = {
                    r["seq"]: r
                    for r in tx.read(
                        "UNWIND $ids AS vid MATCH (v:DocVersion {id: vid}) "
                        "RETURN v.activation_seq AS seq, v.text AS text, v.content_hash AS hash, v.chunk_starts AS starts",
                        {"ids": sorted({version_id(doc_id, seq), version_id(doc_id, s.recorded_activation_seq or seq)})},
                    )
                }
                recorded = versions.get(s.recorded_activation_seq or seq)
                now_version = versions.get(seq)
                if recorded is None or now_version is None:
                    return None
                if s.reference_kind is EvidenceKind.span:
                    start, end = s.char_start or 0, s.char_end or 0
                else:
                    bounds = _chunk_range(recorded["starts"], len(recorded["text"]), _chunk_index(s))
                    if bounds is None:
                        return None
                    start, end = bounds
                passage = recorded["text"][start:end]
                found = _find_nearest(now_version["text"], passage, start)
                if found is None:
                    return None
                if seq == s.recorded_activation_seq:
                    renewed.append(s.model_copy(update={"current": True, **review}))
                else:
                    renewed.append(
                        DocumentSupport(
                            evidence_id=encode_span(doc_id, seq, found, found + len(passage)),
                            document_key=s.document_key, document_node_id=doc_id,
                            content_hash_prefix=now_version["hash"][:16], content_hash=now_version["hash"],
                            reference_kind=EvidenceKind.span, char_start=found, char_end=found + len(passage),
                            recorded_activation_seq=seq, **review,
                        )
                    )
                links.append({"doc": doc_id, "seq": seq})
            elif isinstance(s, EventSupport):
                rows = tx.read(
                    "MATCH (e:Event {id: $id}) WHERE e.redacted_at IS NULL RETURN e.id AS id", {"id": str(s.event_id)}
                )
                if not rows:
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

    # -- bulk loading -------------------------------------------------------

    def load_decisions(self, items: Sequence[dict[str, Any]]) -> list[Decision]:
        """Record many new decisions in one unit: for seeding large data sets
        (the demo's large size, benchmarks, imports), where one unit per
        decision would take hours. Each item has the fields of
        ``record_decision`` (``task_name``, ``choice_key``, ``conclusion``,
        ``rationale``, ``supports``, optional ``assumptions`` and
        ``open_questions``); document supports name versions that are
        current (the loader reads them itself, so no fetch outcomes). The
        batch is checked as a whole and written all or nothing; anything
        ``record_decision`` would refuse raises ``ValueError``."""
        planned_inputs = []
        for n, item in enumerate(items):
            if not isinstance(item, dict):
                raise ValueError(f"item {n} is not a mapping")
            task_name = c.text(item.get("task_name"), "task_name")
            key = c.text(item.get("choice_key"), "choice_key", allow_empty=False)
            inputs = parse_support_inputs(item.get("supports"))
            if not 1 <= len(inputs) <= MAX_SUPPORTS:
                raise ValueError(f"item {n}: {WriteErrorCode.support_required.value}")
            planned_inputs.append((
                task_name, key, c.text(item.get("conclusion"), "conclusion"), c.text(item.get("rationale"), "rationale"),
                _text_list(item.get("assumptions"), "assumptions"), _text_list(item.get("open_questions"), "open_questions"),
                inputs,
            ))
        if not planned_inputs:
            return []

        def work(tx: Tx) -> list[Decision]:
            tids = sorted({c.task_id(self.project_id, p[0]) for p in planned_inputs})
            found = {r["id"]: r["g"] or 0 for r in tx.read(
                "UNWIND $ids AS id MATCH (t:Task {id: id}) RETURN t.id AS id, t.generation AS g", {"ids": tids})}
            if len(found) != len(tids):
                raise ValueError(WriteErrorCode.task_not_found.value)
            keys = [f"{c.task_id(self.project_id, p[0])}\x1f{p[1]}" for p in planned_inputs]
            if len(set(keys)) != len(keys) or tx.read(
                "UNWIND $keys AS k MATCH (d:Decision {active_key: k}) RETURN d.id AS id LIMIT 1", {"keys": keys}
            ):
                raise ValueError(WriteErrorCode.choice_exists.value)
            event_ids = sorted({
                c.event_id(c.task_id(self.project_id, i.task_name), i.seq)
                for p in planned_inputs for i in p[6] if isinstance(i, EventSupportInput)
            })
            events = {r["id"] for r in tx.read(
                "UNWIND $ids AS id MATCH (e:Event {id: id}) WHERE e.project_id = $p AND e.redacted_at IS NULL "
                "RETURN e.id AS id", {"ids": event_ids, "p": self.project_id},
            )} if event_ids else set()
            dep_ids = sorted({i.decision_id.lower() for p in planned_inputs for i in p[6] if isinstance(i, DecisionSupportInput)})
            deps = {r["id"]: r for r in tx.read(
                "UNWIND $ids AS id MATCH (d:Decision {id: id}) WHERE d.project_id = $p "
                "RETURN d.id AS id, d.status AS status, d.review_state AS state", {"ids": dep_ids, "p": self.project_id},
            )} if dep_ids else {}
            refs = {}
            for p in planned_inputs:
                for i in p[6]:
                    if isinstance(i, DocumentSupportInput):
                        try:
                            refs[i.evidence_id] = decode_evidence_id(i.evidence_id)
                        except MalformedEvidenceIdError:
                            raise ValueError(WriteErrorCode.support_malformed.value) from None
            versions = {r["vid"]: r for r in tx.read(
                "UNWIND $ids AS vid MATCH (v:DocVersion {id: vid}) WHERE v.project_id = $p "
                "MATCH (d:Document {id: v.document_id}) WHERE d.deleted_at IS NULL AND d.activation_seq = v.activation_seq "
                "RETURN vid, v.key AS key, v.content_hash AS hash", {"ids": sorted({
                    version_id(str(r.document_node_id), r.activation_seq) for r in refs.values()}), "p": self.project_id},
            )} if refs else {}
            at = c.now()
            planned = []
            for task_name, key, conclusion, rationale, assumptions, questions, inputs in planned_inputs:
                resolved = _Resolved()
                for i in inputs:
                    if isinstance(i, EventSupportInput):
                        eid = c.event_id(c.task_id(self.project_id, i.task_name), i.seq)
                        if eid not in events:
                            raise ValueError(WriteErrorCode.support_event_not_found.value)
                        resolved.supports.append(EventSupport(event_id=eid, task_name=i.task_name, seq=i.seq))
                        resolved.events.append(eid)
                    elif isinstance(i, DecisionSupportInput):
                        row = deps.get(i.decision_id.lower())
                        if row is None or row["status"] != DecisionStatus.active.value:
                            raise ValueError(WriteErrorCode.support_decision_not_active.value)
                        resolved.dependency_flagged |= row["state"] != ReviewState.clear.value
                        resolved.supports.append(DecisionSupport(decision_id=row["id"]))
                        resolved.deps.append(row["id"])
                    else:
                        ref = refs[i.evidence_id]
                        doc_id = str(ref.document_node_id)
                        version = versions.get(version_id(doc_id, ref.activation_seq))
                        if version is None:
                            raise ValueError(WriteErrorCode.support_document_not_found.value)
                        resolved.supports.append(DocumentSupport(
                            evidence_id=i.evidence_id, document_key=version["key"], document_node_id=doc_id,
                            content_hash_prefix=version["hash"][:16], content_hash=version["hash"],
                            reference_kind=ref.kind, char_start=ref.char_start, char_end=ref.char_end,
                            chunk_id=chunk_id(doc_id, ref.activation_seq, ref.chunk_index)
                            if ref.chunk_index is not None else None,
                            recorded_activation_seq=ref.activation_seq,
                        ))
                        resolved.docs.append({"doc": doc_id, "seq": ref.activation_seq})
                tid = c.task_id(self.project_id, task_name)
                flagged = resolved.dependency_flagged
                decision = Decision(
                    id=c.decision_id(tid, key, 1, found[tid]), task_id=tid, task_name=task_name, choice_key=key, revision=1,
                    conclusion=conclusion, rationale=rationale, assumptions=assumptions, open_questions=questions,
                    author=self.agent_id, status=DecisionStatus.active,
                    review_state=ReviewState.needs_review if flagged else ReviewState.clear,
                    review_reason=ReviewReason.dependency_review if flagged else None,
                    created_at=at, supports=resolved.supports,
                )
                planned.append((decision, resolved, None, None))
            write_new_decisions(tx, self.project_id, planned)
            touched = sorted({p[1] for p in planned_inputs})
            tx.write(
                "UNWIND $keys AS k MATCH (d:Decision {choice_key: k.key}) WHERE d.project_id = $p AND d.status = 'active' "
                "WITH k, count(d) AS n, collect(DISTINCT d.conclusion_norm) AS norms "
                "MERGE (ch:Choice {id: k.id}) SET ch.project_id = $p, ch.key = k.key, ch.active = n, "
                "ch.conflict = CASE WHEN size(norms) > 1 THEN true ELSE null END, ch.updated_at = $at",
                {"keys": [{"key": k, "id": c.choice_node_id(self.project_id, k)} for k in touched],
                 "p": self.project_id, "at": c.iso(at)},
            )
            return [p[0] for p in planned]

        return self.store.transact(self.project_id, work)

    # -- review propagation ----------------------------------------------------

    def continue_decision_review(self, *, limit: int = REVIEW_BATCH_MAX) -> ReviewProgress:
        """Establish the state of up to ``limit`` queued decisions: one whose
        dependency is flagged (or no longer active) is flagged
        ``dependency_review`` and queues its own dependants; one whose
        dependencies all hold is clear again. One dependency step per call;
        an interrupted review continues where it stopped."""
        limit = c.clamp(limit, REVIEW_BATCH_MAX, REVIEW_BATCH_MAX)

        def work(tx: Tx) -> ReviewProgress:
            batch = tx.read(
                # any queued decisions will do: sorting the whole queue would
                # cost time in proportion to it
                f"MATCH (x:Decision) WHERE x.queued = true{self._scope('x')} "
                "WITH x LIMIT $n "
                "OPTIONAL MATCH (x)-[:DEPENDS_ON]->(y:Decision) "
                "RETURN x.id AS id, x.status AS status, x.review_state AS state, x.review_reason AS reason, "
                "x.root_cause AS cause, x.flag_depth AS depth, collect([y.status, y.review_state, y.root_cause]) AS deps",
                {"p": self.project_id, "n": limit},
            )
            if not batch:
                return ReviewProgress(moved=0, more=False)
            at = c.iso(c.now())
            flag_rows: list[dict[str, Any]] = []
            spread: list[dict[str, Any]] = []
            cleared: list[str] = []
            for row in batch:
                if row["status"] != DecisionStatus.active.value:
                    continue
                deps = [d for d in row["deps"] if d[0] is not None]
                bad = [d for d in deps if d[0] != DecisionStatus.active.value or d[1] != ReviewState.clear.value]
                if row["reason"] in _review.OWN_REASONS:
                    continue  # flagged for itself; its dependants were queued then
                if bad:
                    cause = row["cause"] or next((d[2] for d in bad if d[2]), None)
                    if row["state"] != ReviewState.needs_review.value:
                        flag_rows.append({"id": row["id"], "cause": cause})
                        spread.append({"id": row["id"], "cause": cause, "depth": row["depth"] or 0})
                elif row["state"] != ReviewState.needs_review.value:
                    cleared.append(row["id"])
            ids = [row["id"] for row in batch]
            queued = _review.dependants(tx, spread)  # reads: before the writes
            tally = _review.Tally(tx, self.project_id, [*ids, *(q["id"] for q in queued)], known=queued)
            tx.write(
                "UNWIND $ids AS id MATCH (x:Decision {id: id}) " + _review.unset("x", ("queued", "queued_at")),
                {"ids": ids},
            )
            if flag_rows:  # queued decisions are in the queue already: no new count
                tx.write(
                    "UNWIND $rows AS r MATCH (x:Decision {id: r.id}) SET x.review_state = 'needs_review', "
                    "x.review_reason = 'dependency_review', x.review_open = true, "
                    "x.flagged_at = coalesce(x.flagged_at, $at), x.root_cause = coalesce(x.root_cause, r.cause)",
                    {"rows": flag_rows, "at": at},
                )
            if cleared:
                tx.write(
                    "UNWIND $ids AS id MATCH (x:Decision {id: id}) SET x.review_state = 'clear' "
                    + _review.unset("x", ("review_reason", *_review.LEAVE_QUEUE)),
                    {"ids": cleared},
                )
            _review.enqueue(tx, self.project_id, queued, at, _review.Positions(), tally=tally)
            return ReviewProgress(
                moved=len(ids), flagged=sorted(r["id"] for r in flag_rows), cleared=sorted(cleared),
                more=len(batch) == limit or bool(queued),
            )

        return self.store.transact(self.project_id, work)

    # -- reads ------------------------------------------------------------

    def get_decision(self, decision_id: str) -> DecisionLookup:
        did = _decision_arg(decision_id)
        if did is None:
            return DecisionLookup(found=False)
        row = self._read_decision(None, did)
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
            self.store, self.project_id,
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
        if whole_queue:
            kept = _review.open_count(self.store, self.project_id)
        elif task_only:
            state = _review.task_state(self.store, self.project_id, params["tid"])
            kept = None if state is None else state["open"]
        count = kept if kept is not None else self.store.read(
            self.project_id, f"{match} RETURN count(d) AS n", params
        )[0]["n"]
        if not count or offset >= count:
            return DecisionReviewList(count=count)
        scope = "" if whole_queue else params["tid"] if task_only else None
        decisions = self._queue_page(where[1:], params, count, scope=scope)
        return DecisionReviewList(decisions=decisions, count=count, truncated=offset + len(decisions) < count)

    def _queue_page(
        self, where: list[str], params: dict[str, Any], count: int, *, scope: str | None
    ) -> list[Decision]:
        """One page of the queue in ``queue_pos`` order.

        Sorting every flagged decision costs time in proportion to the queue,
        so a long queue is read through widening ranges of the position index
        from its head; a range that yields a full page holds every decision
        before the page's end, so the page is exact. The head (the lowest
        position still queued) is remembered per project, and per task for
        a queue of one task (``scope``: "" for the whole queue, a task id, or
        None for other filters, which start from the whole queue's head), and
        checked with a count of the empty range below it: positions only
        grow, and a decision leaving the queue only moves the head up."""
        order = f"WITH d ORDER BY d.queue_pos, d.id SKIP $skip LIMIT $n RETURN {_DECISION_FIELDS}"
        filters = "".join(f" AND {w}" for w in where)
        if count > QUEUE_SORT_LIMIT:
            key = (id(self.store), self.project_id, scope)
            head = _QUEUE_HEADS.get(key)
            below = filters if scope else ""
            if head is None and scope is None:
                head, below = _QUEUE_HEADS.get((id(self.store), self.project_id, "")), ""
            if head is not None and self.store.read(
                self.project_id, f"MATCH (d:Decision) WHERE d.queue_pos < $head{below} RETURN count(d) AS n",
                {**params, "head": head},
            )[0]["n"]:
                head = None  # something entered below it (a clock set back): find it again
            if head is None:
                head = self.store.read(
                    self.project_id, f"MATCH (d:Decision) WHERE d.review_open = true{filters} "
                    "RETURN min(d.queue_pos) AS lo", params,
                )[0]["lo"]
            end = _review.Positions().base + (60_000 << 20)  # a minute from now: past every position
            width = 1024
            while head is not None and head < end:
                rows = self.store.read(
                    self.project_id,
                    f"MATCH (d:Decision) WHERE d.queue_pos >= $lo AND d.queue_pos < $top{filters} "
                    f"{order}, d.queue_pos AS pos",
                    {**params, "lo": head, "top": head + width},
                )
                if rows and scope is not None and params["skip"] == 0:
                    if len(_QUEUE_HEADS) >= QUEUE_HEADS_KEPT:
                        _QUEUE_HEADS.clear()  # a hint: forgetting costs one scan each
                    _QUEUE_HEADS[key] = rows[0]["pos"]  # the head of this queue
                if len(rows) == params["n"] or head + width >= end:
                    return [_decision(r) for r in rows]
                width *= 64
        return read_decisions(
            self.store, self.project_id, f"MATCH (d:Decision) WHERE d.review_open = true{filters} {order}", params,
        )

    def review_summary(self, *, causes: int = 50) -> tuple[dict[str, int], list[tuple[str, int]]]:
        """For an overview: the counts of ``review_counts`` and the root
        causes of ``review_root_causes``, the causes in one pass over the
        review queue."""
        causes = c.clamp(causes, 50, 200, "causes")
        rows = self.store.read(
            self.project_id,
            f"MATCH (d:Decision) WHERE d.review_open = true{self._scope('d')} "
            "RETURN d.review_state AS state, d.queued AS queued, coalesce(d.root_cause, '') AS cause, count(d) AS n",
            {"p": self.project_id},
        )
        counts = {"needs_review": 0, "unknown": 0, "queued": 0}
        by_cause: dict[str, int] = {}
        for r in rows:
            if r["state"] in counts:
                counts[r["state"]] += r["n"]
            if r["queued"]:
                counts["queued"] += r["n"]
            by_cause[r["cause"]] = by_cause.get(r["cause"], 0) + r["n"]
        ranked = sorted(by_cause.items(), key=lambda kv: (-kv[1], kv[0]))[:causes]
        return {**counts, "conflicts": self._conflict_count()}, ranked

    def review_counts(self) -> dict[str, int]:
        """For an overview: decisions needing review, reading unknown, still
        queued for review (review incomplete), and choice keys in conflict.
        Where the store keeps the queue's counters (FalkorDB) they are read,
        not counted."""
        kept = _review.kept_counts(self.store, self.project_id)
        if kept is None:
            return self.review_summary(causes=1)[0]
        return {"needs_review": kept["needs_review"], "unknown": kept["unknown"], "queued": kept["queued"],
                "conflicts": self._conflict_count()}

    def _conflict_count(self) -> int:
        return self.store.read(
            self.project_id,
            f"MATCH (ch:Choice) WHERE ch.conflict = true{self._scope('ch')} RETURN count(ch) AS n",
            {"p": self.project_id},
        )[0]["n"]

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
        return [
            DecisionHit(decision=_decision(r), task_goal=r["goal"] or "")
            for r in rows
        ]

    def list_support_history(
        self, decision_id: str, *, after_ordinal: int = -1, limit: int = 20
    ) -> SupportHistoryPage:
        """Every support the decision has had, current or replaced at a review,
        in the order they were recorded."""
        did = _decision_arg(decision_id)
        after_ordinal = c.integer(after_ordinal, "after_ordinal")
        limit = c.clamp(limit, 20, HISTORY_MAX)
        if did is None:
            return SupportHistoryPage()
        rows = self.store.read(
            self.project_id,
            "MATCH (r:SupportRecord {decision_id: $id}) WHERE r.project_id = $p AND r.ordinal > $after "
            "RETURN r.ordinal AS ordinal, r.data AS data, r.current AS current, r.reviewed_by AS reviewed_by, "
            "r.reviewed_at AS reviewed_at, r.review_explanation AS review_explanation "
            "ORDER BY r.ordinal LIMIT $n",
            {"id": did, "p": self.project_id, "after": after_ordinal, "n": limit + 1},
        )
        supports = []
        for r in rows[:limit]:
            data = json.loads(r["data"])
            data["current"] = r["current"]
            if r["reviewed_by"] is not None:
                data.update(reviewed_by=r["reviewed_by"], reviewed_at=r["reviewed_at"],
                            review_explanation=r["review_explanation"])
            supports.append(_SUPPORT.validate_python(data))
        truncated = len(rows) > limit
        return SupportHistoryPage(
            supports=supports, truncated=truncated, next_after_ordinal=rows[limit - 1]["ordinal"] if truncated else None
        )

    def list_conflicts(
        self, *, task_name: str | None = None, max_groups: int = CONFLICT_GROUPS_MAX, after_key: str | None = None
    ) -> ConflictList:
        """Choice keys whose active decisions in different tasks reach
        different conclusions: at most 50 groups of at most 50 decisions.
        Beyond the seed: ``after_key`` pages on through the groups."""
        task_name = c.optional_text(task_name, "task_name")
        after_key = c.optional_text(after_key, "after_key")
        max_groups = c.clamp(max_groups, CONFLICT_GROUPS_MAX, CONFLICT_GROUPS_MAX, "max_groups")
        if task_name is None:
            keys = self.store.read(
                self.project_id,
                "MATCH (ch:Choice) WHERE ch.conflict = true AND ch.project_id = $p "
                "AND ($after IS NULL OR ch.key > $after) "
                "WITH ch ORDER BY ch.key LIMIT $n RETURN ch.key AS key",
                {"p": self.project_id, "n": max_groups + 1, "after": after_key},
            )
        else:
            # From the conflicted choices (few, flagged and indexed), each
            # checked for an active decision of the task by its unique
            # active key: no scan of the task's decisions, however many.
            keys = self.store.read(
                self.project_id,
                f"MATCH (ch:Choice) WHERE ch.conflict = true{self._scope('ch')} WITH ch ORDER BY ch.key "
                "MATCH (d:Decision {active_key: $tid + $sep + ch.key}) RETURN ch.key AS key LIMIT $n",
                {"tid": c.task_id(self.project_id, task_name), "sep": "\x1f", "p": self.project_id,
                 "n": max_groups + 1},
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
                choice_key=k, decisions=grouped[k][:CONFLICT_DECISIONS_MAX],
                truncated=len(grouped[k]) > CONFLICT_DECISIONS_MAX,
            )
            for k in shown
        ]
        return ConflictList(groups=groups, truncated=len(keys) > max_groups)

    def list_revisions(self, decision_id: str) -> list[Revision]:
        """Every revision of the decision's choice in its task, first to
        last, each with the explanation that superseded the one before."""
        did = _decision_arg(decision_id)
        if did is None:
            return []
        row = self._read_decision(None, did)
        if row is None:
            return []
        rows = self.store.read(
            self.project_id,
            "MATCH (d:Decision {task_id: $tid}) WHERE d.choice_key = $key AND d.project_id = $p "
            f"RETURN {_DECISION_FIELDS}, d.explanation AS explanation ORDER BY d.revision",
            {"tid": row["task_id"], "key": row["choice_key"], "p": self.project_id},
        )
        return [
            Revision(decision=_decision(r), explanation=r["explanation"])
            for r in rows
        ]

    def list_dependants(self, decision_id: str, *, limit: int = 50) -> list[Decision]:
        """Decisions whose current supports cite this one."""
        did = _decision_arg(decision_id)
        limit = c.clamp(limit, 50, 200)
        if did is None:
            return []
        return read_decisions(
            self.store, self.project_id,
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
            self.store, self.project_id,
            f"UNWIND $ids AS id MATCH (d:Decision {{id: id}}) WHERE d.project_id = $p RETURN {_DECISION_FIELDS}",
            {"ids": wanted, "p": self.project_id},
        )
        return {str(d.id): d for d in found}


def write_new_decisions(
    tx: Tx, project_id: str, planned: list[tuple[Decision, _Resolved, str | None, str | None]],
    numbers: dict[str, int] | None = None,
) -> None:
    """Queue the writes of new decisions (each with its checked supports,
    supersede explanation and superseded id): the nodes, the support edges
    and the support records. One writer for single records and bulk loads.
    ``numbers``: the tasks' last creation numbers (``_review.take_numbers``),
    read here when not given, which is then the unit's first write."""
    nodes: list[dict[str, Any]] = []
    docs: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    deps: list[dict[str, Any]] = []
    records: list[dict[str, Any]] = []
    positions = _review.Positions()
    for decision, resolved, explanation, supersedes in planned:
        did = str(decision.id)
        flagged = decision.review_state is not ReviewState.clear
        at = c.iso(decision.created_at)
        nodes.append({
            "id": did, "project_id": project_id, "task_id": str(decision.task_id), "task_name": decision.task_name,
            "choice_key": decision.choice_key, "choice_id": c.choice_node_id(project_id, decision.choice_key),
            "revision": decision.revision, "conclusion": decision.conclusion,
            "conclusion_norm": normalized(decision.conclusion), "rationale": decision.rationale,
            "assumptions": decision.assumptions, "open_questions": decision.open_questions,
            "author": decision.author, "status": decision.status.value, "review_state": decision.review_state.value,
            "review_reason": decision.review_reason.value if decision.review_reason else None,
            "created_at": at, "supports": _dump_supports(decision.supports),
            "active_key": f"{decision.task_id}\x1f{decision.choice_key}", "explanation": explanation,
            "supersedes": supersedes, "support_seq": len(decision.supports),
            "review_open": True if flagged else None, "flagged_at": at if flagged else None,
            "queue_pos": positions.take(1)[0] if flagged else None,
            "flag_depth": 0 if flagged else None, "root_cause": f"recording:{did}" if flagged else None,
        })
        docs += [{"d": did, **link} for link in resolved.docs]
        events += [{"d": did, "e": e} for e in resolved.events]
        deps += [{"d": did, "y": y} for y in resolved.deps]
        records += [
            {"id": support_record_id(did, i), "project_id": project_id, "decision_id": did, "ordinal": i,
             "current": True, "data": support.model_dump_json()}
            for i, support in enumerate(decision.supports)
        ]
    tally = _review.Tally(tx, project_id, [], new={n["id"]: n["task_id"] for n in nodes})
    if numbers is None:
        numbers = _review.take_numbers(tx, [n["task_id"] for n in nodes])
    _review.number_new(tx, nodes, numbers)
    tx.write("UNWIND $rows AS r CREATE (d:Decision) SET d = r", {"rows": nodes})
    if docs:
        tx.write(
            "UNWIND $rows AS r MATCH (d:Decision {id: r.d}) MATCH (doc:Document {id: r.doc}) "
            "CREATE (d)-[:CITES_DOC {seq: r.seq}]->(doc)",
            {"rows": docs},
        )
    if events:
        tx.write(
            "UNWIND $rows AS r MATCH (d:Decision {id: r.d}) MATCH (e:Event {id: r.e}) CREATE (d)-[:CITES_EVENT]->(e)",
            {"rows": events},
        )
    if deps:
        tx.write(
            "UNWIND $rows AS r MATCH (d:Decision {id: r.d}) MATCH (y:Decision {id: r.y}) CREATE (d)-[:DEPENDS_ON]->(y)",
            {"rows": deps},
        )
    if records:
        tx.write("UNWIND $rows AS r CREATE (s:SupportRecord) SET s = r", {"rows": records})
    tally.settle(tx)


def _decision_arg(decision_id: Any) -> str | None:
    """A decision id argument (str or UUID) in canonical form, or None when
    it cannot name a decision; other types raise ValueError."""
    text = str(decision_id) if isinstance(decision_id, uuid.UUID) else c.text(decision_id, "decision_id")
    return text.lower() if c.is_uuid(text) else None


def _reused(result_type: Any) -> Any:
    return lambda: result_type(recorded=False, error=WriteErrorCode.request_id_reused)


def _dump_supports(supports: list[Support]) -> str:
    return json.dumps([s.model_dump(mode="json") for s in supports])


def _chunk_index(support: DocumentSupport) -> int:
    try:
        ref = decode_evidence_id(support.evidence_id)
    except MalformedEvidenceIdError:
        return -1
    return ref.chunk_index if ref.chunk_index is not None else -1


def _find_nearest(text: str, passage: str, near: int) -> int | None:
    """The offset of ``passage`` in ``text`` closest to ``near``."""
    best: int | None = None
    start = text.find(passage)
    while start != -1:
        if best is None or abs(start - near) < abs(best - near):
            best = start
        start = text.find(passage, start + 1)
    return best
