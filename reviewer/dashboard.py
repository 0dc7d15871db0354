"""The review dashboard: pages and actions over the core services.

Every view checks the person's access to the project (another project answers
404) and, for actions, their role (403). Services are built per request with
``agent_id`` set to the username, so the core records who acted. Actions are
POST forms with a request id; with htmx the card acted on and the page's
counters are replaced in place, without JavaScript the same form redirects.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
import re
from dataclasses import dataclass
from functools import cached_property
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from core import _common as c
from core.decisions import DEFAULT_REAFFIRM_EXPLANATION, DecisionTraces
from core.history import ConversationHistory
from core.knowledge import Graph, decode_evidence_id
from core.models import (
    Decision,
    DecisionSupport,
    DocumentSupport,
    EventSupport,
    ReviewReason,
    ReviewState,
    StepState,
)
from core.models.knowledge import FetchStatus, MalformedEvidenceIdError
from core._purge import Purger, event_purge_states
from core.retention import ActivityLog, HistoryRetention

from . import access
from .forms import (
    RETENTION_ERRORS,
    WRITE_ERRORS,
    DeleteTaskForm,
    ReaffirmForm,
    RedactForm,
    RejectForm,
    SupersedeForm,
    new_request_id,
)
from .store import check_store

PAGE = 20
CONFLICT_PAGE = 10  # groups per page: each shows up to 50 decisions side by side
REASON_LABELS = {
    ReviewReason.source_changed.value: "a cited document changed",
    ReviewReason.source_removed.value: "a cited source was removed",
    ReviewReason.source_changed_during_recording.value: "a source changed while it was recorded",
    ReviewReason.dependency_review.value: "a decision it depends on is flagged",
}


@dataclass
class Project:
    """The core services of one project, acting as the logged-in person."""

    id: str
    user: Any

    @cached_property
    def store(self) -> Any:
        return check_store()

    @cached_property
    def agent(self) -> str:
        return self.user.get_username()

    @cached_property
    def history(self) -> ConversationHistory:
        return ConversationHistory(self.store, project_id=self.id, agent_id=self.agent)

    @cached_property
    def traces(self) -> DecisionTraces:
        return DecisionTraces(self.store, project_id=self.id, agent_id=self.agent)

    @cached_property
    def graph(self) -> Graph:
        return Graph(self.store, project_id=self.id, agent_id=self.agent)

    @cached_property
    def retention(self) -> HistoryRetention:
        return HistoryRetention(self.store, project_id=self.id, agent_id=self.agent)

    @cached_property
    def activity(self) -> ActivityLog:
        return ActivityLog(self.store, project_id=self.id)


def _project(request: HttpRequest, project_id: str) -> Project:
    access.require_project(request.user, project_id)
    return Project(project_id, request.user)


def _ctx(request: HttpRequest, project: Project, **extra: Any) -> dict[str, Any]:
    return {
        "project": project.id,
        "base": reverse("overview", kwargs={"project": project.id}),  # page links without a reverse() each
        "default_explanation": DEFAULT_REAFFIRM_EXPLANATION,
        "role": access.role_of(request.user),
        "can_review": access.can(request.user, access.REVIEWER),
        "can_steward": access.can(request.user, access.STEWARD),
        "reason_labels": REASON_LABELS,
        **extra,
    }


def _param(source: Any, name: str, limit: int = 1000) -> str:
    """A query or form value as text the core accepts: NUL characters (which
    no name or key can hold) dropped, and cut to ``limit`` characters."""
    return (source.get(name) or "").replace("\x00", "")[:limit]


def _int(value: str | None, default: int, *, minimum: int = 0, maximum: int = 10**9) -> int:
    try:
        number = int(value) if value not in (None, "") else default
    except (TypeError, ValueError):
        return default
    return max(minimum, min(maximum, number))


def _decision_or_404(project: Project, decision_id: Any) -> Decision:
    found = project.traces.get_decision(decision_id)
    if not found.found or found.decision is None:
        raise Http404("no such decision")
    return found.decision


# -- home and overview -------------------------------------------------------------


@require_GET
@login_required
def home(request: HttpRequest) -> HttpResponse:
    store = check_store()
    projects = access.projects_for(request.user, store)
    if len(projects) == 1:
        return redirect("overview", project=projects[0])
    return render(request, "reviewer/home.html", {"projects": projects, "backend": store.backend,
                                                  "role": access.role_of(request.user)})


@require_GET
@login_required
def overview(request: HttpRequest, project: str) -> HttpResponse:
    p = _project(request, project)
    counts, causes = p.traces.review_summary(causes=10)
    return render(request, "reviewer/overview.html", _ctx(
        request, p, counts=counts, open_tasks=p.history.count_tasks("open"), causes=causes,
        recent=p.activity.list(limit=10),
    ))


# -- the review queue -----------------------------------------------------------------


@require_GET
@login_required
def queue(request: HttpRequest, project: str) -> HttpResponse:
    p = _project(request, project)
    task = _param(request.GET, "task") or None
    reason = _param(request.GET, "reason") or None
    state = _param(request.GET, "state") or None
    cause = _param(request.GET, "cause") or None
    if reason not in (None, *[r.value for r in ReviewReason]):
        reason = None
    if state not in (None, ReviewState.needs_review.value, ReviewState.unknown.value):
        state = None
    page = _int(request.GET.get("page"), 1, minimum=1, maximum=10**6)
    result = p.traces.list_decisions_for_review(
        task, limit=PAGE, offset=(page - 1) * PAGE, reason=reason, state=state, root_cause=cause
    )
    groups: list[tuple[str, list[Decision]]] = []
    causes = _causes_of(p, result.decisions)
    for d in result.decisions:
        key = causes.get(str(d.id), "")
        if groups and groups[-1][0] == key:
            groups[-1][1].append(d)
        else:
            groups.append((key, [d]))
    filters = {k: v for k, v in (("task", task), ("reason", reason), ("state", state), ("cause", cause)) if v}
    pages = max(1, -(-result.count // PAGE))
    return render(request, "reviewer/queue.html", _ctx(
        request, p, result=result, groups=groups, filters=filters, page=page, pages=pages,
        prev_url=_qs(filters, page - 1) if page > 1 else None,
        next_url=_qs(filters, page + 1) if page < pages else None,
        reasons=[(r.value, REASON_LABELS[r.value]) for r in ReviewReason],
        counts=p.traces.review_counts(),
    ))


def _causes_of(p: Project, decisions: list[Decision]) -> dict[str, str]:
    if not decisions:
        return {}
    rows = p.store.read(
        p.id,
        "UNWIND $ids AS id MATCH (d:Decision {id: id}) RETURN d.id AS id, d.root_cause AS cause",
        {"ids": [str(d.id) for d in decisions]},
    )
    return {r["id"]: r["cause"] or "" for r in rows}


def _qs(filters: dict[str, str], page: int) -> str:
    return "?" + urlencode({**filters, "page": page})


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


# -- decision detail ------------------------------------------------------------------


@require_GET
@login_required
def decision(request: HttpRequest, project: str, decision_id: Any) -> HttpResponse:
    p = _project(request, project)
    d = _decision_or_404(p, decision_id)
    return render(request, "reviewer/decision.html", _ctx(request, p, **_decision_context(p, d)))


def _decision_context(p: Project, d: Decision, **forms: Any) -> dict[str, Any]:
    after = _int(None, -1, minimum=-1)
    supports = [_support_view(p, s) for s in d.supports]
    depends = p.traces.get_decisions([str(s.decision_id) for s in d.supports if isinstance(s, DecisionSupport)])
    return {
        "d": d,
        "supports": supports,
        "history": p.traces.list_support_history(str(d.id), after_ordinal=after, limit=50),
        "revisions": p.traces.list_revisions(str(d.id)),
        "depends_on": list(depends.values()),
        "dependants": p.traces.list_dependants(str(d.id), limit=50),
        "reaffirm_form": forms.get("reaffirm") or ReaffirmForm(initial={"request_id": new_request_id()}),
        "reject_form": forms.get("reject") or RejectForm(initial={"request_id": new_request_id()}),
        "supersede_form": forms.get("supersede") or _supersede_form(p, d),
        "messages_for": forms.get("error"),
        "error_form": forms.get("error_form"),
    }


def _support_view(p: Project, s: Any) -> dict[str, Any]:
    view: dict[str, Any] = {"s": s, "kind": s.kind}
    if isinstance(s, DocumentSupport):
        info = p.graph.get_document(s.document_key)
        recorded = p.graph.version_text(s.document_key, s.recorded_activation_seq or 1) or ""
        start, end = s.char_start, s.char_end
        if start is None:
            got = p.graph.fetch(s.evidence_id)
            start, end = got.char_start or 0, got.char_end or 0
        passage = recorded[start:end]
        view.update(passage=passage, document_key=s.document_key)
        if info is None or info.state.value == "deleted":
            view.update(state="removed", current_text=None, diff=None)
        else:
            current = p.graph.version_text(s.document_key, info.activation_seq) or ""
            if info.activation_seq == s.recorded_activation_seq:
                view.update(state="current", current_text=None, diff=None)
            else:
                view.update(
                    state="changed" if passage not in current else "moved",
                    current_version=info.activation_seq,
                    diff=word_diff(recorded, current),
                )
    elif isinstance(s, EventSupport):
        got = p.history.fetch_event(s.task_name, s.seq)
        if not got.found or got.event is None:
            view.update(state="removed")
        elif got.event.redacted_at is not None:
            view.update(state="redacted", event=got.event)
        else:
            view.update(state="current", event=got.event)
    else:
        found = p.traces.get_decision(str(s.decision_id))
        dep = found.decision
        if dep is None:
            view.update(state="removed")
        else:
            flagged = dep.status.value != "active" or dep.review_state is not ReviewState.clear
            view.update(state="changed" if flagged else "current", decision=dep)
    return view


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


def _support_choices(p: Project, d: Decision) -> list[tuple[str, str]]:
    """The current supports as the reviewer may keep them, cited at the
    current text where the passage is still there."""
    choices = []
    for s in d.supports:
        if isinstance(s, DocumentSupport):
            info = p.graph.get_document(s.document_key)
            if info is None or info.state.value != "current":
                continue
            evidence = s.evidence_id
            if info.activation_seq != s.recorded_activation_seq:
                recorded = p.graph.version_text(s.document_key, s.recorded_activation_seq or 1) or ""
                current = p.graph.version_text(s.document_key, info.activation_seq) or ""
                passage = recorded[(s.char_start or 0):(s.char_end or 0)]
                at = current.find(passage) if passage else -1
                if at < 0:
                    continue
                evidence = p.graph.span_evidence_id(s.document_key, at, at + len(passage))
            choices.append((evidence, f"{s.document_key}: “{_clip(p.graph.fetch(evidence).text)}”"))
        elif isinstance(s, EventSupport):
            choices.append((f"event {s.task_name} {s.seq}", f"event {s.seq} of {s.task_name}"))
        elif isinstance(s, DecisionSupport):
            choices.append((f"decision {s.decision_id}", f"decision {s.decision_id}"))
    return choices


def _clip(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _supersede_form(p: Project, d: Decision, data: Any = None) -> SupersedeForm:
    choices = _support_choices(p, d)
    initial = {
        "request_id": new_request_id(), "conclusion": d.conclusion, "rationale": d.rationale,
        "assumptions": "\n".join(d.assumptions), "open_questions": "\n".join(d.open_questions),
        "keep": [value for value, _ in choices],
    }
    return SupersedeForm(data, initial=initial, choices=choices)


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
                return [], [], f"“{_clip(token, 60)}” is not an evidence id, “event TASK SEQ” or “decision ID”."
            got = p.graph.fetch(parts[0])
            if got.status is not FetchStatus.ok:
                return [], [], f"The passage “{_clip(token, 60)}” cannot be read in full ({got.status.value})."
            inputs.append({"kind": "document", "evidence_id": parts[0]})
            fetched.append(got)
        else:
            return [], [], f"“{_clip(token, 60)}” is not an evidence id, “event TASK SEQ” or “decision ID”."
    return inputs, fetched, None


# -- actions --------------------------------------------------------------------------


def _after_action(request: HttpRequest, p: Project, d: Decision, note: str) -> HttpResponse:
    if request.htmx:
        fresh = p.traces.get_decision(str(d.id)).decision or d
        response = render(request, "reviewer/_decision_card.html", _ctx(
            request, p, d=fresh, note=note, counts=p.traces.review_counts(), oob=True,
        ))
        return response
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
        return render(request, "reviewer/_decision_card.html", _ctx(
            request, p, d=d, forms={form_name: form}, error=sentence, error_form=form_name,
        ), status=200)
    context = _decision_context(p, d, **{form_name: form, "error": sentence, "error_form": form_name})
    return render(request, "reviewer/decision.html", _ctx(request, p, **context), status=400)


def _decision_action(
    request: HttpRequest, project: str, decision_id: Any, name: str, form_class: Any, invalid: str,
    act: Callable[[Project, Decision, dict[str, Any]], Any], done: str,
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
        request, project, decision_id, "reaffirm", ReaffirmForm, "Check the form.",
        lambda p, d, data: p.traces.reaffirm_decision(
            str(d.id), explanation=data["explanation"], request_id=data["request_id"]),
        "Reaffirmed: the decision is clear again.",
    )


@require_POST
@login_required
def reject(request: HttpRequest, project: str, decision_id: Any) -> HttpResponse:
    return _decision_action(
        request, project, decision_id, "reject", RejectForm, "Say why the decision is rejected.",
        lambda p, d, data: p.traces.reject_decision(str(d.id), reason=data["reason"], request_id=data["request_id"]),
        "Rejected.",
    )


@require_POST
@login_required
def supersede(request: HttpRequest, project: str, decision_id: Any) -> HttpResponse:
    p = _project(request, project)
    access.require(request.user, access.REVIEWER)
    d = _decision_or_404(p, decision_id)
    form = SupersedeForm(request.POST, choices=_support_choices(p, d))
    if not form.is_valid():
        return _refused(request, p, d, "supersede", form, "Check the fields marked below.")
    tokens = list(form.cleaned_data["keep"]) + form.added()
    inputs, fetched, problem = _support_inputs(p, tokens)
    if problem:
        return _refused(request, p, d, "supersede", form, problem)
    result = p.traces.supersede_decision(
        str(d.id), conclusion=form.cleaned_data["conclusion"], rationale=form.cleaned_data["rationale"],
        explanation=form.cleaned_data["explanation"], assumptions=form.assumption_list(),
        open_questions=form.question_list(), supports=inputs, fetched=fetched,
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


@require_POST
@login_required
def sweep(request: HttpRequest, project: str) -> HttpResponse:
    """Run the review on (stewards): up to 50 batches of 100."""
    p = _project(request, project)
    access.require(request.user, access.STEWARD)
    moved = 0
    for _ in range(50):
        step = p.traces.continue_decision_review()
        moved += step.moved
        if not step.moved or not step.more:
            break
    messages.success(request, f"Review moved {moved} queued decisions on.")
    return redirect("overview", project=p.id)


# -- conflicts, tasks, events ------------------------------------------------------------


@require_GET
@login_required
def conflicts(request: HttpRequest, project: str) -> HttpResponse:
    p = _project(request, project)
    after = _param(request.GET, "after", 500) or None
    found = p.traces.list_conflicts(max_groups=CONFLICT_PAGE, after_key=after)
    next_url = "?" + urlencode({"after": found.groups[-1].choice_key}) if found.truncated and found.groups else None
    return render(request, "reviewer/conflicts.html", _ctx(request, p, conflicts=found, next_url=next_url))


@require_GET
@login_required
def tasks(request: HttpRequest, project: str) -> HttpResponse:
    p = _project(request, project)
    q = _param(request.GET, "q", 200).strip() or None
    after = _param(request.GET, "after") or None
    found, more = p.history.list_tasks(search=q, after_name=after, limit=50)
    next_url = "?" + urlencode({**({"q": q} if q else {}), "after": found[-1].name}) if more and found else None
    return render(request, "reviewer/tasks.html", _ctx(request, p, tasks=found, q=q or "", next_url=next_url))


@require_GET
@login_required
def task(request: HttpRequest, project: str) -> HttpResponse:
    p = _project(request, project)
    name = _param(request.GET, "name")
    found = p.history.get_task(name)
    if not found.found or found.view is None:
        raise Http404("no such task")
    view = found.view
    states = [(state.value, view.steps[state], view.step_counts[state]) for state in StepState]
    return render(request, "reviewer/task.html", _ctx(request, p, v=view, states=states, name=name))


@require_GET
@login_required
def events(request: HttpRequest, project: str) -> HttpResponse:
    p = _project(request, project)
    name = _param(request.GET, "task")
    after = _int(request.GET.get("after"), 0, maximum=10**12)
    page = p.history.list_events(name, after_seq=after, limit=50)
    if not page.found:
        raise Http404("no such task")
    next_url = "?" + urlencode({"task": name, "after": page.next_after_seq}) if page.truncated else None
    purged = _disk_purge_states(p, [str(e.id) for e in page.events if e.redacted_at is not None])
    return render(request, "reviewer/events.html", _ctx(request, p, page=page, name=name, next_url=next_url,
                                                        purged=purged))


def _disk_purge_states(p: Project, event_ids: list[str]) -> dict[str, Any]:
    """Redacted event id -> when its text left the store's files (None: pending)."""
    from datetime import datetime

    states = event_purge_states(p.store, p.id, event_ids)
    return {k: datetime.fromisoformat(v) if v else None for k, v in states.items()}


@require_http_methods(["GET", "POST"])
@login_required
def redact(request: HttpRequest, project: str) -> HttpResponse:
    p = _project(request, project)
    access.require(request.user, access.STEWARD)
    source = request.POST if request.method == "POST" else request.GET
    event_id = _param(source, "event_id", 100)
    if not c.is_uuid(event_id):
        raise Http404("no such event")
    rows = p.store.read(
        p.id, "MATCH (e:Event {id: $id}) WHERE e.project_id = $p MATCH (t:Task {id: e.task_id}) "
        "RETURN t.name AS task, e.seq AS seq", {"id": event_id.lower(), "p": p.id},
    )
    if not rows:
        raise Http404("no such event")
    task_name, seq = rows[0]["task"], rows[0]["seq"]
    event = p.history.fetch_event(task_name, seq).event
    if request.method == "GET":
        form = RedactForm(initial={"request_id": new_request_id(), "event_id": event_id})
        return render(request, "reviewer/redact.html", _ctx(request, p, form=form, event=event, task_name=task_name))
    form = RedactForm(request.POST)
    error = None
    if form.is_valid():
        result = p.retention.redact_event(str(form.cleaned_data["event_id"]), reason=form.cleaned_data["reason"],
                                          request_id=form.cleaned_data["request_id"])
        if result.recorded:
            flagged = len(result.affected_decision_ids)
            Purger.kick(p.store)  # the files are purged in the background; the page says when
            messages.success(request, f"Event {seq} redacted; {flagged} citing decision(s) flagged for review. "
                                      "Removal from disk is pending.")
            return redirect(reverse("events", kwargs={"project": p.id}) + "?" + urlencode({"task": task_name}))
        error = RETENTION_ERRORS[result.error]
    return render(request, "reviewer/redact.html", _ctx(
        request, p, form=form, event=event, task_name=task_name, error=error or "Check the form."), status=400)


@require_http_methods(["GET", "POST"])
@login_required
def delete_task(request: HttpRequest, project: str) -> HttpResponse:
    p = _project(request, project)
    access.require(request.user, access.STEWARD)
    name = _param(request.POST if request.method == "POST" else request.GET, "name")
    include = request.POST.get("include_decisions") == "on" if request.method == "POST" else True
    preview = p.retention.preview_delete_task(name, include_decisions=include)
    if not preview.found:
        raise Http404("no such task")
    keep_preview = p.retention.preview_delete_task(name, include_decisions=False)
    if request.method == "GET":
        form = DeleteTaskForm(initial={"request_id": new_request_id(), "include_decisions": True})
        return render(request, "reviewer/delete_task.html", _ctx(
            request, p, form=form, name=name, preview=preview, keep_preview=keep_preview))
    form = DeleteTaskForm(request.POST)
    error = None
    if form.is_valid():
        result = p.retention.delete_task(name, include_decisions=form.cleaned_data["include_decisions"],
                                         reason=form.cleaned_data["reason"], request_id=form.cleaned_data["request_id"])
        if result.recorded:
            Purger.kick(p.store)
            messages.success(request, f"Task “{name}” deleted; {len(result.affected_decision_ids)} decision(s) "
                                      "elsewhere flagged for review. Removal from disk is pending.")
            return redirect("tasks", project=p.id)
        error = RETENTION_ERRORS[result.error]
    return render(request, "reviewer/delete_task.html", _ctx(
        request, p, form=form, name=name, preview=preview, keep_preview=keep_preview,
        error=error or "Check the form."), status=400)


# -- documents and activity ------------------------------------------------------------


@require_GET
@login_required
def document(request: HttpRequest, project: str) -> HttpResponse:
    p = _project(request, project)
    key = _param(request.GET, "key")
    info = p.graph.get_document(key) if key else None
    if info is None:
        raise Http404("no such document")
    versions = p.graph.list_versions(key)
    rows = p.store.read(
        p.id,
        "MATCH (doc:Document {id: $id}) WITH doc MATCH (doc)<-[r:CITES_DOC]-(d:Decision) "
        "RETURN r.seq AS seq, d.id AS id, d.choice_key AS key, d.task_name AS task, d.review_state AS state "
        "ORDER BY seq DESC, key LIMIT 200",
        {"id": str(info.node_id)},
    )
    citing: dict[int, list[dict[str, Any]]] = {}
    for r in rows:
        citing.setdefault(r["seq"], []).append(r)
    current = p.graph.version_text(key, info.activation_seq) if info.state.value == "current" else None
    return render(request, "reviewer/document.html", _ctx(
        request, p, info=info, versions=[(v, citing.get(v.activation_seq, [])) for v in versions], text=current,
    ))


@require_GET
@login_required
def activity(request: HttpRequest, project: str) -> HttpResponse:
    p = _project(request, project)
    before = _param(request.GET, "before", 100) or None
    entries = p.activity.list(before=before, limit=50)
    next_url = "?" + urlencode({"before": ActivityLog.cursor(entries[-1])}) if len(entries) == 50 else None
    return render(request, "reviewer/activity.html", _ctx(request, p, entries=entries, next_url=next_url))
