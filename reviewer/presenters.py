"""How the dashboard words what the core returns: review reasons, root
causes (the sentence is the core's, beside the format it reads), a support
in a few words, clipped text. Decisions are named by the core
(``core.review_views.decision_name``). No store access, no review rule."""

from __future__ import annotations

from core.models import DiskState, DocumentSupport, EventSupport, ReviewReason
from core.review_views import describe_cause

__all__ = ["AFTER_REDACTION", "REASON_LABELS", "clip", "describe_cause", "support_ref"]

REASON_LABELS = {
    ReviewReason.source_changed.value: "a cited document changed",
    ReviewReason.source_removed.value: "a cited source was removed",
    ReviewReason.source_changed_during_recording.value: "a source changed while it was recorded",
    ReviewReason.dependency_review.value: "a decision it depends on is flagged",
}


#: What a redaction or deletion just did on disk, by the state it shows
#: until a purge round covers it (``core.retention.disk_pending``).
AFTER_REDACTION = {
    DiskState.rewrite_pending: "Removal from disk is pending.",
    DiskState.key_pending: "The key is destroyed, so the text cannot be read; Neo4j keeps the encrypted bytes "
    "in its transaction log until the log rotates.",
}


def clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def support_ref(s: object) -> str:
    """A support in a few words: ``KEY vN``, ``TASK #SEQ`` or the decision id."""
    if isinstance(s, DocumentSupport):
        return f"{s.document_key} v{s.recorded_activation_seq}"
    if isinstance(s, EventSupport):
        return f"{s.task_name} #{s.seq}"
    return str(getattr(s, "decision_id", ""))
