"""The documentation's examples run as written (on the embedded store they
name): the README's, and every guide's in docs/."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
LIBRARY = DOCS / "library.md"
TRACES_FORMAT = DOCS / "traces-format.md"


def python_blocks(page: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", page.read_text(), re.S)


def run_in_order(page: Path, graph: Path) -> dict[str, object]:
    """Every Python block of ``page``, in order, in one scope, on ``graph``."""
    scope: dict[str, object] = {}
    for block in python_blocks(page):
        code = block.replace("/tmp/reviewer-example", str(graph))
        exec(compile(code, page.name, "exec"), scope)
    return scope


@pytest.mark.parametrize("page", [README, *sorted(DOCS.glob("*.md"))], ids=lambda p: str(p.relative_to(ROOT)))
def test_every_python_example_in_the_documentation_runs(page: Path, tmp_path: Path) -> None:
    run_in_order(page, tmp_path / "graph")


def test_the_readme_and_the_library_guide_have_examples() -> None:
    assert python_blocks(README)
    assert len(python_blocks(LIBRARY)) >= 2


def test_the_library_examples_run_in_order(tmp_path: Path) -> None:
    scope = run_in_order(LIBRARY, tmp_path / "graph")
    from core.decisions import DecisionTraces
    from core.history import ConversationHistory
    from core.models import DecisionStatus
    from core.stores import open_store

    with open_store(f"falkordb+embedded://{tmp_path / 'graph'}") as store:
        history = ConversationHistory(store, project_id="acme", agent_id="t")
        assert history.fetch_event("choose-db", 1).event.payload == "[REDACTED]"
        made = scope["made"].decision  # type: ignore[attr-defined]
        assert (
            DecisionTraces(store, project_id="acme", agent_id="t").get_decision(str(made.id)).decision.status
            is DecisionStatus.superseded
        )


def test_the_import_example_imports_cleanly(tmp_path: Path) -> None:
    from core.decisions import DecisionTraces
    from core.stores import open_store
    from core.traces_io import LineError, import_lines

    block = re.search(r"Traces in and out.*?```json\n(.*?)```", TRACES_FORMAT.read_text(), re.S)
    assert block is not None
    lines = block.group(1).splitlines()
    with open_store(f"falkordb+embedded://{tmp_path / 'graph'}") as store:
        failed = [(n, str(o)) for n, o in import_lines(store, lines) if isinstance(o, LineError)]
        assert failed == []
        decisions = DecisionTraces(store, project_id="acme", agent_id="t").list_decisions("choose-db").page.decisions
        assert [(d.conclusion, d.status.value, d.rejected_by) for d in decisions] == [("Postgres", "rejected", "alice")]
