"""Stress: concurrent processes against one store, on each backend.

``counters``: the race of ``tests/core/test_concurrency.py`` (agents, a
reviewer, the sweep) in a loop, each round on a new project, with more
agents than the test: after each round every kept counter and number is
compared with a direct count; prints how many were compared and every
mismatch.

``writers``: ``--writers`` processes writing events and decisions for
``--seconds``, on a task each and all on one task: prints writes/s, the
writes that failed (the target is none), the units run again (a conflict,
a deadlock, a lost lease), lock waits, and whether every acknowledged
write is there once.

    .venv/bin/python -m tests.benchmarks.stress counters --rounds 5 --agents 4 --seconds 20 --backends falkordb,neo4j
    .venv/bin/python -m tests.benchmarks.stress writers --writers 16 --seconds 30 --backends falkordb,neo4j
"""

from __future__ import annotations

import argparse
import time
import uuid

from tests.benchmarks import TITLES, each_store


def stores(backends: str, neo4j_url: str | None):  # type: ignore[no-untyped-def]
    """Each backend's store, as ``each_store`` gives them; with
    ``neo4j_url``, Neo4j is that server (one started beforehand: on a busy
    machine the test server can take minutes to start)."""
    if not neo4j_url:
        yield from each_store(backends, prefix="reviewer-stress-")
        return
    from core.stores import open_store

    for backend in [b.strip() for b in backends.split(",") if b.strip()]:
        if backend == "neo4j":
            with open_store(neo4j_url) as store:
                yield TITLES[backend], store, neo4j_url
        else:
            yield from each_store(backend, prefix="reviewer-stress-")


def counters(backends: str, rounds: int, agents: int, seconds: float, neo4j_url: str | None = None) -> int:
    from core import _counters
    from tests.core import test_concurrency as race

    bad = 0
    for title, store, url in stores(backends, neo4j_url):
        print(f"== {title}: {rounds} rounds, {agents} agents, {seconds:.0f} s each", flush=True)
        total = wrong_total = 0
        for n in range(rounds):
            project = f"stress-{uuid.uuid4().hex[:8]}"
            began = time.monotonic()
            race.seed_race(store, project, agents)
            results = race.run_race(url, project, agents, seconds)
            writes = sum(len(r.get("events", [])) + len(r.get("decisions", [])) for _role, _n, r in results)
            crashed = [r["crash"] for _role, _n, r in results if "crash" in r]
            tasks = ["shared", *(f"own-{k}" for k in range(agents))]
            checked, wrong = race.counter_mismatches(store, project, tasks)
            direct = race._direct_causes(store, project)
            causes = len(direct)
            # the comparison the test made before: the 200 largest causes
            # against every cause, unequal whenever the queue holds more
            capped = "equal" if _counters.top_causes(store, project, 200) == direct else "UNEQUAL"
            total += checked
            wrong_total += len(wrong)
            print(
                f"round {n + 1}: {writes} agent writes, {causes} root causes in the queue, "
                f"{checked} counts checked, {len(wrong)} mismatches; the 200 largest causes against all: {capped} "
                f"({time.monotonic() - began:.0f} s)",
                flush=True,
            )
            for line in wrong[:20]:
                print("   ", line)
            for text in crashed:
                print("    crash:", text.splitlines()[-1])
            store.drop_project(project)
        print(f"{title}: {total} counts checked, {wrong_total} mismatches (target 0)", flush=True)
        bad += wrong_total
    return bad


def writers(backends: str, n: int, seconds: float, neo4j_url: str | None = None) -> int:
    from tests.core import test_concurrency as race

    bad = 0
    for title, store, _url in stores(backends, neo4j_url):
        for one_task in (False, True):
            project = f"stress-{uuid.uuid4().hex[:8]}"
            f = race.run_writers(store, project, n, one_task, seconds)
            shape = "one task" if one_task else f"{n} tasks"
            print(
                f"{title}, {n} writers on {shape}, {seconds:.0f} s: {f['writes']} writes ({f['per_s']:.1f}/s), "
                f"{f['failed']} failed (target 0), {f['retries']} units run again of {f['units']}, "
                f"{f['lock_waits']} lock waits ({f['lock_wait_s']:.1f} s in all), "
                f"{f['missing']} missing, {f['duplicated'] + f['twice_found']} twice (target 0 each), "
                f"{f['misnumbered_tasks']} tasks misnumbered",
                flush=True,
            )
            for kind in f["kinds"]:
                print("    failure:", kind)
            bad += f["failed"] + f["missing"] + f["duplicated"] + f["twice_found"] + f["misnumbered_tasks"]
            store.drop_project(project)
    return bad


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    a = sub.add_parser("counters")
    a.add_argument("--rounds", type=int, default=5)
    a.add_argument("--agents", type=int, default=4)
    a.add_argument("--seconds", type=float, default=20.0)
    a.add_argument("--backends", default="falkordb,neo4j")
    b = sub.add_parser("writers")
    b.add_argument("--writers", type=int, default=16)
    b.add_argument("--seconds", type=float, default=30.0)
    b.add_argument("--backends", default="falkordb,neo4j")
    for p in (a, b):
        p.add_argument("--neo4j-url", default=None, help="a Neo4j server started beforehand (else the test server)")
    args = parser.parse_args()
    if args.mode == "counters":
        bad = counters(args.backends, args.rounds, args.agents, args.seconds, args.neo4j_url)
    else:
        bad = writers(args.backends, args.writers, args.seconds, args.neo4j_url)
    raise SystemExit(1 if bad else 0)


if __name__ == "__main__":
    main()
