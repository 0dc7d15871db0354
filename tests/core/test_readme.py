"""The README's library examples run as written (on the embedded store they name)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_library_examples_run_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert len(blocks) >= 2
    scope: dict[str, object] = {}
    for block in blocks[:2]:
        code = block.replace("/tmp/reviewer-example", str(tmp_path / "graph"))
        exec(compile(code, "README.md", "exec"), scope)  # noqa: S102 - our own documentation
    from core.decisions import DecisionTraces
    from core.history import ConversationHistory
    from core.models import DecisionStatus
    from core.stores import open_store

    with open_store(f"falkordb+embedded://{tmp_path / 'graph'}") as store:
        history = ConversationHistory(store, project_id="acme", agent_id="t")
        assert history.fetch_event("choose-db", 1).event.payload == "[REDACTED]"
        made = scope["made"].decision  # type: ignore[attr-defined]
        assert DecisionTraces(store, project_id="acme", agent_id="t").get_decision(
            str(made.id)).decision.status is DecisionStatus.superseded


def test_the_readme_import_example_imports_cleanly(tmp_path: Path) -> None:
    from core.decisions import DecisionTraces
    from core.stores import open_store
    from core.traces_io import LineError, import_lines

    block = re.search(r"## Traces in and out.*?```json\n(.*?)```", README.read_text(), re.S)
    assert block is not None
    lines = block.group(1).splitlines()
    with open_store(f"falkordb+embedded://{tmp_path / 'graph'}") as store:
        failed = [(n, str(o)) for n, o in import_lines(store, lines) if isinstance(o, LineError)]
        assert failed == []
        decisions = DecisionTraces(store, project_id="acme", agent_id="t").list_decisions("choose-db").page.decisions
        assert [(d.conclusion, d.status.value, d.rejected_by) for d in decisions] == [("Postgres", "rejected", "alice")]
