"""Server time of the pages a hostile document reaches: a document of "a"s
cited over a long passage and then changed by one character, so the
passage stands in thousands of overlapping places of the new text (200k
characters cited over 20k, and 2 MiB cited over 500k). The decision page
(with its diff and supersede picker), the review queue (a page of such
cards) and a reaffirm from the queue, each p50 / p95 against the target
(100 ms p95) and the floor of a store round trip measured in the same run;
an ordinary decision page and queue beside them keep their figures.

    .venv/bin/python -m tests.benchmarks.hostile [--backends falkordb,neo4j] [--samples 20]

The 2 MiB document stands for one stored before the write path's document
size limit (about 1 MiB) existed: it is written through the library's own
``Graph.add`` and ``Graph.update`` inside ``tests.hostile_data.raised_limit``,
which lifts the knowledge layer's length limit constants while the set is
written, so the store holds exactly what an old store holds.

Pages are requested through Django's test client in this process (the
server time without the network); the CPU column is the mean CPU time of
this process and the store's server per request.
"""

from __future__ import annotations

import argparse
import os
import time
import uuid
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth.models import User  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402

from core.decisions import DecisionTraces  # noqa: E402
from core.history import ConversationHistory  # noqa: E402
from core.knowledge import Graph  # noqa: E402
from core.stores import GraphStore  # noqa: E402
from reviewer import store as reviewer_store  # noqa: E402
from tests.benchmarks import Timer, each_store  # noqa: E402
from tests.hostile_data import one_char_changed, raised_limit  # noqa: E402

TARGET_MS = 100.0
#: (key, length, cited): the documents of the issue that found the quadratic search
DOCUMENTS = [("repeat-200k", 200_000, 20_000), ("repeat-2mib", 2 * 2**20, 500_000)]
ADR = "Orders stay on Postgres.\n\nWe review the choice every quarter.\n\nOwners answer pages within an hour."


def seed(store: GraphStore, project: str, per_document: int) -> dict[str, list[str]]:
    """``per_document`` decisions citing each hostile document (one task
    each, so a queue page is one document's cards), and as many citing an
    ordinary one; every document then changed by one character (in the
    middle of the hostile passages; before the ordinary one)."""
    history = ConversationHistory(store, project_id=project, agent_id="bench")
    graph = Graph(store, project_id=project, agent_id="bench")
    traces = DecisionTraces(store, project_id=project, agent_id="bench")
    made: dict[str, list[str]] = {}
    docs = [(key, "a" * length, (length - cited) // 2, cited) for key, length, cited in DOCUMENTS]
    docs.append(("ordinary", ADR, 0, len("Orders stay on Postgres.")))
    with raised_limit():
        for key, text, start, cited in docs:
            history.create_task(key, goal=f"Cite {key}")
            assert graph.add(key, text).recorded, key
            evidence = graph.span_evidence_id(key, start, start + cited)
            got = graph.fetch(evidence)
            made[key] = [
                str(
                    traces.record_decision(
                        key,
                        choice_key=f"{key}-{i}",
                        conclusion="holds",
                        rationale="r",
                        supports=[{"kind": "document", "evidence_id": evidence}],
                        fetched=[got],
                    ).decision.id
                )
                for i in range(per_document)
            ]
            new = "Preface.\n\n" + text if key == "ordinary" else one_char_changed(text, start + cited // 2)
            assert graph.update(key, new).recorded, key
    while traces.continue_decision_review().moved:
        pass
    return made


def run(title: str, store: GraphStore, samples: int) -> None:
    reviewer_store._store = store
    user = User.objects.create_user(f"bench-{uuid.uuid4().hex[:6]}", is_staff=True)
    client = Client()
    client.force_login(user)
    project = "hostile-" + uuid.uuid4().hex[:8]
    print(f"\n{title}: seeding {', '.join(k for k, *_ in DOCUMENTS)} and an ordinary document…", flush=True)
    began = time.perf_counter()
    made = seed(store, project, samples + 2)
    print(f"  seeded in {time.perf_counter() - began:.1f} s", flush=True)
    base = f"/p/{project}"
    figures: dict[str, tuple[float, ...]] = {}
    sizes: dict[str, int] = {}

    def measure(name: str, calls: list[tuple[str, dict[str, Any] | None]]) -> None:
        timer = Timer(store)
        size = 0
        for url, data in calls:
            with timer:
                if data is None:
                    response = client.get(url)
                else:
                    response = client.post(url, data, HTTP_HX_REQUEST="true")
            assert response.status_code == 200, (name, url, response.status_code)
            size = max(size, len(response.content))
        figures[name], sizes[name] = timer.figures(), size

    for key in [k for k, *_ in DOCUMENTS] + ["ordinary"]:
        ids = made[key]
        page = f"{base}/decisions/{ids[0]}/"
        client.get(page)  # warm up
        measure(f"{key}: decision page", [(page, None)] * samples)
        measure(f"{key}: queue (its {len(ids)} cards)", [(f"{base}/review/?task={key}", None)] * samples)
        measure(
            f"{key}: reaffirm from the queue",
            [
                (f"{base}/decisions/{d}/reaffirm", {"explanation": "holds", "request_id": f"b-{d}"})
                for d in ids[1 : samples + 1]
            ],
        )
    floor_timer = Timer(store)
    for _ in range(200):
        with floor_timer:
            store.read(project, "RETURN 1 AS one")
    floor = floor_timer.figures()[0]
    store.drop_project(project)
    print(f"{title}: floor (store round trip, p50) {floor:.3f} ms; target {TARGET_MS:.0f} ms p95")
    print(f"  {'page or action':40} {'p50 / p95':>20}  {'target':>6}  p95 / floor  {'CPU':>9}  {'largest':>9}")
    for name, (p50, p95, *cpu) in figures.items():
        verdict = "ok" if p95 <= TARGET_MS else "OVER"
        work = f"{cpu[0]:>6.1f} ms" if cpu else ""
        print(
            f"  {name:40} {p50:>9.1f} / {p95:>6.1f} ms  {verdict:>6}  {p95 / floor:>8.0f}x  {work:>9}  "
            f"{sizes[name] / 1000:>6.0f} kB"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backends", default="falkordb,neo4j")
    parser.add_argument("--samples", type=int, default=20)
    args = parser.parse_args()
    settings.ALLOWED_HOSTS = ["testserver"]
    settings.DEBUG = False
    call_command("migrate", interactive=False, verbosity=0)
    for title, store, _url in each_store(args.backends):
        run(title, store, args.samples)


if __name__ == "__main__":
    main()
