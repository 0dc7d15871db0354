"""The decision page and the reviewer's actions on it: reaffirm, reject,
supersede. Every action checks the role, acts through the core, and answers
with the card (htmx) or a redirect; refusals come back beside the form."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from core.knowledge import decode_evidence_id
from core.models import Decision
from core.models.knowledge import FetchStatus, MalformedEvidenceIdError
from core.review_views import SupportChoice

from .. import access
from ..forms import WRITE_ERRORS, ReaffirmForm, RejectForm, SupersedeForm, new_request_id
from ..presenters import choice_label, clip
from .base import Project, _decision_or_404, _param, _project

#: the card of one decision: the queue's partial, also the htmx answer to an action
CARD = "reviewer/queue.html#decision-card"


@require_GET
@login_required
def decision(request: HttpRequest, project: str, decision_id: Any) -> HttpResponse:
    p = _project(request, project)
    d = _decision_or_404(p, decision_id)
    return render(request, "reviewer/decision.html", _decision_context(p, d))


def _decision_context(p: Project, d: Decision, **forms: Any) -> dict[str, Any]:
    review = p.views.decision_review(d)
    return {
        "d": d,
        "supports": review.supports,
        "history": review.history,
        "revisions": review.revisions,
        "depends_on": review.depends_on,
        "dependants": review.dependants,
        "reaffirm_form": forms.get("reaffirm") or ReaffirmForm(initial={"request_id": new_request_id()}),
        "reject_form": forms.get("reject") or RejectForm(initial={"request_id": new_request_id()}),
        "supersede_form": forms.get("supersede") or _supersede_form(d, review.choices),
        "messages_for": forms.get("error"),
        "error_form": forms.get("error_form"),
    }


def _supersede_form(d: Decision, choices: list[SupportChoice], data: Any = None) -> SupersedeForm:
    """The supersede form, keeping every support the core offers by default."""
    labelled = [(choice.token, choice_label(choice)) for choice in choices]
    initial = {
        "request_id": new_request_id(),
        "conclusion": d.conclusion,
        "rationale": d.rationale,
        "assumptions": "\n".join(d.assumptions),
        "open_questions": "\n".join(d.open_questions),
        "keep": [value for value, _ in labelled],
    }
    return SupersedeForm(data, initial=initial, choices=labelled)


def _support_inputs(p: Project, tokens: list[str]) -> tuple[list[dict[str, Any]], list[Any], str | None]:
    """Support inputs (and the fetch outcomes of document supports, read now)
    from the reviewer's tokens; or a sentence saying which token is wrong."""
    inputs: list[dict[str, Any]] = []
    fetched: list[Any] = []
    for token in tokens:
        parts = token.split()
        if len(parts) == 3 and parts[0] == "event":
            try:
                inputs.append({"kind": "event", "task_name": parts[1], "seq": int(parts[2])})
            except ValueError:
                return [], [], f"“{token}”: the event number must be a whole number."
        elif len(parts) == 2 and parts[0] == "decision":
            inputs.append({"kind": "decision", "decision_id": parts[1]})
        elif len(parts) == 1:
            try:
                decode_evidence_id(parts[0])
            except MalformedEvidenceIdError:
                return [], [], _not_a_support(token)
            got = p.graph.fetch(parts[0])
            if got.status is not FetchStatus.ok:
                return [], [], f"The passage “{clip(token, 60)}” cannot be read in full ({got.status.value})."
            inputs.append({"kind": "document", "evidence_id": parts[0]})
            fetched.append(got)
        else:
            return [], [], _not_a_support(token)
    return inputs, fetched, None


def _not_a_support(token: str) -> str:
    return f"“{clip(token, 60)}” is not an evidence id, “event TASK SEQ” or “decision ID”."


# -- actions --------------------------------------------------------------------------


def _after_action(request: HttpRequest, p: Project, d: Decision, note: str) -> HttpResponse:
    if request.htmx:
        fresh = p.traces.get_decision(str(d.id)).decision or d
        return render(request, CARD, {"d": fresh, "note": note, "counts": p.traces.review_counts(), "oob": True})
    messages.success(request, note)
    back = _param(request.POST, "next")
    if back.startswith(f"/p/{p.id}/") and "//" not in back:
        return redirect(back)
    return redirect("decision", project=p.id, decision_id=str(d.id))


def _refused(request: HttpRequest, p: Project, d: Decision, form_name: str, form: Any, sentence: str) -> HttpResponse:
    """The form again, beside the sentence, with what the person typed. The
    decision is read again: a refusal often means someone else acted first,
    and the page should show what they did."""
    d = p.traces.get_decision(str(d.id)).decision or d
    if request.htmx and form_name != "supersede":
        context = {"d": d, "forms": {form_name: form}, "error": sentence, "error_form": form_name}
        return render(request, CARD, context, status=200)
    context = _decision_context(p, d, **{form_name: form, "error": sentence, "error_form": form_name})
    return render(request, "reviewer/decision.html", context, status=400)


def _decision_action(
    request: HttpRequest,
    project: str,
    decision_id: Any,
    name: str,
    form_class: Any,
    invalid: str,
    act: Callable[[Project, Decision, dict[str, Any]], Any],
    done: str,
) -> HttpResponse:
    """A reviewer's one-form action on a decision: role, form, core write,
    then the card (htmx) or a redirect; refusals beside the form."""
    p = _project(request, project)
    access.require(request.user, access.REVIEWER)
    d = _decision_or_404(p, decision_id)
    form = form_class(request.POST)
    if not form.is_valid():
        return _refused(request, p, d, name, form, invalid)
    result = act(p, d, form.cleaned_data)
    if not result.recorded:
        return _refused(request, p, d, name, form, WRITE_ERRORS[result.error])
    return _after_action(request, p, d, done)


@require_POST
@login_required
def reaffirm(request: HttpRequest, project: str, decision_id: Any) -> HttpResponse:
    return _decision_action(
        request,
        project,
        decision_id,
        "reaffirm",
        ReaffirmForm,
        "Check the form.",
        lambda p, d, data: p.traces.reaffirm_decision(
            str(d.id), explanation=data["explanation"], request_id=data["request_id"]
        ),
        "Reaffirmed: the decision is clear again.",
    )


@require_POST
@login_required
def reject(request: HttpRequest, project: str, decision_id: Any) -> HttpResponse:
    return _decision_action(
        request,
        project,
        decision_id,
        "reject",
        RejectForm,
        "Say why the decision is rejected.",
        lambda p, d, data: p.traces.reject_decision(str(d.id), reason=data["reason"], request_id=data["request_id"]),
        "Rejected.",
    )


@require_POST
@login_required
def supersede(request: HttpRequest, project: str, decision_id: Any) -> HttpResponse:
    p = _project(request, project)
    access.require(request.user, access.REVIEWER)
    d = _decision_or_404(p, decision_id)
    choices = [(c.token, choice_label(c)) for c in p.views.support_choices(d)]
    form = SupersedeForm(request.POST, choices=choices)
    if not form.is_valid():
        return _refused(request, p, d, "supersede", form, "Check the fields marked below.")
    tokens = list(form.cleaned_data["keep"]) + form.added()
    inputs, fetched, problem = _support_inputs(p, tokens)
    if problem:
        return _refused(request, p, d, "supersede", form, problem)
    result = p.traces.supersede_decision(
        str(d.id),
        conclusion=form.cleaned_data["conclusion"],
        rationale=form.cleaned_data["rationale"],
        explanation=form.cleaned_data["explanation"],
        assumptions=form.assumption_list(),
        open_questions=form.question_list(),
        supports=inputs,
        fetched=fetched,
        request_id=form.cleaned_data["request_id"],
    )
    if not result.recorded:
        return _refused(request, p, d, "supersede", form, WRITE_ERRORS[result.error])
    new = result.decision
    messages.success(request, f"Superseded: revision {new.revision} is now the active decision.")
    if request.htmx:
        response = HttpResponse(status=204)
        response["HX-Redirect"] = reverse("decision", kwargs={"project": p.id, "decision_id": str(new.id)})
        return response
    return redirect("decision", project=p.id, decision_id=str(new.id))
