"""Server time of the decision workbench (issue 15): the decision page with
its diff, honest actions and supersede picker, a supersede by picking a
passage, "cite revision N instead", the queue with each card's actions;
and the word diff of a 100 kB document on its own. Each figure is p50 / p95
beside the floor of a store round trip measured in the same run.

    .venv/bin/python -m tests.benchmarks.workbench [--decisions 20000] [--backends falkordb,neo4j]

The pages are requested through Django's test client in this process (the
server time without the network), in a project holding ``--decisions``
decisions (the pages benchmark's data set) plus the workbench's own: a
100 kB runbook cited mid-text and then revised in many places, a task with
1,000 events, and a decision with 20 dependants that was superseded.
"""

from __future__ import annotations

import argparse
import os
import random
import time
import uuid
from collections.abc import Callable
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

import django

django.setup()

from django.conf import settings  # noqa: E402
from django.contrib.auth.models import User  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402

from core._supports import closest_match  # noqa: E402
from core.decisions import DecisionTraces  # noqa: E402
from core.history import ConversationHistory  # noqa: E402
from core.knowledge import Graph  # noqa: E402
from core.review_views import ReviewViews  # noqa: E402
from core.stores import GraphStore  # noqa: E402
from core.textdiff import passage_diff, word_diff  # noqa: E402
from reviewer import store as reviewer_store  # noqa: E402
from tests.benchmarks import Timer, each_store  # noqa: E402
from tests.benchmarks.decisions import big_project  # noqa: E402
from tests.benchmarks.history import percentiles  # noqa: E402

PASSAGE = "The primary on-call engineer acknowledges a page within 15 minutes."


def runbook(size: int = 100_000, seed: int = 3) -> tuple[str, str]:
    """A document of about ``size`` characters with the cited passage in
    the middle, and a revision of it: the passage reworded (15 → 5) and one
    word in every tenth line changed."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(3000)] + ["the", "a", "page", "service", "team", "on-call", "when", "and"]
    lines = []
    while sum(len(line) + 1 for line in lines) < size:
        lines.append(" ".join(rng.choice(words) for _ in range(rng.randint(6, 16))) + ".")
    lines.insert(len(lines) // 2, PASSAGE)
    old = "\n".join(lines)
    revised = [line if i % 10 or line == PASSAGE else line.replace(" ", " revised ", 1) for i, line in enumerate(lines)]
    new = "\n".join(revised).replace("within 15 minutes", "within 5 minutes")
    return old, new


def workbench_project(store: GraphStore, project: str) -> dict[str, Any]:
    """The workbench's own decisions in ``project`` (which holds the pages
    benchmark's data set already)."""
    history = ConversationHistory(store, project_id=project, agent_id="bench")
    graph = Graph(store, project_id=project, agent_id="bench")
    traces = DecisionTraces(store, project_id=project, agent_id="bench")
    history.create_task("wb-oncall", goal="Own the pager")
    history.load_events(
        "wb-oncall", [{"kind": "tool_result", "name": "search", "payload": f"result {i} " * 30} for i in range(1000)]
    )
    old, new = runbook()
    graph.add("wb/runbook", old)
    start = old.index(PASSAGE)
    evidence = graph.span_evidence_id("wb/runbook", start, start + len(PASSAGE))
    cite = [{"kind": "document", "evidence_id": evidence}]
    flagged = []
    for i in range(40):  # the decisions a reviewer settles, one per request measured
        flagged.append(
            traces.record_decision(
                "wb-oncall",
                choice_key=f"ack-{i}",
                conclusion="15 minutes",
                rationale="runbook",
                supports=[*cite, {"kind": "event", "task_name": "wb-oncall", "seq": 1 + i}],
                fetched=[graph.fetch(evidence)],
            ).decision
        )
    base = traces.record_decision(
        "wb-oncall",
        choice_key="owner",
        conclusion="Ledger",
        rationale="r",
        supports=[{"kind": "event", "task_name": "wb-oncall", "seq": 1}],
    ).decision
    dependants = [
        traces.record_decision(
            "wb-oncall",
            choice_key=f"dep-{i}",
            conclusion="c",
            rationale="r",
            supports=[{"kind": "decision", "decision_id": str(base.id)}],
        ).decision
        for i in range(20)
    ]
    new_base = traces.supersede_decision(
        str(base.id),
        conclusion="Ledger team",
        rationale="r",
        explanation="e",
        supports=[{"kind": "event", "task_name": "wb-oncall", "seq": 2}],
    ).decision
    graph.update("wb/runbook", new)
    while traces.continue_decision_review().moved:
        pass
    return {
        "flagged": flagged,
        "base": base,
        "new_base": new_base,
        "dependants": dependants,
        "old": old,
        "new": new,
        "start": start,
        "graph": graph,
    }


def run(title: str, store: GraphStore, decisions: int) -> None:
    reviewer_store._store = store  # the dashboard's own store handle
    user = User.objects.create_user(f"bench-{uuid.uuid4().hex[:6]}", is_staff=True)
    client = Client()
    client.force_login(user)
    print(f"\n{title}: loading {decisions:,} decisions and the workbench's own…", flush=True)
    _rows, project = big_project(store, decisions)
    w = workbench_project(store, project)
    views = ReviewViews(store, project_id=project, agent_id="bench")
    base = f"/p/{project}"
    figures: dict[str, tuple[float, ...]] = {}

    def page(name: str, url: str, n: int = 30, *, cold: bool = False) -> None:
        assert client.get(url).status_code == 200, url
        timer = Timer(store)
        for _ in range(n):
            if cold:  # the process keeps the last few diffs: measure without them
                word_diff.cache_clear()
            with timer:
                response = client.get(url)
            assert response.status_code == 200, (url, response.status_code)
        figures[name] = timer.figures()

    flagged = w["flagged"]
    page("decision page: changed 100 kB runbook, diff, picker", f"{base}/decisions/{flagged[0].id}/", cold=True)
    page("  the same, its diff kept from the last request", f"{base}/decisions/{flagged[0].id}/")
    page("decision page: superseded, 20 dependants to swap", f"{base}/decisions/{w['base'].id}/")
    page("review queue: cards with their honest actions", f"{base}/review/")
    page("review queue: the runbook's group (20 cards)", f"{base}/review/?cause=document:wb/runbook:2", cold=True)

    pick = views.supersede_choices(flagged[0]).documents[0]
    text = pick.text or ""
    other = text.index("w1", len(text) // 3)

    def posts(name: str, calls: list[tuple[str, dict[str, Any]]], expect: int = 302) -> None:
        timer = Timer(store)
        for url, data in calls:
            word_diff.cache_clear()
            with timer:
                response = client.post(url, {**data, "request_id": uuid.uuid4().hex})
            assert response.status_code == expect, (url, response.status_code, response.content[:300])
        figures[name] = timer.figures()

    form = {
        "conclusion": "5 minutes",
        "rationale": "runbook v2",
        "explanation": "the runbook now says 5",
        "doc-0-version": str(pick.version),
    }
    posts(
        "supersede: the re-anchored passage picked",
        [
            (
                f"{base}/decisions/{d.id}/supersede",
                {**form, "doc-0": pick.evidence_id, "keep": f"event wb-oncall {2 + i}"},
            )
            for i, d in enumerate(flagged[1:16])
        ],
    )
    posts(
        "supersede: other text selected",
        [
            (
                f"{base}/decisions/{d.id}/supersede",
                {
                    **form,
                    "doc-0": "selection",
                    "doc-0-start": other,
                    "doc-0-end": other + 40,
                    "doc-0-text": text[other : other + 40],
                },
            )
            for d in flagged[16:31]
        ],
    )
    posts(
        "cite revision N instead",
        [
            (
                f"{base}/decisions/{d.id}/cite-instead",
                {"old": str(w["base"].id), "new": str(w["new_base"].id), "explanation": "cite revision 2"},
            )
            for d in w["dependants"][:15]
        ],
    )
    posts(
        "reaffirm refused: its actual cause",
        [(f"{base}/decisions/{d.id}/reaffirm", {"explanation": "holds"}) for d in flagged[31:40]],
        expect=400,
    )

    old, new, start = w["old"], w["new"], w["start"]

    def cold(fn: Callable[[], object]) -> float:
        word_diff.cache_clear()
        return _timed(fn)

    end = start + len(PASSAGE)
    figures["passage_diff, 100 kB document (no store)"] = percentiles(
        [cold(lambda: passage_diff(old, new, start, end)) for _ in range(30)]
    )
    figures["closest_match, 100 kB document (no store)"] = percentiles(
        [cold(lambda: closest_match(old, new, start, end)) for _ in range(30)]
    )

    def cpu(fn: Callable[[], object]) -> float:  # the work itself, whatever else the machine runs
        word_diff.cache_clear()
        started = time.process_time()
        fn()
        return (time.process_time() - started) * 1000

    figures["passage_diff, 100 kB document, CPU time"] = percentiles(
        [cpu(lambda: passage_diff(old, new, start, end)) for _ in range(30)]
    )
    shuffled = " ".join(random.Random(5).sample(old.split(), len(old.split())))
    figures["passage_diff, 100 kB rewritten throughout"] = percentiles(
        [cold(lambda: passage_diff(old, shuffled, start, end)) for _ in range(10)]
    )

    floor = percentiles([_timed(lambda: store.read(project, "RETURN 1 AS one")) for _ in range(500)])[0]
    store.drop_project(project)
    print(f"{title}: floor (store round trip, p50) {floor:.3f} ms; {decisions:,} decisions in the project")
    print(f"  {'page, action or diff':52} {'p50 / p95':>20}  p95 / floor  {'CPU per request':>15}")
    for name, (p50, p95, *cpu) in figures.items():
        work = f"{cpu[0]:>12.1f} ms" if cpu else ""
        print(f"  {name:52} {p50:>9.1f} / {p95:>6.1f} ms  {p95 / floor:>8.0f}x  {work}")
    print("  (CPU per request: the mean CPU time of this process and the store's server, which load")
    print("   from other work on the machine does not inflate; the diffs' CPU line is this process alone)")


def _timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--decisions", type=int, default=20_000)
    parser.add_argument("--backends", default="falkordb,neo4j")
    args = parser.parse_args()
    settings.ALLOWED_HOSTS = ["testserver"]
    settings.DEBUG = False
    call_command("migrate", interactive=False, verbosity=0)
    for title, store, _url in each_store(args.backends):
        run(title, store, args.decisions)


if __name__ == "__main__":
    main()
