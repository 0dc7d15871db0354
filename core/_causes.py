"""Root causes: what flagged a decision first, as stored in ``root_cause``.

A root cause is one string, ``KIND:REST``, written when a flag is raised and
carried down to the decisions flagged through dependency (see ``_review``).
The kinds and what follows the first colon:

==================  =====================  ==================================
kind                rest                   written by
==================  =====================  ==================================
``document``        ``KEY:SEQ``            ``Graph.update`` (version SEQ is new)
``document-deleted`` ``KEY:SEQ``           ``Graph.delete`` (SEQ was current)
``redaction``       ``EVENT_ID``           ``HistoryRetention.redact_event``
``deletion``        ``TASK_NAME``          ``HistoryRetention.delete_task``
``superseded``      ``DECISION_ID``        ``DecisionTraces.supersede_decision``
``rejected``        ``DECISION_ID``        ``DecisionTraces.reject_decision``
``recording``       ``DECISION_ID``        a decision flagged when recorded
==================  =====================  ==================================

A document key may hold colons: the version is after the *last* colon. The
encoders below write exactly these strings (every writer calls them);
:func:`describe_cause` reads them back as a sentence a reviewer reads.
"""

from __future__ import annotations

from typing import Any


def document_cause(key: str, seq: int) -> str:
    return f"document:{key}:{seq}"


def document_deleted_cause(key: str, seq: int) -> str:
    return f"document-deleted:{key}:{seq}"


def redaction_cause(event_id: Any) -> str:
    return f"redaction:{event_id}"


def deletion_cause(task_name: str) -> str:
    return f"deletion:{task_name}"


def superseded_cause(decision_id: Any) -> str:
    return f"superseded:{decision_id}"


def rejected_cause(decision_id: Any) -> str:
    return f"rejected:{decision_id}"


def recording_cause(decision_id: Any) -> str:
    return f"recording:{decision_id}"


def describe_cause(cause: str) -> str:
    """A root cause as a reviewer reads it ("Other" for an empty or unknown one)."""
    kind, _, rest = (cause or "").partition(":")
    if kind == "document":
        key, _, version = rest.rpartition(":")
        return f"Document “{key}” changed (version {version})"
    if kind == "document-deleted":
        key, _, _version = rest.rpartition(":")
        return f"Document “{key}” was deleted"
    if kind == "redaction":
        return "An event was redacted"
    if kind == "deletion":
        return f"Task “{rest}” was deleted"
    if kind == "superseded":
        return "A decision it depends on was superseded"
    if kind == "rejected":
        return "A decision it depends on was rejected"
    if kind == "recording":
        return "Flagged when it was recorded"
    return "Other"
