"""The API through a real server on loopback (pytest-django's live server, a
threaded WSGI server): the endpoint tests again, and retries that race."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from core.history import ConversationHistory
from core.stores import GraphStore
from reviewer import store as shared
from reviewer.api.tokens import create_token

from . import test_endpoints
from .conftest import Api
from .live import LiveClient


@pytest.fixture
def live_api(store: GraphStore, transactional_db: None, live_server: Any) -> Iterator[Api]:
    before = shared._store
    shared._store = store
    project = "live-" + uuid.uuid4().hex[:10]
    _, token = create_token(project_id=project, name="planner bot", agent_id="planner")
    _, review = create_token(project_id=project, name="sweeper", agent_id="sweeper", role="automation")
    yield Api(project, token, review, LiveClient(live_server.url), store)  # type: ignore[arg-type]
    store.drop_project(project)
    shared._store = before


@pytest.mark.parametrize(
    "case",
    [
        test_endpoints.test_tasks_events_and_steps_round_trip,
        test_endpoints.test_documents_evidence_decisions_and_review_round_trip,
        test_endpoints.test_refused_writes_answer_the_seed_code_with_a_fitting_status,
        test_endpoints.test_bad_input_is_422_with_the_field_and_the_reason_and_changes_nothing,
        test_endpoints.test_reads_of_what_is_not_there_are_404,
    ],
    ids=lambda f: f.__name__.removeprefix("test_"),
)
def test_every_endpoint_through_a_live_server(live_api: Api, case: Any) -> None:
    case(live_api)


def test_concurrent_retries_with_one_key_record_once(live_api: Api) -> None:
    assert live_api.call("POST", "tasks", {"name": "t", "goal": "g"}).status_code == 200
    body = {"kind": "message", "role": "assistant", "payload": "the answer"}

    def send(_: int) -> Any:
        return live_api.call("POST", "tasks/t/events", body, idem="retry-1")

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(send, range(16)))
    assert {a.status_code for a in answers} == {200}
    assert len({a.json()["event"]["id"] for a in answers}) == 1
    history = ConversationHistory(live_api.store, project_id=live_api.project, agent_id="audit")
    assert history.get_task("t").view.last_event_seq == 1
    other = live_api.call("POST", "tasks/t/events", {**body, "payload": "another answer"}, idem="retry-1")
    assert other.status_code == 409 and other.json() == {"recorded": False, "error": "request_id_reused", "event": None}


def test_concurrent_retries_of_a_keyed_batch_record_it_once(live_api: Api) -> None:
    live_api.call("POST", "tasks", {"name": "t", "goal": "g"})
    batch = {"events": [{"kind": "note", "payload": f"n{i}"} for i in range(5)]}

    def send(_: int) -> Any:
        return live_api.call("POST", "tasks/t/events/batch", batch, idem="batch-7")

    with ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(send, range(8)))
    assert {a.status_code for a in answers} == {200}
    assert {tuple(r["event"]["seq"] for r in a.json()["results"]) for a in answers} == {(1, 2, 3, 4, 5)}
    history = ConversationHistory(live_api.store, project_id=live_api.project, agent_id="audit")
    assert [e.payload for e in history.list_events("t").events] == [f"n{i}" for i in range(5)]
