"""How the dashboard words what the core returns: review reasons, root
causes (the sentence is the core's, beside the format it reads), the word
diff of two versions, the supports offered when superseding, clipped text.
No store access, no review rule."""

from __future__ import annotations

import difflib
import re

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from core.models import DecisionSupport, DocumentSupport, EventSupport, ReviewReason
from core.review_views import SupportChoice, describe_cause

__all__ = ["REASON_LABELS", "choice_label", "clip", "describe_cause", "support_ref", "word_diff"]

REASON_LABELS = {
    ReviewReason.source_changed.value: "a cited document changed",
    ReviewReason.source_removed.value: "a cited source was removed",
    ReviewReason.source_changed_during_recording.value: "a source changed while it was recorded",
    ReviewReason.dependency_review.value: "a decision it depends on is flagged",
}


def word_diff(old: str, new: str) -> SafeString:
    """The two texts as escaped HTML with removed words in <del> and added
    words in <ins>."""
    a, b = re.findall(r"\s+|[^\s]+", old), re.findall(r"\s+|[^\s]+", new)
    out: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(escape("".join(a[i1:i2])))
            continue
        if i2 > i1:
            out.append(f"<del>{escape(''.join(a[i1:i2]))}</del>")
        if j2 > j1:
            out.append(f"<ins>{escape(''.join(b[j1:j2]))}</ins>")
    return mark_safe("".join(out))  # every piece above is escaped


def clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def choice_label(choice: SupportChoice) -> str:
    """How the supersede form names a support the reviewer may keep."""
    s = choice.support
    if isinstance(s, DocumentSupport):
        return f"{s.document_key}: “{clip(choice.passage or '')}”"
    if isinstance(s, EventSupport):
        return f"event {s.seq} of {s.task_name}"
    assert isinstance(s, DecisionSupport)
    return f"decision {s.decision_id}"


def support_ref(s: object) -> str:
    """A support in a few words: ``KEY vN``, ``TASK #SEQ`` or the decision id."""
    if isinstance(s, DocumentSupport):
        return f"{s.document_key} v{s.recorded_activation_seq}"
    if isinstance(s, EventSupport):
        return f"{s.task_name} #{s.seq}"
    return str(getattr(s, "decision_id", ""))
