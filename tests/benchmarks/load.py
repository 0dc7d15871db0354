"""Several reviewers at once through HTTP, on one shared review queue.

    .venv/bin/python -m tests.benchmarks.load [--reviewers 6] [--decisions 300] [--contested 60]
        [--seconds 60] [--requests 5000] [--backends falkordb,neo4j] [--servers runserver,serve]
        [--workers N] [--threads N]

For each backend and each server: a fresh project whose decisions all need
review, a dashboard server in production settings on 127.0.0.1 only (Django's
``runserver``, one process; or ``manage.py serve``, gunicorn with ``--workers``
processes) and reviewers who log in and work through the queue like a
person: open the queue, open a decision, reaffirm or reject it. Some
decisions are contested: two reviewers reject the same one at about the same
moment. The run is bounded by ``--requests`` and ``--seconds``.

It prints requests per second and p50 / p95 per page beside the floor of a
store round trip, for each server and then side by side, and fails (exit 1)
unless there was no 5xx, every action was either applied once or refused
with a sentence, and each contested decision has exactly one winner, in the
responses and in the store.
"""

from __future__ import annotations

import argparse
import http.client
import os
import random
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from html import unescape
from pathlib import Path
from urllib.parse import urlencode, urlsplit

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "load-test-password-not-secret"

_REQUEST_ID = {
    action: re.compile(rf'action="[^"]*/{action}"[^>]*>.*?name="request_id" value="([^"]+)"', re.S)
    for action in ("reaffirm", "reject")
}
_REFUSAL = re.compile(r'<p class="msg error" role="alert">(.*?)</p>', re.S)


@dataclass
class Sample:
    page: str
    status: int
    ms: float


@dataclass
class Act:
    reviewer: str
    decision: str
    action: str
    status: int
    sentence: str | None  # the refusal shown beside the form, if refused


@dataclass
class Report:
    samples: list[Sample] = field(default_factory=list)
    acts: list[Act] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # a reviewer who could not go on
    seconds: float = 0.0
    cpu: dict[str, float] = field(default_factory=dict)  # CPU seconds used in the run: server, store, client

    def cpu_ms_per_request(self, who: str) -> float | None:
        if who not in self.cpu or not self.samples:
            return None
        return self.cpu[who] * 1000 / len(self.samples)

    def server_errors(self) -> list[Sample]:
        return [s for s in self.samples if s.status >= 500]

    def problems(self, contested: set[str]) -> list[str]:
        """What broke a promise: 5xx, an action neither applied nor refused
        with a sentence, a contested decision with no winner or two."""
        out = [f"{s.status} on {s.page}" for s in self.server_errors()] + self.failures
        for a in self.acts:
            if a.status == 302:
                continue
            if a.status != 400 or not a.sentence:
                out.append(f"{a.action} of {a.decision} by {a.reviewer}: {a.status} without a sentence")
        winners: dict[str, int] = Counter(a.decision for a in self.acts if a.status == 302 and a.action == "reject")
        tried: dict[str, int] = Counter(a.decision for a in self.acts if a.action == "reject")
        for d in contested:
            if tried[d] == 2 and winners[d] != 1:
                out.append(f"contested {d}: {winners[d]} winners")
        return out


class Browser:
    """One person's session: cookies, CSRF token, plain HTTP/1.1 on loopback."""

    def __init__(self, base: str, username: str, password: str) -> None:
        parts = urlsplit(base)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.username, self.password = username, password
        self.cookies: dict[str, str] = {}

    def request(self, method: str, path: str, form: dict[str, str] | None = None) -> tuple[int, str, float]:
        headers = {"Host": f"{self.host}:{self.port}"}
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        body = None
        if form is not None:
            form = {**form, "csrfmiddlewaretoken": self.cookies.get("csrftoken", "")}
            body = urlencode(form)
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        start = time.perf_counter()
        conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
        try:
            conn.request(method, path, body=body, headers=headers)
            response = conn.getresponse()
            text = response.read().decode("utf-8", "replace")
        finally:
            conn.close()
        ms = (time.perf_counter() - start) * 1000
        for header, value in response.getheaders():
            if header.lower() == "set-cookie":
                name, _, rest = value.partition("=")
                self.cookies[name.strip()] = rest.split(";", 1)[0]
        return response.status, text, ms

    def login(self) -> None:
        self.request("GET", "/login/")
        status, _text, _ms = self.request("POST", "/login/", {"username": self.username, "password": self.password})
        if status != 302:
            raise RuntimeError(f"{self.username} could not log in ({status}): {_text[:300]!r}")


def plan(reviewers: list[str], decisions: list[str], contested: int, seed: int) -> dict[str, list[tuple[str, str]]]:
    """Who acts on what: each contested decision is rejected by two people,
    the rest reaffirmed or rejected by one."""
    rng = random.Random(seed)
    work: dict[str, list[tuple[str, str]]] = defaultdict(list)
    n = len(reviewers)
    for i, d in enumerate(decisions[:contested]):
        work[reviewers[i % n]].append((d, "reject"))
        work[reviewers[(i + 1) % n]].append((d, "reject"))
    for i, d in enumerate(decisions[contested:]):
        work[reviewers[i % n]].append((d, rng.choice(("reaffirm", "reject"))))
    return work


def drive(
    base: str,
    project: str,
    reviewers: list[str],
    password: str,
    decisions: list[str],
    *,
    contested: int,
    seconds: float,
    max_requests: int,
    seed: int = 7,
) -> Report:
    """Run the reviewers against a live server; bounded in requests and time."""
    if urlsplit(base).hostname not in ("127.0.0.1", "localhost", "::1"):
        raise SystemExit("the load loop only runs against a server on loopback")
    report = Report()
    lock = threading.Lock()
    budget = [max_requests]
    deadline = time.monotonic() + seconds
    work = plan(reviewers, decisions, contested, seed)
    p = f"/p/{project}"

    def spend() -> bool:
        with lock:
            if budget[0] <= 0 or time.monotonic() > deadline:
                return False
            budget[0] -= 1
            return True

    def person(name: str) -> None:
        try:
            work_through(name)
        except Exception as exc:
            with lock:
                report.failures.append(f"{name} stopped: {exc!r}")

    def work_through(name: str) -> None:
        browser = Browser(base, name, password)
        browser.login()
        for n, (did, action) in enumerate(work[name]):
            if n % 4 == 0:
                if not spend():
                    return
                status, _t, ms = browser.request("GET", f"{p}/review/")
                with lock:
                    report.samples.append(Sample("review queue", status, ms))
            if not spend():
                return
            status, text, ms = browser.request("GET", f"{p}/decisions/{did}/")
            with lock:
                report.samples.append(Sample("decision", status, ms))
            found = _REQUEST_ID[action].search(text)
            # A decision someone else settled shows no form; act anyway, as a
            # stale tab would, to prove the refusal.
            request_id = unescape(found.group(1)) if found else uuid.uuid4().hex
            form = {
                "request_id": request_id,
                "explanation": "Checked against the current text.",
                "reason": f"{name} found it wrong.",
            }
            if not spend():
                return
            status, text, ms = browser.request("POST", f"{p}/decisions/{did}/{action}", form)
            refusal = _REFUSAL.search(text)
            with lock:
                report.samples.append(Sample(action, status, ms))
                report.acts.append(
                    Act(name, did, action, status, unescape(refusal.group(1)).strip() if refusal else None)
                )
        if spend():
            status, _t, ms = browser.request("GET", f"{p}/")
            with lock:
                report.samples.append(Sample("overview", status, ms))

    start = time.perf_counter()
    threads = [threading.Thread(target=person, args=(r,), name=r) for r in reviewers]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    report.seconds = time.perf_counter() - start
    return report


def flagged_project(store, decisions: int) -> tuple[str, list[str]]:  # type: ignore[no-untyped-def]
    """A project whose decisions all need review and can each be reaffirmed
    (their passage moved, unchanged) or rejected."""
    from core.decisions import DecisionTraces
    from core.history import ConversationHistory
    from core.knowledge import Graph

    project = "load-" + uuid.uuid4().hex[:8]
    history = ConversationHistory(store, project_id=project, agent_id="planner")
    graph = Graph(store, project_id=project, agent_id="ingest")
    traces = DecisionTraces(store, project_id=project, agent_id="planner")
    passage = "Services keep their data in Postgres unless a review says otherwise."
    graph.add("policy", passage)
    text = graph.current_text("policy")
    evidence = graph.span_evidence_id("policy", 0, len(passage))
    fetched = [graph.fetch(evidence)]
    history.create_task("storage-review", goal="Decide where each service keeps its data")
    ids = []
    for i in range(decisions):
        result = traces.record_decision(
            "storage-review",
            choice_key=f"service-{i}-storage",
            conclusion=f"Service {i} stays on Postgres",
            rationale="The storage policy says so.",
            supports=[{"kind": "document", "evidence_id": evidence}],
            fetched=fetched,
        )
        assert result.recorded, result.error
        ids.append(str(result.decision.id))
    graph.update("policy", "Preface: reviewed this quarter.\n\n" + text)  # moved, not changed: all flagged
    return project, ids


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


SERVERS = {"runserver": "runserver (1 process)", "serve": "serve (gunicorn)"}


def serve(
    store_url: str,
    data_dir: str,
    project: str,
    reviewers: list[str],
    server: str = "runserver",
    workers: int | None = None,
    threads: int | None = None,
) -> tuple[subprocess.Popen[bytes], str]:
    """The dashboard in production settings on loopback, with one login per
    reviewer: Django's ``runserver`` or ``manage.py serve`` (gunicorn)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "REVIEWER_"))}
    env.update(
        DJANGO_SETTINGS_MODULE="reviewer.settings",
        REVIEWER_DATA_DIR=data_dir,
        REVIEWER_STORE_URL=store_url,
        DJANGO_SECRET_KEY=uuid.uuid4().hex * 2,
        DJANGO_SECURE_SSL_REDIRECT="0",
        REVIEWER_LOG_LEVEL="ERROR",
    )
    manage = [sys.executable, str(ROOT / "manage.py")]
    subprocess.run([*manage, "migrate", "--verbosity", "0"], env=env, check=True, cwd=ROOT)
    subprocess.run([*manage, "collectstatic", "--noinput", "--verbosity", "0"], env=env, check=True, cwd=ROOT)
    secret = Path(data_dir) / "password"
    secret.write_text(PASSWORD + "\n")
    for name in reviewers:
        subprocess.run(
            [*manage, "create_user", name, "--role", "reviewer", "--project", project, "--password-file", str(secret)],
            env=env,
            check=True,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
        )
    port = free_port()
    if server == "serve":
        command = [*manage, "serve", f"127.0.0.1:{port}", "--no-migrate", "--no-collectstatic"]
        command += [f"--workers={workers}"] if workers else []
        command += [f"--threads={threads}"] if threads else []
    else:
        command = [*manage, "runserver", f"127.0.0.1:{port}", "--noreload"]
    process = subprocess.Popen(command, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/healthz")
            if conn.getresponse().status == 200:
                time.sleep(2 if server == "serve" else 0)  # every worker booted
                return process, base
        except OSError:
            time.sleep(0.1)
    process.kill()
    raise SystemExit("the dashboard server did not start")


def _ticks(pid: int) -> int:
    """User plus system CPU of a live process, in clock ticks (0 once gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0
    return int(fields[11]) + int(fields[12])


def _tree(pid: int) -> list[int]:
    try:
        kids = [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return [pid]
    return [pid, *kids]


class CpuMeter:
    """CPU seconds used by the server's processes, the embedded store's
    server and this process (the reviewers' client) between start and stop:
    what a request costs, whatever else the machine is running."""

    def __init__(self, server_pid: int, store_url: str) -> None:
        self.server_pid = server_pid
        self.store_pid: int | None = None
        if store_url.startswith("falkordb+embedded://"):
            pid_file = Path(urlsplit(store_url).path) / "falkordb.pid"
            try:
                self.store_pid = int(pid_file.read_text())
            except (OSError, ValueError):
                self.store_pid = None
        self.hz = os.sysconf("SC_CLK_TCK")
        self.start = self._read()

    def _read(self) -> dict[str, dict[int, int]]:
        out = {"server": {pid: _ticks(pid) for pid in _tree(self.server_pid)}}
        if self.store_pid:
            out["store"] = {self.store_pid: _ticks(self.store_pid)}
        own = os.times()
        out["client"] = {0: int((own.user + own.system) * self.hz)}
        return out

    def stop(self) -> dict[str, float]:
        end = self._read()
        return {
            who: sum(max(0, ticks - self.start[who].get(pid, 0)) for pid, ticks in now.items()) / self.hz
            for who, now in end.items()
        }


def check_store(store, project: str, report: Report, contested: set[str]) -> list[str]:  # type: ignore[no-untyped-def]
    """Exactly one reject recorded per contested decision, in the store."""
    from core.decisions import DecisionTraces
    from core.models import DecisionStatus
    from core.retention import ActivityLog

    traces = DecisionTraces(store, project_id=project, agent_id="audit")
    rejects = Counter(e.target_id for e in ActivityLog(store, project_id=project).every(action="reject"))
    problems = []
    acted = {a.decision for a in report.acts if a.status == 302}
    for d in contested & acted:
        status = traces.get_decision(d).decision.status
        if status is not DecisionStatus.rejected or rejects.get(d, 0) != 1:
            problems.append(f"contested {d}: {status}, {rejects.get(d, 0)} rejections logged")
    return problems


def side_by_side(title: str, reports: dict[str, Report]) -> None:
    """Each server's figures in columns: requests/s, then p50 / p95 per page."""
    from tests.benchmarks.history import percentiles

    names = list(reports)
    print(f"\n{title}: side by side (p50 / p95)")
    print(f"  {'':16} " + " ".join(f"{SERVERS.get(n, n):>26}" for n in names))
    rates = [f"{len(r.samples) / r.seconds:.0f} requests/s" for r in reports.values()]
    print(f"  {'throughput':16} " + " ".join(f"{x:>26}" for x in rates))
    print(f"  {'5xx':16} " + " ".join(f"{len(r.server_errors()):>26}" for r in reports.values()))
    for who in ("server", "store", "client"):
        cells = [r.cpu_ms_per_request(who) for r in reports.values()]
        if any(c is not None for c in cells):
            text = [f"{c:.1f} ms" if c is not None else "-" for c in cells]
            print(f"  {'CPU/req ' + who:16} " + " ".join(f"{x:>26}" for x in text))
    pages = sorted({s.page for r in reports.values() for s in r.samples})
    for page in pages:
        cells = []
        for r in reports.values():
            ms = [s.ms for s in r.samples if s.page == page]
            if ms:
                p50, p95 = percentiles(ms)
                cells.append(f"{p50:.1f} / {p95:.1f} ms")
            else:
                cells.append("-")
        print(f"  {page:16} " + " ".join(f"{c:>26}" for c in cells))


def table(title: str, report: Report, floor: float) -> None:
    from tests.benchmarks.history import percentiles

    by_page: dict[str, list[float]] = defaultdict(list)
    for s in report.samples:
        by_page[s.page].append(s.ms)
    applied = sum(1 for a in report.acts if a.status == 302)
    refused = sum(1 for a in report.acts if a.status == 400)
    print(f"\n{title}: floor (store round trip, p50) {floor:.3f} ms")
    print(
        f"  {len(report.samples):,} requests in {report.seconds:.1f} s = "
        f"{len(report.samples) / report.seconds:.0f} requests/s; {len(report.server_errors())} 5xx; "
        f"{applied} actions applied, {refused} refused with a sentence"
    )
    if report.cpu:
        parts = [
            f"{who} {report.cpu_ms_per_request(who):.1f} ms"
            for who in ("server", "store", "client")
            if who in report.cpu
        ]
        print("  CPU per request: " + ", ".join(parts))
    print(f"  {'page or action':16} {'requests':>9} {'p50':>9} {'p95':>9}  p95 / floor")
    for page, ms in sorted(by_page.items()):
        p50, p95 = percentiles(ms)
        print(f"  {page:16} {len(ms):>9,} {p50:>6.1f} ms {p95:>6.1f} ms  {p95 / floor:>8.0f}x")


def run(title: str, store, store_url: str, args: argparse.Namespace) -> list[str]:  # type: ignore[no-untyped-def]
    from tests.benchmarks.history import percentiles, timed

    problems: list[str] = []
    reports: dict[str, Report] = {}
    for kind in [k.strip() for k in args.servers.split(",") if k.strip()]:
        if kind not in SERVERS:
            raise SystemExit(f"unknown server {kind!r}: use runserver or serve")
        project, ids = flagged_project(store, args.decisions)
        reviewers = [f"reviewer{i}" for i in range(args.reviewers)]
        data_dir = tempfile.mkdtemp(prefix="reviewer-load-web-")
        server, base = serve(store_url, data_dir, project, reviewers, kind, args.workers, args.threads)
        meter = CpuMeter(server.pid, store_url)
        try:
            report = drive(
                base,
                project,
                reviewers,
                PASSWORD,
                ids,
                contested=args.contested,
                seconds=args.seconds,
                max_requests=args.requests,
            )
            report.cpu = meter.stop()
        finally:
            server.terminate()
            server.wait(timeout=60)
        contested = set(ids[: args.contested])
        floor = percentiles(timed(lambda: store.read(project, "RETURN 1 AS one"), 500))[0]
        table(f"{title}, {SERVERS[kind]}", report, floor)
        problems += report.problems(contested) + check_store(store, project, report, contested)
        store.drop_project(project)
        reports[kind] = report
    if len(reports) > 1:
        side_by_side(title, reports)
    return problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reviewers", type=int, default=6)
    parser.add_argument("--decisions", type=int, default=300)
    parser.add_argument("--contested", type=int, default=60)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--backends", default="falkordb,neo4j")
    parser.add_argument("--servers", default="runserver,serve", help="runserver, serve (gunicorn) or both")
    parser.add_argument("--workers", type=int, help="serve's worker processes (default: REVIEWER_WORKERS or its own)")
    parser.add_argument("--threads", type=int, help="serve's threads per worker")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    from tests.benchmarks import each_store

    problems: list[str] = []
    # The server process owns an embedded store; this process opens the same
    # directory to seed and to check (one shared server).
    for title, store, url in each_store(args.backends, prefix="reviewer-load-"):
        problems += run(title, store, url, args)
    if problems:
        print("\nPROMISES BROKEN:\n  " + "\n  ".join(problems))
        raise SystemExit(1)
    print("\nno 5xx; every action applied once or refused with a sentence; one winner per contested decision")


if __name__ == "__main__":
    main()
