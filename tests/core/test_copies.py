"""The redaction preview finds the other events that hold the text a
redaction removes (whole, or a run of 40 characters or more), bounded; and
after a purge round each backend's activity entry says what was verified."""

from __future__ import annotations

import pytest

from core import _common as c
from core import _copies
from core._purge import purge_round
from core.history import ConversationHistory
from core.models import DiskState
from core.retention import ActivityLog, HistoryRetention, disk_purge_states
from core.review_views import CopySearch, ReviewViews
from core.stores import GraphStore

SECRET = "Customer Ada Lovelace, card 4111-1111-1111-1111, expires 12/29, CVV 737."  # 72 characters


def _preview(store: GraphStore, project_id: str, task: str, seq: int) -> CopySearch:
    views = ReviewViews(store, project_id=project_id, agent_id="steward")
    preview = views.redaction_preview(c.event_id(c.task_id(project_id, task), seq))
    assert preview is not None and preview.copies is not None
    return preview.copies


def test_a_copy_in_another_task_and_a_run_of_40_are_found_a_run_of_39_not(store: GraphStore, project_id: str) -> None:
    history = ConversationHistory(store, project_id=project_id, agent_id="a")
    history.create_task("chat", goal="g")
    history.create_task("tools", goal="g")
    history.record_event("chat", kind="message", role="user", payload=SECRET)
    history.record_event("chat", kind="note", payload="unrelated")
    history.record_event("tools", kind="tool_result", payload=f'{{"quoted": "{SECRET}"}}')  # whole, elsewhere
    history.record_event("tools", kind="tool_result", payload="x " + SECRET[10:50] + " y")  # a run of exactly 40
    history.record_event("tools", kind="tool_result", payload="x " + SECRET[10:49] + " y")  # 39: not a copy
    history.record_event("chat", kind="message", payload="later: " + SECRET[:45])  # 45, same task
    found = _preview(store, project_id, "chat", 1)
    got = {(cp.task_name, cp.seq): cp for cp in found.copies}
    assert set(got) == {("chat", 3), ("tools", 1), ("tools", 2)}
    assert got[("tools", 1)].whole and got[("tools", 1)].match == SECRET
    assert not got[("tools", 2)].whole and got[("tools", 2)].match == SECRET[10:50]
    assert got[("chat", 3)].match == SECRET[:45] and got[("chat", 3)].before == "later: "
    assert got[("tools", 1)].event_id == c.event_id(c.task_id(project_id, "tools"), 1)
    assert (found.copies[0].task_name, found.copies[0].seq) == ("chat", 3)  # its own task first
    assert not found.capped and found.scanned == 5 and found.total == 6 and found.more == 0


def test_a_short_text_is_found_whole_only_and_redacted_events_are_skipped(store: GraphStore, project_id: str) -> None:
    history = ConversationHistory(store, project_id=project_id, agent_id="a")
    history.create_task("t", goal="g")
    history.record_event("t", kind="message", payload="PIN 4417")
    history.record_event("t", kind="note", payload="the pin is PIN 4417, keep it")
    history.record_event("t", kind="note", payload="PIN 441")
    history.record_event("t", kind="note", payload="again PIN 4417")
    retention = HistoryRetention(store, project_id=project_id, agent_id="s")
    assert retention.redact_event(c.event_id(c.task_id(project_id, "t"), 4)).recorded
    found = _preview(store, project_id, "t", 1)
    assert [(cp.seq, cp.whole, cp.match) for cp in found.copies] == [(2, True, "PIN 4417")]


def test_the_search_is_bounded_and_says_so(store: GraphStore, project_id: str, monkeypatch: pytest.MonkeyPatch) -> None:
    history = ConversationHistory(store, project_id=project_id, agent_id="a")
    history.create_task("t", goal="g")
    history.record_event("t", kind="message", payload=SECRET)
    history.load_events("t", [{"kind": "note", "payload": f"{n}: {SECRET}"} for n in range(_copies.SHOWN + 7)])
    found = _preview(store, project_id, "t", 1)
    assert len(found.copies) == _copies.SHOWN and found.more == 7 and not found.capped
    assert [cp.seq for cp in found.copies] == list(range(2, 2 + _copies.SHOWN))
    monkeypatch.setattr(_copies, "SCAN_EVENTS", 20)
    monkeypatch.setattr(_copies, "PAGE", 8)
    found = _preview(store, project_id, "t", 1)
    assert found.capped and found.scanned == 20 and len(found.copies) == 20 and found.total == _copies.SHOWN + 8
    monkeypatch.setattr(_copies, "SCAN_EVENTS", 10_000)
    monkeypatch.setattr(_copies, "SCAN_CHARS", 3 * len(SECRET))
    found = _preview(store, project_id, "t", 1)
    assert found.capped and found.scanned == 8  # the first page went past the characters' cap


def test_a_purge_round_records_what_it_verified(store: GraphStore, project_id: str, purges_held: None) -> None:
    history = ConversationHistory(store, project_id=project_id, agent_id="a")
    history.create_task("t", goal="g")
    history.record_event("t", kind="message", payload=SECRET)
    eid = c.event_id(c.task_id(project_id, "t"), 1)
    assert HistoryRetention(store, project_id=project_id, agent_id="s").redact_event(eid).recorded
    pending = ActivityLog(store, project_id=project_id).list()[0].disk
    assert pending is not None and pending.at is None
    report = purge_round(store)
    entry = ActivityLog(store, project_id=project_id).list()[0]
    assert entry.disk is not None and entry.disk.at is not None
    event_state = disk_purge_states(store, project_id, [eid])[eid]
    assert event_state == entry.disk
    if store.backend == "falkordb":
        assert pending.state is DiskState.rewrite_pending
        assert report.verified == "files_rewritten" and entry.disk.state is DiskState.rewritten
        assert entry.disk.bound is None
    else:
        assert pending.state is DiskState.key_pending
        assert report.verified == "key_destroyed" and entry.disk.state is DiskState.key_destroyed
        assert report.files["checkpoint"] is False  # the test server is Community
        bound = entry.disk.bound or ""
        assert "db.tx_log.rotation.size " in bound and "db.tx_log.rotation.retention_policy " in bound


def test_a_text_built_to_share_pieces_and_no_run_costs_a_bounded_search(store: GraphStore, project_id: str) -> None:
    """Bodies of 32,000 characters that hold every 20-character piece of the
    text at every place and never a run of 40: the checks are counted and
    the search stops at its budget, saying so."""
    import time

    history = ConversationHistory(store, project_id=project_id, agent_id="a")
    history.create_task("t", goal="g")
    history.record_event("t", kind="message", payload=("x" * 20 + "y") * 1500)
    history.load_events("t", [{"kind": "note", "payload": "x" * 32_000} for _ in range(30)])
    start = time.perf_counter()
    found = _preview(store, project_id, "t", 1)
    assert time.perf_counter() - start < 30  # well under a second on a quiet machine
    assert found.copies == [] and found.capped and found.scanned < 31
