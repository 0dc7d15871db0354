"""``manage.py seed_demo [--size small|large] [--seed N] [--reset]``: demo
data written through the core API.

``small`` (the default, a few seconds): the two story projects of
``reviewer.demo``. ``large``: ``reviewer.demo_large`` — 100,000 decisions and
1,000,000 events in one project (``acme-scale``), streamed in batches with a
progress bar, for benchmarks and for seeing the dashboard at scale.
"""

from __future__ import annotations

import argparse
import resource
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.stores import GraphStoreError
from reviewer import demo, demo_large
from reviewer.store import check_store


class Progress:
    """One line on standard error, redrawn: stage, a bar, counts, elapsed."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.start = time.monotonic()
        self.shown = 0.0
        self.stage = ""

    def __call__(self, stage: str, done: int, total: int) -> None:
        now = time.monotonic()
        if stage == self.stage and done < total and now - self.shown < 0.5:
            return
        if stage != self.stage and self.stage:
            self.stream.write("\n", ending="")
        self.stage, self.shown = stage, now
        width = 30
        filled = width * done // max(total, 1)
        self.stream.write(
            f"\r{stage:18} [{'#' * filled}{'.' * (width - filled)}] {done:,}/{total:,} {now - self.start:,.0f} s",
            ending="",
        )
        self.stream.flush()

    def close(self) -> None:
        if self.stage:
            self.stream.write("\n", ending="")


class Command(BaseCommand):
    help = "Load demo data: the small story (default) or the large set for benchmarks."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--size", choices=("small", "large"), default="small")
        parser.add_argument("--seed", type=int, default=7, help="the large set's random seed (same seed, same data)")
        parser.add_argument("--reset", action="store_true", help="drop the demo projects first")
        parser.add_argument("--decisions", type=int, default=100_000, help=argparse.SUPPRESS)
        parser.add_argument("--events", type=int, default=1_000_000, help=argparse.SUPPRESS)

    def handle(
        self, *args: Any, size: str, seed: int, reset: bool, decisions: int, events: int, **options: Any
    ) -> None:
        projects = demo.PROJECTS if size == "small" else (demo_large.PROJECT,)
        try:
            store = check_store()
            existing = set(store.list_projects()) & set(projects)
            if existing and not reset:
                raise CommandError(f"demo projects already hold data ({', '.join(sorted(existing))}); use --reset")
            for project in projects:
                store.drop_project(project)
            if size == "small":
                counts = demo.seed(store)
                self.stdout.write(
                    f"Demo data: {len(demo.PROJECTS)} projects, {counts.tasks} tasks, {counts.events} events, "
                    f"{counts.steps} steps, {counts.documents} documents, {counts.decisions} decisions."
                )
                return
            if decisions < 1 or events < 1:
                raise CommandError("--decisions and --events must be at least 1")
            progress = Progress(self.stderr)
            started = time.monotonic()
            large = demo_large.seed_large(store, decisions=decisions, events=events, seed=seed, progress=progress)
            progress.close()
        except GraphStoreError as exc:
            raise CommandError(f"the graph store failed: {exc}") from exc
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        self.stdout.write(
            f"Large demo data in {demo_large.PROJECT}: {large.tasks:,} tasks, {large.events:,} events, "
            f"{large.steps:,} steps, {large.documents} documents, {large.decisions:,} decisions; "
            f"{large.flagged:,} flagged by document changes, {large.queued:,} still queued for the review sweep. "
            f"{time.monotonic() - started:,.0f} s; this process peaked at {peak:,.0f} MB."
        )
