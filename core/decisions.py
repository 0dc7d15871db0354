"""Decision traces: conclusions for one choice in one task, the supports they
cite, and their review (seed 000 "Decisions", "Review after a source change";
seed 001 "Decisions", "Supports", "Decision write results").

This module holds the writes and ``continue_decision_review``; the reads are
in ``_decision_reads`` (``DecisionTraces`` inherits them), how supports are
checked in ``_supports``, how decision nodes are written in
``_decision_rows``, and how flags spread in ``_review``.

Writes return a result with ``recorded`` and ``error`` and never raise for a
refused write; arguments of the wrong type raise ``ValueError`` before
anything is written; store failures raise ``GraphStoreError``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from . import _causes, _citations, _claim_rows, _conflict_keys, _counters, _review, limits
from . import _common as c
from ._decision_reads import DecisionReads
from ._decision_rows import (
    BOOKKEEPING,
    SUPPORTS,
    _decision,
    decision_arg,
    decision_fields,
    dump_supports,
    normalized,
    read_decisions,
    support_record_id,
    write_new_decisions,
)
from ._evidence import decode_evidence_id
from ._schema import CORE_SCHEMA
from ._supports import (
    BatchSupports,
    MalformedSupportError,
    Refused,
    Resolved,
    parse_fetched,
    parse_support_inputs,
    resolve,
    revalidate,
)
from .models.decision import (
    MAX_SUPPORTS,
    Decision,
    DecisionStatus,
    DecisionSupportInput,
    DocumentSupportInput,
    ReviewProgress,
    ReviewReason,
    ReviewState,
)
from .models.knowledge import FetchResult, MalformedEvidenceIdError
from .models.retention import ActorKind
from .models.write_result import (
    ReaffirmDecisionResult,
    RecordDecisionResult,
    RejectDecisionResult,
    WriteErrorCode,
)
from .stores.base import GraphStore, Tx

__all__ = ["DEFAULT_REAFFIRM_EXPLANATION", "DecisionTraces", "decision_fields", "read_decisions"]

DEFAULT_REAFFIRM_EXPLANATION = "Reaffirmed after review."
REVIEW_BATCH_MAX = 100


def _text_list(value: Any, field: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise ValueError(f"{field} must be a list of strings")
    return [c.text(v, field) for v in value]


def _passage_over(item: Any) -> bool:
    """Whether a document support names a span longer than ``limits.PASSAGE_MAX``
    (an evidence id that does not decode is refused later, ``support_malformed``)."""
    if not isinstance(item, DocumentSupportInput):
        return False
    try:
        ref = decode_evidence_id(item.evidence_id)
    except MalformedEvidenceIdError:
        return False
    return ref.char_start is not None and (ref.char_end or 0) - ref.char_start > limits.PASSAGE_MAX


def _inputs_or_none(supports: Any) -> list[Any] | None:
    try:
        return parse_support_inputs(supports)
    except MalformedSupportError:
        return None


def _reused(result_type: Any) -> Any:
    return lambda: result_type(recorded=False, error=WriteErrorCode.request_id_reused)


@dataclass
class _Content:
    """The checked arguments of a new decision (record or supersede)."""

    conclusion: str
    rationale: str
    assumptions: list[str]
    open_questions: list[str]
    #: None when a support input has an invalid form (refused ``support_malformed``)
    inputs: list[Any] | None
    fetched: list[FetchResult]

    @classmethod
    def parse(
        cls, conclusion: Any, rationale: Any, supports: Any, assumptions: Any, open_questions: Any, fetched: Any
    ) -> _Content:
        return cls(
            conclusion=c.text(conclusion, "conclusion"),
            rationale=c.text(rationale, "rationale"),
            assumptions=_text_list(assumptions, "assumptions"),
            open_questions=_text_list(open_questions, "open_questions"),
            inputs=_inputs_or_none(supports),
            fetched=parse_fetched(fetched),
        )

    def too_long(self) -> bool:
        """Whether a text, a list or a cited passage is over its limit
        (``core.limits``): the write is refused ``value_too_long``."""
        return (
            limits.any_over((self.conclusion, limits.CONCLUSION_MAX), (self.rationale, limits.RATIONALE_MAX))
            or limits.items_over(self.assumptions)
            or limits.items_over(self.open_questions)
            or len(self.fetched) > limits.FETCHED_MAX
            or any(_passage_over(i) for i in self.inputs or [])
        )

    def fingerprint(self) -> dict[str, Any]:
        """The arguments a request id is bound to."""
        return {
            "conclusion": self.conclusion,
            "rationale": self.rationale,
            "assumptions": self.assumptions,
            "questions": self.open_questions,
            "supports": [i.model_dump() for i in self.inputs or []],
        }

    def warnings(self, resolved: Resolved) -> list[str]:
        return [ReviewReason.source_changed_during_recording.value] if resolved.changed_during_recording else []


class DecisionTraces(DecisionReads):
    """The decisions of one project, written as one agent (or person)."""

    def __init__(
        self, store: GraphStore, *, project_id: str, agent_id: str, actor_kind: ActorKind | str = ActorKind.agent
    ) -> None:
        self.store = store
        self.project_id = c.text(project_id, "project_id", allow_empty=False)
        self.agent_id = c.text(agent_id, "agent_id", allow_empty=False)
        #: what the activity log says wrote: an agent unless the dashboard says a person
        self.actor_kind = c.enum_value(ActorKind, actor_kind, "actor_kind")
        #: ids written before the limits stay readable; this object writes nothing with them
        self._ids_too_long = limits.any_over(
            (self.project_id, limits.PROJECT_ID_MAX), (self.agent_id, limits.AGENT_ID_MAX)
        )
        store.ensure_schema(self.project_id, CORE_SCHEMA)

    # -- the parts of a write ----------------------------------------------

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
            "MERGE (ch:Choice {id: $id}) "
            # ``now`` a parameter, not text: one statement (one plan on Neo4j) whatever the flag
            "WITH ch, CASE WHEN ch.conflict = true THEN 1 ELSE 0 END AS was, $now AS now "
            "SET ch.project_id = $p, ch.key = $key, ch.active = $n, ch.conflict = $conflict, ch.updated_at = $at"
            + _conflict_keys.moved(self.store),
            {
                "id": c.choice_node_id(self.project_id, choice_key),
                "p": self.project_id,
                "key": choice_key,
                "n": len(active),
                "conflict": True if len(norms) > 1 else None,
                "now": 1 if len(norms) > 1 else 0,
                "at": at,
                "qid": _counters.queue_node_id(self.project_id),
            },
        )

    def _create(
        self,
        tx: Tx,
        *,
        task_id: str,
        task_name: str,
        choice_key: str,
        revision: int,
        content: _Content,
        resolved: Resolved,
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
            id=c.decision_id(task_id, choice_key, revision, generation),
            task_id=task_id,
            task_name=task_name,
            choice_key=choice_key,
            revision=revision,
            conclusion=content.conclusion,
            rationale=content.rationale,
            assumptions=content.assumptions,
            open_questions=content.open_questions,
            author=self.agent_id,
            status=DecisionStatus.active,
            review_state=state,
            review_reason=reason,
            created_at=at,
            supports=resolved.supports,
        )
        write_new_decisions(tx, self.project_id, [(decision, resolved, explanation, supersedes)], numbers)
        return decision

    def _begin_decision_write(
        self,
        tx: Tx,
        target: str,
        replay: c.Replay,
        result_type: type[Any],
        *,
        missing: WriteErrorCode,
        inactive: WriteErrorCode,
    ) -> tuple[Any, dict[str, Any]]:
        """The start of a write to an existing decision: lock it, answer a
        repeated request, refuse a missing or inactive one. Returns (answer,
        decision row); the write goes ahead when the answer is None. The
        kept counters' lock comes first: every decision write changes them."""
        _counters.lock(tx, self.project_id)
        tx.lock("Decision", target)
        # the stored request and the decision in one read
        row = tx.read(
            f"{c.Replay.FIRST}OPTIONAL MATCH (d:Decision {{id: $id}}) WHERE d.project_id = $p "
            f"RETURN request_fp, request_result, {decision_fields()}, {BOOKKEEPING}",
            {"request": replay.node_id, "id": target, "p": self.project_id},
        )[0]
        earlier = c.replayed(tx, replay, result_type, _reused(result_type), row)
        if earlier is not None:
            return earlier, {}
        old = {k: v for k, v in row.items() if not k.startswith("request_")} if row["id"] is not None else None
        if old is None:
            return result_type(recorded=False, error=missing), {}
        if old["status"] != DecisionStatus.active.value:
            return result_type(recorded=False, error=inactive), {}
        return None, old

    def _next_revision(self, tx: Tx, tid: str, choice_key: str) -> int:
        """The revision a new decision of the choice gets: 1, or one past the
        last (of a choice whose decisions were all retired)."""
        rows = tx.read(
            "MATCH (d:Decision {task_id: $tid}) WHERE d.choice_key = $key RETURN max(d.revision) AS rev",
            {"tid": tid, "key": choice_key},
        )
        return (rows[0]["rev"] or 0) + 1 if rows else 1

    def _retire(self, tx: Tx, old: dict[str, Any], cause: str) -> tuple[list[dict[str, Any]], _counters.Tally]:
        """Before a decision (``old``, its row read under the counters' lock)
        leaves the active set: its dependants to queue for review, and the
        tally of it and them. Reads: call before writing."""
        target = old["id"]
        queued = _review.dependants(tx, [{"id": target, "cause": cause, "depth": 0}])
        known = [_counters.known_row(old), *queued]
        return queued, _counters.Tally(tx, self.project_id, [target, *(q["id"] for q in queued)], known=known)

    def _activity(self, tx: Tx, action: str, target: str, summary: str, reason: str | None, at: str) -> None:
        _review.log_activity(
            tx,
            self.project_id,
            self.agent_id,
            action,
            "decision",
            target,
            summary,
            reason,
            at,
            actor_kind=self.actor_kind.value,
        )

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
        content = _Content.parse(conclusion, rationale, supports, assumptions, open_questions, fetched)
        if not c.check_request_id(request_id):
            return RecordDecisionResult(recorded=False, error=WriteErrorCode.invalid_request_id)
        if content.inputs is None:
            return RecordDecisionResult(recorded=False, error=WriteErrorCode.support_malformed)
        if self._ids_too_long or limits.over(choice_key, limits.CHOICE_KEY_MAX) or content.too_long():
            return RecordDecisionResult(recorded=False, error=WriteErrorCode.value_too_long)
        inputs = content.inputs
        replay = c.Replay(
            self.project_id,
            self.agent_id,
            request_id,
            "record_decision",
            {"task": task_name, "key": choice_key, **content.fingerprint()},
        )
        tid = c.task_id(self.project_id, task_name)

        def work(tx: Tx) -> RecordDecisionResult:
            _counters.lock(tx, self.project_id)
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
            if tx.read("MATCH (d:Decision {active_key: $k}) RETURN d.id AS id", {"k": f"{tid}\x1f{choice_key}"}):
                return RecordDecisionResult(recorded=False, error=WriteErrorCode.choice_exists)
            revision = self._next_revision(tx, tid, choice_key)
            try:
                resolved = resolve(tx, self.project_id, inputs, content.fetched)
            except Refused as refused:
                return RecordDecisionResult(recorded=False, error=refused.code)
            at = c.iso(c.now())
            decision = self._create(
                tx,
                task_id=tid,
                task_name=task_name,
                choice_key=choice_key,
                revision=revision,
                content=content,
                resolved=resolved,
                explanation=None,
                supersedes=None,
                at=at,
                generation=task[0]["g"] or 0,
            )
            norm = normalized(content.conclusion)
            self._write_choice(tx, choice_key, [*active, {"id": str(decision.id), "norm": norm}], at)
            result = RecordDecisionResult(recorded=True, decision=decision, warnings=content.warnings(resolved))
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
        target = decision_arg(decision_id)
        content = _Content.parse(conclusion, rationale, supports, assumptions, open_questions, fetched)
        explanation = c.text(explanation, "explanation")
        if not c.check_request_id(request_id):
            return RecordDecisionResult(recorded=False, error=WriteErrorCode.invalid_request_id)
        if content.inputs is None:
            return RecordDecisionResult(recorded=False, error=WriteErrorCode.support_malformed)
        inputs = content.inputs
        if not explanation.strip():
            return RecordDecisionResult(recorded=False, error=WriteErrorCode.explanation_required)
        if self._ids_too_long or limits.over(explanation, limits.EXPLANATION_MAX) or content.too_long():
            return RecordDecisionResult(recorded=False, error=WriteErrorCode.value_too_long)
        if target is None:
            return RecordDecisionResult(recorded=False, error=WriteErrorCode.supersede_target_invalid)
        replay = c.Replay(
            self.project_id,
            self.agent_id,
            request_id,
            "supersede_decision",
            {"target": target, "explanation": explanation, **content.fingerprint()},
        )

        def work(tx: Tx) -> RecordDecisionResult:
            invalid = WriteErrorCode.supersede_target_invalid
            answer, old = self._begin_decision_write(
                tx, target, replay, RecordDecisionResult, missing=invalid, inactive=invalid
            )
            if answer is not None:
                return answer
            if not 1 <= len(inputs) <= MAX_SUPPORTS:
                return RecordDecisionResult(recorded=False, error=WriteErrorCode.support_required)
            if target in {i.decision_id.lower() for i in inputs if isinstance(i, DecisionSupportInput)}:
                return RecordDecisionResult(recorded=False, error=WriteErrorCode.support_decision_not_active)
            try:
                resolved = resolve(tx, self.project_id, inputs, content.fetched)
            except Refused as refused:
                return RecordDecisionResult(recorded=False, error=refused.code)
            decision = self._replace(tx, old, content, resolved, explanation)
            result = RecordDecisionResult(recorded=True, decision=decision, warnings=content.warnings(resolved))
            replay.remember(tx, result)
            return result

        return self.store.transact(self.project_id, work)

    def _replace(
        self, tx: Tx, old: dict[str, Any], content: _Content, resolved: Resolved, explanation: str
    ) -> Decision:
        """The writes of a supersession: the old revision retired, the new one
        created, what depended on the old one queued for review."""
        target = old["id"]
        active = [a for a in self._choice_state(tx, old["choice_key"]) if a["id"] != target]
        at = c.iso(c.now())
        queued, tally = self._retire(tx, old, _causes.superseded_cause(target))
        numbers, generation = _counters.take_numbers_of_task(tx, self.project_id, old["task_id"])
        _citations.prepare(tx, self.project_id, resolved.docs)
        tx.write(
            "MATCH (d:Decision {id: $id}) SET d.status = 'superseded', d.superseded_at = $at "
            + _review.unset("d", ("active_key", "active_seq", "queued", "queued_at", *_review.LEAVE_QUEUE)),
            {"id": target, "at": at},
        )
        decision = self._create(
            tx,
            task_id=old["task_id"],
            task_name=old["task_name"],
            choice_key=old["choice_key"],
            revision=old["revision"] + 1,
            content=content,
            resolved=resolved,
            explanation=explanation,
            supersedes=target,
            at=at,
            numbers=numbers,
            generation=generation,
        )
        tx.write("MATCH (o:Decision {id: $old}) SET o.superseded_by = $new", {"old": target, "new": str(decision.id)})
        _review.enqueue(tx, self.project_id, queued, at, tally.positions, tally=tally)
        norm = normalized(content.conclusion)
        self._write_choice(tx, old["choice_key"], [*active, {"id": str(decision.id), "norm": norm}], at)
        self._activity(tx, "supersede", target, f"{old['choice_key']}: revision {decision.revision}", explanation, at)
        _claim_rows.end_claim(tx, self.project_id, target)
        return decision

    def reject_decision(self, decision_id: str, *, reason: str, request_id: str | None = None) -> RejectDecisionResult:
        """Retire the decision with a ``reason``: a blank one is refused
        ``explanation_required`` (the seed asks for a reason; its code for a
        blank explanation is the one that fits)."""
        target = decision_arg(decision_id)
        reason = c.text(reason, "reason")
        if not c.check_request_id(request_id):
            return RejectDecisionResult(recorded=False, error=WriteErrorCode.invalid_request_id)
        if not reason.strip():
            return RejectDecisionResult(recorded=False, error=WriteErrorCode.explanation_required)
        if self._ids_too_long or limits.over(reason, limits.EXPLANATION_MAX):
            return RejectDecisionResult(recorded=False, error=WriteErrorCode.value_too_long)
        if target is None:
            return RejectDecisionResult(recorded=False, error=WriteErrorCode.decision_not_found)
        replay = c.Replay(
            self.project_id, self.agent_id, request_id, "reject_decision", {"target": target, "reason": reason}
        )

        def work(tx: Tx) -> RejectDecisionResult:
            answer, old = self._begin_decision_write(
                tx,
                target,
                replay,
                RejectDecisionResult,
                missing=WriteErrorCode.decision_not_found,
                inactive=WriteErrorCode.decision_not_active,
            )
            if answer is not None:
                return answer
            active = [a for a in self._choice_state(tx, old["choice_key"]) if a["id"] != target]
            at = c.iso(c.now())
            queued, tally = self._retire(tx, old, _causes.rejected_cause(target))
            tx.write(
                "MATCH (d:Decision {id: $id}) SET d.status = 'rejected', d.rejection_reason = $reason, "
                "d.rejected_by = $by, d.rejected_at = $at, d.review_state = 'clear' "
                + _review.unset(
                    "d", ("review_reason", "active_key", "active_seq", "queued", "queued_at", *_review.LEAVE_QUEUE)
                ),
                {"id": target, "reason": reason, "by": self.agent_id, "at": at},
            )
            _review.enqueue(tx, self.project_id, queued, at, tally.positions, tally=tally)
            self._write_choice(tx, old["choice_key"], active, at)
            self._activity(tx, "reject", target, old["choice_key"], reason, at)
            _claim_rows.end_claim(tx, self.project_id, target)
            decision = _decision(
                {
                    **old,
                    "status": DecisionStatus.rejected.value,
                    "rejection_reason": reason,
                    "rejected_by": self.agent_id,
                    "review_state": ReviewState.clear.value,
                    "review_reason": None,
                }
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
        target = decision_arg(decision_id)
        explanation = c.text(explanation, "explanation")
        if not explanation.strip():
            explanation = DEFAULT_REAFFIRM_EXPLANATION
        if not c.check_request_id(request_id):
            return ReaffirmDecisionResult(recorded=False, error=WriteErrorCode.invalid_request_id)
        if self._ids_too_long or limits.over(explanation, limits.EXPLANATION_MAX):
            return ReaffirmDecisionResult(recorded=False, error=WriteErrorCode.value_too_long)
        if target is None:
            return ReaffirmDecisionResult(recorded=False, error=WriteErrorCode.decision_not_found)
        replay = c.Replay(
            self.project_id,
            self.agent_id,
            request_id,
            "reaffirm_decision",
            {"target": target, "explanation": explanation},
        )

        def work(tx: Tx) -> ReaffirmDecisionResult:
            answer, old = self._begin_decision_write(
                tx,
                target,
                replay,
                ReaffirmDecisionResult,
                missing=WriteErrorCode.decision_not_found,
                inactive=WriteErrorCode.decision_not_active,
            )
            if answer is not None:
                return answer
            if old["queued"]:
                return ReaffirmDecisionResult(recorded=False, error=WriteErrorCode.cannot_revalidate)
            at = c.iso(c.now())
            current = SUPPORTS.validate_json(old["supports"]) if old["supports"] else []
            renewed = revalidate(tx, current, reviewer=self.agent_id, explanation=explanation, at=at)
            if renewed is None:
                return ReaffirmDecisionResult(recorded=False, error=WriteErrorCode.cannot_revalidate)
            supports, links = renewed
            tally = _counters.Tally(tx, self.project_id, [target], known=[_counters.known_row(old)])
            self._renew_supports(tx, old, supports, links, explanation, at)
            tally.settle(tx)
            self._activity(tx, "reaffirm", target, old["choice_key"], explanation, at)
            _claim_rows.end_claim(tx, self.project_id, target)
            decision = _decision(
                {
                    **old,
                    "review_state": ReviewState.clear.value,
                    "review_reason": None,
                    "supports": dump_supports(supports),
                }
            )
            result = ReaffirmDecisionResult(recorded=True, decision=decision)
            replay.remember(tx, result)
            return result

        return self.store.transact(self.project_id, work)

    def _renew_supports(
        self, tx: Tx, old: dict[str, Any], supports: list[Any], links: list[dict[str, Any]], explanation: str, at: str
    ) -> None:
        """The writes of a reaffirmation: the old support records closed with
        this review, the confirmed ones current, the decision clear again."""
        target = old["id"]
        first = old["support_seq"] or 0
        citations = _citations.Links(tx, self.project_id, [{"d": target, **link} for link in links])  # reads first
        tx.write(
            "MATCH (r:SupportRecord {decision_id: $id}) WHERE r.current = true SET r.current = false, "
            "r.reviewed_by = $by, r.reviewed_at = $at, r.review_explanation = $explanation",
            {"id": target, "by": self.agent_id, "at": at, "explanation": explanation},
        )
        tx.write(
            "UNWIND $rows AS r CREATE (:SupportRecord {id: r.id, project_id: $p, decision_id: $did, "
            "ordinal: r.ordinal, current: true, data: r.data})",
            {
                "p": self.project_id,
                "did": target,
                "rows": [
                    {"id": support_record_id(target, first + i), "ordinal": first + i, "data": s.model_dump_json()}
                    for i, s in enumerate(supports)
                ],
            },
        )
        _citations.unlink(tx, "MATCH (d:Decision {id: $id})-[r:CITES_DOC]->()", {"id": target})
        tx.write("MATCH (d:Decision {id: $id})-[r:CITES_DOC]->() DELETE r", {"id": target})
        citations.write(tx)
        tx.write(
            "MATCH (d:Decision {id: $id}) SET d.supports = $supports, d.support_seq = $n, "
            "d.review_state = 'clear', d.reaffirmed_at = $at, d.reaffirmed_by = $by "
            + _review.unset("d", ("review_reason", *_review.LEAVE_QUEUE)),
            {
                "id": target,
                "supports": dump_supports(supports),
                "n": first + len(supports),
                "at": at,
                "by": self.agent_id,
            },
        )

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
        planned = [_load_item(n, item) for n, item in enumerate(items)]
        if not planned:
            return []

        def work(tx: Tx) -> list[Decision]:
            _counters.lock(tx, self.project_id)
            found = BatchSupports.read(tx, self.project_id, planned)
            choices = self._batch_choices(tx, planned)
            at = c.now()
            decisions = []
            for item in planned:
                resolved = found.resolve(item["inputs"])
                tid = c.task_id(self.project_id, item["task_name"])
                flagged = resolved.dependency_flagged
                decision = Decision(
                    id=c.decision_id(tid, item["choice_key"], 1, found.generations[tid]),
                    task_id=tid,
                    task_name=item["task_name"],
                    choice_key=item["choice_key"],
                    revision=1,
                    conclusion=item["conclusion"],
                    rationale=item["rationale"],
                    assumptions=item["assumptions"],
                    open_questions=item["open_questions"],
                    author=self.agent_id,
                    status=DecisionStatus.active,
                    review_state=ReviewState.needs_review if flagged else ReviewState.clear,
                    review_reason=ReviewReason.dependency_review if flagged else None,
                    created_at=at,
                    supports=resolved.supports,
                )
                decisions.append((decision, resolved, None, None))
            write_new_decisions(tx, self.project_id, decisions)
            exact, rest = choices
            self._write_choices(tx, exact, c.iso(at))
            self._recount_choices(tx, rest, c.iso(at))
            return [d[0] for d in decisions]

        return self.store.transact(self.project_id, work)

    def _batch_choices(self, tx: Tx, planned: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
        """The choices of a batch of new decisions: those whose active count
        and conflict flag follow from the batch's own rows and the choice's
        kept ``active`` and ``conflict`` (a key with no active decision
        before; one in conflict already, as new decisions only add to it;
        one the batch itself disagrees on), with their new ``n`` and
        ``now``; and the keys that must be counted again from their
        decisions (active decisions before, that agreed, and a batch that
        agrees with itself: whether it agrees with them is not kept)."""
        norms: dict[str, set[str]] = {}
        counts: dict[str, int] = {}
        for item in planned:
            norms.setdefault(item["choice_key"], set()).add(normalized(item["conclusion"]))
            counts[item["choice_key"]] = counts.get(item["choice_key"], 0) + 1
        keys = sorted(norms)
        before = {
            r["key"]: r
            for r in tx.read(
                "UNWIND $rows AS r OPTIONAL MATCH (ch:Choice {id: r.id}) "
                "RETURN r.key AS key, ch IS NOT NULL AS found, ch.active AS n, ch.conflict AS conflict",
                {"rows": [{"key": k, "id": c.choice_node_id(self.project_id, k)} for k in keys]},
            )
        }
        exact: list[dict[str, Any]] = []
        rest: list[str] = []
        for k in keys:
            choice = before.get(k) or {"found": False}
            if choice["found"] and choice["n"] is None:
                rest.append(k)  # (a choice whose active count was never kept)
                continue
            had = int(choice["n"] or 0)
            if had and choice["conflict"] is not True and len(norms[k]) == 1:
                rest.append(k)
                continue
            now = 1 if (had and choice["conflict"] is True) or len(norms[k]) > 1 else 0
            exact.append({"key": k, "id": c.choice_node_id(self.project_id, k), "n": had + counts[k], "now": now})
        return exact, rest

    def _write_choices(self, tx: Tx, rows: list[dict[str, Any]], at: str) -> None:
        """Choices whose active count and conflict flag are known (each row's
        ``key``, ``id``, ``n`` and ``now``)."""
        if not rows:
            return
        tx.write(
            "UNWIND $rows AS r MERGE (ch:Choice {id: r.id}) "
            "WITH ch, r, r.now AS now, CASE WHEN ch.conflict = true THEN 1 ELSE 0 END AS was "
            "SET ch.project_id = $p, ch.key = r.key, ch.active = r.n, "
            "ch.conflict = CASE WHEN now = 1 THEN true ELSE null END, ch.updated_at = $at"
            + _conflict_keys.moved(self.store),
            {"rows": rows, "p": self.project_id, "at": at, "qid": _counters.queue_node_id(self.project_id)},
        )

    def _recount_choices(self, tx: Tx, keys: list[str], at: str) -> None:
        """Each choice key's active count and conflict flag, counted again."""
        if not keys:
            return
        # Neo4j: the choice key's index, named; the planner took the project's
        # index when it judged a key common (a key many projects use), which
        # reads every decision of the project
        hint = "" if self.store.graph_per_project else "USING INDEX d:Decision(choice_key) "
        tx.write(
            f"UNWIND $keys AS k MATCH (d:Decision) {hint}"
            "WHERE d.choice_key = k.key AND d.project_id = $p AND d.status = 'active' "
            "WITH k, count(d) AS n, collect(DISTINCT d.conclusion_norm) AS norms "
            "MERGE (ch:Choice {id: k.id}) "
            "WITH ch, k, n, CASE WHEN size(norms) > 1 THEN 1 ELSE 0 END AS now, "
            "CASE WHEN ch.conflict = true THEN 1 ELSE 0 END AS was "
            "SET ch.project_id = $p, ch.key = k.key, ch.active = n, "
            "ch.conflict = CASE WHEN now = 1 THEN true ELSE null END, ch.updated_at = $at"
            + _conflict_keys.moved(self.store),
            {
                "keys": [{"key": k, "id": c.choice_node_id(self.project_id, k)} for k in keys],
                "p": self.project_id,
                "at": at,
                "qid": _counters.queue_node_id(self.project_id),
            },
        )

    # -- review propagation ----------------------------------------------------

    def continue_decision_review(self, *, limit: int = REVIEW_BATCH_MAX) -> ReviewProgress:
        """Establish the state of up to ``limit`` queued decisions: one whose
        dependency is flagged (or no longer active) is flagged
        ``dependency_review`` and queues its own dependants; one whose
        dependencies all hold is clear again. One dependency step per call;
        an interrupted review continues where it stopped."""
        limit = c.clamp(limit, REVIEW_BATCH_MAX, REVIEW_BATCH_MAX)

        def work(tx: Tx) -> ReviewProgress:
            _counters.lock(tx, self.project_id)
            batch = tx.read(
                # any queued decisions will do: sorting the whole queue would
                # cost time in proportion to it
                f"MATCH (x:Decision) WHERE x.queued = true{self._scope('x')} "
                "WITH x LIMIT $n "
                "OPTIONAL MATCH (x)-[:DEPENDS_ON]->(y:Decision) "
                "RETURN x.id AS id, x.status AS status, x.review_state AS state, x.review_reason AS reason, "
                "x.root_cause AS cause, x.flag_depth AS depth, "
                "collect([y.status, y.review_state, y.root_cause]) AS deps",
                {"p": self.project_id, "n": limit},
            )
            if not batch:
                return ReviewProgress(moved=0, more=False)
            flag_rows, spread, cleared = _review.review_step(batch)
            ids = [row["id"] for row in batch]
            queued = _review.dependants(tx, spread)  # reads: before the writes
            tally = _counters.Tally(tx, self.project_id, [*ids, *(q["id"] for q in queued)], known=queued)
            at = c.iso(c.now())
            _review.write_review_step(tx, ids, flag_rows, cleared, at)
            _review.enqueue(tx, self.project_id, queued, at, tally.positions, tally=tally)
            return ReviewProgress(
                moved=len(ids),
                flagged=sorted(r["id"] for r in flag_rows),
                cleared=sorted(cleared),
                more=len(batch) == limit or bool(queued),
            )

        return self.store.transact(self.project_id, work)


def _load_item(n: int, item: Any) -> dict[str, Any]:
    """One item of ``load_decisions``, checked before the unit."""
    if not isinstance(item, dict):
        raise ValueError(f"item {n} is not a mapping")
    inputs = parse_support_inputs(item.get("supports"))
    if not 1 <= len(inputs) <= MAX_SUPPORTS:
        raise ValueError(f"item {n}: {WriteErrorCode.support_required.value}")
    checked = {
        "task_name": c.text(item.get("task_name"), "task_name"),
        "choice_key": c.text(item.get("choice_key"), "choice_key", allow_empty=False),
        "conclusion": c.text(item.get("conclusion"), "conclusion"),
        "rationale": c.text(item.get("rationale"), "rationale"),
        "assumptions": _text_list(item.get("assumptions"), "assumptions"),
        "open_questions": _text_list(item.get("open_questions"), "open_questions"),
        "inputs": inputs,
    }
    content = _Content(
        checked["conclusion"], checked["rationale"], checked["assumptions"], checked["open_questions"], inputs, []
    )
    if limits.over(checked["choice_key"], limits.CHOICE_KEY_MAX) or content.too_long():
        raise ValueError(f"item {n}: {WriteErrorCode.value_too_long.value}")
    return checked
