"""Retention results (seed 001, "Retention", "Retention error codes")."""

from __future__ import annotations

from enum import Enum

from ._base import Model

__all__ = ["RetentionErrorCode", "RetentionResult"]


class RetentionErrorCode(str, Enum):
    event_not_found = "event_not_found"
    task_not_found = "task_not_found"
    request_id_reused = "request_id_reused"
    invalid_request_id = "invalid_request_id"


class RetentionResult(Model):
    recorded: bool
    error: RetentionErrorCode | None = None
    affected_decision_ids: list[str] = []
