"""Idempotency keys over the API, on both backends: a key is its token's
agent's; a retry of a redacted or deleted write (one by one, or a keyed
batch) seals nothing, leaves no key and tells no guess of the text from
another; a redacted event reaches no token with its hash."""

from __future__ import annotations

import hashlib
import json

from core import _common as c
from core.retention import REDACTED, HistoryRetention
from core.stores.keystore import SLOT, keys_of
from reviewer.api.tokens import create_token
from tests.api.conftest import Api


def _keys(api: Api) -> tuple[int, int]:
    """(live keys, keys ever made) of the store's key store."""
    keys = keys_of(api.store)
    return keys.live_keys(), keys.path.stat().st_size // SLOT


def _retention(api: Api) -> HistoryRetention:
    return HistoryRetention(api.store, project_id=api.project, agent_id="steward")


def _event_id(api: Api, task: str, seq: int) -> str:
    return c.event_id(c.task_id(api.project, task), seq)


def test_a_key_is_its_tokens_agents(api: Api) -> None:
    _, other = create_token(project_id=api.project, name="other bot", agent_id="other")
    assert api.call("POST", "tasks", {"name": "t", "goal": "g"}).status_code == 200
    body = {"kind": "message", "payload": "the planner's words"}
    mine = api.call("POST", "tasks/t/events", body, idem="k-1").json()
    assert mine["recorded"] and mine["event"]["author"] == "planner"
    # the same key and body with another agent's token: a write of its own
    theirs = api.call("POST", "tasks/t/events", body, idem="k-1", token=other)
    assert theirs.status_code == 200
    assert (theirs.json()["event"]["seq"], theirs.json()["event"]["author"]) == (mine["event"]["seq"] + 1, "other")
    assert api.call("POST", "tasks/t/events", body, idem="k-1").json() == mine
    # a key the other agent used first is still free for this one
    assert (
        api.call("POST", "tasks/t/events", {"kind": "note", "payload": "x"}, idem="k-2", token=other).status_code == 200
    )
    later = api.call("POST", "tasks/t/events", body, idem="k-2")
    assert later.status_code == 200 and later.json()["event"]["author"] == "planner"
    assert api.call("POST", "tasks/t/events", {"kind": "note", "payload": "y"}, idem="k-2").status_code == 409


def test_retries_of_redacted_and_deleted_writes_make_no_key_and_tell_no_guess(api: Api) -> None:
    assert api.call("POST", "tasks", {"name": "t", "goal": "g"}).status_code == 200
    pin = {"kind": "message", "role": "user", "payload": "PIN 4711"}
    wrong = {**pin, "payload": "PIN 0000"}
    first = api.call("POST", "tasks/t/events", pin, idem="pin").json()
    batch = {"events": [{"kind": "note", "payload": f"SECRET {n}"} for n in range(3)]}
    keyed = api.call("POST", "tasks/t/events/batch", batch, idem="b-1").json()
    assert keyed["recorded"] and keyed["last_event_seq"] == 4
    assert api.call("POST", "tasks/t/events", wrong, idem="pin").status_code == 409  # the text is still there
    assert first["event"]["payload_sha256"] == hashlib.sha256(b"PIN 4711").hexdigest()
    retention = _retention(api)
    for seq in (1, 3):
        assert retention.redact_event(_event_id(api, "t", seq)).recorded
    keys = _keys(api)
    right, guessed = (api.call("POST", "tasks/t/events", b, idem="pin") for b in (pin, wrong))
    assert (right.status_code, guessed.status_code) == (200, 200) and right.json() == guessed.json()
    event = right.json()["event"]
    assert (event["seq"], event["payload"], event["payload_sha256"]) == (1, REDACTED, None)
    again = api.call("POST", "tasks/t/events/batch", batch, idem="b-1").json()
    assert [r["event"]["seq"] for r in again["results"]] == [2, 3, 4]
    assert [r["event"]["payload_sha256"] is None for r in again["results"]] == [False, True, False]
    assert _keys(api) == keys  # nothing sealed, nothing left
    # every reply that carries an event: a redacted one comes without its hash
    page = api.call("GET", "tasks/t/events").json()["events"]
    assert [e["payload_sha256"] is None for e in page] == [True, False, True, False]
    assert api.call("GET", "tasks/t/events/1").json()["payload_sha256"] is None
    assert api.call("GET", "tasks/t/events/2").json()["payload_sha256"] == hashlib.sha256(b"SECRET 0").hexdigest()
    replies = json.dumps([right.json(), again, page])
    assert hashlib.sha256(b"PIN 4711").hexdigest() not in replies
    assert hashlib.sha256(b"SECRET 1").hexdigest() not in replies

    assert retention.delete_task("t").recorded
    keys = _keys(api)
    right, guessed = (api.call("POST", "tasks/t/events", b, idem="pin") for b in (pin, wrong))
    assert (right.status_code, guessed.status_code) == (200, 200) and right.json() == guessed.json()
    assert right.json()["event"]["payload"] == "" and right.json()["event"]["payload_sha256"] is None
    again = api.call("POST", "tasks/t/events/batch", batch, idem="b-1").json()
    assert again["recorded"] and [r["event"]["payload_sha256"] for r in again["results"]] == [None] * 3
    # refused for the task that is gone: no key kept either
    assert api.call("POST", "tasks/t/events", pin).status_code == 404
    assert api.call("POST", "tasks/t/events/batch", batch).status_code == 404
    assert _keys(api)[0] == keys[0]
