"""``manage.py purge_disk [--timeout S]``: finish every pending disk purge
(after redactions and task deletions) and say what it did. The web process
does this by itself after each redaction and when it starts; run this from
cron as well, so a purge left pending by a process that stopped is finished
even when nobody opens the dashboard."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core._purge import Purger, pending_count
from core.stores import GraphStoreError
from reviewer.store import check_store


class Command(BaseCommand):
    help = "Finish pending disk purges after redactions and deletions."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--timeout", type=float, default=3600.0, help="seconds to wait (default 3600)")

    def handle(self, *args: Any, timeout: float, **options: Any) -> None:
        try:
            store = check_store()
            waiting = pending_count(store)
            purger = Purger.kick(store, now=True)
            if not purger.wait(timeout):
                raise CommandError(
                    f"the purge did not finish in {timeout:g} s; it goes on in the background of the "
                    "web process or the next run"
                )
            if purger.error:
                raise CommandError(f"the purge failed: {purger.error}")
            left = pending_count(store)
        except GraphStoreError as exc:
            raise CommandError(f"the store is unreachable: {exc}") from exc
        report = purger.last
        if report is None or not waiting:
            self.stdout.write(f"nothing was pending; {left} pending now")
            return
        self.stdout.write(
            f"purged: {report.covered} redactions/deletions covered, {report.slots} keys destroyed, "
            f"{report.requests_scrubbed} old request records removed, in {report.seconds:.1f} s; {left} pending now"
        )
