"""Gunicorn's configuration for Reviewer, used by ``manage.py serve`` and by
gunicorn's own command line:

    gunicorn -c python:reviewer.gunicorn_conf --bind 127.0.0.1:8000 reviewer.wsgi

Worker processes (``REVIEWER_WORKERS``, default two per core and one more),
each with ``REVIEWER_THREADS`` threads (default 2). On SIGTERM gunicorn stops
taking connections, lets each worker finish its requests (up to
``graceful_timeout``) and each worker closes its graph store as it exits; the
embedded FalkorDB server stops when its last user has closed.
"""

from __future__ import annotations

import os
from typing import Any

from django.core.exceptions import ImproperlyConfigured

from reviewer.env import env_positive_int


def _count(name: str, default: int) -> int:
    try:
        return env_positive_int(name, default)
    except ImproperlyConfigured as exc:  # gunicorn's master: a message, not a traceback
        raise SystemExit(str(exc)) from None


def default_workers() -> int:
    return 2 * (os.cpu_count() or 1) + 1


wsgi_app = "reviewer.wsgi:application"
workers = _count("REVIEWER_WORKERS", default_workers())
threads = _count("REVIEWER_THREADS", 2)
worker_class = "gthread"  # threads, and keep-alive connections for the agents' API
timeout = 60  # a worker silent this long is restarted
graceful_timeout = 30  # on SIGTERM, how long requests in flight may finish
keepalive = 5
control_socket_disable = True  # gunicorn's control socket (one per user's home) is not used
proc_name = "reviewer"


def worker_exit(server: Any, worker: Any) -> None:
    """A worker closes its store as it exits (its embedded-store user lock is
    then released, and the last user stops the server)."""
    try:
        from reviewer.store import reset_store

        reset_store()
    except Exception as exc:  # the worker is going anyway; say why the store did not close cleanly
        server.log.warning("worker %s could not close its store: %s", worker.pid, exc)


def post_worker_init(worker: Any) -> None:
    """A worker opens its store as it starts, not at its first request: the
    open runs a disk purge round for what an earlier process left pending,
    and starts the timer that finishes what others leave (``core._purge``);
    it also starts the timer that sends the inbox's due e-mail."""
    try:
        from reviewer.store import get_store

        get_store()
    except Exception as exc:  # a store that is down: the first request says so, and opens it later
        worker.log.warning("worker %s could not open its store yet: %s", worker.pid, exc)
    from reviewer.notice_mail import Mailer

    Mailer.watch()  # the inbox's e-mail, when an SMTP server is set up (each worker; sends stay single)
