"""ConversationHistory, rule by rule, on every backend (seed 000 and 001)."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest

from core.history import ConversationHistory
from core.models import (
    EventKind,
    StepKind,
    StepResultBasis,
    StepResultValidity,
    StepState,
    TaskStatus,
    WriteErrorCode,
)
from core.stores import GraphStore

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def history(store: GraphStore, project_id: str) -> ConversationHistory:
    return ConversationHistory(store, project_id=project_id, agent_id="planner")


@pytest.fixture
def task(history: ConversationHistory) -> str:
    assert history.create_task("pick-db", goal="Choose the database").recorded
    return "pick-db"


# -- ids ------------------------------------------------------------------------


def test_ids_are_derived_and_stable(history: ConversationHistory, task: str) -> None:
    created = history.create_task(task, goal="Choose the database").task
    assert created is not None
    ns = uuid.uuid5(uuid.NAMESPACE_URL, "https://reviewer.invalid/ids")
    assert str(created.id) == str(uuid.uuid5(ns, f"task\x1f{history.project_id}\x1f{task}"))
    event = history.record_event(task, kind="note", payload="hi").event
    assert event is not None
    assert str(event.id) == str(uuid.uuid5(ns, f"event\x1f{created.id}\x1f1"))
    step = history.set_step(task, name="read", state="not_started").step
    assert step is not None
    assert str(step.id) == str(uuid.uuid5(ns, f"step\x1f{created.id}\x1fread"))


def test_the_same_name_in_another_project_is_another_task(
    store: GraphStore, history: ConversationHistory, task: str
) -> None:
    other_project = history.project_id + "-other"
    other = ConversationHistory(store, project_id=other_project, agent_id="planner")
    try:
        assert other.get_task(task).found is False  # another project's task reads as not found
        assert other.list_events(task).found is False
        assert other.record_event(task, kind="note", payload="x").error is WriteErrorCode.task_not_found
        made = other.create_task(task, goal="something else")
        assert made.recorded and made.task is not None
        assert made.task.id != history.create_task(task, goal="Choose the database").task.id  # type: ignore[union-attr]
    finally:
        store.drop_project(other_project)


# -- tasks ------------------------------------------------------------------------


def test_create_task_records_author_status_and_zero_events(history: ConversationHistory) -> None:
    result = history.create_task("t", goal="g")
    assert result.recorded and result.error is None
    assert result.task is not None
    assert result.task.author == "planner"
    assert result.task.status is TaskStatus.open
    assert result.task.event_seq == 0
    assert result.task.project_id == history.project_id


def test_creating_an_existing_task_with_the_same_goal_returns_it(history: ConversationHistory, task: str) -> None:
    history.record_event(task, kind="note", payload="x")
    again = history.create_task(task, goal="Choose the database")
    assert again.recorded and again.task is not None
    assert again.task.event_seq == 1


def test_creating_an_existing_task_with_another_goal_is_refused(history: ConversationHistory, task: str) -> None:
    refused = history.create_task(task, goal="Something else")
    assert refused.recorded is False
    assert refused.error is WriteErrorCode.task_exists
    assert refused.task is None
    view = history.get_task(task).view
    assert view is not None and view.goal == "Choose the database"


# -- events -----------------------------------------------------------------------


def test_events_are_numbered_from_one_without_gaps(history: ConversationHistory, task: str) -> None:
    seqs = [history.record_event(task, kind="message", role="user", payload=f"m{i}").event.seq for i in range(5)]  # type: ignore[union-attr]
    assert seqs == [1, 2, 3, 4, 5]
    events = history.list_events(task).events
    assert [e.seq for e in events] == [1, 2, 3, 4, 5]
    assert [e.payload for e in events] == [f"m{i}" for i in range(5)]
    assert events[0].role == "user" and events[0].kind is EventKind.message and events[0].author == "planner"


def test_event_on_a_missing_task_is_refused(history: ConversationHistory) -> None:
    result = history.record_event("nope", kind="note", payload="x")
    assert (result.recorded, result.error) == (False, WriteErrorCode.task_not_found)


def test_concurrent_threads_get_distinct_gapless_numbers(history: ConversationHistory, task: str) -> None:
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            for i in range(15):
                assert history.record_event(task, kind="note", payload=f"{n}-{i}").recorded
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    events = history.list_events(task, limit=200).events
    assert [e.seq for e in events] == list(range(1, 61))
    assert sorted(e.payload for e in events) == sorted(f"{n}-{i}" for n in range(4) for i in range(15))


WRITER = """
import sys
from core.stores import open_store
from core.history import ConversationHistory
store = open_store(sys.argv[1])
h = ConversationHistory(store, project_id=sys.argv[2], agent_id="proc")
for i in range(20):
    assert h.record_event(sys.argv[3], kind="note", payload=sys.argv[4] + str(i)).recorded
store.close()
"""


def test_concurrent_processes_get_distinct_gapless_numbers(
    store: GraphStore, history: ConversationHistory, task: str
) -> None:
    url = store.url
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, url, history.project_id, task, f"p{n}-"], cwd=ROOT)
        for n in range(3)
    ]
    assert all(p.wait(timeout=120) == 0 for p in procs)
    events = history.list_events(task, limit=200).events
    assert [e.seq for e in events] == list(range(1, 61))
    assert len({e.payload for e in events}) == 60


def test_a_long_payload_is_cut_and_hashed_whole(history: ConversationHistory, task: str) -> None:
    full = "é" * 20_000 + "x" * 15_000  # 35,000 characters, multi-byte in UTF-8
    event = history.record_event(task, kind="tool_result", name="search", payload=full).event
    assert event is not None
    assert event.truncated is True
    assert event.payload == full[:32_000]
    assert event.payload_sha256 == hashlib.sha256(full.encode("utf-8")).hexdigest()
    stored = history.fetch_event(task, 1).event
    assert stored is not None and stored.payload == full[:32_000] and stored.truncated
    exact = history.record_event(task, kind="note", payload="y" * 32_000).event
    assert exact is not None and exact.truncated is False and len(exact.payload) == 32_000


def test_fetch_event(history: ConversationHistory, task: str) -> None:
    history.record_event(task, kind="tool_call", name="grep", payload="<script>alert(1)</script>")
    found = history.fetch_event(task, 1)
    assert found.found and found.event is not None
    assert found.event.payload == "<script>alert(1)</script>" and found.event.name == "grep"
    assert history.fetch_event(task, 2).found is False
    assert history.fetch_event("other", 1).found is False


# -- request ids ------------------------------------------------------------------


def test_a_repeated_request_returns_the_first_result_and_writes_nothing(
    history: ConversationHistory, task: str
) -> None:
    first = history.record_event(task, kind="note", payload="once", request_id="req-1")
    again = history.record_event(task, kind="note", payload="once", request_id="req-1")
    assert first.recorded and again == first
    assert [e.seq for e in history.list_events(task).events] == [1]
    made = history.create_task("t2", goal="g", request_id="req-2")
    assert history.create_task("t2", goal="g", request_id="req-2") == made
    step = history.set_step(task, name="s", state="completed", request_id="req-3")
    assert history.set_step(task, name="s", state="completed", request_id="req-3") == step


def test_a_request_id_reused_with_other_arguments_is_refused(history: ConversationHistory, task: str) -> None:
    assert history.record_event(task, kind="note", payload="a", request_id="r").recorded
    refused = history.record_event(task, kind="note", payload="b", request_id="r")
    assert (refused.recorded, refused.error) == (False, WriteErrorCode.request_id_reused)
    other_op = history.create_task("x", goal="y", request_id="r")
    assert other_op.error is WriteErrorCode.request_id_reused
    assert [e.payload for e in history.list_events(task).events] == ["a"]
    assert history.get_task("x").found is False


def test_writers_with_stale_views_still_number_without_gaps(
    store: GraphStore, project_id: str, history: ConversationHistory, task: str
) -> None:
    # Each object first tries the number it last saw; the other one has
    # moved on every time, so every write also exercises the fallback.
    other = ConversationHistory(store, project_id=project_id, agent_id="critic")
    for i in range(10):
        assert history.record_event(task, kind="note", payload=f"a{i}", request_id=f"a{i}").recorded
        assert other.record_event(task, kind="note", payload=f"b{i}", request_id=f"b{i}").recorded
    # and the replays still answer with the stored result, to their own agent
    again = history.record_event(task, kind="note", payload="a3", request_id="a3")
    assert again.event is not None and again.event.seq == 7 and again.event.author == "planner"
    assert other.record_event(task, kind="note", payload="b3", request_id="b3").event.seq == 8
    events = history.list_events(task, limit=200).events
    assert [e.seq for e in events] == list(range(1, 21))
    assert sorted(e.payload for e in events) == sorted([f"a{i}" for i in range(10)] + [f"b{i}" for i in range(10)])


def test_a_repeated_request_on_a_busy_task_writes_once(history: ConversationHistory, task: str) -> None:
    for i in range(3):
        history.record_event(task, kind="note", payload=f"warm {i}")
    first = history.record_event(task, kind="message", role="user", payload="hi", request_id="busy")
    assert first.recorded and first.event is not None and first.event.seq == 4
    assert history.record_event(task, kind="message", role="user", payload="hi", request_id="busy") == first
    refused = history.record_event(task, kind="message", role="user", payload="bye", request_id="busy")
    assert refused.error is WriteErrorCode.request_id_reused
    assert history.record_event(task, kind="note", payload="next").event.seq == 5


@pytest.mark.parametrize("bad", ["", "x" * 65])
def test_an_empty_or_long_request_id_is_refused(history: ConversationHistory, task: str, bad: str) -> None:
    assert (
        history.record_event(task, kind="note", payload="a", request_id=bad).error is WriteErrorCode.invalid_request_id
    )
    assert history.create_task("n", goal="g", request_id=bad).error is WriteErrorCode.invalid_request_id
    assert (
        history.set_step(task, name="s", state="completed", request_id=bad).error is WriteErrorCode.invalid_request_id
    )
    assert history.list_events(task).events == []
    assert history.record_event(task, kind="note", payload="a", request_id="x" * 64).recorded


# -- wrong arguments --------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"kind": "shout", "payload": "x"},
        {"kind": "note", "payload": 42},
        {"kind": "note", "payload": "x", "role": 1},
        {"kind": "note", "payload": "nul\x00byte"},
        {"kind": "note", "payload": "x", "request_id": 7},
    ],
)
def test_wrong_arguments_raise_before_anything_is_written(
    history: ConversationHistory, task: str, kwargs: dict
) -> None:
    with pytest.raises(ValueError):
        history.record_event(task, **kwargs)
    assert history.list_events(task).events == []


def test_wrong_step_arguments_raise(history: ConversationHistory, task: str) -> None:
    with pytest.raises(ValueError):
        history.set_step(task, name="s", state="halfway")
    with pytest.raises(ValueError):
        history.set_step(task, name="s", state="completed", kind="dance")
    with pytest.raises(ValueError):
        history.set_step(task, name="s", state="completed", result_supports={"kind": "note"})  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        history.list_events(task, after_seq="3")  # type: ignore[arg-type]
    assert history.list_steps(task).steps == []


# -- paging -----------------------------------------------------------------------


def test_event_pages_are_clamped_and_walk_everything(history: ConversationHistory, task: str) -> None:
    for i in range(230):
        history.record_event(task, kind="note", payload=str(i))
    assert len(history.list_events(task).events) == 50  # default
    assert len(history.list_events(task, limit=0).events) == 1
    assert len(history.list_events(task, limit=-5).events) == 1
    big = history.list_events(task, limit=10_000)
    assert len(big.events) == 200 and big.truncated and big.next_after_seq == 200
    seen: list[int] = []
    after = 0
    while True:
        page = history.list_events(task, after_seq=after, limit=64)
        seen.extend(e.seq for e in page.events)
        if not page.truncated:
            assert page.next_after_seq is None
            break
        after = page.next_after_seq  # type: ignore[assignment]
    assert seen == list(range(1, 231))


def test_step_pages_are_clamped_and_walk_everything(history: ConversationHistory, task: str) -> None:
    names = [f"step-{i:03d}" for i in range(205)]
    for name in names:
        history.set_step(task, name=name, state="not_started")
    assert len(history.list_steps(task).steps) == 50
    assert len(history.list_steps(task, limit=0).steps) == 1
    assert len(history.list_steps(task, limit=999).steps) == 200
    seen: list[str] = []
    after = None
    while True:
        page = history.list_steps(task, after_name=after, limit=70)
        seen.extend(s.name for s in page.steps)
        if not page.truncated:
            break
        after = page.next_after_name
    assert seen == names


# -- task view --------------------------------------------------------------------


def test_task_view_is_bounded_and_never_shows_bodies(history: ConversationHistory, task: str) -> None:
    history.record_event(task, kind="message", role="user", payload="SECRET-BODY")
    states = list(StepState)
    for i in range(60):
        history.set_step(task, name=f"s{i:02d}", state=states[i % len(states)])
    lookup = history.get_task(task)
    assert lookup.found and lookup.view is not None
    view = lookup.view
    assert view.task_name == task and view.goal == "Choose the database" and view.last_event_seq == 1
    assert set(view.steps) == set(StepState) and set(view.step_counts) == set(StepState)
    assert sum(len(v) for v in view.steps.values()) == 50
    assert view.steps_truncated is True
    assert view.step_counts == dict.fromkeys(StepState, 12)  # hidden steps counted
    assert "SECRET-BODY" not in view.model_dump_json()
    assert history.get_task("missing") == type(lookup)(found=False)


def test_task_view_of_an_empty_task(history: ConversationHistory, task: str) -> None:
    view = history.get_task(task).view
    assert view is not None
    assert view.steps == {state: [] for state in StepState}
    assert view.step_counts == dict.fromkeys(StepState, 0)
    assert view.steps_truncated is False and view.decisions == [] and view.conflicts == []


# -- steps ------------------------------------------------------------------------


def test_set_step_records_state_and_updated_seq(history: ConversationHistory, task: str) -> None:
    history.record_event(task, kind="note", payload="a")
    history.record_event(task, kind="note", payload="b")
    result = history.set_step(task, name="fetch", state="in_progress", kind="read")
    assert result.recorded and result.step is not None
    assert result.step.updated_seq == 2 and result.step.kind is StepKind.read
    history.record_event(task, kind="tool_result", name="fetch", payload="rows")
    done = history.set_step(task, name="fetch", state="completed", kind="read", result_event_seq=3)
    assert done.step is not None and done.step.updated_seq == 3 and done.step.result_event_seq == 3
    steps = history.list_steps(task).steps
    assert len(steps) == 1 and steps[0].state is StepState.completed


def test_a_result_event_that_does_not_exist_is_refused(history: ConversationHistory, task: str) -> None:
    history.record_event(task, kind="note", payload="a")
    for seq in (0, 2, -1):
        refused = history.set_step(task, name="s", state="completed", result_event_seq=seq)
        assert refused.error is WriteErrorCode.event_not_found
    assert history.list_steps(task).steps == []


def test_a_supported_result_needs_supports(history: ConversationHistory, task: str) -> None:
    refused = history.set_step(task, name="s", state="completed", result_basis="supported")
    assert (refused.recorded, refused.error) == (False, WriteErrorCode.support_required)


def test_a_support_that_matches_nothing_is_refused(history: ConversationHistory, task: str) -> None:
    history.record_event(task, kind="note", payload="a")
    for support in (
        {"kind": "event", "task_name": task, "seq": 9},
        {"kind": "event", "task_name": "other-task", "seq": 1},
        {"kind": "decision", "decision_id": str(uuid.uuid4())},
        {"kind": "document", "evidence_id": "no-such-evidence"},
    ):
        refused = history.set_step(
            task, name="s", state="completed", result_basis="supported", result_supports=[support]
        )
        assert refused.error is WriteErrorCode.support_invalid, support
    assert history.list_steps(task).steps == []


def test_step_result_validity_follows_its_event_supports(
    store: GraphStore, history: ConversationHistory, task: str
) -> None:
    history.record_event(task, kind="tool_result", name="search", payload="evidence")
    history.set_step(
        task,
        name="a-supported",
        state="completed",
        result_basis="supported",
        result_event_seq=1,
        result_supports=[{"kind": "event", "task_name": task, "seq": 1}],
    )
    history.set_step(task, name="b-independent", state="completed", result_basis="independent")
    history.set_step(task, name="c-unknown-basis", state="completed")
    history.set_step(
        task,
        name="d-running",
        state="in_progress",
        result_basis="supported",
        result_supports=[{"kind": "event", "task_name": task, "seq": 1}],
    )
    validity = {s.name: s.result_validity for s in history.list_steps(task).steps}
    assert validity == {
        "a-supported": StepResultValidity.reusable,
        "b-independent": StepResultValidity.reusable,
        "c-unknown-basis": StepResultValidity.unknown,
        "d-running": StepResultValidity.unknown,
    }
    supported = history.list_steps(task).steps[0]
    assert supported.result_basis is StepResultBasis.supported
    assert supported.result_supports[0].kind == "event" and supported.result_supports[0].seq == 1  # type: ignore[union-attr]
    # the cited event is redacted (as retention does): the result is no longer available
    store.write(
        history.project_id,
        "MATCH (e:Event {task_id: $tid, seq: 1}) SET e.payload = '[REDACTED]', e.redacted_at = '2026-01-01T00:00:00+00:00'",
        {"tid": str(history.create_task(task, goal="Choose the database").task.id)},  # type: ignore[union-attr]
    )
    view = history.get_task(task).view
    assert view is not None
    completed = {s.name: s.result_validity for s in view.steps[StepState.completed]}
    assert completed["a-supported"] is StepResultValidity.unavailable


def test_a_truncated_event_cannot_back_a_reusable_result(history: ConversationHistory, task: str) -> None:
    history.record_event(task, kind="tool_result", payload="z" * 40_000)
    history.set_step(
        task,
        name="s",
        state="completed",
        result_basis="supported",
        result_supports=[{"kind": "event", "task_name": task, "seq": 1}],
    )
    assert history.list_steps(task).steps[0].result_validity is StepResultValidity.unavailable


# -- resume -----------------------------------------------------------------------


def test_resume_marks_in_progress_steps_unknown_and_lists_what_to_rerun(
    history: ConversationHistory, task: str
) -> None:
    history.set_step(task, name="done", state="completed")
    history.set_step(task, name="fails", state="failed")
    history.set_step(task, name="running", state="in_progress")
    history.set_step(task, name="todo", state="not_started")
    assert [s.name for s in history.steps_to_rerun(task)] == ["fails", "running", "todo"]
    rerun = history.resume_task(task)
    assert [(s.name, s.state) for s in rerun] == [
        ("fails", StepState.failed),
        ("running", StepState.unknown),
        ("todo", StepState.not_started),
    ]
    view = history.get_task(task).view
    assert view is not None and view.step_counts[StepState.in_progress] == 0
    assert history.resume_task("missing") == []


def test_step_counts_follow_every_change(history: ConversationHistory, task: str) -> None:
    moves = [
        ("a", "not_started"),
        ("b", "in_progress"),
        ("a", "in_progress"),
        ("c", "completed"),
        ("b", "completed"),
        ("d", "in_progress"),
        ("c", "completed"),
        ("e", "failed"),
    ]
    for name, state in moves:
        history.set_step(task, name=name, state=state)
    history.resume_task(task)  # a and d: in_progress -> unknown

    def counted() -> dict[StepState, int]:
        view = history.get_task(task).view
        assert view is not None
        return view.step_counts

    actual = dict.fromkeys(StepState, 0)
    for step in history.list_steps(task).steps:
        actual[step.state] += 1
    assert counted() == actual
    assert actual[StepState.unknown] == 2 and actual[StepState.completed] == 2 and actual[StepState.in_progress] == 0


def test_load_events_appends_a_checked_batch_numbered_on(history: ConversationHistory, task: str) -> None:
    assert history.record_event(task, kind="message", role="user", payload="first").event.seq == 1
    long = "x" * 40_000
    last = history.load_events(
        task,
        [
            {"kind": "tool_call", "name": "search", "payload": "q"},
            {"kind": "tool_result", "name": "search", "payload": long},
        ],
    )
    assert last == 3
    page = history.list_events(task).events
    assert [(e.seq, e.kind.value) for e in page] == [(1, "message"), (2, "tool_call"), (3, "tool_result")]
    assert page[2].truncated and len(page[2].payload) == 32_000
    assert page[2].payload_sha256 == hashlib.sha256(long.encode()).hexdigest()
    # a bad item anywhere refuses the whole batch before anything is written
    with pytest.raises(ValueError):
        history.load_events(task, [{"kind": "message", "payload": "ok"}, {"kind": "shout", "payload": "no"}])
    with pytest.raises(ValueError, match="task_not_found"):
        history.load_events("no-such-task", [{"kind": "message", "payload": "x"}])
    assert history.get_task(task).view.last_event_seq == 3
    assert history.record_event(task, kind="note", payload="after").event.seq == 4  # single writes number on
