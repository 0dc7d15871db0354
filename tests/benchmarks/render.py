"""The web app's own CPU on each page of ``tests.benchmarks.pages``: the
page's template rendered again and again from the context one request gave
it (rendering alone, which other work on the machine barely moves), then
the whole request (this process and the store's server), on a kept
embedded FalkorDB data set.

    .venv/bin/python -m tests.benchmarks.render --data DIR/falkordb [--role staff|reviewer|viewer]
        [--renders 100] [--requests 60] [--page queue ...] [--html OUT]

``DIR/falkordb`` is a kept store of ``tests.benchmarks.pages --keep DIR``
(its ``bench.json`` names the project). Run it from a checkout of the code
to measure (``git archive`` of another commit into a directory, run from
there, measures that commit on the same data). With ``--html OUT`` each
page's HTML is written to ``OUT`` with the CSRF token and the forms'
request ids blanked, so two commits' pages can be compared byte for byte.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth.models import User  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.template import loader  # noqa: E402
from django.test import Client  # noqa: E402

from core.stores import open_store  # noqa: E402
from reviewer import access  # noqa: E402
from reviewer import store as reviewer_store  # noqa: E402
from tests.benchmarks import Timer  # noqa: E402
from tests.benchmarks.pages import page_urls  # noqa: E402


def blanked(html: str) -> str:
    """``html`` without what differs between two requests of one page."""
    html = re.sub(r'name="csrfmiddlewaretoken" value="[^"]+"', 'name="csrfmiddlewaretoken" value=""', html)
    html = re.sub(r'"X-CSRFToken": "[^"]+"', '"X-CSRFToken": ""', html)
    return re.sub(r'name="request_id" value="[0-9a-f]{32}"', 'name="request_id" value=""', html)


def measure(client: Client, store: Any, name: str, url: str, renders: int, requests: int, html: Path | None) -> str:
    captured: list[tuple[Any, ...]] = []
    render_to_string = loader.render_to_string

    def capture(template_name: Any, context: Any = None, request: Any = None, using: Any = None) -> str:
        captured.append((template_name, context, request))
        return render_to_string(template_name, context, request, using)

    loader.render_to_string = capture
    try:
        response = client.get(url)
    finally:
        loader.render_to_string = render_to_string
    assert response.status_code == 200, (url, response.status_code)
    if html is not None:
        (html / (re.sub(r"\W+", "_", name) + ".html")).write_text(blanked(response.content.decode()))
    template_name, context, request = captured[0]
    for _ in range(5):
        render_to_string(template_name, context, request)
    start = time.process_time()
    for _ in range(renders):
        render_to_string(template_name, context, request)
    rendering = (time.process_time() - start) * 1000 / renders
    for _ in range(3):
        client.get(url)
    timer = Timer(store)
    for _ in range(requests):
        with timer:
            client.get(url)
    p50, p95, cpu = timer.figures()
    return f"| {name} | {rendering:.2f} ms | {cpu:.1f} ms | {p50:.1f} / {p95:.1f} ms |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, required=True, help="a kept embedded FalkorDB directory with bench.json")
    parser.add_argument("--role", default="staff", choices=["staff", *access.ROLES])
    parser.add_argument("--renders", type=int, default=100)
    parser.add_argument("--requests", type=int, default=60)
    parser.add_argument("--page", action="append", default=[], help="only pages whose name contains this")
    parser.add_argument("--html", type=Path, help="write each page's HTML (tokens blanked) here")
    args = parser.parse_args()
    known = json.loads((args.data / "bench.json").read_text())
    settings.ALLOWED_HOSTS = ["testserver"]
    settings.DEBUG = False
    call_command("migrate", interactive=False, verbosity=0)
    if args.html:
        args.html.mkdir(parents=True, exist_ok=True)
    url = f"falkordb+embedded://{args.data.resolve()}?appendfsync=everysec"
    with open_store(url) as store:
        reviewer_store._store = store
        project = known["project"]
        user, _ = User.objects.get_or_create(username=f"render-{args.role}", is_staff=args.role == "staff")
        if args.role != "staff":
            access.grant(user, project, args.role)
        client = Client()
        client.force_login(user)
        pages = page_urls(
            project,
            task=known["task"],
            events_task=known["events_task"],
            after=known["after"],
            document=known["document"],
        )
        print(f"as {args.role}, load average {os.getloadavg()[0]:.2f}")
        print("| page | rendering, CPU | request, CPU (process + store) | wall p50 / p95 |\n|---|---|---|---|")
        for name, page in pages.items():
            if not args.page or any(o.lower() in name for o in args.page):
                print(measure(client, store, name, page, args.renders, args.requests, args.html), flush=True)
        print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
