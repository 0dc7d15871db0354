"""manage.py up (the newcomer's set-up command), review_sweep, import_traces, export_traces."""

from __future__ import annotations

import uuid
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.test import override_settings

from reviewer.store import reset_store


@pytest.mark.django_db
def test_up_prepares_a_local_dashboard_with_demo_data_and_a_login_per_role(settings) -> None:  # type: ignore[no-untyped-def]
    from reviewer import demo
    from reviewer.access import role_of
    from reviewer.store import get_store

    reset_store()
    for project in demo.PROJECTS:
        get_store().drop_project(project)
    with override_settings(DEBUG=True):
        first, second = StringIO(), StringIO()
        call_command("up", "--no-run", stdout=first)
        call_command("up", "--no-run", stdout=second)
    text = first.getvalue()
    assert "Reviewer is at http://127.0.0.1:8000/" in text
    logins = [line for line in text.splitlines() if line.startswith("Demo login: ")]
    assert [line.split()[2] for line in logins] == ["demo-viewer", "demo-reviewer", "demo-steward"]
    for line in logins:
        name, password = line.split()[2], line.split()[4]
        user = User.objects.get(username=name)
        assert user.check_password(password)
        assert all(role_of(user, p) == name.split("-")[1] for p in demo.PROJECTS)
        assert set(user.project_grants.values_list("project_id", flat=True)) == set(demo.PROJECTS)
    assert all(line in second.getvalue() for line in logins)  # printed again, no new users
    assert User.objects.count() == 3
    assert set(demo.PROJECTS) <= set(get_store().list_projects())


@pytest.mark.django_db
def test_up_creates_no_demo_login_outside_local_debug_use() -> None:
    reset_store()
    out = StringIO()
    call_command("up", "--no-run", stdout=out)  # DEBUG is off in the test settings
    assert "Demo login" not in out.getvalue()
    assert not User.objects.exists()


@pytest.mark.django_db
def test_review_sweep_finishes_the_queue_and_respects_a_limit() -> None:
    import uuid

    from core.decisions import DecisionTraces
    from core.history import ConversationHistory
    from core.knowledge import Graph
    from reviewer.store import get_store

    reset_store()
    store, project = get_store(), "sweep-" + uuid.uuid4().hex[:6]
    try:
        ConversationHistory(store, project_id=project, agent_id="a").create_task("t", goal="g")
        graph = Graph(store, project_id=project, agent_id="a")
        traces = DecisionTraces(store, project_id=project, agent_id="a")
        graph.add("doc", "the passage")
        cite = {"kind": "document", "evidence_id": graph.span_evidence_id("doc", 0, 11)}
        parent = traces.load_decisions(
            [{"task_name": "t", "choice_key": "root", "conclusion": "c", "rationale": "r", "supports": [cite]}]
        )[0]
        kids = traces.load_decisions(
            [
                {
                    "task_name": "t",
                    "choice_key": f"k{i}",
                    "conclusion": "c",
                    "rationale": "r",
                    "supports": [{"kind": "decision", "decision_id": str(parent.id)}],
                }
                for i in range(5)
            ]
        )
        graph.update("doc", "changed")
        out = StringIO()
        call_command("review_sweep", project=[project], limit=2, stdout=out)
        assert f"{project}: moved 2 queued decisions" in out.getvalue() and "3 still queued" in out.getvalue()
        out = StringIO()
        call_command("review_sweep", project=[project], stdout=out)
        assert "moved 3 queued decisions" in out.getvalue() and "0 still queued" in out.getvalue()
        assert all(traces.get_decision(str(k.id)).decision.review_reason.value == "dependency_review" for k in kids)
    finally:
        store.drop_project(project)


def test_import_and_export_commands_report_lines_and_round_trip(tmp_path: Any, capsys: Any) -> None:
    import json

    from django.core.management.base import CommandError

    from core.history import ConversationHistory
    from reviewer.store import get_store

    project = "cmd-" + uuid.uuid4().hex[:8]
    good = [
        {"op": "create_task", "project": project, "task": "pick-db", "goal": "Pick a database"},
        {
            "op": "record_event",
            "project": project,
            "task": "pick-db",
            "kind": "message",
            "role": "user",
            "payload": "Which database?",
        },
    ]
    path = tmp_path / "traces.jsonl"
    path.write_text("\n".join([json.dumps(good[0]), "{oops", json.dumps(good[1])]) + "\n")
    with pytest.raises(CommandError, match="1 line"):
        call_command("import_traces", str(path))
    captured = capsys.readouterr()
    assert "line 2: not JSON" in captured.err and "2 lines applied, 1 failed" in captured.out
    out = tmp_path / "export.jsonl"
    call_command("export_traces", project=project, output=out)
    lines = out.read_text().splitlines()
    assert [json.loads(x)["op"] for x in lines] == ["create_task", "record_event"]
    copy = project + "-copy"
    call_command("import_traces", str(out), project=copy)
    call_command("import_traces", str(out), project=copy)  # twice: nothing new
    copied = ConversationHistory(get_store(), project_id=copy, agent_id="t").list_events("pick-db")
    assert [e.payload for e in copied.events] == ["Which database?"]
    with pytest.raises(CommandError, match="no project"):
        call_command("export_traces", project="nothing-here")
    for p in (project, copy):
        get_store().drop_project(p)


def test_seed_demo_large_loads_with_progress_and_refuses_to_load_twice(capsys: Any) -> None:
    from django.core.management.base import CommandError

    from reviewer import demo_large
    from reviewer.store import get_store

    try:
        call_command("seed_demo", size="large", decisions=300, events=1_200, reset=True)
        captured = capsys.readouterr()
        assert "300 decisions" in captured.out and "1,200 events" in captured.out and "peaked at" in captured.out
        assert "decisions" in captured.err and "] 3/3" in captured.err  # the progress bar reached its end
        with pytest.raises(CommandError, match="--reset"):
            call_command("seed_demo", size="large", decisions=300, events=1_200)
    finally:
        get_store().drop_project(demo_large.PROJECT)
