"""What one write costs the embedded FalkorDB as its graph grows, and why.

    .venv/bin/python -m tests.benchmarks.falkordb_writes [--nodes 250000,1000000,2000000,4000000]

A project is set up through the core (its indexes and constraints), then
padded with labelled nodes in bulk to each size in turn. At each size it
times, p50 over 20 runs, beside the floor (a ``RETURN 1`` round trip):

- a write that changes one property of an indexed node (a task), alone;
- the same write in a statement that first makes a labelled node, first
  with the padding's labels not folded: FalkorDB reads the changed node's
  labels for its indexes, and that read assembles every label given since
  the node-label matrix was last folded (``GB_wait`` under
  ``Graph_GetNodeLabels``, seen with gdb), a pass as long as the padding;
  then after the store's fold (``FOLD_LABELS_EVERY`` in
  core/stores/falkordb.py), as the store keeps it;
- the same with an unlabelled node and with a new relationship instead;
- the core's own units: ``set_step`` (a step made and the task's counts
  changed) and ``record_event``;
- two of the core's reads, each right after a ``record_event`` (not
  timed): what a page pays while agents write.

The padding is a label the units never touch: what the unfolded write
grows with is the nodes made since the last fold, wherever they are.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable

from core.history import ConversationHistory
from core.stores import open_store
from tests.benchmarks.history import percentiles

RUNS = 20


def _timed(fn: Callable[[], object], before: Callable[[], object] | None = None) -> float:
    samples = []
    for _ in range(RUNS + 2):
        if before is not None:
            before()  # not timed
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return percentiles(samples[2:])[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", default="250000,1000000,2000000,4000000", help="graph sizes, ascending")
    args = parser.parse_args()
    sizes = [int(n) for n in args.nodes.split(",")]
    where = tempfile.mkdtemp(prefix="reviewer-bench-writes-")
    try:
        with open_store(f"falkordb+embedded://{where}?appendfsync=everysec") as store:
            history = ConversationHistory(store, project_id="writes", agent_id="bench")
            history.create_task("task", goal="time writes")
            conn = store._redis  # type: ignore[attr-defined]
            key = "reviewer:writes"

            def query(text: str) -> Callable[[], object]:
                return lambda: conn.execute_command("GRAPH.QUERY", key, text, "--compact")

            change = "MATCH (t:Task {name: 'task'}) SET t.bench = coalesce(t.bench, 0) + 1"
            cases: dict[str, Callable[[], object]] = {
                "floor (RETURN 1)": query("RETURN 1"),
                "change an indexed node": query(change),
                "make a labelled node, then change": query(
                    f"CREATE (:Padding {{seq: -1}}) WITH count(*) AS c {change}"
                ),
                "make an unlabelled node, then change": query(f"CREATE ({{seq: -1}}) WITH count(*) AS c {change}"),
                "make a relationship, then change": query(
                    f"MATCH (t:Task {{name: 'task'}}) CREATE (t)-[:BENCH]->(t) WITH count(*) AS c {change}"
                ),
                "core: set_step": lambda: history.set_step(
                    "task", name=f"step-{uuid.uuid4().hex}", state="completed", kind="analysis"
                ),
                "core: record_event": lambda: history.record_event("task", kind="note", payload="a note"),
            }
            record = cases["core: record_event"]
            # reads after a write (the write not timed): what a page pays when agents are writing
            after_write: dict[str, tuple[Callable[[], object], Callable[[], object]]] = {
                "read: get_task, after record_event": (lambda: history.get_task("task"), record),
                "read: list_events, after record_event": (lambda: history.list_events("task", limit=50), record),
            }
            made = 0
            print(f"embedded FalkorDB, p50 of {RUNS} runs in ms (x floor)")
            print(f"  {'nodes in the graph':54}" + "".join(f"{n:>16,}" for n in sizes))
            since = [size - before for size, before in zip(sizes, [0, *sizes])]
            print(f"  {'of them made since the last fold':54}" + "".join(f"{n:>16,}" for n in since))
            unfolded = "make a labelled node, then change, labels not folded"
            rows: dict[str, list[float]] = {name: [] for name in [*cases, *after_write]}
            rows = {"floor (RETURN 1)": rows.pop("floor (RETURN 1)"), unfolded: [], **rows}
            for size in sizes:
                while made < size:
                    step = min(200_000, size - made)
                    conn.execute_command(
                        "GRAPH.QUERY", key, f"UNWIND range({made}, {made + step - 1}) AS k CREATE (:Padding {{seq: k}})"
                    )
                    made += step
                # the padding went around the store: its labels are not folded
                rows[unfolded].append(_timed(cases["make a labelled node, then change"]))
                reads = store.label_reads  # type: ignore[attr-defined]
                store._fold_labels(store._graph("writes"))  # type: ignore[attr-defined]
                if store.label_reads != reads + 1:  # type: ignore[attr-defined]
                    raise SystemExit("the read that folds the labels failed")
                for name, fn in cases.items():
                    rows[name].append(_timed(fn))
                for name, (fn, before) in after_write.items():
                    rows[name].append(_timed(fn, before))
            floors = rows["floor (RETURN 1)"]
            for name, figures in rows.items():
                cells = "".join(f"{ms:>9.2f} ({ms / floor:>4.0f}x)" for ms, floor in zip(figures, floors))
                print(f"  {name:54}{cells}")
    finally:
        shutil.rmtree(where, ignore_errors=True)


if __name__ == "__main__":
    main()
