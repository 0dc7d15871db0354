"""Benchmark of the conversation history core, on each backend in one run.

    .venv/bin/python -m tests.benchmarks.history [--events 10000] [--steps 1000] [--backends falkordb,neo4j]

Prints, per backend: the floor (a trivial ``RETURN 1`` round trip on the same
store), ``record_event`` throughput for one writer and for four, and
``get_task`` / ``list_events`` latency (p50, p95) on a task with the given
number of events and steps, next to ``get_task`` on a task with 100 events
(to show that it does not grow with the number of events). Each latency is
also given as a ratio to the floor. The embedded FalkorDB runs with
``appendfsync everysec``.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
import uuid
from collections.abc import Callable

from core.history import ConversationHistory
from core.stores import GraphStore
from tests.benchmarks import each_store


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p50 = statistics.median(ordered)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return p50, p95


def timed(fn: Callable[[], object], n: int) -> list[float]:
    fn()  # warm up (plan caches, connections)
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def write_events(history: ConversationHistory, task: str, writers: int, total: int) -> float:
    per = total // writers

    def run(n: int) -> None:
        for i in range(per):
            history.record_event(task, kind="tool_result", name="search", payload=f"writer {n} result {i} " * 8)

    threads = [threading.Thread(target=run, args=(n,)) for n in range(writers)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return per * writers / (time.perf_counter() - start)


def bench(store: GraphStore, events: int, steps: int) -> list[tuple[str, str, str]]:
    project = "bench-" + uuid.uuid4().hex[:8]
    rows: list[tuple[str, str, str]] = []
    try:
        history = ConversationHistory(store, project_id=project, agent_id="bench")
        history.create_task("big", goal="benchmark")
        one = write_events(history, "big", 1, events // 2)

        four = write_events(history, "big", 4, events - events // 2)

        for i in range(steps):
            state = ("completed", "in_progress", "not_started", "failed", "unknown")[i % 5]
            history.set_step("big", name=f"step-{i:05d}", state=state, kind="analysis")

        history.create_task("small", goal="benchmark")
        for i in range(100):
            history.record_event("small", kind="note", payload=f"note {i}")
        for i in range(min(steps, 50)):
            history.set_step("small", name=f"step-{i:05d}", state="completed")

        floor = percentiles(timed(lambda: store.read(project, "RETURN 1 AS one"), 1000))[0]
        # measured once the store is warm (Neo4j's JIT needs thousands of queries)
        rows.append(("floor: RETURN 1 round trip, p50", f"{floor:.3f} ms", "1.0x"))
        for label, rate in (("record_event, 1 writer", one), ("record_event, 4 writers", four)):
            rows.append((label, f"{rate:,.0f} /s", f"{1000 / rate / floor:.1f}x floor per event"))
        last = history.get_task("big").view
        assert last is not None and last.last_event_seq == events, last and last.last_event_seq
        for label, fn in (
            (f"get_task ({events:,} events, {steps:,} steps)", lambda: history.get_task("big")),
            ("get_task (100 events, 50 steps)", lambda: history.get_task("small")),
            ("list_events first page (50)", lambda: history.list_events("big")),
            (
                "list_events deep page (after 9,000, 200)",
                lambda: history.list_events("big", after_seq=max(0, events - 1000), limit=200),
            ),
        ):
            p50, p95 = percentiles(timed(fn, 200))
            rows.append(
                (label + ", p50 / p95", f"{p50:.2f} / {p95:.2f} ms", f"{p50 / floor:.1f}x / {p95 / floor:.1f}x")
            )
    finally:
        store.drop_project(project)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--steps", type=int, default=1_000)
    parser.add_argument("--backends", default="falkordb,neo4j")
    args = parser.parse_args()
    for title, store, _url in each_store(args.backends):
        report(title, bench(store, args.events, args.steps))


def report(title: str, rows: list[tuple[str, str, str]]) -> None:
    width = max(len(r[0]) for r in rows)
    print(f"\n{title}")
    print(f"  {'measure'.ljust(width)}  {'figure':>22}  ratio to floor")
    for name, figure, ratio in rows:
        print(f"  {name.ljust(width)}  {figure:>22}  {ratio}")


if __name__ == "__main__":
    main()
