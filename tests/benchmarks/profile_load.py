"""Where ``load_decisions``'s time goes on Neo4j: the benchmark's own set
(``tests.benchmarks.decisions.big_project``'s items: ten tasks, a tenth of
them citing one document, the rest an event) loaded in batches of 2,000
into a fresh Neo4j test server, with each statement's server time (the
driver's ``result_available_after + result_consumed_after``) summed by
statement, the CPU of this process and of the server per decision, and one
batch's plans (``PROFILE``: operators, rows and db hits).

    .venv/bin/python -m tests.benchmarks.profile_load [--decisions 20000] [--profile-batch 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
import uuid
from pathlib import Path
from typing import Any

from core.decisions import DecisionTraces
from tests.benchmarks import _cpu_ms, each_store, server_pid
from tests.benchmarks.decisions import BATCH, benchmark_items

#: statement (whitespace folded) -> [calls, server ms, each call's ms]
STATS: dict[str, list[Any]] = {}
PLANS: dict[str, Any] = {}
STATE: dict[str, Any] = {"profile": False, "last": 0.0}


def _install() -> None:
    from neo4j import Result, Transaction
    from neo4j._sync.work.transaction import ManagedTransaction

    from core.stores.neo4j import _Neo4jTx, _plain_row

    consume = Result.consume

    def consume_timed(self: Any) -> Any:
        summary = consume(self)
        STATE["last"] = time.perf_counter()
        if not getattr(self, "_reviewer_counted", False):
            self._reviewer_counted = True
            key = " ".join(summary.query.removeprefix("PROFILE ").split())
            entry = STATS.setdefault(key, [0, 0.0, []])
            ms = (summary.result_available_after or 0) + (summary.result_consumed_after or 0)
            entry[0] += 1
            entry[1] += ms
            entry[2].append(ms)
            if summary.profile and key not in PLANS:
                PLANS[key] = summary.profile
        return summary

    def read_timed(self: Any, query: str, params: dict[str, Any]) -> list[Any]:
        result = self._tx.run(query, params)
        rows = [_plain_row(record) for record in result]
        result.consume()
        return rows

    Result.consume = consume_timed  # type: ignore[method-assign]
    _Neo4jTx._run_read = read_timed  # type: ignore[method-assign]
    for cls in (ManagedTransaction, Transaction):
        run = cls.run

        def run_maybe_profiled(self: Any, query: str, parameters: Any = None, _run: Any = run, **kw: Any) -> Any:
            if STATE["profile"] and not query.lstrip().upper().startswith(("PROFILE", "CALL DB.")):
                query = "PROFILE " + query
            return _run(self, query, parameters, **kw)

        cls.run = run_maybe_profiled  # type: ignore[method-assign]


def _plan(op: dict[str, Any], depth: int = 0) -> list[str]:
    args = op.get("args", {})
    details = str(args.get("Details", ""))[:110]
    line = (
        f"{'  ' * depth}{op['operatorType']:<28} rows {op.get('rows', 0):>7,} hits {op.get('dbHits', 0):>8,}  {details}"
    )
    out = [line]
    for child in op.get("children", []):
        out += _plan(child, depth + 1)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--decisions", type=int, default=20_000)
    parser.add_argument("--profile-batch", type=int, default=5, help="the batch whose plans are printed (1-based)")
    parser.add_argument("--top", type=int, default=14)
    parser.add_argument(
        "--ab",
        metavar="FILE",
        help="a file defining another write_new_decisions (written against core._decision_rows' names): "
        "odd batches use it, even ones the current one, and each batch's CPU is printed by kind",
    )
    args = parser.parse_args()
    _install()
    for title, store, _url in each_store("neo4j", prefix="reviewer-profile-load-"):
        project = "load-" + uuid.uuid4().hex[:8]
        traces = DecisionTraces(store, project_id=project, agent_id="bench")
        items = benchmark_items(store, project, args.decisions)
        STATS.clear()
        pid = server_pid(store)
        load0 = os.getloadavg()
        wall0, cpu0, srv0 = time.perf_counter(), time.process_time(), _cpu_ms(pid) if pid else 0.0
        batches = [items[i : i + BATCH] for i in range(0, len(items), BATCH)]
        calls: list[float] = []
        by_kind: dict[str, list[tuple[float, float]]] = {"other": [], "current": []}
        import core.decisions as decisions_module
        from core import _decision_rows

        current = decisions_module.write_new_decisions
        other = current
        if args.ab:
            space = dict(vars(_decision_rows))
            exec(compile(Path(args.ab).read_text(), args.ab, "exec"), space)
            other = space["write_new_decisions"]
        steady: list[float] = []  # this process's and the server's CPU from the third batch on
        commits: list[float] = []
        for n, batch in enumerate(batches, 1):
            STATE["profile"] = n == args.profile_batch
            if n == 3:
                steady = [time.process_time(), _cpu_ms(pid) if pid else 0.0]
            kind = "other" if args.ab and n % 2 else "current"
            decisions_module.write_new_decisions = other if kind == "other" else current
            started, own0, srv_0 = time.perf_counter(), time.process_time(), _cpu_ms(pid) if pid else 0.0
            traces.load_decisions(batch)
            ended = time.perf_counter()
            if n > 4:
                by_kind[kind].append((time.process_time() - own0, ((_cpu_ms(pid) if pid else 0.0) - srv_0) / 1000))
            calls.append((ended - started) * 1000)
            commits.append((ended - STATE["last"]) * 1000)
            STATE["profile"] = False
            print(f"\r  loaded {n * BATCH:,}/{len(items):,}", end="", flush=True)
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        srv = ((_cpu_ms(pid) if pid else 0.0) - srv0) / 1000
        load1 = os.getloadavg()
        n = len(items)
        print(f"\n{title}: {n:,} decisions in {len(batches)} batches of {BATCH:,}")
        print(
            f"  wall {wall:.1f} s ({wall / n * 1000:.2f} ms a decision); CPU: this process {cpu:.1f} s "
            f"({cpu / n * 1000:.2f} ms), server {srv:.1f} s ({srv / n * 1000:.2f} ms); "
            f"load {load0[0]:.1f} -> {load1[0]:.1f}"
        )
        for kind, cpu_rows in by_kind.items():
            if cpu_rows:
                own_ms = statistics.median(x[0] for x in cpu_rows) / BATCH * 1000
                srv_ms = statistics.median(x[1] for x in cpu_rows) / BATCH * 1000
                print(
                    f"  {kind} writer, batches 5 on ({len(cpu_rows)}): median CPU a decision, "
                    f"this process {own_ms:.3f} ms, server {srv_ms:.3f} ms"
                )
        if len(batches) > 2:
            rest = len(items) - 2 * BATCH
            own = (time.process_time() - steady[0]) / rest * 1000
            server = ((_cpu_ms(pid) if pid else 0.0) - steady[1]) / rest
            print(f"  from the third batch on: CPU a decision, this process {own:.3f} ms, server {server:.3f} ms")
        total = sum(v[1] for v in STATS.values())
        print(f"  server time in statements {total / 1000:.1f} s ({total / n:.2f} ms a decision); by statement:")
        print(f"  per call (ms): {', '.join(f'{x:,.0f}' for x in calls)}")
        print(f"  commit (ms, last statement's end to the call's return): {', '.join(f'{x:,.0f}' for x in commits)}")
        for key, (count, ms, each) in sorted(STATS.items(), key=lambda kv: -kv[1][1])[: args.top]:
            med = statistics.median(each)
            print(
                f"  {ms / 1000:7.2f} s {ms / n:6.3f} ms/dec {100 * ms / max(total, 1):5.1f}% x{count:<5} "
                f"first {each[0]:,.0f} median {med:,.0f} max {max(each):,.0f} ms  {key[:120]}"
            )
        print(f"\nplans of batch {args.profile_batch}:")
        for key, plan in sorted(PLANS.items(), key=lambda kv: -STATS.get(kv[0], [0, 0])[1])[: args.top]:
            print(f"\n{key[:300]}")
            print("\n".join("    " + line for line in _plan(plan)))


if __name__ == "__main__":
    main()
