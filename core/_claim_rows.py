"""The ids of claim and assignment nodes, and the write that ends a
decision's claim when it is settled: shared by ``core.claims`` and the
decision writes (``core.decisions``), which must not import each other.

A ``Claim`` or ``Assignment`` node is one per target (a decision, or a
root-cause group's key) and project. Its id is readable text, so a query
can name the group's node of a decision from ``d.root_cause`` alone:
``$prefix + d.root_cause`` (one read for a page of cards, no id derived
per row in Python).
"""

from __future__ import annotations

from .stores.base import Tx


def prefix(label: str, project_id: str, kind: str) -> str:
    """What every id of ``label`` nodes on ``kind`` targets of the project starts with."""
    return f"{label.lower()}\x1f{project_id}\x1f{kind}\x1f"


def node_id(label: str, project_id: str, kind: str, target: str) -> str:
    return prefix(label, project_id, kind) + target


def settings_id(project_id: str) -> str:
    return f"team-settings\x1f{project_id}"


def end_claim(tx: Tx, project_id: str, decision_id: str) -> None:
    """A settled decision leaves the queue: whoever claimed it is done (the
    claimer settling it, or someone who acted anyway). Queued with the
    settlement's own writes, so the claim ends in the same commit."""
    tx.write("MATCH (c:Claim {id: $cid}) DELETE c", {"cid": node_id("Claim", project_id, "decision", decision_id)})
