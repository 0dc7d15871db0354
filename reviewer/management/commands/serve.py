"""``manage.py serve``: the dashboard and the API in production.

Applies Django's migrations, collects the static files under hashed names
(WhiteNoise serves them with a year's Cache-Control), opens the graph store
once to check it answers, then runs gunicorn with several worker processes
(``reviewer/gunicorn_conf.py``). With the embedded store the workers share one
FalkorDB server, which this process keeps running while it serves (a worker
restarted by gunicorn does not restart the store) and stops when it exits.
SIGTERM is a graceful stop: requests in flight finish, each worker closes its
store, then the embedded server stops.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from gunicorn.app.base import BaseApplication

from core.stores import GraphStoreError, redact_url
from core.stores.private import private_dir
from reviewer.store import check_store, reset_store, stop_on_sigterm


class Command(BaseCommand):
    help = "Migrate, collect static files and serve the dashboard with gunicorn's worker processes (production)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000", help="address:port to bind")
        parser.add_argument(
            "--workers", type=int, help="worker processes (default: REVIEWER_WORKERS, else 2 per core + 1)"
        )
        parser.add_argument("--threads", type=int, help="threads per worker (default: REVIEWER_THREADS, else 2)")
        parser.add_argument("--no-migrate", action="store_true", help="do not apply migrations first")
        parser.add_argument("--no-collectstatic", action="store_true", help="do not collect static files first")
        parser.add_argument("--access-log", action="store_true", help="log each request to stderr")

    def handle(self, *args: Any, addrport: str, **options: Any) -> None:
        from reviewer import gunicorn_conf

        for name in ("workers", "threads"):
            if options[name] is not None and options[name] < 1:
                raise CommandError(f"--{name} must be at least 1")
        workers = options["workers"] or gunicorn_conf.workers
        threads = options["threads"] or gunicorn_conf.threads
        stop_on_sigterm()  # a SIGTERM during the set-up below still closes the store
        private_dir(settings.DATA_DIR)
        if not options["no_migrate"]:
            call_command("migrate", interactive=False, verbosity=0)
        if not options["no_collectstatic"]:
            call_command("collectstatic", interactive=False, verbosity=0)
        try:
            store = check_store()
        except GraphStoreError as exc:
            raise CommandError(f"the graph store did not answer: {exc}") from exc
        self.stdout.write(f"Graph store: {redact_url(settings.REVIEWER_STORE_URL)} ({store.backend})")
        holder = _hold_embedded(store)
        reset_store()  # the workers open their own; nothing of this one may cross the fork
        self.stdout.write(
            self.style.SUCCESS(f"Reviewer is at http://{addrport}/ ({workers} workers, {threads} threads each)")
        )
        self.stdout.flush()
        try:
            _Gunicorn(
                {
                    "bind": [addrport],
                    "workers": workers,
                    "threads": threads,
                    "accesslog": "-" if options["access_log"] else None,
                }
            ).run()
        finally:
            if holder is not None:
                holder.release()  # the workers have exited: this stops the embedded server


def _hold_embedded(store: Any) -> Any:
    """For the embedded store, a second handle on its server held for as long
    as this process serves: the server outlives a restarted worker."""
    server = getattr(store, "embedded_server", None)
    if server is None:
        return None
    from core.stores.embedded import EmbeddedServer

    holder = EmbeddedServer(server.data_dir, appendfsync=server.appendfsync)
    holder.acquire()
    return holder


class _Gunicorn(BaseApplication):  # type: ignore[misc]
    """Gunicorn run from this process, configured by reviewer/gunicorn_conf.py
    and the command's options."""

    def __init__(self, overrides: dict[str, Any]) -> None:
        self.overrides = overrides
        super().__init__()

    def load_config(self) -> None:
        from reviewer import gunicorn_conf

        for key in dir(gunicorn_conf):
            if key in self.cfg.settings and not key.startswith("_"):
                self.cfg.set(key, getattr(gunicorn_conf, key))
        for key, value in self.overrides.items():
            if value is not None:
                self.cfg.set(key, value)

    def load(self) -> Any:
        from reviewer.wsgi import application

        return application
