"""Server time of every dashboard page and action, on a small and a large data
set, beside the floor of a store round trip measured in the same run; and the
server process's memory over 1,000 page views.

    .venv/bin/python -m tests.benchmarks.pages [--decisions 100000] [--small 1000] [--backends falkordb,neo4j]
    .venv/bin/python -m tests.benchmarks.pages --demo [--backends falkordb]
    .venv/bin/python -m tests.benchmarks.pages --processes 2 [--decisions 1000000]

With ``--processes N`` the pages of the large set are also requested by N
worker processes at once (each opens the store from its url, as server
workers do), and their p50 / p95 and the requests per second are printed.

With ``--demo`` the pages are measured on the large demo set
(``seed_demo --size large``: 1,000 tasks of 1,000 events and 100 decisions,
documents revised and retired, part of a review sweep) instead of the
benchmark's own sets.

Pages are requested through Django's test client in this process (the server
time without the network); each figure is p50 / p95 over repeated requests.
"""

from __future__ import annotations

import argparse
import os
import resource
import time
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth.models import User  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402

from core.decisions import DecisionTraces  # noqa: E402
from core.history import ConversationHistory  # noqa: E402
from core.stores import GraphStore  # noqa: E402
from reviewer import store as reviewer_store  # noqa: E402
from tests.benchmarks import each_store  # noqa: E402
from tests.benchmarks.decisions import big_project  # noqa: E402
from tests.benchmarks.history import percentiles  # noqa: E402


def rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(store: GraphStore, decisions: int, client: Client) -> tuple[dict[str, tuple[float, float]], str]:
    _rows, project = big_project(store, decisions)
    history = ConversationHistory(store, project_id=project, agent_id="bench")
    for i in range(500):
        history.record_event("task-1", kind="tool_result", name="search", payload=f"result {i} " * 40)
    return measure_pages(store, project, client, task="task-0", events_task="task-1", after=300, document="policy")


def demo_project(store: GraphStore) -> tuple[str, str, str]:
    """The large demo set in a project of its own: (project, the task whose
    decisions need review, a document they cite)."""
    from reviewer.demo_large import seed_large

    project = "bench-demo-" + uuid.uuid4().hex[:6]
    started = time.perf_counter()
    counts = seed_large(
        store,
        project=project,
        progress=lambda stage, done, total: print(
            f"\r  seeding the large demo set: {stage} {done:,}/{total:,}", end="", flush=True
        ),
    )
    print(
        f"\n  seeded {counts.decisions:,} decisions, {counts.events:,} events in {time.perf_counter() - started:.0f} s"
    )
    traces = DecisionTraces(store, project_id=project, agent_id="bench")
    first = traces.list_decisions_for_review(limit=1).decisions[0]
    return project, first.task_name, "policy/storage"


def measure_pages(
    store: GraphStore, project: str, client: Client, *, task: str, events_task: str, after: int, document: str
) -> tuple[dict[str, tuple[float, float]], str]:
    traces = DecisionTraces(store, project_id=project, agent_id="bench")
    flagged = traces.list_decisions_for_review(limit=20).decisions
    some = str(flagged[0].id)
    base = f"/p/{project}"
    pages: dict[str, str] = {
        "overview": f"{base}/",
        "review queue": f"{base}/review/",
        "review queue, page 40": f"{base}/review/?page=40",
        "review queue, one task": f"{base}/review/?{urlencode({'task': task})}",
        "decision (flagged)": f"{base}/decisions/{some}/",
        "conflicts": f"{base}/conflicts/",
        "tasks": f"{base}/tasks/",
        "task view": f"{base}/task/?{urlencode({'name': task})}",
        "event log": f"{base}/events/?{urlencode({'task': events_task, 'after': after})}",
        "document": f"{base}/document/?{urlencode({'key': document})}",
        "activity": f"{base}/activity/",
    }
    out: dict[str, tuple[float, float]] = {}
    for name, url in pages.items():
        assert client.get(url).status_code == 200, url  # warm
        samples = []
        for _ in range(40):
            start = time.perf_counter()
            response = client.get(url)
            samples.append((time.perf_counter() - start) * 1000)
            assert response.status_code == 200, (url, response.status_code)
        out[name] = percentiles(samples)
    # actions, each on decisions of its own
    queue = traces.list_decisions_for_review(limit=20, offset=20).decisions
    actions: dict[str, list[tuple[str, dict[str, Any]]]] = {
        "reaffirm": [(f"{base}/decisions/{d.id}/reaffirm", {"explanation": "still holds"}) for d in queue[:6]],
        "reject": [(f"{base}/decisions/{d.id}/reject", {"reason": "benchmark"}) for d in queue[6:12]],
        "supersede": [
            (
                f"{base}/decisions/{d.id}/supersede",
                {
                    "conclusion": "new",
                    "rationale": "r",
                    "explanation": "benchmark",
                    "add": f"event {d.task_name} 1",
                    "doc-0": "drop",
                    "confirm_drop": "on",
                },
            )
            for d in queue[12:18]
        ],
    }
    for name, calls in actions.items():
        samples = []
        for url, data in calls:
            start = time.perf_counter()
            response = client.post(url, {**data, "request_id": uuid.uuid4().hex})
            samples.append((time.perf_counter() - start) * 1000)
            assert response.status_code == 302, (url, response.status_code, response.content[:300])
        out[f"action: {name}"] = percentiles(samples)
    return out, project


def _worker(url: str, pages: list[str], views: int, out: Any) -> None:
    """One server worker: its own process, store handle and session."""
    import django as _django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    _django.setup()
    from django.conf import settings as _settings
    from django.contrib.auth.models import User as _User
    from django.core.management import call_command as _call
    from django.test import Client as _Client

    from core.stores import open_store
    from reviewer import store as _reviewer_store

    _settings.ALLOWED_HOSTS = ["testserver"]
    _settings.DEBUG = False
    _call("migrate", interactive=False, verbosity=0)
    _reviewer_store._store = open_store(url)
    client = _Client()
    client.force_login(_User.objects.create_user(f"bench-{uuid.uuid4().hex[:6]}", is_staff=True))
    samples: dict[str, list[float]] = {p: [] for p in pages}
    for p in pages:
        client.get(p)  # warm
    out.put("ready")
    start = time.perf_counter()
    for i in range(views):
        page = pages[i % len(pages)]
        t = time.perf_counter()
        assert client.get(page).status_code == 200, page
        samples[page].append((time.perf_counter() - t) * 1000)
    out.put((samples, time.perf_counter() - start))
    _reviewer_store._store.close()


def in_processes(url: str, pages: dict[str, str], processes: int, views: int) -> None:
    """The pages requested by ``processes`` workers at once."""
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(url, list(pages.values()), views, out)) for _ in range(processes)]
    for p in procs:
        p.start()
    results = [r for r in (out.get(timeout=600) for _ in range(2 * processes)) if r != "ready"]
    for p in procs:
        p.join(timeout=60)
    by_url = {u: [x for samples, _ in results for x in samples[u]] for u in pages.values()}
    wall = max(took for _, took in results)
    total = sum(len(v) for v in by_url.values())
    print(f"  {processes} worker processes at once, {views:,} page views each: {total / wall:,.0f} pages/s in all")
    for name, u in pages.items():
        p50, p95 = percentiles(by_url[u])
        print(f"    {name:26} {p50:>8.1f} / {p95:>6.1f} ms")


def run(
    title: str, store: GraphStore, large: int, small: int, *, demo: bool = False, processes: int = 0, url: str = ""
) -> None:
    reviewer_store._store = store  # the dashboard's own store handle
    user = User.objects.create_user(f"bench-{uuid.uuid4().hex[:6]}", is_staff=True)
    client = Client()
    client.force_login(user)
    small_figures, small_project = measure(store, small, client)
    store.drop_project(small_project)
    task = "task-0"
    if demo:
        project, task, document = demo_project(store)
        large_figures, large_project = measure_pages(
            store, project, client, task=task, events_task=task, after=500, document=document
        )
        title += ", large demo set"
    else:
        large_figures, large_project = measure(store, large, client)
    floor = percentiles([_timed(lambda: store.read(large_project, "RETURN 1 AS one")) for _ in range(500)])[0]
    before = rss_mb()
    urls = [f"/p/{large_project}/review/", f"/p/{large_project}/", f"/p/{large_project}/conflicts/"]
    for i in range(1000):
        client.get(urls[i % len(urls)])
    after = rss_mb()
    used = ""
    if store.backend == "falkordb":
        info = store._redis.info("memory")  # type: ignore[attr-defined]
        used = f"; store used memory {info['used_memory_human']}"
    if processes > 1:
        print(f"\n{title}:")
        b = f"/p/{large_project}"
        in_processes(
            url,
            {
                "overview": f"{b}/",
                "review queue": f"{b}/review/",
                "review queue, page 40": f"{b}/review/?page=40",
                "conflicts": f"{b}/conflicts/",
                "task view": f"{b}/task/?{urlencode({'name': task})}",
            },
            processes,
            200,
        )
    store.drop_project(large_project)
    print(f"\n{title}: floor (store round trip, p50) {floor:.3f} ms")
    large_label = "large demo set p50 / p95" if demo else f"{large:,} decisions p50 / p95"
    print(f"  {'page or action':28} {f'{small:,} decisions p50 / p95':>26} {large_label:>28}  large p95 / floor")
    for name in large_figures:
        s50, s95 = small_figures[name]
        l50, l95 = large_figures[name]
        print(f"  {name:28} {s50:>12.1f} / {s95:>6.1f} ms {l50:>14.1f} / {l95:>6.1f} ms  {l95 / floor:>8.0f}x")
    print(f"  server process: {before:.0f} MB resident before 1,000 page views, {after:.0f} MB after{used}")


def _timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--decisions", type=int, default=100_000)
    parser.add_argument("--small", type=int, default=1_000)
    parser.add_argument("--backends", default="falkordb,neo4j")
    parser.add_argument("--demo", action="store_true", help="measure the large pages on the large demo set")
    parser.add_argument("--processes", type=int, default=0, help="also request the pages from N worker processes")
    args = parser.parse_args()
    settings.ALLOWED_HOSTS = ["testserver"]
    settings.DEBUG = False
    call_command("migrate", interactive=False, verbosity=0)
    for title, store, url in each_store(args.backends):
        run(title, store, args.decisions, args.small, demo=args.demo, processes=args.processes, url=url)


if __name__ == "__main__":
    main()
