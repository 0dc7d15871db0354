"""How the dashboard words what the core returns: review reasons, root
causes, the word diff of two versions, clipped text. No store access."""

from __future__ import annotations

import difflib
import re

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from core.models import ReviewReason

REASON_LABELS = {
    ReviewReason.source_changed.value: "a cited document changed",
    ReviewReason.source_removed.value: "a cited source was removed",
    ReviewReason.source_changed_during_recording.value: "a source changed while it was recorded",
    ReviewReason.dependency_review.value: "a decision it depends on is flagged",
}



def describe_cause(cause: str) -> str:
    """A root cause as a reviewer reads it."""
    kind, _, rest = cause.partition(":")
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



def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
