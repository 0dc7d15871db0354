"""core.client: the core services' names, arguments and models over HTTP."""

from __future__ import annotations

import inspect
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from core import client
from core.decisions import DecisionTraces
from core.history import ConversationHistory
from core.knowledge import Graph
from core.models import EventPage, RecordEventResult
from core.stores import GraphStore, GraphStoreError
from reviewer import store as shared
from reviewer.api.tokens import create_token

PAIRS = [
    (client.ConversationHistory, ConversationHistory),
    (client.DecisionTraces, DecisionTraces),
    (client.Graph, Graph),
]


@pytest.mark.parametrize("remote, local", PAIRS, ids=lambda c: c.__name__ if isinstance(c, type) else "")
def test_every_client_method_is_a_core_method_with_the_same_parameters(remote: type, local: type) -> None:
    for name, method in inspect.getmembers(remote, inspect.isfunction):
        if name.startswith("_"):
            continue
        assert hasattr(local, name), f"{local.__name__} has no {name}"
        mine = list(inspect.signature(method).parameters)
        theirs = list(inspect.signature(getattr(local, name)).parameters)
        assert mine == theirs, (name, mine, theirs)


@pytest.fixture
def remote(store: GraphStore, transactional_db: None, live_server: Any) -> Iterator[tuple[Any, str]]:
    before = shared._store
    shared._store = store
    project = "client-" + uuid.uuid4().hex[:8]
    _, token = create_token(project_id=project, name="c", agent_id="planner")
    yield client.connect(live_server.url, token=token), project
    store.drop_project(project)
    shared._store = before


def test_the_client_answers_as_the_library_does(remote: tuple[Any, str], store: GraphStore) -> None:
    portal, project = remote
    history = client.ConversationHistory(portal, project_id=project, agent_id="planner")
    local = ConversationHistory(store, project_id=project, agent_id="planner")
    assert history.create_task("t", goal="g").recorded
    made = history.record_event("t", kind="note", payload="x", request_id="r1")
    assert isinstance(made, RecordEventResult) and made == history.record_event(
        "t", kind="note", payload="x", request_id="r1"
    )
    assert history.load_events("t", [{"kind": "note", "payload": "y"}]) == 2
    assert history.list_events("t") == local.list_events("t")  # to the microsecond
    assert history.list_events("missing") == EventPage(found=False)
    assert history.get_task("t") == local.get_task("t")
    assert history.fetch_event("t", 9).found is False
    refused = history.record_event("missing", kind="note", payload="x")
    assert not refused.recorded and refused.error.value == "task_not_found"
    with pytest.raises(ValueError, match="kind"):
        history.record_event("t", kind="shout", payload="x")
    graph = client.Graph(portal, project_id=project, agent_id="planner")
    graph.add("d", "Some text here.")
    assert graph.current_text("d") == "Some text here."
    assert graph.get_document("nope") is None


def test_an_unreachable_portal_raises_graph_store_error() -> None:
    portal = client.connect("http://127.0.0.1:1", token="rvw_x", retries=0)
    with pytest.raises(GraphStoreError):
        client.ConversationHistory(portal, project_id="p").get_task("t")


ODD_IDS = ["a/b", "what?x=1#frag 50%", "%2F<script>x</script>", "проект/名前", ".."]


@pytest.mark.parametrize("project_id", ODD_IDS)
def test_a_project_id_of_any_text_is_reachable_through_the_client(
    store: GraphStore, transactional_db: None, live_server: Any, project_id: str
) -> None:
    before = shared._store
    shared._store = store
    try:
        _, token = create_token(project_id=project_id, name="c", agent_id="planner")
        portal = client.connect(live_server.url, token=token)
        history = client.ConversationHistory(portal, project_id=project_id, agent_id="planner")
        assert history.create_task("t", goal="g").recorded
        assert history.record_event("t", kind="note", payload="x").recorded
        local = ConversationHistory(store, project_id=project_id, agent_id="planner")
        assert local.get_task("t").view is not None  # written to that project, not another
        assert history.list_events("t") == local.list_events("t")
    finally:
        store.drop_project(project_id)
        shared._store = before


@pytest.mark.parametrize("name", ODD_IDS + ["50%41", "a b/c?d"])
def test_a_task_or_step_named_with_any_text_is_reachable_through_the_client(
    remote: tuple[Any, str], store: GraphStore, name: str
) -> None:
    portal, project = remote
    history = client.ConversationHistory(portal, project_id=project, agent_id="planner")
    traces = client.DecisionTraces(portal, project_id=project, agent_id="planner")
    local = ConversationHistory(store, project_id=project, agent_id="planner")
    assert history.create_task(name, goal="g").recorded
    assert history.record_event(name, kind="note", payload="x").recorded
    assert history.load_events(name, [{"kind": "note", "payload": "y"}]) == 2
    assert history.set_step(name, name=name, state="completed").recorded
    assert [s.name for s in history.list_steps(name).steps] == [name]
    made = traces.record_decision(
        name, choice_key="k", conclusion="c", rationale="r", supports=[{"kind": "event", "task_name": name, "seq": 1}]
    )
    assert made.recorded
    assert [d.id for d in traces.list_decisions(name).page.decisions] == [made.decision.id]
    assert history.fetch_event(name, 2).event.payload == "y"
    assert history.get_task(name).view.task_name == name  # that task, not a neighbour spelled alike
    assert history.list_events(name) == local.list_events(name)


def test_a_value_over_its_limit_is_the_libraries_refusal_through_the_client(remote: tuple[Any, str]) -> None:
    from core import limits
    from core.models import WriteErrorCode

    portal, project = remote
    history = client.ConversationHistory(portal, project_id=project, agent_id="planner")
    refused = history.create_task("t" * (limits.TASK_NAME_MAX + 1), goal="g")
    assert (refused.recorded, refused.error) == (False, WriteErrorCode.value_too_long)
    assert history.list_tasks() == ([], False)
