"""Benchmark of the decision core, on each backend in one run.

    .venv/bin/python -m tests.benchmarks.decisions [--decisions 100000] [--tree 10000] [--backends falkordb,neo4j]

Per backend, with the floor (a trivial ``RETURN 1`` round trip on the same
store) measured in the same run:

* a project of ``--decisions`` decisions over 10 tasks and a tenth as many
  choice keys (every key chosen in each task; odd keys disagree across
  tasks), a tenth of them citing one document: the document update that
  flags those (10,000 by default), then ``list_decisions_for_review``,
  ``get_decision`` and ``list_conflicts`` p50 / p95;
* a five-level dependency tree of ``--tree`` decisions under 10 roots that
  cite a document: the update, then the whole ``continue_decision_review``
  until nothing is queued.

Data is loaded through ``DecisionTraces.load_decisions`` in batches.
"""

from __future__ import annotations

import argparse
import time
import uuid
from collections.abc import Callable
from typing import Any

from core.decisions import DecisionTraces
from core.history import ConversationHistory
from core.knowledge import Graph
from core.stores import GraphStore
from tests.benchmarks import each_store
from tests.benchmarks.history import percentiles, report, timed

TASKS = 10
BATCH = 2000
POLICY = "Every service has an owner.\n\nOwners answer pages within an hour.\n\nReviews happen weekly."


def load(traces: DecisionTraces, items: list[dict], progress: str) -> list:
    made = []
    for i in range(0, len(items), BATCH):
        made += traces.load_decisions(items[i : i + BATCH])
        print(f"\r  loading {progress}: {len(made):,}/{len(items):,}", end="", flush=True)
    print()
    return made


def benchmark_items(store: GraphStore, project: str, decisions: int) -> list[dict[str, Any]]:
    """The benchmark set's tasks, their first events and the policy document,
    written; and ``decisions`` items for ``load_decisions`` (one in ten cites
    the document, the rest their task's first event; half the choices in
    conflict across tasks)."""
    history = ConversationHistory(store, project_id=project, agent_id="bench")
    graph = Graph(store, project_id=project, agent_id="bench")
    for t in range(TASKS):
        history.create_task(f"task-{t}", goal=f"Service review {t}")
        history.record_event(f"task-{t}", kind="note", payload="context")
    graph.add("policy", POLICY)
    cite = {"kind": "document", "evidence_id": graph.span_evidence_id("policy", 0, 27)}
    items = []
    for k in range(max(1, decisions // TASKS)):
        for t in range(TASKS):
            n = k * TASKS + t
            support = cite if n % 10 == 0 else {"kind": "event", "task_name": f"task-{t}", "seq": 1}
            items.append(
                {
                    "task_name": f"task-{t}",
                    "choice_key": f"choice-{k:05d}",
                    "conclusion": f"option {t % 2}" if k % 2 else "option same",
                    "rationale": f"benchmark decision {n} about choice {k}",
                    "supports": [support],
                }
            )
    return items


def big_project(store: GraphStore, decisions: int) -> tuple[list[tuple[str, str, str]], str]:
    project = "bench-" + uuid.uuid4().hex[:8]
    traces = DecisionTraces(store, project_id=project, agent_id="bench")
    graph = Graph(store, project_id=project, agent_id="bench")
    items = benchmark_items(store, project, decisions)
    keys = max(1, decisions // TASKS)
    made = load(traces, items, "decisions")
    rows: list[tuple[str, str, str]] = []
    floor = percentiles(timed(lambda: store.read(project, "RETURN 1 AS one"), 1000))[0]
    rows.append(("floor: RETURN 1 round trip, p50", f"{floor:.3f} ms", "1.0x"))
    start = time.perf_counter()
    flagged = graph.update("policy", POLICY + "\n\nAmended.").flagged_decision_ids
    took = (time.perf_counter() - start) * 1000
    rows.append((f"document update flagging {len(flagged):,} decisions", f"{took:,.0f} ms", f"{took / floor:,.0f}x"))
    sample = [str(made[i].id) for i in range(0, len(made), max(1, len(made) // 200))]
    it = iter(sample * 10)

    def lat(label: str, fn: Callable[[], object]) -> None:
        p50, p95 = percentiles(timed(fn, 200))
        rows.append((label + ", p50 / p95", f"{p50:.2f} / {p95:.2f} ms", f"{p50 / floor:.1f}x / {p95 / floor:.1f}x"))

    lat(
        f"list_decisions_for_review ({len(made):,} decisions, {len(flagged):,} flagged)",
        traces.list_decisions_for_review,
    )
    lat("list_decisions_for_review, the task holding them", lambda: traces.list_decisions_for_review("task-0"))
    lat("list_decisions_for_review, page 40", lambda: traces.list_decisions_for_review(offset=800))
    lat("get_decision", lambda: traces.get_decision(next(it)))
    lat(f"list_conflicts ({keys:,} choice keys, {keys // 2:,} in conflict)", traces.list_conflicts)
    return rows, project


def tree_project(store: GraphStore, size: int) -> tuple[list[tuple[str, str, str]], str]:
    project = "bench-" + uuid.uuid4().hex[:8]
    history = ConversationHistory(store, project_id=project, agent_id="bench")
    graph = Graph(store, project_id=project, agent_id="bench")
    traces = DecisionTraces(store, project_id=project, agent_id="bench")
    history.create_task("tree", goal="Dependency tree")
    graph.add("policy", POLICY)
    cite = {"kind": "document", "evidence_id": graph.span_evidence_id("policy", 0, 27)}
    levels = [10, 60, 360, 2160]
    levels.append(max(1, size - sum(levels)))
    previous: list = []
    total = 0
    for depth, count in enumerate(levels):
        items = [
            {
                "task_name": "tree",
                "choice_key": f"l{depth}-{i:05d}",
                "conclusion": "yes",
                "rationale": "tree",
                "supports": [cite]
                if depth == 0
                else [{"kind": "decision", "decision_id": str(previous[i % len(previous)].id)}],
            }
            for i in range(count)
        ]
        previous = load(traces, items, f"tree level {depth + 1}")
        total += len(previous)
    rows: list[tuple[str, str, str]] = []
    floor = percentiles(timed(lambda: store.read(project, "RETURN 1 AS one"), 1000))[0]
    rows.append(("floor: RETURN 1 round trip, p50", f"{floor:.3f} ms", "1.0x"))
    start = time.perf_counter()
    graph.update("policy", POLICY + "\n\nAmended.")
    update = (time.perf_counter() - start) * 1000
    rows.append(("document update flagging the 10 roots", f"{update:,.0f} ms", f"{update / floor:,.0f}x"))
    start = time.perf_counter()
    calls = 0
    while traces.continue_decision_review().moved:
        calls += 1
    took = (time.perf_counter() - start) * 1000
    flagged = traces.list_decisions_for_review().count
    assert flagged == total, (flagged, total)
    rows.append(
        (f"whole review of a 5-level tree of {total:,} ({calls} calls)", f"{took:,.0f} ms", f"{took / floor:,.0f}x")
    )
    return rows, project


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--decisions", type=int, default=100_000)
    parser.add_argument("--tree", type=int, default=10_000)
    parser.add_argument("--backends", default="falkordb,neo4j")
    args = parser.parse_args()

    def run(title: str, store: GraphStore) -> None:
        rows, big = big_project(store, args.decisions)
        try:
            tree_rows, tree = tree_project(store, args.tree)
            store.drop_project(tree)
        finally:
            store.drop_project(big)
        report(title, rows + tree_rows[1:])

    for title, store, _url in each_store(args.backends):
        run(title, store)


if __name__ == "__main__":
    main()
