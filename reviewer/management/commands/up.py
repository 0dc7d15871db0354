"""``manage.py up``: set up and run the dashboard in one step.

Applies Django's migrations (users, groups, sessions), opens the graph store
(starting the embedded FalkorDB server when the url is ``falkordb+embedded``),
prints where the dashboard is, and runs the development server.
"""

from __future__ import annotations

import os
import secrets
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.stores import GraphStoreError, redact_url
from reviewer.store import check_store


class Command(BaseCommand):
    help = "Migrate, open the graph store, and run the dashboard (local use)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000", help="address:port to serve on")
        parser.add_argument("--no-run", action="store_true", help="set up, then stop instead of serving")

    def handle(self, *args: Any, addrport: str, no_run: bool, **options: Any) -> None:
        if os.environ.get("RUN_MAIN") == "true":
            # runserver's autoreloader runs this command again in its child
            # process: the setup is done, just serve.
            call_command("runserver", addrport)
            return
        settings.DATA_DIR.mkdir(parents=True, exist_ok=True)
        call_command("migrate", interactive=False, verbosity=0)
        try:
            store = check_store()
        except GraphStoreError as exc:
            raise CommandError(f"the graph store did not answer: {exc}") from exc
        self.stdout.write(f"Graph store: {redact_url(settings.REVIEWER_STORE_URL)} ({store.backend})")
        self._demo_login()
        host, _, port = addrport.rpartition(":")
        self.stdout.write(self.style.SUCCESS(f"Reviewer is at http://{host or '127.0.0.1'}:{port}/"))
        if no_run:
            return
        call_command("runserver", addrport)

    def _demo_login(self) -> None:
        """Local use only (DEBUG on, embedded store): the demo projects on
        first start and a login for each role, kept in the data directory and
        printed every run. A production configuration never gets these."""
        if not settings.DEBUG or not settings.REVIEWER_STORE_URL.startswith("falkordb+embedded"):
            return
        from reviewer import demo
        from reviewer.store import check_store

        store = check_store()
        if not set(store.list_projects()) & set(demo.PROJECTS):
            self.stdout.write("Loading the demo projects…")
            demo.seed(store)
        logins = settings.DATA_DIR / "demo-logins.txt"
        users = get_user_model()
        if not logins.exists():
            from reviewer import access

            lines = []
            for name, role in (("demo-viewer", "viewer"), ("demo-reviewer", "reviewer"), ("demo-steward", "steward")):
                if users.objects.filter(username=name).exists():
                    continue
                password = secrets.token_urlsafe(12)
                user = users.objects.create_user(name, password=password)
                for project in demo.PROJECTS:
                    access.grant(user, project, role)
                lines.append(f"{name} {password}")
            fd = os.open(logins, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as fh:
                fh.write("".join(line + "\n" for line in lines))
        for line in logins.read_text().splitlines():
            name, _, password = line.partition(" ")
            self.stdout.write(f"Demo login: {name} / {password}")
