"""The queue's flow (issue 15): keystrokes per settled decision when a
reviewer works through a group by keyboard, and the server time of every new
form, beside the floor of a store round trip measured in the same run.

    .venv/bin/python -m tests.benchmarks.flow [--decisions 100000] [--group 20] [--backends falkordb,neo4j]

Per backend:

* keystrokes: a group of ``--group`` decisions flagged by one document
  change (every fifth cites a passage that changed, the rest one that only
  moved), settled in Debian's Chromium against a live server by keys alone:
  ``j`` once to start, then ``r`` for each reaffirm and ``x``, the reason,
  Enter for each reject; the figure is keys per settled decision, typing of
  the reason not counted (the target: at most 2 for a reaffirm, moving on
  included);
* server time through Django's test client, p50 / p95, on the decisions
  benchmark's project (``--decisions`` decisions, a tenth of them flagged by
  one document update, so one root-cause group of 10,000): the queue page,
  the group preview (reaffirm and reject), the group action on ten decisions,
  and reaffirm / reject "and next"; and, for reference in the same run, the
  reaffirm the decision page posts (one core write and a redirect).
"""

from __future__ import annotations

import argparse
import os
import time
import uuid
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

import django

django.setup()

from urllib.parse import urlencode  # noqa: E402

from django.conf import settings  # noqa: E402
from django.contrib.auth.models import User  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402

from core.decisions import DecisionTraces  # noqa: E402
from core.history import ConversationHistory  # noqa: E402
from core.knowledge import Graph  # noqa: E402
from core.stores import GraphStore  # noqa: E402
from reviewer import store as reviewer_store  # noqa: E402
from tests.benchmarks import each_store  # noqa: E402
from tests.benchmarks.decisions import big_project  # noqa: E402
from tests.benchmarks.history import percentiles  # noqa: E402

CHROMIUM = os.environ.get("REVIEWER_TEST_CHROMIUM", "/usr/bin/chromium")
PASSWORD = "a-long-benchmark-password"


def group_project(store: GraphStore, size: int) -> tuple[str, str, list[str], set[str]]:
    """A project with one root-cause group of ``size``: (project, cause,
    ids in queue order, the ids whose passage changed)."""
    project = "bench-flow-" + uuid.uuid4().hex[:6]
    history = ConversationHistory(store, project_id=project, agent_id="bench")
    graph = Graph(store, project_id=project, agent_id="bench")
    traces = DecisionTraces(store, project_id=project, agent_id="bench")
    history.create_task("runbook-review", goal="Review the runbook")
    rules = [f"Rule {i}: service {i} is paged through rota {i}." for i in range(size)]
    text = "\n\n".join(rules)
    graph.add("runbook", text)
    changed_rules = {i for i in range(size) if i % 5 == 4}
    by_rule = {}
    for i, rule in enumerate(rules):
        start = text.index(rule)
        evidence = graph.span_evidence_id("runbook", start, start + len(rule))
        d = traces.record_decision(
            "runbook-review",
            choice_key=f"rule-{i:03d}",
            conclusion=f"Rota {i}",
            rationale="runbook",
            supports=[{"kind": "document", "evidence_id": evidence}],
            fetched=[graph.fetch(evidence)],
        ).decision
        by_rule[i] = str(d.id)
    new = "\n\n".join(r.replace("rota", "no rota") if i in changed_rules else r for i, r in enumerate(rules))
    graph.update("runbook", "Preface.\n\n" + new)
    cause = "document:runbook:2"
    queue = [str(d.id) for d in traces.list_decisions_for_review(root_cause=cause, limit=20).decisions]
    offset = 20
    while len(queue) < size:
        more = traces.list_decisions_for_review(root_cause=cause, limit=20, offset=offset).decisions
        if not more:
            break
        queue += [str(d.id) for d in more]
        offset += 20
    return project, cause, queue, {by_rule[i] for i in changed_rules}


def keystrokes(store: GraphStore, url: str, size: int) -> tuple[float, float, int, float]:
    """(keys per reaffirm, keys per settled decision, decisions settled, seconds)."""
    from django.contrib.staticfiles.handlers import StaticFilesHandler
    from django.test.testcases import LiveServerThread
    from playwright.sync_api import sync_playwright

    project, cause, ids, changed = group_project(store, size)
    reviewer = User.objects.create_user(f"kb-{uuid.uuid4().hex[:6]}", password=PASSWORD)
    from reviewer.models import ProjectGrant

    ProjectGrant.objects.create(user=reviewer, project_id=project, role="reviewer")
    server = LiveServerThread("localhost", StaticFilesHandler, port=0)
    server.daemon = True
    server.start()
    server.is_ready.wait()
    base = f"http://localhost:{server.port}"
    keys_reaffirm = keys_all = settled = 0
    started = time.perf_counter()
    try:
        with sync_playwright() as pw:
            chromium = pw.chromium.launch(
                executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu", "--no-first-run"]
            )
            page = chromium.new_page(viewport={"width": 1280, "height": 900})
            page.goto(f"{base}/login/")
            page.fill("#id_username", reviewer.username)
            page.fill("#id_password", PASSWORD)
            with page.expect_navigation():
                page.click("button[type=submit]")
            page.goto(f"{base}/p/{project}/review/?" + urlencode({"cause": cause}))
            page.keyboard.press("j")
            keys_all += 1
            keys_reaffirm += 1
            for did in ids[:20]:  # one page of the queue
                focused = page.evaluate("() => document.activeElement && document.activeElement.id")
                assert focused == f"d-{did}", (focused, did)
                if did in changed:
                    page.keyboard.press("x")
                    page.keyboard.type("The rota changed.")
                    page.keyboard.press("Enter")
                    keys_all += 2
                else:
                    page.keyboard.press("r")
                    keys_all += 1
                    keys_reaffirm += 1
                page.locator(f"#d-{did}.settled").wait_for()
                page.wait_for_function("() => !document.querySelector('.htmx-request')")
                settled += 1
            chromium.close()
    finally:
        server.terminate()
        store.drop_project(project)
    reaffirms = sum(1 for d in ids[:20] if d not in changed)
    return keys_reaffirm / reaffirms, keys_all / settled, settled, time.perf_counter() - started


def timed_get(client: Client, url: str, n: int = 30) -> tuple[float, float]:
    assert client.get(url).status_code == 200, url
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        response = client.get(url)
        samples.append((time.perf_counter() - start) * 1000)
        assert response.status_code == 200, url
    return percentiles(samples)


def forms(store: GraphStore, decisions: int, client: Client) -> tuple[dict[str, tuple[float, float]], str, int]:
    _rows, project = big_project(store, decisions)
    traces = DecisionTraces(store, project_id=project, agent_id="bench")
    cause = "document:policy:2"
    group_size = traces.list_decisions_for_review(root_cause=cause, limit=1).count
    base = f"/p/{project}"
    out: dict[str, tuple[float, float]] = {
        "review queue (groups, sizes, labels)": timed_get(client, f"{base}/review/"),
        "review queue, task name contains": timed_get(client, f"{base}/review/?task=task-"),
        "group preview, reaffirm": timed_get(
            client, f"{base}/review/group?" + urlencode({"cause": cause, "action": "reaffirm"})
        ),
        "group preview, reject": timed_get(
            client, f"{base}/review/group?" + urlencode({"cause": cause, "action": "reject"})
        ),
    }
    offset = 0

    def take(n: int) -> list[str]:
        nonlocal offset
        got = [str(d.id) for d in traces.list_decisions_for_review(root_cause=cause, limit=n, offset=offset).decisions]
        offset += 0  # settled decisions leave the queue: the next ones move up
        return got

    for action in ("reaffirm", "reject"):
        samples = []
        for _ in range(20):
            did = take(1)[0]
            data = {
                "request_id": uuid.uuid4().hex,
                "cause": cause,
                "group_total": str(group_size),
                "filters": "",
                "explanation": "",
                "reason": "benchmark",
            }
            start = time.perf_counter()
            response = client.post(f"{base}/review/{did}/{action}", data, HTTP_HX_REQUEST="true")
            samples.append((time.perf_counter() - start) * 1000)
            assert response.status_code == 200 and b"settled" in response.content, response.content[:300]
        out[f"{action} and next (htmx)"] = percentiles(samples)
    samples = []
    for _ in range(20):  # the same write from the decision page's form, for reference in the same run
        did = take(1)[0]
        start = time.perf_counter()
        response = client.post(
            f"{base}/decisions/{did}/reaffirm", {"request_id": uuid.uuid4().hex, "explanation": "benchmark"}
        )
        samples.append((time.perf_counter() - start) * 1000)
        assert response.status_code == 302, response.content[:300]
    out["reference: reaffirm from the decision page"] = percentiles(samples)
    for action in ("reaffirm", "reject"):
        samples = []
        for _ in range(10):
            ids = take(10)
            data = {
                "request_id": uuid.uuid4().hex,
                "cause": cause,
                "action": action,
                "confirm": "on",
                "note": "benchmark",
                "decision": ids,
            }
            start = time.perf_counter()
            response = client.post(f"{base}/review/group", data)
            samples.append((time.perf_counter() - start) * 1000)
            assert response.status_code == 200 and b"Done: 10" in response.content, response.content[-600:]
        out[f"group action, {action} 10"] = percentiles(samples)
    return out, project, group_size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--decisions", type=int, default=100_000)
    parser.add_argument("--group", type=int, default=20)
    parser.add_argument("--backends", default="falkordb,neo4j")
    parser.add_argument("--no-browser", action="store_true", help="leave out the keystroke count")
    args = parser.parse_args()
    settings.ALLOWED_HOSTS = ["testserver", "localhost"]
    settings.DEBUG = False
    call_command("migrate", interactive=False, verbosity=0)
    for title, store, _url in each_store(args.backends):
        reviewer_store._store = store  # the dashboard's own store handle
        user = User.objects.create_user(f"bench-{uuid.uuid4().hex[:6]}", is_staff=True)
        client = Client()
        client.force_login(user)
        figures, project, group_size = forms(store, args.decisions, client)
        floor = percentiles([_timed(lambda: store.read(project, "RETURN 1 AS one")) for _ in range(500)])[0]
        store.drop_project(project)
        print(f"\n{title}: floor (store round trip, p50) {floor:.3f} ms")
        print(f"  {'form':44} {f'{args.decisions:,} decisions, a group of {group_size:,}: p50 / p95':>52}  p95 / floor")
        for name, (p50, p95) in figures.items():
            print(f"  {name:44} {p50:>40.1f} / {p95:>6.1f} ms  {p95 / floor:>8.0f}x")
        if not args.no_browser:
            per_reaffirm, per_decision, settled, seconds = keystrokes(store, _url, args.group)
            print(f"  keystrokes per reaffirm (moving on included)  {per_reaffirm:.2f}   (target: at most 2)")
            print(
                f"  keystrokes per settled decision, {settled} settled by keyboard (typing a reason not counted): "
                f"{per_decision:.2f}, in {seconds:.1f} s"
            )


def _timed(fn: Any) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


if __name__ == "__main__":
    main()
