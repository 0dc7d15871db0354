"""Decision rows: how a ``Decision`` is stored on its node and read back,
and the one writer of new decision nodes with their support edges and
support records (used by single records, supersessions and bulk loads).

A decision node holds the seed's fields (``supports`` as JSON), plus what
review needs (see ``_review``) and what the kept counters need (see
``_counters``).
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from pydantic import TypeAdapter

from . import _causes, _citations, _counters
from . import _common as c
from ._supports import Resolved
from .models.decision import Decision, ReviewState, Support
from .stores.base import GraphStore, Tx

SUPPORTS: TypeAdapter[list[Support]] = TypeAdapter(list[Support])
SUPPORT: TypeAdapter[Support] = TypeAdapter(Support)


def in_queue_order(lead: str) -> tuple[str, str]:
    """Neo4j's read of decisions in queue order: the MATCH up to its WHERE's
    next condition, and the ORDER BY. It walks the ``(lead, queue_pos)``
    index in its order, because the ORDER BY names the index's leading
    property too; ordering by ``queue_pos`` alone would sort every match.
    The order ends at ``queue_pos``: no two decisions of a project share a
    position (``Positions``), and a tie-break by ``id`` made the planner
    read the id of every entry it skipped (a partial sort)."""
    return (
        f"MATCH (d:Decision) USING INDEX SEEK d:Decision({lead}, queue_pos) WHERE d.queue_pos IS NOT NULL AND",
        f"d.{lead}, d.queue_pos",
    )


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


def decision_map(var: str, **extra: str) -> str:
    """The Cypher map of a decision node ``var`` with the keys of
    :data:`_DECISION_FIELDS` (and ``extra``: key -> expression), for a
    ``collect`` of decisions beside other columns."""
    pairs = [field.split(" AS ") for field in _DECISION_FIELDS.split(", ")]
    keys = [f"{alias}: {var}.{expr.removeprefix('d.')}" for expr, alias in pairs]
    keys += [f"{k}: {v}" for k, v in extra.items()]
    return "{" + ", ".join(keys) + "}"


#: A decision row's review bookkeeping (``d``), beside its fields in
#: :func:`read_decision`: what review and its actions read.
BOOKKEEPING = (
    "d.queued AS queued, d.support_seq AS support_seq, d.root_cause AS root_cause, d.review_open AS review_open, "
    "d.rejected_at AS rejected_at, d.superseded_at AS superseded_at, d.superseded_by AS superseded_by"
)


def support_record_id(decision: str, ordinal: int) -> str:
    return str(uuid.uuid5(c.NAMESPACE, f"support\x1f{decision}\x1f{ordinal}"))


def normalized(conclusion: str) -> str:
    """Conclusions that differ only in case or spacing agree."""
    return " ".join(conclusion.casefold().split())


_FIELDS = frozenset(Decision.model_fields)


def _decision(row: dict[str, Any]) -> Decision:
    """A Decision from a row of ``decision_fields()`` (other columns ignored)."""
    fields = {k: v for k, v in row.items() if k in _FIELDS}
    fields["supports"] = SUPPORTS.validate_json(row["supports"]) if row.get("supports") else []
    return Decision.model_validate(fields)


def read_decisions(store: GraphStore, project_id: str, query: str, params: dict[str, Any]) -> list[Decision]:
    return [_decision(r) for r in store.read(project_id, query, params)]


def read_decision(reader: GraphStore | Tx, project_id: str, did: str) -> dict[str, Any] | None:
    """The row of one decision (its fields and its review bookkeeping: what
    the review actions of ``core._workbench`` read too), in a unit (``Tx``)
    or outside one (``GraphStore``)."""
    query = f"MATCH (d:Decision {{id: $id}}) WHERE d.project_id = $p RETURN {_DECISION_FIELDS}, {BOOKKEEPING}"
    params = {"id": did, "p": project_id}
    rows = reader.read(query, params) if isinstance(reader, Tx) else reader.read(project_id, query, params)
    return rows[0] if rows else None


def write_new_decisions(
    tx: Tx,
    project_id: str,
    planned: list[tuple[Decision, Resolved, str | None, str | None]],
    numbers: dict[str, int] | None = None,
) -> None:
    """Queue the writes of new decisions (each with its checked supports,
    supersede explanation and superseded id): the nodes, the support edges
    and the support records. One writer for single records and bulk loads.
    ``numbers``: the tasks' last creation numbers (``_counters.take_numbers``),
    read here when not given, which is then the unit's first write."""
    nodes: list[dict[str, Any]] = []
    docs: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    deps: list[dict[str, Any]] = []
    records: list[dict[str, Any]] = []
    tally = _counters.Tally(tx, project_id, [], new={str(d[0].id): str(d[0].task_id) for d in planned})
    positions = tally.positions
    for decision, resolved, explanation, supersedes in planned:
        did = str(decision.id)
        nodes.append(_node_row(project_id, decision, explanation, supersedes, positions))
        docs += [{"d": did, **link} for link in resolved.docs]
        events += [{"d": did, "e": e} for e in resolved.events]
        deps += [{"d": did, "y": y} for y in resolved.deps]
        records += [
            {
                "id": support_record_id(did, i),
                "project_id": project_id,
                "decision_id": did,
                "ordinal": i,
                "current": True,
                "data": support.model_dump_json(),
            }
            for i, support in enumerate(decision.supports)
        ]
    if numbers is None:
        numbers = _counters.take_numbers(tx, project_id, [n["task_id"] for n in nodes])
    tally.created(nodes)
    citations = _citations.Links(tx, project_id, docs)
    _counters.number_new(tx, nodes, numbers)
    # a null property is no property: not sent (fewer keys to pack and read)
    tx.write(
        "UNWIND $rows AS r CREATE (d:Decision) SET d = r",
        {"rows": [{k: v for k, v in n.items() if v is not None} for n in nodes]},
    )
    citations.write(tx)
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


def decision_arg(decision_id: Any) -> str | None:
    """A decision id argument (str or UUID) in canonical form, or None when
    it cannot name a decision; other types raise ValueError."""
    text = str(decision_id) if isinstance(decision_id, uuid.UUID) else c.text(decision_id, "decision_id")
    return text.lower() if c.is_uuid(text) else None


def _node_row(
    project_id: str, decision: Decision, explanation: str | None, supersedes: str | None, positions: Any
) -> dict[str, Any]:
    """The properties of a new decision node: the seed's fields, the keys
    that find it, and (when it is recorded flagged) its place in the queue."""
    did = str(decision.id)
    flagged = decision.review_state is not ReviewState.clear
    at = c.iso(decision.created_at)
    return {
        "id": did,
        "project_id": project_id,
        "task_id": str(decision.task_id),
        "task_name": decision.task_name,
        "choice_key": decision.choice_key,
        "choice_id": c.choice_node_id(project_id, decision.choice_key),
        "revision": decision.revision,
        "conclusion": decision.conclusion,
        "conclusion_norm": normalized(decision.conclusion),
        "rationale": decision.rationale,
        "assumptions": decision.assumptions,
        "open_questions": decision.open_questions,
        "author": decision.author,
        "status": decision.status.value,
        "review_state": decision.review_state.value,
        "review_reason": decision.review_reason.value if decision.review_reason else None,
        "created_at": at,
        "supports": dump_supports(decision.supports),
        "active_key": f"{decision.task_id}\x1f{decision.choice_key}",
        "explanation": explanation,
        "supersedes": supersedes,
        "support_seq": len(decision.supports),
        "review_open": True if flagged else None,
        "flagged_at": at if flagged else None,
        "queue_pos": positions.take(1)[0] if flagged else None,
        "flag_depth": 0 if flagged else None,
        "root_cause": _causes.recording_cause(did) if flagged else None,
    }


def dump_supports(supports: list[Support]) -> str:
    return json.dumps([s.model_dump(mode="json") for s in supports])


# -- a task's generation ------------------------------------------------------
#
# ``delete_task(include_decisions=False)`` keeps the task's decisions but
# takes them out of the task: they carry ``detached_task_id(task id,
# generation)`` instead of its id. A task created later under the same name
# (the same derived id) is of the next generation, which its decision ids
# include, so it starts empty and its choices are free.


def task_generation(tx: Tx, tid: str) -> int:
    """The generation of the live task ``tid`` (0 when it has none, or when
    no task has that id, as for the detached id of kept decisions)."""
    rows = tx.read("MATCH (t:Task {id: $id}) RETURN t.generation AS g", {"id": tid})
    return int(rows[0]["g"] or 0) if rows else 0


def next_generation(tx: Tx, tid: str) -> int:
    """The generation of a task about to be created with id ``tid``: the
    first whose detached id holds no kept decisions."""
    generation = 0
    while tx.read(
        "MATCH (d:Decision {task_id: $id}) RETURN 1 AS x LIMIT 1", {"id": c.detached_task_id(tid, generation)}
    ):
        generation += 1
    return generation


def detach_decisions(tx: Tx, tid: str, generation: int, at: str) -> None:
    """Take the decisions of the task ``tid`` (about to be deleted; of
    ``generation``, read with :func:`task_generation` before the unit's
    first write) out of it: they keep their ids, records, review state and
    choices, and answer to no task. Writes only, so it may follow the
    unit's other writes (flagging the citers elsewhere)."""
    detached = c.detached_task_id(tid, generation)
    tx.write(
        "MATCH (d:Decision {task_id: $id}) SET d.task_id = $detached, d.former_task_id = $id, "
        "d.task_deleted_at = $at, "
        "d.active_key = CASE WHEN d.active_key IS NULL THEN null ELSE $detached + $sep + d.choice_key END",
        {"id": tid, "detached": detached, "at": at, "sep": "\x1f"},
    )
    # the task's kept counters and numbers went with its decisions: a new
    # task of the same name counts from nothing
    tx.write("MATCH (k:TaskDecisions {id: $id}) DELETE k", {"id": tid})
