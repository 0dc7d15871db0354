"""How long a redaction stays pending (its text still in the store's files)
while a server runs, on each backend.

    .venv/bin/python -m tests.benchmarks.pending [--backends falkordb,neo4j] [--events 2000] [--runs 3]

Two ways a redaction is made, each timed until its purge reports done:

* by this process through the library (its own purge starts after
  ``Purger.QUIET_S`` of quiet);
* by another process that dies right after (``os._exit``: its own purge
  never runs), while this process watches the store as every web worker
  does (``Purger.watch``, every ``Purger.CHECK_EVERY_S``).

Each figure is printed beside the target (30 s) and beside the floor, one
purge round of the same store timed alone (what the rewrite itself costs).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

from core._purge import Purger, event_purge_states, purge_round
from core.history import ConversationHistory
from core.retention import HistoryRetention
from tests.benchmarks import each_store

TARGET_S = 30.0
ROOT = Path(__file__).resolve().parents[2]


def _wait_done(store, project: str, eid: str, limit: float = 120.0) -> float:  # type: ignore[no-untyped-def]
    start = time.monotonic()
    while time.monotonic() - start < limit:
        if event_purge_states(store, project, [eid])[eid]["at"]:
            return time.monotonic() - start
        time.sleep(0.05)
    return float("inf")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="falkordb,neo4j")
    parser.add_argument("--events", type=int, default=2000, help="events in the store besides the redacted ones")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    for title, store, url in each_store(args.backends):
        project = "bench-" + uuid.uuid4().hex[:8]
        history = ConversationHistory(store, project_id=project, agent_id="agent")
        history.create_task("t", goal="g")
        history.load_events("t", [{"kind": "note", "payload": f"body {i}"} for i in range(args.events)])
        retention = HistoryRetention(store, project_id=project, agent_id="steward")

        def fresh() -> str:
            return str(history.record_event("t", kind="note", payload="secret " + uuid.uuid4().hex).event.id)

        retention.redact_event(fresh())
        Purger.finish_all()
        floor = min(purge_round(store).seconds for _ in range(args.runs))
        own, dead = [], []
        for _ in range(args.runs):
            eid = fresh()
            retention.redact_event(eid)
            own.append(_wait_done(store, project, eid))
            Purger.finish_all()
        Purger.watch(store)
        try:
            for _ in range(args.runs):
                eid = fresh()
                code = (
                    f"import os\nfrom core.stores import open_store\nfrom core.retention import HistoryRetention\n"
                    f"s = open_store({url!r})\n"
                    f"HistoryRetention(s, project_id={project!r}, agent_id='x').redact_event({eid!r})\nos._exit(0)\n"
                )
                env = {**os.environ, "PYTHONPATH": str(ROOT)}
                subprocess.run([sys.executable, "-c", code], env=env, check=True)
                dead.append(_wait_done(store, project, eid))
        finally:
            Purger.unwatch(store)
        print(f"\n{title}: {args.events:,} events; floor: one purge round alone {floor:.2f} s")
        for name, figures in (("redacted by this process", own), ("redacted by a process that died", dead)):
            worst = max(figures)
            verdict = "within" if worst <= TARGET_S else "OVER"
            print(
                f"  redaction pending, seconds, {name}: worst {worst:.1f} s of {len(figures)} "
                f"({worst / floor:.0f}x the floor; {verdict} the {TARGET_S:.0f} s target)"
            )
        store.drop_project(project)


if __name__ == "__main__":
    main()
