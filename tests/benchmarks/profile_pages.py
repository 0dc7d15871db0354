"""Where a dashboard page's time goes: each page of ``tests.benchmarks.pages``
requested repeatedly, its time split into store round trips, pydantic model
building, template rendering and the rest, then a cProfile of the same page.

    .venv/bin/python -m tests.benchmarks.profile_pages [--backends falkordb,neo4j] [--decisions 100000]
        [--page queue --page document ...] [--requests 40] [--top 15] [--data DIR | --keep DIR]
        [--neo4j-pagecache 2g --neo4j-heap 4g]

Each request's wall time is split by what was running, innermost first (a
store read made while a template renders counts as a round trip, not as
rendering):

* round trips: ``store.read`` / ``store.execute`` / each ``tx.read`` and the
  commit of ``store.transact``, with their count; the time includes the
  client's parsing of the reply. "server" is the store's own figure for the
  same statements (FalkorDB's "internal execution time", Neo4j's
  ``result_available_after + result_consumed_after``): the rest of a round
  trip is the socket, the protocol and the parsing;
* models: pydantic validation and construction (``BaseModel.__init__``,
  ``model_validate``, ``model_construct``, ``TypeAdapter.validate_python`` / ``validate_json``,
  ``model_dump``);
* rendering: Django templates (pages, partials, includes, form widgets);
* other: the view, middleware, sessions, the core's own Python.

The split is the mean of the fastest nine tenths of the requests of its own
pass (the wrappers add a little time, shown
as the difference to the plain pass); the CPU per request (this process and
the store's server) comes from ``tests.benchmarks.Timer`` on the plain pass.
The cProfile pass then lists the functions with the most time of their own.

With ``--data DIR`` the embedded FalkorDB lives in ``DIR`` and the data set
is kept: a second run with the same ``--data`` and ``--decisions`` profiles
at once instead of loading the set again (Neo4j's test server is always
fresh). With ``--keep DIR`` it profiles the stores that
``tests.benchmarks.pages --keep DIR`` seeded, on both backends.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import json
import os
import pstats
import statistics
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
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
from core.stores import GraphStore, open_store  # noqa: E402
from core.stores.falkordb import reply_statistic  # noqa: E402
from reviewer import store as reviewer_store  # noqa: E402
from tests.benchmarks import Timer, each_store  # noqa: E402
from tests.benchmarks.decisions import big_project  # noqa: E402

CATEGORIES = ("store", "models", "render", "other")


class Split:
    """Exclusive time per category: a stack of what is running; each wrapped
    call pushes its category, and time goes to the top of the stack."""

    def __init__(self) -> None:
        self.stack: list[str] = ["other"]
        self.since = time.perf_counter()
        self.ms: dict[str, float] = dict.fromkeys(CATEGORIES, 0.0)
        self.round_trips = 0
        self.server_ms = 0.0
        #: per statement (its text, shortened): calls, round-trip ms, server ms
        self.statements: dict[str, list[float]] = {}
        self.statement = ""

    def reset(self) -> None:
        self.stack = ["other"]
        self.since = time.perf_counter()
        self.ms = dict.fromkeys(CATEGORIES, 0.0)
        self.round_trips = 0
        self.server_ms = 0.0

    def server(self, ms: float) -> None:
        self.server_ms += ms
        if self.statement:
            self.statements[self.statement][2] += ms

    def push(self, category: str) -> None:
        now = time.perf_counter()
        self.ms[self.stack[-1]] += (now - self.since) * 1000
        self.stack.append(category)
        self.since = now

    def pop(self) -> None:
        now = time.perf_counter()
        self.ms[self.stack.pop()] += (now - self.since) * 1000
        self.since = now

    def wrap(self, category: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        split = self

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            split.push(category)
            try:
                return fn(*args, **kwargs)
            finally:
                split.pop()

        wrapped.__wrapped__ = fn  # type: ignore[attr-defined]
        return wrapped

    def trip(self, fn: Callable[..., Any], *, name: str | None = None) -> Callable[..., Any]:
        """A round trip, timed as "store" and per statement (the query is
        the second argument of ``store.read``, ``store.execute`` and
        ``tx.read``)."""
        split = self

        def wrapped(*args: Any, **kwargs: Any) -> Any:
            key = name or " ".join(str(args[1]).split())[:150]
            entry = split.statements.setdefault(key, [0, 0.0, 0.0])
            outer, split.statement = split.statement, key
            split.round_trips += 1
            split.push("store")
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                entry[0] += 1
                entry[1] += (time.perf_counter() - start) * 1000
                split.pop()
                split.statement = outer

        wrapped.__wrapped__ = fn  # type: ignore[attr-defined]
        return wrapped


@contextlib.contextmanager
def instrumented(store: GraphStore, split: Split) -> Iterator[None]:
    """The wrappers in place (on the store object and on the classes that
    build models and render templates), removed on leaving."""
    import django.template.backends.django as backend_templates
    import django.template.base as template_base
    from pydantic import BaseModel, TypeAdapter

    from core.stores.base import Tx

    undo: list[tuple[Any, str, Any, bool]] = []

    def patch(owner: Any, name: str, new: Any) -> None:
        own = vars(owner)
        undo.append((owner, name, own.get(name), name in own))
        setattr(owner, name, new)

    patch(store, "read", split.trip(store.read))
    patch(store, "execute", split.trip(store.execute))
    transact = store.transact

    def transact_split(project_id: str, work: Callable[[Any], Any], **kwargs: Any) -> Any:
        # the unit's own Python runs as "other"; its reads are wrapped below
        return transact(project_id, split.wrap("other", work), **kwargs)

    patch(store, "transact", split.trip(transact_split, name="transact (WATCH ... EXEC or commit)"))
    patch(Tx, "read", split.trip(Tx.read))

    if store.backend == "falkordb":
        rows = store._rows  # type: ignore[attr-defined]

        def rows_timed(graph: Any, raw: Any, query: str) -> Any:
            took = reply_statistic(raw, "Query internal execution time")  # "0.12 milliseconds"
            if took:
                split.server(float(took.split()[0]))
            return rows(graph, raw, query)

        patch(store, "_rows", rows_timed)
    elif store.backend == "neo4j":
        from neo4j import Result

        iterate = Result.__iter__

        def iter_timed(self: Any) -> Iterator[Any]:
            yield from iterate(self)
            summary = self.consume()
            split.server((summary.result_available_after or 0) + (summary.result_consumed_after or 0))

        patch(Result, "__iter__", iter_timed)

    patch(BaseModel, "__init__", split.wrap("models", BaseModel.__init__))
    for name in ("model_validate", "model_construct"):
        patch(BaseModel, name, classmethod(split.wrap("models", getattr(BaseModel, name).__func__)))
    patch(BaseModel, "model_dump", split.wrap("models", BaseModel.model_dump))
    for name in ("validate_python", "validate_json"):
        patch(TypeAdapter, name, split.wrap("models", getattr(TypeAdapter, name)))
    patch(template_base.Template, "render", split.wrap("render", template_base.Template.render))
    patch(backend_templates.Template, "render", split.wrap("render", backend_templates.Template.render))
    try:
        yield
    finally:
        for owner, name, old, had in reversed(undo):
            if had:
                setattr(owner, name, old)
            else:
                delattr(owner, name)


def page_urls(project: str, *, decision: str, **where: Any) -> dict[str, str]:
    """The pages of ``tests.benchmarks.pages``, by the same names, in its order."""
    from tests.benchmarks import pages

    urls: dict[str, str] = {}
    for name, url in pages.page_urls(project, **where).items():
        urls[name] = url
        if name == "review queue, one task":
            urls["decision (flagged)"] = f"/p/{project}/decisions/{decision}/"
    return urls


def seed(store: GraphStore, decisions: int) -> str:
    """The data set of ``tests.benchmarks.pages``: ``decisions`` decisions
    over ten tasks, a tenth citing one document that changed, and 500 more
    events on task-1."""
    _rows, project = big_project(store, decisions)
    history = ConversationHistory(store, project_id=project, agent_id="bench")
    for i in range(500):
        history.record_event("task-1", kind="tool_result", name="search", payload=f"result {i} " * 40)
    return project


def kept_project(store: GraphStore, data: Path | None, decisions: int) -> str:
    """The project of a kept data set of this size, or a new one."""
    marker = data / "profile_pages.json" if data else None
    known = json.loads(marker.read_text()) if marker and marker.exists() else {}
    project = known.get(str(decisions))
    if project and project in store.list_projects():
        print(f"  reusing project {project} ({decisions:,} decisions) in {data}")
        return project
    project = seed(store, decisions)
    if marker:
        known[str(decisions)] = project
        marker.write_text(json.dumps(known))
    return project


def profile_page(store: GraphStore, client: Client, name: str, url: str, requests: int, top: int) -> dict[str, Any]:
    assert client.get(url).status_code == 200, url  # warm
    timer = Timer(store)
    for _ in range(requests):
        with timer:
            response = client.get(url)
        assert response.status_code == 200, (url, response.status_code)
    p50, p95, cpu = timer.figures()
    split = Split()
    # per request: total, each category, round trips, server time
    samples: list[tuple[float, dict[str, float], int, float]] = []
    with instrumented(store, split):
        for _ in range(requests):
            split.reset()
            start = time.perf_counter()
            client.get(url)
            split.pop()  # the base "other" up to now
            split.stack = ["other"]
            samples.append(((time.perf_counter() - start) * 1000, dict(split.ms), split.round_trips, split.server_ms))
    # the slowest tenth left out: on a shared machine one preempted request
    # would otherwise move every mean
    samples.sort(key=lambda s: s[0])
    kept = samples[: max(1, len(samples) - len(samples) // 10)]
    n = len(kept)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(max(5, requests // 4)):
        client.get(url)
    profiler.disable()
    stats = pstats.Stats(profiler)
    return {
        "page": name,
        "p50": p50,
        "p95": p95,
        "cpu": cpu,
        "split_total": statistics.fmean(k[0] for k in kept),
        "trips": sum(k[2] for k in kept) / n,
        "server": sum(k[3] for k in kept) / n,
        **{c: sum(k[1][c] for k in kept) / n for c in CATEGORIES},
        "top": _top(stats, top, max(5, requests // 4)),
        "ours": _ours(stats, top, max(5, requests // 4)),
        "statements": sorted(
            ((v[1] / requests, v[0] / requests, v[2] / requests, k) for k, v in split.statements.items()), reverse=True
        ),
    }


def _top(stats: pstats.Stats, top: int, calls: int) -> list[str]:
    """The functions with the most time of their own, per request."""
    rows = []
    for (filename, line, func), (_cc, nc, tt, ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        rows.append((tt, ct, nc, _short(filename), line, func))
    rows.sort(reverse=True)
    out = []
    for tt, ct, nc, filename, line, func in rows[:top]:
        out.append(
            f"{tt * 1000 / calls:7.2f} ms own {ct * 1000 / calls:7.2f} ms cum "
            f"{nc / calls:8.0f} calls  {func} ({filename}:{line})"
        )
    return out


def _ours(stats: pstats.Stats, top: int, calls: int) -> list[str]:
    """The project's own functions (core, reviewer) with the most time
    under them, per request: where "other" goes."""
    rows = []
    for (filename, line, func), (_cc, nc, _tt, ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        short = _short(filename)
        if short.startswith(("core/", "reviewer/")) and not short.startswith("reviewer/views/"):
            rows.append((ct, nc, short, line, func))
    rows.sort(reverse=True)
    return [
        f"{ct * 1000 / calls:7.2f} ms cum {nc / calls:8.0f} calls  {func} ({short}:{line})"
        for ct, nc, short, line, func in rows[:top]
    ]


def _short(filename: str) -> str:
    for marker in ("site-packages/", "/lib/python3"):
        if marker in filename:
            return filename.split(marker, 1)[1]
    root = str(Path(__file__).resolve().parents[2]) + "/"
    return filename[len(root) :] if filename.startswith(root) else filename


def table(title: str, rows: list[dict[str, Any]]) -> str:
    lines = [
        f"\n{title}",
        "| page | wall p50 / p95 | CPU / request | split total | round trips n / ms (server ms) "
        "| models | rendering | other |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['page']} | {r['p50']:.1f} / {r['p95']:.1f} ms | {r['cpu']:.1f} ms | {r['split_total']:.1f} ms "
            f"| {r['trips']:.0f} / {r['store']:.1f} ms ({r['server']:.1f}) | {r['models']:.1f} ms "
            f"| {r['render']:.1f} ms | {r['other']:.1f} ms |"
        )
    return "\n".join(lines)


def run(
    title: str, store: GraphStore, decisions: int, data: Path | None, only: list[str], requests: int, top: int
) -> None:
    project = kept_project(store, data, decisions)
    spot = {"project": project, "task": "task-0", "events_task": "task-1", "after": 300, "document": "policy"}
    report(f"{title}, {decisions:,} decisions", store, spot, only, requests, top)
    if data is None:
        store.drop_project(project)


def run_kept(title: str, store: GraphStore, spot: dict[str, Any], only: list[str], requests: int, top: int) -> None:
    """Profile the pages of a store kept by ``tests.benchmarks.pages``
    (its ``bench.json`` names the project and the pages' task and document)."""
    report(f"{title}, {spot['decisions']:,} decisions", store, spot, only, requests, top)


def report(title: str, store: GraphStore, spot: dict[str, Any], only: list[str], requests: int, top: int) -> None:
    reviewer_store._store = store
    client = Client()
    client.force_login(User.objects.create_user(f"profile-{uuid.uuid4().hex[:6]}", is_staff=True))
    traces = DecisionTraces(store, project_id=spot["project"], agent_id="bench")
    first = traces.list_decisions_for_review(limit=1).decisions[0]
    pages = page_urls(
        spot["project"],
        decision=str(first.id),
        task=spot["task"],
        events_task=spot["events_task"],
        after=spot["after"],
        document=spot["document"],
    )
    chosen = {n: u for n, u in pages.items() if not only or any(o.lower() in n for o in only)}
    rows = []
    for name, url in chosen.items():
        rows.append(profile_page(store, client, name, url, requests, top))
    print(table(f"{title} (load average {os.getloadavg()[0]:.2f})", rows))
    for r in rows:
        print(f"\n{r['page']}: statements by round-trip time, per request (calls, round trip, server)")
        for ms, calls, server_ms, text in r["statements"][:top]:
            print(f"  {calls:5.1f} x {ms:7.2f} ms ({server_ms:6.2f})  {text}")
        print(f"{r['page']}: top functions by own time, per request (cProfile, which slows small calls most)")
        for line in r["top"]:
            print("  " + line)
        print(f"{r['page']}: the project's functions (core, reviewer) by time under them, per request")
        for line in r["ours"]:
            print("  " + line)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--decisions", type=int, default=100_000)
    parser.add_argument("--backends", default="falkordb")
    parser.add_argument("--page", action="append", default=[], help="only pages whose name contains this")
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--data", type=Path, help="keep the embedded FalkorDB and its data set in this directory")
    parser.add_argument(
        "--keep", type=Path, help="profile the kept stores of tests.benchmarks.pages --keep DIR (both backends)"
    )
    parser.add_argument("--neo4j-pagecache", default="256m", help="the Neo4j test server's page cache")
    parser.add_argument("--neo4j-heap", default="1g", help="the Neo4j test server's JVM heap")
    args = parser.parse_args()
    settings.ALLOWED_HOSTS = ["testserver"]
    settings.DEBUG = False
    call_command("migrate", interactive=False, verbosity=0)
    for backend in [b.strip() for b in args.backends.split(",") if b.strip()]:
        if args.keep:
            spot = json.loads((args.keep / backend / "bench.json").read_text())
            for title, store, _url in each_store(
                backend, keep=str(args.keep), neo4j_pagecache=args.neo4j_pagecache, neo4j_heap=args.neo4j_heap
            ):
                run_kept(f"{title} (kept)", store, spot, args.page, args.requests, args.top)
            continue
        if backend == "falkordb" and args.data:
            args.data.mkdir(parents=True, exist_ok=True)
            url = f"falkordb+embedded://{args.data.resolve()}?appendfsync=everysec"
            with open_store(url) as store:
                run("embedded FalkorDB (kept)", store, args.decisions, args.data, args.page, args.requests, args.top)
            continue
        for title, store, _url in each_store(backend, prefix="reviewer-profile-"):
            run(title, store, args.decisions, None, args.page, args.requests, args.top)


if __name__ == "__main__":
    main()
