"""Forms of the review actions. Every form carries a request id, rendered
once per page, so a double click or a retry acts once."""

from __future__ import annotations

import uuid

from django import forms

from core import limits
from core.decisions import DEFAULT_REAFFIRM_EXPLANATION
from core.models import WriteErrorCode
from core.models.retention import RetentionErrorCode

#: a reason, an explanation, a note: the core's limit (``core.limits``), so
#: the form says so beside the field before the core would refuse it
TEXT_MAX = limits.EXPLANATION_MAX
#: assumptions and open questions: one per line
LINES_MAX = limits.ITEMS_MAX * (limits.ITEM_MAX + 1)


def new_request_id() -> str:
    return uuid.uuid4().hex


class ActionForm(forms.Form):
    """Field ids are prefixed with the form's name: a page carries several."""

    request_id = forms.CharField(widget=forms.HiddenInput, max_length=64)
    prefix_id = "action"

    def __init__(self, *args: object, **kwargs: object) -> None:
        kwargs.setdefault("auto_id", f"{self.prefix_id}_%s")
        super().__init__(*args, **kwargs)


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def _checked_lines(text: str) -> str:
    lines = _lines(text)
    if len(lines) > limits.ITEMS_MAX:
        raise forms.ValidationError(f"At most {limits.ITEMS_MAX} lines.")
    if any(len(line) > limits.ITEM_MAX for line in lines):
        raise forms.ValidationError(f"Each line has at most {limits.ITEM_MAX:,} characters.")
    return text


class ReaffirmForm(ActionForm):
    prefix_id = "reaffirm"

    explanation = forms.CharField(
        max_length=TEXT_MAX, initial=DEFAULT_REAFFIRM_EXPLANATION, widget=forms.Textarea(attrs={"rows": 2})
    )


class RejectForm(ActionForm):
    prefix_id = "reject"

    reason = forms.CharField(
        max_length=TEXT_MAX,
        widget=forms.Textarea(attrs={"rows": 2}),
        error_messages={"required": "Say why the decision is rejected."},
    )

    def clean_reason(self) -> str:
        reason = self.cleaned_data["reason"].strip()
        if not reason:
            raise forms.ValidationError("Say why the decision is rejected.")
        return reason


class SupersedeForm(ActionForm):
    prefix_id = "supersede"

    conclusion = forms.CharField(max_length=limits.CONCLUSION_MAX, widget=forms.Textarea(attrs={"rows": 2}))
    rationale = forms.CharField(max_length=limits.RATIONALE_MAX, widget=forms.Textarea(attrs={"rows": 3}))
    assumptions = forms.CharField(
        max_length=LINES_MAX, required=False, widget=forms.Textarea(attrs={"rows": 2}), help_text="One per line."
    )
    open_questions = forms.CharField(
        max_length=LINES_MAX, required=False, widget=forms.Textarea(attrs={"rows": 2}), help_text="One per line."
    )
    explanation = forms.CharField(
        max_length=TEXT_MAX,
        widget=forms.Textarea(attrs={"rows": 2}),
        error_messages={"required": "Explain why this revision replaces the current one."},
    )
    keep = forms.MultipleChoiceField(required=False, widget=forms.CheckboxSelectMultiple, label="Supports to keep")
    event_seq = forms.IntegerField(required=False, min_value=1, label="Another event of this task, by number")
    cite_key = forms.CharField(max_length=500, required=False, label="A decision to cite: its choice key")
    cite_task = forms.CharField(max_length=500, required=False, label="in task (this task when empty)")
    add = forms.CharField(
        max_length=TEXT_MAX,
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        label="Evidence ids",
        help_text="One per line: an evidence id or span:KEY:VERSION:START-END, “event TASK SEQ”, or “decision ID”.",
    )
    confirm_drop = forms.BooleanField(required=False, label="Yes, stop citing it")

    def __init__(self, *args: object, choices: list[tuple[str, str]] | None = None, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)
        self.fields["keep"].choices = choices or []

    def clean_assumptions(self) -> str:
        return _checked_lines(self.cleaned_data.get("assumptions", ""))

    def clean_open_questions(self) -> str:
        return _checked_lines(self.cleaned_data.get("open_questions", ""))

    def assumption_list(self) -> list[str]:
        return _lines(self.cleaned_data.get("assumptions", ""))

    def question_list(self) -> list[str]:
        return _lines(self.cleaned_data.get("open_questions", ""))

    def added(self) -> list[str]:
        return _lines(self.cleaned_data.get("add", ""))


class GroupActionForm(ActionForm):
    """A group action's confirmation: one note (the reaffirm explanation, or
    the reason every rejection records)."""

    prefix_id = "group"

    action = forms.ChoiceField(choices=[("reaffirm", "reaffirm"), ("reject", "reject")])
    note = forms.CharField(max_length=TEXT_MAX, required=False, widget=forms.Textarea(attrs={"rows": 2}))
    confirm = forms.BooleanField(error_messages={"required": "Tick the box to confirm."})

    def clean(self) -> dict[str, object]:
        data = super().clean()
        data["note"] = (data.get("note") or "").strip()
        if data.get("action") == "reject" and not data["note"]:
            self.add_error("note", "Say why these decisions are rejected.")
        return data


class CiteInsteadForm(ActionForm):
    """ "Cite revision N instead" on a dependant: the replaced revision, the
    new one, and the explanation the new revision of the dependant records."""

    prefix_id = "cite"

    old = forms.UUIDField(widget=forms.HiddenInput)
    new = forms.UUIDField(widget=forms.HiddenInput)
    explanation = forms.CharField(
        max_length=TEXT_MAX,
        widget=forms.Textarea(attrs={"rows": 2}),
        error_messages={"required": "Explain why this revision replaces the current one."},
    )


class RedactForm(ActionForm):
    prefix_id = "redact"

    event_id = forms.UUIDField(widget=forms.HiddenInput)
    reason = forms.CharField(max_length=TEXT_MAX, widget=forms.Textarea(attrs={"rows": 2}))
    confirm = forms.BooleanField(
        label="I understand the body is replaced for good.",
        error_messages={"required": "Tick the box to confirm the redaction."},
    )


class DeleteTaskForm(ActionForm):
    prefix_id = "delete"

    include_decisions = forms.BooleanField(required=False, initial=True, label="Delete its decisions too")
    reason = forms.CharField(max_length=TEXT_MAX, widget=forms.Textarea(attrs={"rows": 2}))
    confirm = forms.BooleanField(
        label="I understand this cannot be undone.",
        error_messages={"required": "Tick the box to confirm the deletion."},
    )


#: Refused writes as sentences a reviewer understands.
REQUEST_ID_REUSED = "This form was already used for a different action. Reload the page and try again."

WRITE_ERRORS: dict[WriteErrorCode, str] = {
    WriteErrorCode.task_exists: "A task with this name already exists with another goal.",
    WriteErrorCode.task_not_found: "The task no longer exists.",
    WriteErrorCode.event_not_found: "That event does not exist.",
    WriteErrorCode.support_required: "A decision needs between 1 and 20 supports.",
    WriteErrorCode.support_invalid: "A support matches nothing in this project.",
    WriteErrorCode.request_id_reused: REQUEST_ID_REUSED,
    WriteErrorCode.invalid_request_id: "This form is out of date. Reload the page and try again.",
    WriteErrorCode.choice_exists: "This choice already has an active decision; supersede it instead.",
    WriteErrorCode.supersede_target_invalid: (
        "Someone already superseded or rejected this decision; it is no longer active."
    ),
    WriteErrorCode.explanation_required: "Explain why: an explanation or a reason must not be blank.",
    WriteErrorCode.support_malformed: "A support is not a valid evidence id or decision id.",
    WriteErrorCode.support_not_fetched: "A cited passage could not be read in full.",
    WriteErrorCode.support_out_of_scope: "A support lies outside this project.",
    WriteErrorCode.support_document_not_found: "A cited document is no longer in the knowledge graph.",
    WriteErrorCode.support_event_not_found: "A cited event does not exist or was redacted.",
    WriteErrorCode.support_decision_not_found: "A cited decision does not exist in this project.",
    WriteErrorCode.decision_not_found: "This decision does not exist.",
    WriteErrorCode.decision_not_active: "Someone already superseded or rejected this decision; it is no longer active.",
    WriteErrorCode.support_decision_not_active: "A cited decision is no longer active.",
    WriteErrorCode.value_too_long: "A text or a list is longer than its limit; shorten it and try again.",
    WriteErrorCode.too_many_supports: f"A step result cites at most {limits.STEP_SUPPORTS_MAX} supports.",
    WriteErrorCode.cannot_revalidate: (
        "This decision cannot be reaffirmed: a cited text changed or is gone, its review is not finished, "
        "or a decision it depends on is not clear. Supersede or reject it instead."
    ),
}

RETENTION_ERRORS: dict[RetentionErrorCode, str] = {
    RetentionErrorCode.event_not_found: "That event does not exist.",
    RetentionErrorCode.task_not_found: "The task no longer exists.",
    RetentionErrorCode.request_id_reused: REQUEST_ID_REUSED,
    RetentionErrorCode.invalid_request_id: "This form is out of date. Reload the page and try again.",
    RetentionErrorCode.value_too_long: f"The reason has at most {limits.EXPLANATION_MAX:,} characters.",
}
