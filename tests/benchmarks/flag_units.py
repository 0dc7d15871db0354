"""Transaction memory of a document update per decision it flags, on Neo4j
(issue 18): a document cited by ``--citers`` decisions is updated (timing
each unit: on FalkorDB, how long it holds the single writer) while a
second session polls ``SHOW TRANSACTIONS`` for the largest
``estimatedUsedHeapMemory`` of any transaction; prints it, per flagged
decision, with wall time and the process's CPU.

    # a Neo4j test server (optionally with a transaction memory limit)
    .venv/bin/python -m tests.benchmarks.flag_units serve [--tx-total 64m]
    .venv/bin/python -m tests.benchmarks.flag_units seed --url URL --citers 30000 --docs a,b [--load-batch 1000]
    .venv/bin/python -m tests.benchmarks.flag_units update --url URL --doc a [--batch 2000]

``update`` uses whatever ``core`` is first on the path, so the code before
the units runs the same measurement (``git archive`` of it into a directory
put first on PYTHONPATH, and this file run by its path, not with ``-m``); ``--batch`` sets
``core._flag_jobs.FLAG_BATCH`` where there is one.
"""

from __future__ import annotations

import argparse
import os
import threading
import time

PROJECT = "flagbench"
TEXT = "Postgres stays the system of record.\n\nReviews happen weekly.\n"
PASSAGE = "Postgres stays the system of record"


def serve(tx_total: str | None) -> None:
    from tests.neo4j_server.launcher import serve as serve_until_stopped

    serve_until_stopped("URL {url}", heap="1g", tx_total=tx_total)


def seed(url: str, citers: int, docs: list[str], load_batch: int) -> None:
    from core.decisions import DecisionTraces
    from core.history import ConversationHistory
    from core.knowledge import Graph
    from core.stores import open_store

    store = open_store(url)
    history = ConversationHistory(store, project_id=PROJECT, agent_id="seed")
    graph = Graph(store, project_id=PROJECT, agent_id="seed")
    traces = DecisionTraces(store, project_id=PROJECT, agent_id="seed")
    tasks = [f"t{i}" for i in range(10)]
    for t in tasks:
        history.create_task(t, goal="seed")
    started = time.monotonic()
    for key in docs:
        graph.add(key, TEXT)
        start = TEXT.index(PASSAGE)
        evidence = graph.span_evidence_id(key, start, start + len(PASSAGE))
        for at in range(0, citers, load_batch):
            traces.load_decisions(
                [
                    {
                        "task_name": tasks[i % len(tasks)],
                        "choice_key": f"{key}-{i}",
                        "conclusion": f"C{i}",
                        "rationale": "r",
                        "supports": [{"kind": "document", "evidence_id": evidence}],
                    }
                    for i in range(at, min(citers, at + load_batch))
                ]
            )
    print(f"seeded {citers} citers of each of {docs} in {time.monotonic() - started:.0f} s", flush=True)
    store.close()


def update(url: str, doc: str, batch: int | None) -> None:
    import core
    import core.knowledge
    from core.knowledge import Graph
    from core.stores import open_store

    jobs = getattr(core.knowledge, "_flag_jobs", None)
    per_unit = 10**9
    if jobs is not None:
        if batch is not None:
            jobs.FLAG_BATCH = batch
        per_unit = jobs.FLAG_BATCH
        units = f"units of {per_unit}"
    else:
        units = "one unit (the code before _flag_jobs)"
    peak: dict[str, int] = {}
    stop = threading.Event()
    neo4j = url.startswith(("bolt", "neo4j"))

    def poll() -> None:
        from neo4j import GraphDatabase

        with GraphDatabase.driver(url) as driver, driver.session() as s:
            while not stop.is_set():
                for r in s.run(
                    "SHOW TRANSACTIONS YIELD transactionId AS id, estimatedUsedHeapMemory AS heap, currentQuery AS q "
                    "WHERE NOT q STARTS WITH 'SHOW TRANSACTIONS' RETURN id, heap"
                ):
                    peak[r["id"]] = max(peak.get(r["id"], 0), r["heap"] or 0)
                time.sleep(0.005)

    store = open_store(url)
    graph = Graph(store, project_id=PROJECT, agent_id="bench")
    text = (graph.current_text(doc) or TEXT) + f"\n\nchanged at {time.time()}"
    unit_s: list[float] = []  # each unit's wall time: how long it held the writer (FalkorDB) or its locks
    transact = store.transact

    def timed(*a: object, **kw: object) -> object:
        started = time.monotonic()
        try:
            return transact(*a, **kw)  # type: ignore[arg-type]
        finally:
            unit_s.append(time.monotonic() - started)

    store.transact = timed  # type: ignore[method-assign]
    poller = threading.Thread(target=poll, daemon=True)
    if neo4j:
        poller.start()
        time.sleep(0.2)
    cpu0, wall0 = time.process_time(), time.monotonic()
    error = None
    try:
        result = graph.update(doc, text)
        flagged = len(result.flagged_decision_ids)
    except Exception as exc:  # the measurement reports a failed update too
        error, flagged = f"{type(exc).__name__}: {str(exc)[:300]}", 0
    wall, cpu = time.monotonic() - wall0, time.process_time() - cpu0
    stop.set()
    if neo4j:
        poller.join()
    top = max(peak.values(), default=0)
    print(
        f"core from {os.path.dirname(core.__file__)}; {units}: flagged {flagged} in {wall:.1f} s wall, "
        f"{cpu:.1f} s CPU (this process); {len(peak)} transactions seen; largest estimatedUsedHeapMemory "
        f"{top / 2**20:.1f} MiB"
        + (f" = {top / min(flagged, per_unit):.0f} bytes per decision of its unit" if flagged else ""),
        flush=True,
    )
    print(
        f"{len(unit_s)} units; the longest {max(unit_s, default=0):.2f} s, median {sorted(unit_s)[len(unit_s) // 2]:.2f} s"
    )
    print("largest five (MiB):", [round(v / 2**20, 1) for v in sorted(peak.values(), reverse=True)[:5]], flush=True)
    if error:
        print(f"the update failed: {error}", flush=True)
    print("load average:", os.getloadavg(), flush=True)
    store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["serve", "seed", "update"])
    parser.add_argument("--url")
    parser.add_argument("--tx-total", default=None)
    parser.add_argument("--citers", type=int, default=30_000)
    parser.add_argument("--docs", default="a,b")
    parser.add_argument("--doc", default="a")
    parser.add_argument("--batch", type=int, default=None)
    parser.add_argument("--load-batch", type=int, default=5_000, help="decisions per load_decisions unit")
    args = parser.parse_args()
    if args.what == "serve":
        serve(args.tx_total)
    elif args.what == "seed":
        seed(args.url, args.citers, args.docs.split(","), args.load_batch)
    else:
        update(args.url, args.doc, args.batch)


if __name__ == "__main__":
    main()
