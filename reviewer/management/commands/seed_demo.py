"""``manage.py seed_demo [--reset]``: the demo projects, written
through the core API (see ``reviewer.demo``)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.stores import GraphStoreError
from reviewer import demo
from reviewer.store import check_store


class Command(BaseCommand):
    help = "Load the small demo data set (two projects with work to review)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--reset", action="store_true", help="drop the demo projects first")

    def handle(self, *args: Any, reset: bool, **options: Any) -> None:
        try:
            store = check_store()
            existing = set(store.list_projects()) & set(demo.PROJECTS)
            if existing and not reset:
                raise CommandError(f"demo projects already hold data ({', '.join(sorted(existing))}); use --reset")
            for project in demo.PROJECTS:
                store.drop_project(project)
            counts = demo.seed(store)
        except GraphStoreError as exc:
            raise CommandError(f"the graph store failed: {exc}") from exc
        self.stdout.write(
            f"Demo data: {len(demo.PROJECTS)} projects, {counts.tasks} tasks, {counts.events} events, "
            f"{counts.steps} steps, {counts.documents} documents, {counts.decisions} decisions."
        )
