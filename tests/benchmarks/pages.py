"""Server time of every dashboard page and action, on a small and a large data
set, beside the floor of a store round trip measured in the same run; the
CPU each request took (this process and the store's server); the server
process's memory over ``--views`` page views (1,000; 10,000 on a set of a
million decisions); and the store's memory per decision and per event.

    .venv/bin/python -m tests.benchmarks.pages [--decisions 100000] [--small 1000] [--backends falkordb,neo4j]
    .venv/bin/python -m tests.benchmarks.pages --demo [--decisions 100000 --events 1000000] [--backends falkordb]
    .venv/bin/python -m tests.benchmarks.pages --demo --decisions 1000000 --events 10000000 --per-task 1000 --keep DIR
    .venv/bin/python -m tests.benchmarks.pages --processes 2 [--decisions 1000000]
    .venv/bin/python -m tests.benchmarks.pages --decisions 1000000 --small 0 --keep /work/bench-data/bench-1m

With ``--processes N`` the pages of the large set are also requested by N
worker processes at once (each opens the store from its url, as server
workers do), and their p50 / p95 and the requests per second are printed.

With ``--demo`` the pages are measured on the large demo set
(``reviewer.demo_large``: tasks of ``events / decisions × 100`` events and
100 decisions by default, documents revised and retired, part of a review sweep;
``--events`` defaults to ten per decision; ``--per-task 1000`` makes tasks
of 1,000 decisions, a tenth as many, as the ten-million-event set is
seeded) instead of the benchmark's own sets. On FalkorDB its seeding turns
off the append-only file's automatic rewrites and rewrites it once at the
end.

Seed once, measure many times: with ``--keep DIR`` the large set is written
into kept stores (``DIR/falkordb``, an embedded FalkorDB directory, and
``DIR/neo4j``, the Neo4j test server's data directory and event keys) with
``DIR/<backend>/bench.json`` naming the project and how it was seeded
(time, the store's memory before and after each stage). A later run with
the same ``DIR`` finds that file, seeds nothing and measures the pages (and
actions, on decisions not settled before) on what is there; the store is
opened by whatever code is checked out, so figures of new code come from
the same data. ``--seed-only`` seeds and stops. The store's memory is
INFO ``used_memory`` on FalkorDB (per decision and per event from its
growth over the seeding's stages); on Neo4j the store files on disk as of
the last checkpoint (exact for a kept store just opened: Community cannot
force one), with the JVM's heap in use and resident size beside them.

Pages are requested through Django's test client in this process (the server
time without the network); each figure is p50 / p95 over repeated requests,
with the mean CPU per request (this process plus the store's server process:
it grows far less than the wall time when other work shares the machine).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import time
import uuid
from collections.abc import Callable, Iterator
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
from tests.benchmarks import Timer, each_store, server_home, server_pid  # noqa: E402
from tests.benchmarks.decisions import big_project  # noqa: E402
from tests.benchmarks.history import percentiles  # noqa: E402


def rss_mb(pid: int | None = None) -> float:
    with open(f"/proc/{pid or 'self'}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def store_memory(store: GraphStore) -> tuple[int, str]:
    """The store's memory in bytes, and what that figure is: FalkorDB's
    ``used_memory``; Neo4j's store files on disk, which Neo4j writes at a
    checkpoint (a clean shutdown, or its own every 15 minutes; Community has
    no procedure to force one), so they are exact only for a store just
    opened after a clean shutdown, as a kept store is."""
    if store.backend == "falkordb":
        info = store._redis.info("memory")  # type: ignore[attr-defined]
        return int(info["used_memory"]), "FalkorDB used_memory"
    home = server_home(store)
    if home is None:
        return 0, "Neo4j store files (unknown: not a server this process started)"
    return neo4j_files(home), "Neo4j store files on disk at the last checkpoint"


def server_forks(store: GraphStore) -> tuple[int, float]:
    """How many times the FalkorDB server has forked (its index garbage
    collection and append-only file rewrites do; the server stops for the
    fork itself, longer the more memory it holds), and how many ms the last
    fork stopped it; (0, 0) on Neo4j."""
    if store.backend != "falkordb":
        return 0, 0.0
    stats = store._redis.info("stats")  # type: ignore[attr-defined]
    return int(stats["total_forks"]), stats["latest_fork_usec"] / 1000


def neo4j_files(home: str) -> int:
    """Bytes in the Neo4j server's store files for its ``neo4j`` database."""
    total = 0
    for root, _dirs, files in os.walk(os.path.join(home, "data", "databases", "neo4j")):
        total += sum(os.path.getsize(os.path.join(root, f)) for f in files)
    return total


def neo4j_heap_mb(store: GraphStore) -> str:
    """The Neo4j server's JVM: heap in use and resident size."""
    out = []
    try:
        rows = store.read("", "CALL dbms.queryJmx('java.lang:type=Memory') YIELD attributes RETURN attributes")
        used = rows[0]["attributes"]["HeapMemoryUsage"]["value"]["properties"]["used"]
        out.append(f"heap in use {used / 2**20:,.0f} MB")
    except Exception as exc:  # say what could not be read
        out.append(f"heap unknown ({type(exc).__name__})")
    pid = server_pid(store)
    if pid:
        out.append(f"JVM resident {rss_mb(pid):,.0f} MB")
    return ", ".join(out)


def measure(store: GraphStore, decisions: int, client: Client) -> tuple[dict[str, Figure], str]:
    spot = seed_benchmark_set(store, decisions)
    return measure_pages(store, spot["project"], client, **_where(spot)), spot["project"]


def seed_benchmark_set(store: GraphStore, decisions: int) -> dict[str, Any]:
    """The benchmark's own set: ``decisions`` decisions over ten tasks, and a
    task of 500 events."""
    _rows, project = big_project(store, decisions)
    history = ConversationHistory(store, project_id=project, agent_id="bench")
    for i in range(500):
        history.record_event("task-1", kind="tool_result", name="search", payload=f"result {i} " * 40)
    seed_activity(store, project, max(1000, decisions // 10))
    return {"project": project, "task": "task-0", "events_task": "task-1", "after": 300, "document": "policy"}


#: who the seeded activity entries name, and what they did
ACTIVITY_ACTORS = ("rita", "stan", "vera", "planner", "importer")
ACTIVITY_ACTIONS = ("reaffirm", "supersede", "reject", "claim", "release", "assign", "comment")


def seed_activity(store: GraphStore, project: str, n: int) -> None:
    """``n`` activity entries over the last 30 days (a team's log beside the
    decisions), with the properties ``core._review.log_activity`` writes,
    written in bulk (the pages read them; how each was written does not
    matter to them): five people and agents, seven actions, the ten tasks."""
    from datetime import UTC, datetime, timedelta

    from core import _common as c

    now = datetime.now(UTC)
    for start in range(0, n, 5000):
        rows = [
            {
                "id": str(uuid.uuid4()),
                "at": c.iso(now - timedelta(seconds=(i * 2_592_000) // n)),
                "us": c.micros(now - timedelta(seconds=(i * 2_592_000) // n)),
                "actor": ACTIVITY_ACTORS[i % 5],
                "kind": "person" if i % 5 < 3 else "agent",
                "action": ACTIVITY_ACTIONS[i % 7],
                "task": c.task_id(project, f"task-{i % 10}"),
                "target": str(uuid.uuid4()),
            }
            for i in range(start, min(n, start + 5000))
        ]
        store.write(
            project,
            "UNWIND $rows AS r CREATE (:Activity {id: r.id, project_id: $p, at: r.at, actor: r.actor, "
            "actor_kind: r.kind, action: r.action, target_kind: 'decision', target_id: r.target, "
            "summary: r.action + ' by ' + r.actor, task_id: r.task, at_us: r.us})",
            {"rows": rows, "p": project},
        )


def seed_demo_set(
    store: GraphStore, decisions: int, events: int, memory: list[dict[str, Any]], *, per_task: int = 100
) -> dict[str, Any]:
    """The large demo set in a project of its own; the store's memory and the
    time at the start of each stage are appended to ``memory``."""
    from reviewer.demo_large import seed_large

    project = "bench-demo-" + uuid.uuid4().hex[:6]
    started = time.perf_counter()

    def progress(stage: str, done: int, total: int) -> None:
        if done == 0:
            used, _what = store_memory(store)
            memory.append({"stage": stage, "bytes": used, "s": round(time.perf_counter() - started, 1)})
            print(f"\n  {stage} from {time.perf_counter() - started:,.0f} s", end="", flush=True)
        print(
            f"\r  seeding the large demo set: {stage} {done:,}/{total:,} at {time.perf_counter() - started:,.0f} s",
            end="",
            flush=True,
        )

    with no_rewrites(store):
        counts = seed_large(
            store, project=project, decisions=decisions, events=events, decisions_per_task=per_task, progress=progress
        )
    print(
        f"\n  seeded {counts.decisions:,} decisions, {counts.events:,} events in {time.perf_counter() - started:.0f} s"
    )
    traces = DecisionTraces(store, project_id=project, agent_id="bench")
    first = traces.list_decisions_for_review(limit=1).decisions[0]
    return {
        "project": project,
        "task": first.task_name,
        "events_task": first.task_name,
        "after": min(500, max(0, events // max(1, decisions // per_task) - 50)),
        "document": "policy/storage",
        "events": counts.events,
        "decisions": counts.decisions,
    }


@contextlib.contextmanager
def no_rewrites(store: GraphStore) -> Iterator[None]:
    """On FalkorDB, no rewrite of the append-only file while the set is
    seeded, and one after it. A rewrite forks the server; the server then
    copies every page it writes while the child lives, and at gigabytes a
    rewrite ends only for the next to begin, so a seeding of ten million
    events ran mostly copying. After the one rewrite at the end, a kept
    store opens from its snapshot instead of replaying every write."""
    if store.backend != "falkordb":
        yield
        return
    from core.stores.purge import purge_files

    conn = store._redis  # type: ignore[attr-defined]
    percentage = conn.config_get("auto-aof-rewrite-percentage")["auto-aof-rewrite-percentage"]
    conn.config_set("auto-aof-rewrite-percentage", 0)
    try:
        yield
        started = time.perf_counter()
        # the core's rewrite: awaited, checked, one already running tolerated, within an hour
        purge_files(store)
        print(f"\n  the append-only file rewritten in {time.perf_counter() - started:,.0f} s", flush=True)
    finally:
        # after the rewrite: restored before it, the server's own would begin at once
        conn.config_set("auto-aof-rewrite-percentage", percentage)


def _where(spot: dict[str, Any]) -> dict[str, Any]:
    return {k: spot[k] for k in ("task", "events_task", "after", "document")}


Figure = tuple[float, float, float]  # wall p50, wall p95, CPU per request (ms)


#: each action is timed this many times (on decisions of its own): enough
#: for its p95 not to be merely the slowest one
ACTIONS_TIMED = 20
#: each page is timed this many times (its p95: the sixth slowest)
PAGE_VIEWS_TIMED = 100


def measure_pages(
    store: GraphStore,
    project: str,
    client: Client,
    *,
    task: str,
    events_task: str,
    after: int,
    document: str,
    warm: int = 1,
) -> dict[str, Figure]:
    traces = DecisionTraces(store, project_id=project, agent_id="bench")
    flagged = traces.list_decisions_for_review(limit=20).decisions
    some = str(flagged[0].id)
    urls = page_urls(project, task=task, events_task=events_task, after=after, document=document)
    urls["decision (flagged)"] = f"/p/{project}/decisions/{some}/"
    for _ in range(warm - 1):  # a server that has been up a while (Neo4j's plans compiled, its JIT warm)
        for url in urls.values():
            assert client.get(url).status_code == 200, url
    out: dict[str, Figure] = {}
    for name, url in page_urls(project, task=task, events_task=events_task, after=after, document=document).items():
        out[name] = _page(store, client, url)
        if name == "review queue, one task":
            out["decision (flagged)"] = _page(store, client, urls["decision (flagged)"])
    # actions, each on decisions of its own (queued ones not settled by an earlier run on a kept store)
    base = f"/p/{project}"

    def queued(first: int, n: int) -> list[Any]:
        """``n`` decisions of the queue from place ``first`` (a page holds 20)."""
        return [
            d
            for offset in range(first, first + n, 20)
            for d in traces.list_decisions_for_review(limit=20, offset=offset).decisions
        ][:n]

    queue = queued(20, 3 * ACTIONS_TIMED)

    def calls(verb: str, decisions: list[Any]) -> list[tuple[str, dict[str, Any]]]:
        data: dict[str, Any] = {
            "reaffirm": {"explanation": "still holds"},
            "reject": {"reason": "benchmark"},
            "supersede": {"conclusion": "new", "rationale": "r", "explanation": "benchmark"},
        }[verb]
        if verb == "supersede":
            return [
                (
                    f"{base}/decisions/{d.id}/supersede",
                    {**data, "add": f"event {d.task_name} 1", "doc-0": "drop", "confirm_drop": "on"},
                )
                for d in decisions
            ]
        return [(f"{base}/decisions/{d.id}/{verb}", data) for d in decisions]

    verbs = ("reaffirm", "reject", "supersede")
    if warm > 1:
        # each action runs ``warm`` times, on decisions of its own, before it is timed: a
        # server that has been up a while has planned its statements (Neo4j plans each
        # unit's writes, sent as one statement, once per combination: 0.5-1.3 s here)
        # and compiled their code (a Neo4j reaffirm's first dozen runs are slower)
        warmed = queued(20 + 3 * ACTIONS_TIMED, 3 * warm)
        for n, verb in enumerate(verbs):
            for url, data in calls(verb, warmed[warm * n : warm * (n + 1)]):
                assert client.post(url, {**data, "request_id": uuid.uuid4().hex}).status_code == 302, url
    actions = {verb: calls(verb, queue[ACTIONS_TIMED * n : ACTIONS_TIMED * (n + 1)]) for n, verb in enumerate(verbs)}
    for name, planned in actions.items():
        if not planned:
            continue  # a queue too short (a small set, or a kept one settled by many runs)
        timer = Timer(store)
        for url, data in planned:
            with timer:
                response = client.post(url, {**data, "request_id": uuid.uuid4().hex})
            assert response.status_code == 302, (url, response.status_code, response.content[:300])
        out[f"action: {name}"] = timer.figures()
    # claim, then release, decisions of their own (claims are leases: a kept store's run out by the next run)
    spare = queued(20 + 3 * ACTIONS_TIMED + 3 * warm, ACTIONS_TIMED)
    for verb in ("claim", "release"):
        timer = Timer(store)
        for d in spare:
            with timer:
                response = client.post(f"{base}/claims/{verb}", {"kind": "decision", "target": str(d.id)})
            assert response.status_code == 302, (verb, response.status_code, response.content[:300])
        if spare:
            out[f"action: {verb}"] = timer.figures()
    return out


def _page(store: GraphStore, client: Client, url: str) -> Figure:
    assert client.get(url).status_code == 200, url  # warm
    timer = Timer(store)
    for _ in range(PAGE_VIEWS_TIMED):
        with timer:
            response = client.get(url)
            if response.streaming:  # a download: the time to its last byte
                b"".join(response.streaming_content)
        assert response.status_code == 200, (url, response.status_code)
    return timer.figures()


def page_urls(project: str, *, task: str, events_task: str, after: int, document: str) -> dict[str, str]:
    from datetime import date, timedelta

    base = f"/p/{project}"
    month = (date.today() - timedelta(days=30)).isoformat()
    return {
        "overview": f"{base}/",
        "review queue": f"{base}/review/",
        "review queue, page 40": f"{base}/review/?page=40",
        "review queue, one task": f"{base}/review/?{urlencode({'task': task})}",
        "conflicts": f"{base}/conflicts/",
        "tasks": f"{base}/tasks/",
        "task view": f"{base}/task/?{urlencode({'name': task})}",
        "event log": f"{base}/events/?{urlencode({'task': events_task, 'after': after})}",
        "document": f"{base}/document/?{urlencode({'key': document})}",
        # a page of the older version's citers (every decision of the set that cites it), from its middle
        "document, a version's citers": f"{base}/document/?{urlencode({'key': document, 'version': 1, 'before': 5000})}",
        "activity": f"{base}/activity/",
        # the filters combined (a person's rejects this month), one task's, and downloads of a filter
        "activity, filtered": f"{base}/activity/?{urlencode({'actor': 'stan', 'action': 'reject', 'since': month})}",
        "activity, one task": f"{base}/activity/?{urlencode({'task': task})}",
        "activity CSV, a person's rejects": f"{base}/activity/download.csv?{urlencode({'actor': 'stan', 'action': 'reject'})}",
        "activity JSON Lines, one task": f"{base}/activity/download.jsonl?{urlencode({'task': task})}",
        # claims and assignment (reviewer/views/claims.py): a person's part, and what nobody is given
        "my queue": f"{base}/review/?who=mine",
        "review queue, unassigned": f"{base}/review/?who=unassigned",
    }


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


def run(title: str, store: GraphStore, url: str, args: argparse.Namespace) -> None:
    reviewer_store._store = store  # the dashboard's own store handle
    opened = store_memory(store)
    user = User.objects.create_user(f"bench-{uuid.uuid4().hex[:6]}", is_staff=True)
    client = Client()
    client.force_login(user)
    small_figures: dict[str, Figure] = {}
    if args.small:
        small_figures, small_project = measure(store, args.small, client)
        store.drop_project(small_project)
    manifest_path = os.path.join(args.keep, store.backend, "bench.json") if args.keep else ""
    if manifest_path and os.path.exists(manifest_path):
        with open(manifest_path) as fh:
            spot = json.load(fh)
        print(f"\n{title}: the kept set in {manifest_path}: {spot['what']}, seeded {spot['seeded_at']}")
    else:
        memory: list[dict[str, Any]] = []
        used, _what = store_memory(store)
        memory.append({"stage": "start", "bytes": used, "s": 0})
        started = time.perf_counter()
        if args.demo:
            spot = seed_demo_set(store, args.decisions, args.events, memory, per_task=args.per_task)
            spot["what"] = (
                f"large demo set, {spot['decisions']:,} decisions, {spot['events']:,} events, "
                f"{args.per_task:,} decisions a task"
            )
        else:
            spot = seed_benchmark_set(store, args.decisions)
            spot.update(decisions=args.decisions, events=10 + 500)
            spot["what"] = f"benchmark set, {args.decisions:,} decisions"
        took = time.perf_counter() - started
        used, _what = store_memory(store)
        memory.append({"stage": "end", "bytes": used, "s": round(took, 1)})
        spot.update(
            seconds=round(took, 1),
            memory=memory,
            seeded_at=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            seeded_by=_commit(),
        )
        print(f"\n{title}: seeded {spot['what']} in {took:,.0f} s ({spot['decisions'] / took:,.0f} decisions/s)")
        if manifest_path:
            with open(manifest_path, "w") as fh:
                json.dump(spot, fh, indent=1)
    if args.seed_only:
        return
    project = spot["project"]
    forks_before, _last = server_forks(store)
    large_figures = measure_pages(store, project, client, **_where(spot), warm=args.warm)
    forks, last = server_forks(store)
    floor = percentiles([_timed(lambda: store.read(project, "RETURN 1 AS one")) for _ in range(500)])[0]
    load = os.getloadavg()
    print(f"\n{title}: floor (store round trip, p50) {floor:.3f} ms; load average {load[0]:.2f} {load[1]:.2f}")
    if store.backend == "falkordb":
        print(
            f"  the server forked {forks - forks_before} times while the pages were timed "
            f"(the last fork stopped it {last:.0f} ms)"
        )
    large_label = f"{spot['what']}: p50 / p95, CPU"
    small_label = f"{args.small:,} decisions p50 / p95, CPU" if args.small else ""
    print(f"  {'page or action':28} {small_label:>34} {large_label}")
    for name, (l50, l95, lcpu) in large_figures.items():
        small = ""
        if name in small_figures:
            s50, s95, scpu = small_figures[name]
            small = f"{s50:>10.1f} / {s95:>6.1f} ms, {scpu:>5.1f} ms"
        print(
            f"  {name:28} {small:>34} {l50:>10.1f} / {l95:>6.1f} ms, {lcpu:>5.1f} ms   p95 {l95 / floor:>5.0f}x floor"
        )
    views = args.views or (10_000 if spot["decisions"] >= 1_000_000 else 1_000)
    before = rss_mb()
    urls = [f"/p/{project}/review/", f"/p/{project}/", f"/p/{project}/conflicts/"]
    for i in range(views):
        client.get(urls[i % len(urls)])
        if i % 1000 == 999:
            print(f"\r  page views: {i + 1:,}/{views:,}, {rss_mb():.0f} MB resident", end="", flush=True)
    print()
    after = rss_mb()
    print(f"  server process: {before:.0f} MB resident before {views:,} page views, {after:.0f} MB after")
    if store.backend == "falkordb":
        opened = store_memory(store)
    print("  " + store_figures(store, spot, opened, args.neo4j_pagecache))
    if args.processes > 1:
        print(f"\n{title}:")
        pages = page_urls(project, **_where(spot))
        in_processes(
            url,
            {k: pages[k] for k in ("overview", "review queue", "review queue, page 40", "conflicts", "task view")},
            args.processes,
            200,
        )
    if not args.keep:
        store.drop_project(project)


def store_figures(store: GraphStore, spot: dict[str, Any], opened: tuple[int, str], pagecache: str) -> str:
    """The store's memory, and per decision and per event: on FalkorDB from
    the seeding's stages (the growth of ``used_memory`` over each); on Neo4j
    the store files as opened (a kept store's last clean shutdown) over the
    decisions (events, steps and documents included)."""
    used, what = opened
    out = f"store: {what} {used / 2**20:,.0f} MB"
    if store.backend == "neo4j":
        if used:
            out += f" = {used / spot['decisions']:,.0f} bytes per decision, events and all"
        return out + f"; page cache {pagecache}; {neo4j_heap_mb(store)}"
    stages = {m["stage"]: m["bytes"] for m in spot.get("memory", [])}
    if "decisions" in stages and "tasks and events" in stages:
        per_event = (stages["decisions"] - stages["tasks and events"]) / spot["events"]
        after = stages.get("revisions and sweep", stages.get("end", 0))
        per_decision = (after - stages["decisions"]) / spot["decisions"]
        out += f"; seeding took {per_event:,.0f} bytes per event (with its task and steps), "
        out += f"{per_decision:,.0f} per decision"
    elif "start" in stages and "end" in stages:
        out += f"; seeding took {(stages['end'] - stages['start']) / spot['decisions']:,.0f} bytes per decision"
    return out


def _commit() -> str:
    import subprocess

    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False)
    return done.stdout.strip()


def _timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--decisions", type=int, default=100_000)
    parser.add_argument("--events", type=int, default=0, help="events in the large demo set (default 10 a decision)")
    parser.add_argument("--small", type=int, default=1_000, help="decisions in the small set (0: none)")
    parser.add_argument("--backends", default="falkordb,neo4j")
    parser.add_argument("--demo", action="store_true", help="measure the large pages on the large demo set")
    parser.add_argument(
        "--per-task", type=int, default=100, help="decisions a task in the large demo set (its events in proportion)"
    )
    parser.add_argument("--processes", type=int, default=0, help="also request the pages from N worker processes")
    parser.add_argument(
        "--views",
        type=int,
        default=0,
        help="page views for the memory figure (default 1,000; 10,000 from a million decisions)",
    )
    parser.add_argument(
        "--warm", type=int, default=1, help="rounds over every page (and one action of each kind) before timing"
    )
    parser.add_argument("--keep", default="", help="seed into kept stores in DIR once; later runs only measure")
    parser.add_argument("--seed-only", action="store_true", help="seed (with --keep) and stop")
    parser.add_argument("--neo4j-pagecache", default="256m", help="the Neo4j test server's page cache")
    parser.add_argument("--neo4j-heap", default="1g", help="the Neo4j test server's JVM heap")
    args = parser.parse_args()
    if args.per_task < 1:
        parser.error("--per-task must be at least 1")
    args.events = args.events or 10 * args.decisions
    if args.keep:
        args.keep = os.path.abspath(args.keep)
        for backend in args.backends.split(","):
            os.makedirs(os.path.join(args.keep, backend.strip()), exist_ok=True)
    settings.ALLOWED_HOSTS = ["testserver"]
    settings.DEBUG = False
    call_command("migrate", interactive=False, verbosity=0)
    for title, store, url in each_store(
        args.backends, keep=args.keep or None, neo4j_pagecache=args.neo4j_pagecache, neo4j_heap=args.neo4j_heap
    ):
        run(title, store, url, args)


if __name__ == "__main__":
    main()
