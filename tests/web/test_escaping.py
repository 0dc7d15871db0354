"""Agent-written text is escaped everywhere, structurally: every route of the
URL configuration is visited (as the steward, who sees every form; plain and
htmx where a route answers both) over a project whose every agent-written
field holds hostile markup, and no response holds any of it raw. Each visit
also names fields the page must show, so a page that stops showing them (and
so proves nothing) fails too. A route added later fails here until it has a
visit in ``visits`` and a place in ROUTES."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from django.test import Client
from django.urls import URLPattern, get_resolver
from django.utils.html import escape

from core import _common as c
from core import _review
from core.comments import Discussion
from core.decisions import DecisionTraces
from core.history import ConversationHistory
from core.knowledge import Graph
from core.retention import HistoryRetention
from reviewer.api.tokens import create_token
from reviewer.models import ApiToken
from reviewer.store import get_store, reset_store

from .conftest import make_user


def hostile(label: str) -> str:
    """Markup an agent might write, led by a label naming the field, with
    characters that reorder or hide text (a right-to-left override, an
    isolate, a zero-width space, a control character)."""
    return (
        f"{label}<script>alert(1)</script>\u202e\u2066\u200b\x07\"'><img src=x onerror=alert(2)>"
        f"{{{{ {label} }}}}{{% now 'Y' %}}"
    )


#: What must never reach a page raw.
RAW = ("<script>alert(1)", "<img src=x onerror", "\"'><img")
#: Characters that must reach a page only as a visible marker (⟨U+202E⟩).
HIDDEN = ("\u202e", "\u2066", "\u200b", "\x07")


def outside_form_values(body: str) -> str:
    """The page without what round-trips raw: form values (a textarea's text,
    a value attribute) and the picker's inert characters (kept raw, its
    offsets count them, inside ``<span class="cc">``)."""
    body = re.sub(r"<textarea[^>]*>.*?</textarea>", "", body, flags=re.S)
    body = re.sub(r'value="[^"]*"', "", body)
    return re.sub(r'<span class="cc" data-cc="U\+[0-9A-F]{4,6}">.</span>', "", body, flags=re.S)


def shown(label: str) -> str:
    """How a page shows the start of a hostile field: escaped (a page may
    clip the rest)."""
    return escape(f"{label}<script>")


@dataclass
class Hostile:
    project: str
    task: str
    goal: str
    other_task: str
    doc_key: str
    first: str  # flagged by its document; a dependant below it
    superseded: str  # the revision after it carries an explanation
    event: str  # the event with the hostile body
    comment: str = ""  # a hostile comment on ``first`` (issue 32), by a hostile name
    thread: str = ""


@pytest.fixture
def evil(db: None) -> Iterator[Hostile]:
    store = get_store()
    project = "esc-" + uuid.uuid4().hex[:8]
    agent = hostile("agent")
    history = ConversationHistory(store, project_id=project, agent_id=agent)
    graph = Graph(store, project_id=project, agent_id=hostile("ingester"))
    traces = DecisionTraces(store, project_id=project, agent_id=agent)
    retention = HistoryRetention(store, project_id=project, agent_id=hostile("steward"))
    task, other, doomed = hostile("task"), hostile("othertask"), hostile("doomedtask")
    history.create_task(task, goal=hostile("goal"))
    history.create_task(other, goal=hostile("othergoal"))
    history.create_task(doomed, goal=hostile("doomedgoal"))
    history.record_event(task, kind="message", role=hostile("role"), payload=hostile("payload"))
    history.record_event(task, kind="tool_call", name=hostile("toolname"), payload=hostile("secondpayload"))
    history.record_event(doomed, kind="note", payload="x")
    key = hostile("dockey")
    graph.add(key, "Intro. " + hostile("doctext") + " The passage.")
    text = graph.current_text(key)
    start = text.index("The passage.")
    evidence = graph.span_evidence_id(key, start, start + len("The passage."))
    event_1 = {"kind": "event", "task_name": task, "seq": 1}
    first = traces.record_decision(
        task,
        choice_key=hostile("choice"),
        conclusion=hostile("conclusion"),
        rationale=hostile("rationale"),
        assumptions=[hostile("assumption")],
        open_questions=[hostile("question")],
        supports=[{"kind": "document", "evidence_id": evidence}, event_1],
        fetched=[graph.fetch(evidence)],
    ).decision
    dependant = traces.record_decision(
        other,
        choice_key=hostile("depchoice"),
        conclusion=hostile("depconclusion"),
        rationale="r",
        supports=[{"kind": "decision", "decision_id": str(first.id)}],
    ).decision
    rival = traces.record_decision(  # the same choice in another task, another conclusion: a conflict
        other,
        choice_key=hostile("choice"),
        conclusion=hostile("rivalconclusion"),
        rationale="r",
        supports=[event_1],
    ).decision
    revised = traces.supersede_decision(
        str(rival.id),
        conclusion=hostile("revisedconclusion"),
        rationale="r",
        explanation=hostile("explanation"),
        supports=[event_1],
    ).decision
    rejected = traces.record_decision(other, choice_key="gone", conclusion="c", rationale="r", supports=[event_1])
    traces.reject_decision(str(rejected.decision.id), reason=hostile("rejectreason"))
    reaffirmed = traces.record_decision(other, choice_key="kept", conclusion="c", rationale="r", supports=[event_1])
    traces.reaffirm_decision(str(reaffirmed.decision.id), explanation=hostile("reaffirmexplanation"))
    history.set_step(
        task,
        name=hostile("step"),
        state="completed",
        result_basis="supported",
        result_supports=[event_1, {"kind": "document", "evidence_id": evidence}],
    )
    graph.update(key, "Preface " + hostile("newtext") + ". Intro. " + hostile("doctext") + " The passage.")
    traces.continue_decision_review()  # the dependant flagged through its dependency
    retention.redact_event(c.event_id(c.task_id(project, task), 2), reason=hostile("redactreason"))
    retention.delete_task(doomed, reason=hostile("deletereason"))
    store.transact(  # news for the steward below, from a hostile actor about a hostile decision
        project,
        lambda tx: _review.log_activity(
            tx, project, hostile("noticeactor"), "assign", "decision", str(first.id), hostile("noticesummary"),
            None, c.iso(c.now()), actor_kind="person", notify=["stella"],
        ),
    )  # fmt: skip
    assert dependant.id and revised is not None
    said = (
        Discussion(store, project_id=project, agent_id=hostile("commenter"))
        .post_comment(str(first.id), hostile("commentbody") + "\n@" + hostile("mention"), mentions=[hostile("mention")])
        .comment
    )
    yield Hostile(
        project,
        task,
        hostile("goal"),
        other,
        key,
        str(first.id),
        str(revised.id),
        c.event_id(c.task_id(project, task), 1),
        said.id,
        said.thread_id,
    )
    get_store().drop_project(project)
    reset_store()


@pytest.fixture
def steward(evil: Hostile) -> Client:
    client = Client()
    client.force_login(make_user("stella", "steward", [evil.project]))
    return client


# A visit: (method, path (after /p/<project>/ unless it starts with /), data,
# follow redirects, htmx too, the labels the response must show escaped).
Visit = tuple[str, str, dict[str, Any], bool, bool, tuple[str, ...]]


def _discussion_visits(h: Hostile, decision: str, comment: str) -> dict[str, list[Visit]]:
    """The discussion's routes (issue 32): a hostile comment, by a hostile
    name, mentioning a hostile name, on every page that shows it."""
    said = ("commentbody", "commenter")
    typed = {"body": hostile("typedcomment"), "request_id": "esc-c1"}
    return {
        "post_comment": [
            ("POST", f"{decision}comments", typed, True, True, ("typedcomment", *said)),
            ("POST", f"{decision}comments", {**typed, "body": "x" * 10_001}, False, True, said),
        ],
        "edit_comment": [
            ("GET", f"{comment}edit", {}, False, False, ()),
            ("POST", f"{comment}edit", {"body": hostile("typededit"), "request_id": "esc-c2"}, False, False, ()),
        ],
        "delete_comment": [("POST", f"{comment}delete", {"request_id": "esc-c3"}, True, True, ("commenter",))],
        "redact_comment": [
            ("GET", f"{comment}redact", {}, False, False, said),
            (
                "POST",
                f"{comment}redact",
                {"reason": hostile("typedredact"), "request_id": "esc-c4"},
                False,
                False,
                said,
            ),
        ],
        "resolve_thread": [("POST", f"threads/{h.thread}/resolve", {"request_id": "esc-c5"}, True, True, said)],
        "mention_people": [("GET", "people/mentions", {"q": hostile("prefix")}, False, False, ())],
    }


def visits(h: Hostile) -> dict[str, list[Visit]]:
    decision = f"decisions/{h.first}/"
    typed = {
        "explanation": hostile("typedexplanation"),
        "reason": hostile("typedreason"),
        "conclusion": hostile("typedconclusion"),
        "rationale": hostile("typedrationale"),
        "assumptions": hostile("typedassumption"),
        "open_questions": hostile("typedquestion"),
        "add": hostile("typedsupport"),
    }
    comment = f"comments/{h.comment}/"
    return {
        **_discussion_visits(h, decision, comment),
        "home": [("GET", "/", {}, True, False, ("dockey", "redactreason"))],  # one project: its overview
        "healthz": [("GET", "/healthz", {}, False, False, ())],
        "login": [
            ("GET", "/login/", {}, False, False, ()),
            (
                "POST",
                "/login/",
                {"username": hostile("typedusername"), "password": "x"},
                False,
                False,
                ("typedusername",),
            ),
        ],
        "logout": [("POST", "/logout/", {}, True, False, ())],
        # single sign-on is off here (404); test_oidc.py checks its pages escape what the provider sends back
        "oidc_authentication_init": [("GET", "/oidc/login/", {"next": hostile("ssonext")}, False, False, ())],
        "oidc_authentication_callback": [
            ("GET", "/oidc/callback/", {"error": hostile("ssoerror"), "state": "x"}, False, False, ())
        ],
        "overview": [("GET", "", {}, False, False, ("dockey", "redactreason", "deletereason", "doomedtask"))],
        "queue": [
            ("GET", "review/", {}, False, True, ("conclusion", "depconclusion", "task", "othertask")),
            ("GET", "review/", {"task": hostile("filtertask"), "cause": hostile("filtercause")}, False, False, ()),
        ],
        "sweep": [("POST", "review/sweep", {}, True, True, ())],
        "group": [
            (
                "GET",
                "review/group",
                {"cause": f"document:{h.doc_key}:2", "action": "reaffirm"},
                False,
                False,
                ("dockey",),
            ),
            (
                "POST",
                "review/group",
                {
                    "cause": f"document:{h.doc_key}:2",
                    "action": "reject",
                    "confirm": "on",
                    "note": hostile("typedgroupnote"),
                    "request_id": "esc-5",
                    "decision": h.first,
                },
                False,
                False,
                ("dockey",),
            ),
        ],
        "queue_act": [
            (
                "POST",
                f"review/{h.first}/reject",
                {
                    "request_id": "esc-6",
                    "reason": hostile("typedreason"),
                    "cause": hostile("flowcause"),
                    "filters": "task=x",
                },
                True,
                True,
                ("choice",),
            )
        ],
        "decision": [
            (
                "GET",
                decision,
                {},
                False,
                False,
                (
                    "conclusion",
                    "rationale",
                    "assumption",
                    "question",
                    "choice",
                    "dockey",
                    "task",
                    "agent",
                    "depchoice",
                    "othertask",
                ),
            ),
            (
                "GET",
                f"decisions/{h.superseded}/",
                {},
                False,
                False,
                ("explanation", "revisedconclusion", "rivalconclusion", "othertask"),
            ),
        ],
        "decision_text": [
            ("GET", decision + "text", {"key": h.doc_key}, False, False, ("dockey", "newtext", "doctext"))
        ],
        "decision_pick": [
            ("GET", decision + "pick", {"index": 0, "start": 0, "end": 10_000}, False, False, ("newtext", "doctext"))
        ],
        "reaffirm": [("POST", decision + "reaffirm", {"request_id": "esc-1", **typed}, True, True, ("conclusion",))],
        "supersede": [
            (
                "POST",
                decision + "supersede",
                {"request_id": "esc-2", **typed, "explanation": ""},
                False,
                True,
                ("typedconclusion", "typedrationale", "typedassumption", "typedquestion"),
            )
        ],
        "reject": [("POST", decision + "reject", {**typed}, False, True, ("conclusion", "typedreason"))],
        "cite_instead": [
            (
                "POST",
                decision + "cite-instead",
                {"request_id": "esc-5", "old": h.first, "new": h.superseded, "explanation": ""},
                False,
                False,
                ("conclusion", "choice", "depchoice"),
            )
        ],
        "conflicts": [
            ("GET", "conflicts/", {}, False, False, ("choice", "conclusion", "revisedconclusion", "task", "othertask"))
        ],
        "tasks": [
            ("GET", "tasks/", {}, False, False, ("task", "goal", "othertask")),
            ("GET", "tasks/", {"q": hostile("query")}, False, False, ()),
        ],
        "task": [("GET", "task/", {"name": h.task}, False, False, ("task", "goal", "step", "conclusion", "choice"))],
        "delete_task": [
            ("GET", "task/delete", {"name": h.task}, False, False, ("task",)),
            (
                "POST",
                "task/delete",
                {"name": h.task, "reason": hostile("typeddeletereason"), "request_id": "esc-3"},
                False,
                False,
                ("task", "typeddeletereason"),
            ),
        ],
        "events": [("GET", "events/", {"task": h.task}, False, False, ("payload", "role", "toolname", "agent"))],
        "redact": [
            ("GET", "events/redact", {"event_id": h.event}, False, False, ("payload", "task")),
            (
                "POST",
                "events/redact",
                {"event_id": h.event, "reason": hostile("typedredactreason"), "request_id": "esc-4"},
                False,
                False,
                ("payload", "typedredactreason"),
            ),
        ],
        "document": [
            ("GET", "document/", {"key": h.doc_key}, False, False, ("dockey", "doctext", "newtext", "choice", "task"))
        ],
        "activity": [
            (
                "GET",
                "activity/",
                {},
                False,
                False,
                (
                    "rejectreason",
                    "reaffirmexplanation",
                    "explanation",
                    "redactreason",
                    "deletereason",
                    "doomedtask",
                    "steward",
                ),
            )
        ],
        # the log's downloads: attachments of data, never a page (every row's text as written)
        "activity_csv": [("GET", "activity/download.csv", {}, False, False, ())],
        "activity_jsonl": [("GET", "activity/download.jsonl", {}, False, False, ())],
        "tokens": [
            (
                "POST",
                "tokens/",
                {"name": hostile("tokenname"), "agent_id": "esc-bot", "role": "agent"},
                False,
                False,
                ("tokenname",),
            ),
            (
                "POST",
                "tokens/",
                {"name": "n", "agent_id": hostile("typedagent"), "role": "agent"},
                False,
                False,
                ("typedagent",),
            ),
        ],
        "revoke_token": [("POST", f"tokens/{_hostile_token(h).pk}/revoke", {}, True, False, ("rvkname",))],
        "inbox": [
            ("GET", "/inbox/", {}, False, False, ("noticeactor", "noticesummary")),
            ("GET", "/inbox/", {"project": h.project, "before": hostile("inboxcursor")}, False, False, ()),
        ],
        "inbox_read": [
            ("POST", "/inbox/read", {"project": h.project, "entry": hostile("entry"), "at": "x"}, True, False, ())
        ],
        "inbox_read_all": [("POST", "/inbox/read-all", {"project": h.project, "scope": "one"}, True, False, ())],
        "inbox_preferences": [("GET", "/inbox/settings", {}, False, False, ())],
        "mark_seen": [("POST", "seen", {}, True, False, ("dockey",))],
        "people": [
            ("GET", "people/", {}, False, False, (_hostile_person(h),)),
            ("POST", "people/", {"username": hostile("typedperson"), "role": "viewer"}, False, False, ("typedperson",)),
        ],
        "claim_target": [
            ("GET", "claims/", {"kind": "decision", "target": h.first}, False, False, ("conclusion", "choice"))
        ],
        "claim_action": [
            (
                "POST",
                "claims/assign",
                {"kind": "decision", "target": h.first, "assignee": hostile("typedassignee")},
                False,
                True,
                ("typedassignee",),
            )
        ],
        "claim_lease": [("POST", "claims/lease", {"minutes": hostile("typedminutes")}, True, False, ("typedminutes",))],
    }


def _hostile_person(h: Hostile) -> str:
    """A person with a hostile name and a role in the project; the label."""
    from django.contrib.auth.models import User

    name = hostile("personname")[:150]
    if not User.objects.filter(username=name).exists():
        make_user(name, "reviewer", [h.project])
    return "personname"


def _hostile_token(h: Hostile) -> ApiToken:
    found = ApiToken.objects.filter(project_id=h.project, agent_id="esc-revoked").first()
    return found or create_token(project_id=h.project, name=hostile("rvkname"), agent_id="esc-revoked")[0]


def route_names() -> set[str]:
    return {p.name for p in get_resolver().url_patterns if isinstance(p, URLPattern) and p.name}


#: The routes the sweep visits: every one of the URL configuration.
ROUTES = sorted(
    [
        "home",
        "healthz",
        "login",
        "logout",
        "oidc_authentication_init",
        "oidc_authentication_callback",
        "overview",
        "queue",
        "sweep",
        "group",
        "queue_act",
        "decision",
        "decision_text",
        "decision_pick",
        "reaffirm",
        "supersede",
        "reject",
        "cite_instead",
        "conflicts",
        "tasks",
        "task",
        "delete_task",
        "events",
        "redact",
        "document",
        "activity",
        "activity_csv",
        "activity_jsonl",
        "tokens",
        "revoke_token",
        "people",
        "inbox",
        "inbox_read",
        "inbox_read_all",
        "inbox_preferences",
        "mark_seen",
        "claim_target",
        "claim_action",
        "claim_lease",
        "post_comment",
        "edit_comment",
        "delete_comment",
        "redact_comment",
        "resolve_thread",
        "mention_people",
    ]
)


def test_every_route_is_swept(evil: Hostile) -> None:
    assert route_names() == set(ROUTES) == set(visits(evil)), "a new route needs a visit in visits() and ROUTES"


def _responses(client: Client, h: Hostile, visit: Visit) -> Iterator[tuple[str, Any]]:
    method, path, data, follow, htmx, _labels = visit
    url = path if path.startswith("/") else f"/p/{h.project}/{path}"
    call: Callable[..., Any] = client.get if method == "GET" else client.post
    yield url, call(url, data, follow=follow)
    if htmx:
        yield url + " (htmx)", call(url, data, follow=follow, HTTP_HX_REQUEST="true")


@pytest.mark.parametrize("route", ROUTES)
def test_every_route_shows_agent_text_only_escaped(evil: Hostile, steward: Client, route: str) -> None:
    for visit in visits(evil)[route]:
        client = Client() if route in ("login", "oidc_authentication_init", "oidc_authentication_callback") else steward
        for where, response in _responses(client, evil, visit):
            assert response.status_code < 500, where
            if response.streaming:  # a download: an attachment no browser renders as a page
                assert response["Content-Disposition"].startswith("attachment"), where
                assert "html" not in response["Content-Type"] and response["X-Content-Type-Options"] == "nosniff"
                assert b"".join(response.streaming_content), where
                continue
            body = response.content.decode()
            for raw in RAW:
                assert raw not in body, (where, raw)
            rest = outside_form_values(body)
            for ch in HIDDEN:
                assert ch not in rest, (
                    where,
                    f"U+{ord(ch):04X}",
                    rest[max(0, rest.find(ch) - 200) : rest.find(ch) + 50],
                )
            if visit[5] and route != "login":  # login shows a typed name only in its field
                assert "⟨U+202E⟩⟨U+2066⟩⟨U+200B⟩⟨U+0007⟩" in body, where  # shown, not obeyed
            for label in visit[5]:
                assert shown(label) in body, (where, label)
