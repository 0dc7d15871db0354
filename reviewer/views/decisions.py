"""The decision page and the reviewer's actions on it: reaffirm, reject,
supersede (citing by picking passages, events and decisions, never ids),
and "cite revision N instead" on a dependant. Every action checks the role,
acts through the core, and answers with the card (htmx from the queue), the
page (htmx on the decision page, or a redirect), or the next decision of the
same root-cause group ("and next"); refusals come back beside the form with
their actual cause."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from core._workbench import TEXT_PAGE
from core.knowledge import decode_evidence_id
from core.models import Decision, WriteErrorCode
from core.models.decision import DocumentSupport
from core.models.knowledge import FetchStatus, MalformedEvidenceIdError
from core.review_views import DecisionReview, SupersedeChoices

from .. import access
from ..forms import WRITE_ERRORS, CiteInsteadForm, ReaffirmForm, RejectForm, SupersedeForm, new_request_id
from ..inbox import looked
from ..presenters import clip
from . import claims as team
from .base import Project, _decision_or_404, _int, _param, _project
from .comments import discussion_context

#: the card of one decision: the queue's partial, also the htmx answer to an action
CARD = "reviewer/queue.html#decision-card"
PAGE = "reviewer/decision.html"


@require_GET
@login_required
def decision(request: HttpRequest, project: str, decision_id: Any) -> HttpResponse:
    p = _project(request, project)
    with p.views.remembering():  # the review and the supersede choices read the same documents
        review = p.views.decision_review_of(decision_id)  # the decision read once, with what its review needs
        if review is None:
            raise Http404("no such decision")
        return render(request, PAGE, _decision_context(request, p, review.decision, review=review))


@require_GET
@login_required
def decision_text(request: HttpRequest, project: str, decision_id: Any) -> HttpResponse:
    """A stretch of a text a decision cites (``key``, a version it cites or
    the current one) from ``at``, at most ``TEXT_PAGE`` characters and not
    past ``until``: the rest of a long passage on demand. With htmx the
    stretch alone (it replaces the link that asked for it, and ends with a
    link to the next); else a page of it, with the cited part marked and
    links to the stretches before and after."""
    p = _project(request, project)
    d = _decision_or_404(p, decision_id)
    key = _param(request.GET, "key", 2000)
    cited = [s for s in d.supports if isinstance(s, DocumentSupport) and s.document_key == key]
    info = p.graph.get_document(key) if cited else None
    if info is None:
        raise Http404("the decision cites no such document")
    version = _int(request.GET.get("version"), info.activation_seq, minimum=1)
    if version not in {s.recorded_activation_seq for s in cited} | ({info.activation_seq} if info.live else set()):
        raise Http404("the decision cites no such version")
    text = p.graph.version_text(key, version) or ""
    at = _int(request.GET.get("at"), 0, maximum=len(text))
    until = _int(request.GET.get("until"), len(text), maximum=len(text))
    end = min(until, at + TEXT_PAGE)
    context = {
        "d": d,
        "key": key,
        "version": version,
        "length": len(text),
        "at": at,
        "end": end,
        "until": until,
        "stretch": text[at:end],
        "next_at": end if end < until else None,
        "left": until - end,
    }
    if request.htmx:
        return render(request, "reviewer/decision_text.html#stretch", context)
    mark0 = _int(request.GET.get("mark_start"), 0, maximum=len(text))
    mark1 = _int(request.GET.get("mark_end"), 0, maximum=len(text))
    lo, hi = max(at, mark0), min(end, mark1)
    context.update(
        {
            "before": text[at:lo] if lo < hi else text[at:end],
            "marked": text[lo:hi] if lo < hi else "",
            "after": text[hi:end] if lo < hi else "",
            "earlier": max(0, at - TEXT_PAGE) if at > 0 else None,
            "marks": f"&mark_start={mark0}&mark_end={mark1}" if mark1 > mark0 else "",
        }
    )
    return render(request, "reviewer/decision_text.html", context)


@require_GET
@login_required
def decision_pick(request: HttpRequest, project: str, decision_id: Any) -> HttpResponse:
    """The supersede picker's text of one document support (``index``)
    shown over ``[start, end)``: more of the current text on demand."""
    p = _project(request, project)
    access.require(request.user, access.REVIEWER, project)
    d = _decision_or_404(p, decision_id)
    picks = p.views.supersede_choices(d).documents
    index = _int(request.GET.get("index"), -1, minimum=-1)
    if not 0 <= index < len(picks) or picks[index].text is None:
        raise Http404("no such passage")
    pick = picks[index].widened(_int(request.GET.get("start"), 0), _int(request.GET.get("end"), 0))
    return render(request, f"{PAGE}#pick-text", {"d": d, "pick": pick})


def _decision_context(
    request: HttpRequest, p: Project, d: Decision, *, review: DecisionReview | None = None, **forms: Any
) -> dict[str, Any]:
    reviewer = access.can(request.user, access.REVIEWER, p.id)
    with p.views.remembering():  # the review and the supersede choices read the same documents
        review = review or p.views.decision_review(d)
        choices = p.views.supersede_choices(d) if reviewer and review.actions.supersede else None
    supersede_form = forms.get("supersede") or (_supersede_form(d, choices) if choices else None)
    return {
        "d": d,
        "review": review,
        "name": review.name,
        "actions": review.actions,
        "names": review.names,
        "supports": review.supports,
        "history": review.history,
        "revisions": review.revisions,
        "depends_on": review.depends_on,
        "dependants": review.dependant_views,
        "reaffirm_form": forms.get("reaffirm") or ReaffirmForm(initial={"request_id": new_request_id()}),
        "reject_form": forms.get("reject") or RejectForm(initial={"request_id": new_request_id()}),
        "supersede_form": supersede_form,
        "choices": choices,
        "picked": _picked(choices, supersede_form) if choices and supersede_form else None,
        "messages_for": forms.get("error"),
        "error_form": forms.get("error_form"),
        # what the person typed into a refused form, kept when the form is no longer offered
        "typed": _typed(forms.get(forms.get("error_form") or "")),
        "cite_request_id": new_request_id(),
        **team.decision_claims(request, p, d),
        **discussion_context(request, p, d.id),  # the discussion partial (views.comments)
    }


def _typed(form: Any) -> str:
    data = getattr(form, "data", None) or {}
    return str(data.get("reason") or data.get("explanation") or "")


# -- the supersede form: what the reviewer picked -----------------------------------------------


def _keep_choices(choices: SupersedeChoices) -> list[tuple[str, str]]:
    """The events and decisions the form offers, as the form field's choices."""
    out = [(e.token, f"event {e.seq} of {e.task}") for e in choices.events if not e.redacted]
    out += [(x.token, x.offer.label) for x in choices.decisions if x.token and x.offer]
    return out


def _supersede_form(d: Decision, choices: SupersedeChoices, data: Any = None) -> SupersedeForm:
    """The form, keeping every support by default: each document at its
    candidate passage, the cited events, each cited decision's active revision."""
    initial = {
        "request_id": new_request_id(),
        "conclusion": d.conclusion,
        "rationale": d.rationale,
        "assumptions": "\n".join(d.assumptions),
        "open_questions": "\n".join(d.open_questions),
        "keep": [e.token for e in choices.events if e.cited and not e.redacted]
        + [x.token for x in choices.decisions if x.token],
    }
    return SupersedeForm(data, initial=initial, choices=_keep_choices(choices))


def _picked(choices: SupersedeChoices, form: SupersedeForm) -> dict[str, Any]:
    """What the form shows as chosen (posted values when it comes back,
    else the defaults), and what the new revision will cite."""
    posted = form.is_bound
    data = form.data if posted else {}
    keep = set(data.getlist("keep") if posted else form.initial.get("keep", []))
    docs = []
    for pick in choices.documents:
        name = f"doc-{pick.index}"
        use = data.get(name, "") if posted else (pick.evidence_id or "")
        if use not in ("selection", "drop") and use != pick.evidence_id:
            use = pick.evidence_id or "" if not posted else ""
        docs.append(
            {
                "pick": pick,
                "name": name,
                "use": use,
                "start": data.get(f"{name}-start", ""),
                "end": data.get(f"{name}-end", ""),
                "text": data.get(f"{name}-text", ""),
            }
        )
    will_cite = []
    no_longer = []
    for doc in docs:
        pick = doc["pick"]
        if pick.state == "removed":
            no_longer.append(f"{pick.key} (deleted)")
        elif doc["use"] == "drop":
            no_longer.append(pick.key)
        elif doc["use"] == "selection":
            will_cite.append(f"{pick.key} version {pick.version}: “{clip(doc['text'] or 'the text you select', 80)}”")
        elif doc["use"]:
            will_cite.append(f"{pick.key} version {pick.version}: “{clip(pick.candidate, 80)}”")
    will_cite += [f"event {e.seq} of {e.task}: {clip(e.preview, 60)}" for e in choices.events if e.token in keep]
    will_cite += [x.offer.label for x in choices.decisions if x.token in keep and x.offer]
    no_longer += [x.cited.label for x in choices.decisions if x.token not in keep]
    dropped = any(doc["use"] == "drop" for doc in docs)
    return {"docs": docs, "keep": keep, "will_cite": will_cite, "no_longer": no_longer, "dropped": dropped}


def _document_inputs(p: Project, choices: SupersedeChoices, post: Any) -> tuple[list[str], list[str], str | None]:
    """The evidence ids the reviewer picked for the document supports, the
    keys of live documents they chose to stop citing; or a sentence."""
    evidence: list[str] = []
    dropped: list[str] = []
    for pick in choices.documents:
        if pick.state == "removed":
            continue
        name = f"doc-{pick.index}"
        use = _param(post, name, 500)
        if use == "drop":
            dropped.append(pick.key)
        elif use == "selection":
            version = _int(post.get(f"{name}-version"), 0)
            if version != pick.version:
                return (
                    [],
                    [],
                    (
                        f"{pick.key} changed while you were choosing (now version {pick.version}): "
                        "pick its passage again."
                    ),
                )
            start, end = _int(post.get(f"{name}-start"), -1, minimum=-1), _int(post.get(f"{name}-end"), -1, minimum=-1)
            chosen = p.views.cite_selection(pick.key, version, start, end, _param(post, f"{name}-text", 40_000))
            if chosen is None:
                return [], [], f"Select the text of {pick.key} to cite (or keep the passage offered)."
            evidence.append(chosen)
        elif use and use == pick.evidence_id:
            evidence.append(use)
        elif use:
            return [], [], f"The passage offered for {pick.key} is out of date: pick it again."
        else:
            return [], [], f"Choose what the new revision cites of {pick.key}: select its text or stop citing it."
    return evidence, dropped, None


def _support_inputs(p: Project, tokens: list[str]) -> tuple[list[dict[str, Any]], list[Any], str | None]:
    """Support inputs (and the fetch outcomes of document supports, read now)
    from tokens: evidence ids, ``event TASK SEQ``, ``decision ID``; a span
    typed with its document's key is read as the evidence id it names. Or a
    sentence saying which token is wrong."""
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
            evidence = parts[0]
            try:
                decode_evidence_id(evidence)
            except MalformedEvidenceIdError:
                evidence = p.views.evidence_by_key(evidence) or ""
                if not evidence:
                    return [], [], _not_a_support(token)
            got = p.graph.fetch(evidence)
            if got.status is not FetchStatus.ok:
                return [], [], f"The passage “{clip(token, 60)}” cannot be read in full ({got.status.value})."
            inputs.append({"kind": "document", "evidence_id": evidence})
            fetched.append(got)
        else:
            return [], [], _not_a_support(token)
    return inputs, fetched, None


def _not_a_support(token: str) -> str:
    return (
        f"“{clip(token, 60)}” is not an evidence id (span:KEY:VERSION:START-END also works), "
        "“event TASK SEQ” or “decision ID”."
    )


# -- answers ---------------------------------------------------------------------------


def _wants_next(request: HttpRequest) -> bool:
    return request.POST.get("then") == "next"


def _following(p: Project, d: Decision) -> str | None:
    """Where "and next" lands after acting on ``d``: the next open decision
    of its root-cause group in queue order, read before the write, as the
    queue's cards do (``next_after_in_group`` starts from d's place)."""
    cause = p.views.review_actions(d).cause
    return team.next_unclaimed(p, p.views.next_after_in_group(str(d.id), cause), cause) if cause else None


def _after_action(
    request: HttpRequest, p: Project, d: Decision, note: str, *, following: str | None = None
) -> HttpResponse:
    """After a write (``d``: the decision the write answered with): from the
    queue (htmx), the card; "and next", the next decision of the same
    root-cause group (or the queue when the group is done); else back where
    the person came from, or the decision page."""
    if request.htmx and not _wants_next(request):
        # read again: a repeated request (the same request id) answers with
        # the decision as its first run left it, and the card shows it now
        fresh = p.traces.get_decision(str(d.id)).decision or d
        return render(
            request,
            CARD,
            {
                "d": fresh,
                "note": note,
                "counts": p.traces.review_counts(),
                "oob": True,
                "actions": p.views.review_actions_many([fresh]),
            },
        )
    messages.success(request, note)
    if _wants_next(request):
        if following:
            return _go(request, reverse("decision", kwargs={"project": p.id, "decision_id": following}))
        messages.info(request, "That was the last decision of this group.")
        return _go(request, reverse("queue", kwargs={"project": p.id}))
    back = _param(request.POST, "next")
    if back.startswith(reverse("overview", kwargs={"project": p.id})) and "//" not in back and not request.htmx:
        return redirect(back)
    return _go(request, reverse("decision", kwargs={"project": p.id, "decision_id": str(d.id)}))


def _go(request: HttpRequest, url: str) -> HttpResponse:
    """A redirect; on the decision page's htmx forms, the page at ``url``
    swapped in place (the address bar follows)."""
    if request.htmx:
        response = HttpResponse(status=204)
        response["HX-Location"] = url
        return response
    return redirect(url)


def _refused(
    request: HttpRequest,
    p: Project,
    d: Decision,
    form_name: str,
    form: Any,
    sentence: str,
    *,
    read_again: bool = True,
) -> HttpResponse:
    """The form again, beside the sentence, with what the person typed. The
    decision is read again (unless it was read after the refusal): a refusal
    often means someone else acted first, and the page shows what they did."""
    if read_again:
        d = p.traces.get_decision(str(d.id)).decision or d
    if request.htmx and form_name != "supersede":
        context = {
            "d": d,
            "forms": {form_name: form},
            "error": sentence,
            "error_form": form_name,
            "actions": p.views.review_actions_many([d]),
        }
        return render(request, CARD, context, status=200)
    context = _decision_context(request, p, d, **{form_name: form, "error": sentence, "error_form": form_name})
    return render(request, PAGE, context, status=200 if request.htmx else 400)


def _refusal(p: Project, d: Decision, error: Any) -> str:
    """A refused write's actual cause (core), else its code's sentence."""
    return p.views.refusal(d.id, error) or WRITE_ERRORS[error]


def _decision_action(
    request: HttpRequest,
    project: str,
    decision_id: Any,
    name: str,
    form_class: Any,
    invalid: str,
    act: Callable[[Project, str, dict[str, Any]], Any],
    done: str,
) -> HttpResponse:
    """A reviewer's one-form action on a decision: role, form, core write,
    then the card, the page or the next decision; refusals beside the form.
    The decision is read before the write only when something needs it
    then (a form to show again, "and next"): the write says when it is
    missing, and answers with it."""
    p = _project(request, project)
    access.require(request.user, access.REVIEWER, project)
    asked = team.claim_guard(request, p, decision_id)  # someone else's claim: act anyway?
    if asked is not None:
        return asked
    form = form_class(request.POST)
    if not form.is_valid():
        return _refused(request, p, _decision_or_404(p, decision_id), name, form, invalid, read_again=False)
    following = _following(p, _decision_or_404(p, decision_id)) if _wants_next(request) else None
    result = act(p, str(decision_id), form.cleaned_data)
    if not result.recorded:
        if result.error is WriteErrorCode.decision_not_found:
            raise Http404("no such decision")
        d = _decision_or_404(p, decision_id)
        return _refused(request, p, d, name, form, _refusal(p, d, result.error), read_again=False)
    looked(request, p.id)  # a verdict: "since your last visit" starts again here
    return _after_action(request, p, result.decision, done, following=following)


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
        lambda p, target, data: p.traces.reaffirm_decision(
            target, explanation=data["explanation"], request_id=data["request_id"]
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
        lambda p, target, data: p.traces.reject_decision(target, reason=data["reason"], request_id=data["request_id"]),
        "Rejected.",
    )


@require_POST
@login_required
def supersede(request: HttpRequest, project: str, decision_id: Any) -> HttpResponse:
    p = _project(request, project)
    access.require(request.user, access.REVIEWER, project)
    d = _decision_or_404(p, decision_id)
    asked = team.claim_guard(request, p, d.id)  # someone else's claim: act anyway?
    if asked is not None:
        return asked
    choices = p.views.supersede_choices(d)
    form = SupersedeForm(request.POST, choices=_keep_choices(choices))
    if not form.is_valid():
        return _refused(request, p, d, "supersede", form, "Check the fields marked below.")
    evidence, dropped, problem = _document_inputs(p, choices, request.POST)
    if problem:
        return _refused(request, p, d, "supersede", form, problem)
    if dropped and not form.cleaned_data["confirm_drop"]:
        return _refused(
            request,
            p,
            d,
            "supersede",
            form,
            (
                f"{', '.join(dropped)} will no longer be cited. Tick “Yes, stop citing it” to record the revision "
                "without it, or pick its passage."
            ),
        )
    tokens = evidence + list(form.cleaned_data["keep"])
    cite_task, cite_key = form.cleaned_data["cite_task"].strip(), form.cleaned_data["cite_key"].strip()
    if cite_key:
        found = p.views.active_decision(cite_task or d.task_name, cite_key)
        if found is None:
            return _refused(
                request,
                p,
                d,
                "supersede",
                form,
                f"No active decision “{clip(cite_key, 60)}” in task “{clip(cite_task or d.task_name, 60)}”.",
            )
        tokens.append(f"decision {found.id}")
    if form.cleaned_data["event_seq"]:
        tokens.append(f"event {d.task_name} {form.cleaned_data['event_seq']}")
    inputs, fetched, problem = _support_inputs(p, tokens + form.added())
    if problem:
        return _refused(request, p, d, "supersede", form, problem)
    following = _following(p, d) if _wants_next(request) else None
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
        return _refused(request, p, d, "supersede", form, _refusal(p, d, result.error))
    looked(request, p.id)
    new = result.decision
    note = f"Superseded: revision {new.revision} is now the active decision."
    if _wants_next(request):
        return _after_action(request, p, new, note, following=following)
    messages.success(request, note)
    return _go(request, reverse("decision", kwargs={"project": p.id, "decision_id": str(new.id)}))


@require_POST
@login_required
def cite_instead(request: HttpRequest, project: str, decision_id: Any) -> HttpResponse:
    """ "Cite revision N instead": supersede a dependant with the same
    content and supports, the replaced revision swapped for the new one."""
    p = _project(request, project)
    access.require(request.user, access.REVIEWER, project)
    d = _decision_or_404(p, decision_id)
    form = CiteInsteadForm(request.POST)
    if not form.is_valid():
        return _cite_refused(request, p, form, "Explain why this revision replaces the current one.")
    old = p.traces.get_decision(str(form.cleaned_data["old"])).decision
    new = p.traces.get_decision(str(form.cleaned_data["new"])).decision
    if old is None or new is None:
        raise Http404("no such decision")
    swapped = p.views.swapped_supports(d, old.id, new.id)
    if isinstance(swapped, str):
        return _cite_refused(
            request,
            p,
            form,
            f"{d.choice_key} cannot cite revision {new.revision} in one step: {swapped}.",
            old=old,
            dependant=d,
        )
    inputs, fetched = swapped
    result = p.traces.supersede_decision(
        str(d.id),
        conclusion=d.conclusion,
        rationale=d.rationale,
        explanation=form.cleaned_data["explanation"],
        assumptions=d.assumptions,
        open_questions=d.open_questions,
        supports=inputs,
        fetched=fetched,
        request_id=form.cleaned_data["request_id"],
    )
    if not result.recorded:
        return _cite_refused(request, p, form, _refusal(p, d, result.error), old=old, dependant=d)
    looked(request, p.id)
    messages.success(
        request,
        f"{d.choice_key} now cites revision {new.revision} of {new.choice_key} "
        f"(its revision {result.decision.revision}).",
    )
    return _go(request, reverse("decision", kwargs={"project": p.id, "decision_id": str(old.id)}))


def _cite_refused(
    request: HttpRequest,
    p: Project,
    form: CiteInsteadForm,
    sentence: str,
    *,
    old: Decision | None = None,
    dependant: Decision | None = None,
) -> HttpResponse:
    """The page of the replaced revision again, the sentence above its
    dependants, what the person typed kept in the dependant's form."""
    if old is None:
        old = p.traces.get_decision(str(form.data.get("old", ""))).decision
    if old is None:
        raise Http404("no such decision")
    context = _decision_context(request, p, old)
    context.update(
        {
            "cite_error": sentence,
            "cite_for": str(dependant.id) if dependant else "",
            "cite_typed": str(form.data.get("explanation", "")),
        }
    )
    return render(request, PAGE, context, status=200 if request.htmx else 400)
