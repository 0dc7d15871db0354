"""``manage.py review_sweep [--project P ...] [--limit N]``: spread review
flags until nothing is queued (or ``--limit`` decisions have moved), printing
what moved. Each step is one unit of work of at most 100 decisions, so it is
safe to run from cron while people use the dashboard."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.decisions import DecisionTraces
from core.review_sweep import review_until_done
from core.stores import GraphStoreError
from reviewer.store import check_store


class Command(BaseCommand):
    help = "Run continue_decision_review until nothing is queued."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", action="append", default=[], help="a project id (default: all)")
        parser.add_argument("--limit", type=int, default=None, help="stop after this many decisions moved")

    def handle(self, *args: Any, project: list[str], limit: int | None, **options: Any) -> None:
        if limit is not None and limit < 1:
            raise CommandError("--limit must be at least 1")
        try:
            store = check_store()
            for project_id in project or store.list_projects():
                traces = DecisionTraces(store, project_id=project_id, agent_id="review-sweep")
                run = review_until_done(traces, max_moved=limit)
                moved, flagged, cleared = run.moved, run.flagged, run.cleared
                waiting = traces.review_counts()["queued"]
                self.stdout.write(
                    f"{project_id}: moved {moved} queued decisions ({flagged} flagged dependency_review, "
                    f"{cleared} clear again); {waiting} still queued"
                    + (f"; {run.sources_flagged} citers of changed documents flagged" if run.sources_flagged else "")
                )
        except GraphStoreError as exc:
            raise CommandError(f"the graph store failed: {exc}") from exc
