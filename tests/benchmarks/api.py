"""Benchmark of the agents' HTTP API, on each backend in one run.

    .venv/bin/python -m tests.benchmarks.api [--events 4000] [--agents 4] [--backends falkordb,neo4j]
                                             [--decisions 0] [--server runserver|serve] [--workers N]

Starts the app in its own process, DEBUG off, over the backend's store: on a
threaded WSGI server (``--server runserver``: Django's runserver server,
``django.core.servers.basehttp`` with threading and TCP_NODELAY, one
process), or on the production server (``--server serve``: ``manage.py
serve``, gunicorn with ``--workers`` processes; the rate limit still counts,
in the workers' shared cache),
makes one agent token per agent, and prints: the floors (a ``RETURN 1`` round
trip on the store, and ``GET /healthz`` over HTTP, which pings the store), then
``record_event`` over HTTP with ``--agents`` concurrent agents (each on its own
task, one keep-alive connection each): events per second and p50 / p95 per
request, beside the library's own figure for the same agents in the same run.
With ``--decisions N`` it also loads N decisions (a tenth flagged) and times the
review-queue read over HTTP. The rate limit is lifted for the run.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from core.decisions import DecisionTraces
from core.history import ConversationHistory
from core.knowledge import Graph
from core.stores import GraphStore
from tests.benchmarks import each_store
from tests.benchmarks.history import percentiles, report, timed

ROOT = Path(__file__).resolve().parents[2]

# TCP_NODELAY on each connection: the server writes headers and body apart, and
# on a keep-alive connection Nagle's algorithm then waits for the client's
# delayed ACK (40 ms a request); production servers set it or write once.
SERVER = """
import django, socket, sys
django.setup()
from django.core.servers import basehttp
from django.core.wsgi import get_wsgi_application
setup = basehttp.WSGIRequestHandler.setup
def nodelay(self):
    setup(self)
    self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
basehttp.WSGIRequestHandler.setup = nodelay
basehttp.run("127.0.0.1", int(sys.argv[1]), get_wsgi_application(), ipv6=False, threading=True)
"""


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """The app in its own process, on ``url``'s store."""

    def __init__(self, store_url: str, kind: str = "runserver", workers: int | None = None) -> None:
        self.data = tempfile.mkdtemp(prefix="reviewer-bench-api-")
        self.port = free_port()
        self.env = {
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "reviewer.settings",
            "REVIEWER_DATA_DIR": self.data,
            "REVIEWER_STORE_URL": store_url,
            "DJANGO_SECRET_KEY": "bench-" + uuid.uuid4().hex,
            "DJANGO_SECURE_SSL_REDIRECT": "0",
            "REVIEWER_API_RATE": "100000000",
            "REVIEWER_LOG_LEVEL": "WARNING",
        }
        self.manage("migrate", "-v", "0")
        if kind == "serve":
            command = [sys.executable, "manage.py", "serve", f"127.0.0.1:{self.port}", "--no-migrate"]
            command += [f"--workers={workers}"] if workers else []
        else:
            command = [sys.executable, "-c", SERVER, str(self.port)]
        self.process = subprocess.Popen(
            command,
            cwd=ROOT,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                if self.request("GET", "/healthz")[0] == 200:
                    return
            except OSError:
                time.sleep(0.2)
        raise SystemExit("the server did not start")

    def manage(self, *args: str) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=self.env, capture_output=True, text=True, check=True
        )
        return done.stdout.strip()

    def token(self, project: str, agent: str) -> str:
        return self.manage("api_token", "create", "--project", project, "--name", agent, "--agent-id", agent)

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        token: str | None = None,
        conn: http.client.HTTPConnection | None = None,
    ) -> tuple[int, Any]:
        own = conn is None
        conn = conn or http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        conn.request(method, path, json.dumps(body) if body is not None else None, headers)
        response = conn.getresponse()
        data = response.read()
        if own:
            conn.close()
        return response.status, json.loads(data) if data else None

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(30)


def over_http(server: Server, project: str, tokens: list[str], per_agent: int) -> tuple[float, list[float]]:
    latencies: list[list[float]] = [[] for _ in tokens]

    def agent(n: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        path = f"/api/v1/projects/{project}/tasks/agent-{n}/events"
        for i in range(per_agent):
            start = time.perf_counter()
            status, _ = server.request(
                "POST",
                path,
                {"kind": "tool_result", "name": "search", "payload": f"agent {n} result {i} " * 8},
                tokens[n],
                conn,
            )
            latencies[n].append((time.perf_counter() - start) * 1000)
            assert status == 200, status
        conn.close()

    threads = [threading.Thread(target=agent, args=(n,)) for n in range(len(tokens))]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rate = per_agent * len(tokens) / (time.perf_counter() - start)
    return rate, [x for lane in latencies for x in lane]


def in_library(store: GraphStore, project: str, agents: int, per_agent: int) -> tuple[float, list[float]]:
    latencies: list[list[float]] = [[] for _ in range(agents)]
    histories = [ConversationHistory(store, project_id=project, agent_id=f"lib-{n}") for n in range(agents)]
    for n, h in enumerate(histories):
        h.create_task(f"lib-{n}", goal="benchmark")

    def agent(n: int) -> None:
        history = histories[n]
        for i in range(per_agent):
            start = time.perf_counter()
            history.record_event(f"lib-{n}", kind="tool_result", name="search", payload=f"agent {n} result {i} " * 8)
            latencies[n].append((time.perf_counter() - start) * 1000)

    threads = [threading.Thread(target=agent, args=(n,)) for n in range(agents)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return per_agent * agents / (time.perf_counter() - start), [x for lane in latencies for x in lane]


def load_queue(store: GraphStore, project: str, decisions: int) -> None:
    history = ConversationHistory(store, project_id=project, agent_id="loader")
    graph = Graph(store, project_id=project, agent_id="loader")
    traces = DecisionTraces(store, project_id=project, agent_id="loader")
    history.create_task("queue", goal="benchmark")
    history.record_event("queue", kind="note", payload="basis")
    graph.add("doc", "The passage. " * 10)
    evidence = graph.span_evidence_id("doc", 0, 12)
    batch = 2000
    for first in range(0, decisions, batch):
        items = []
        for i in range(first, min(decisions, first + batch)):
            support = (
                {"kind": "document", "evidence_id": evidence}
                if i % 10 == 0
                else {"kind": "event", "task_name": "queue", "seq": 1}
            )
            items.append(
                {
                    "task_name": "queue",
                    "choice_key": f"c{i:06d}",
                    "conclusion": "x",
                    "rationale": "r",
                    "supports": [support],
                }
            )
        traces.load_decisions(items)
    graph.update("doc", "Changed. " * 10)  # flags a tenth of them


def bench(
    store: GraphStore,
    url: str,
    events: int,
    agents: int,
    decisions: int,
    kind: str = "runserver",
    workers: int | None = None,
) -> list[tuple[str, str, str]]:
    project = "bench-api-" + uuid.uuid4().hex[:8]
    rows: list[tuple[str, str, str]] = []
    server = Server(url, kind, workers)
    try:
        tokens = [server.token(project, f"agent-{n}") for n in range(agents)]
        for n, token in enumerate(tokens):
            server.request("POST", f"/api/v1/projects/{project}/tasks", {"name": f"agent-{n}", "goal": "bench"}, token)
        per_agent = events // agents
        over_http(server, project, tokens, 20)  # warm up
        floor = percentiles(timed(lambda: store.read(project, "RETURN 1 AS one"), 500))[0]
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        http_floor = percentiles(timed(lambda: server.request("GET", "/healthz", conn=conn), 300))[0]
        rows.append(("floor: RETURN 1 round trip, p50", f"{floor:.3f} ms", "1.0x"))
        rows.append(("floor: GET /healthz over HTTP, p50", f"{http_floor:.3f} ms", f"{http_floor / floor:.1f}x"))
        lib_rate, lib_lat = in_library(store, project, agents, per_agent)
        http_rate, http_lat = over_http(server, project, tokens, per_agent)
        for label, rate, lat in (
            (f"record_event, library, {agents} agents", lib_rate, lib_lat),
            (f"record_event, HTTP, {agents} agents", http_rate, http_lat),
        ):
            p50, p95 = percentiles(lat)
            rows.append((label, f"{rate:,.0f} /s", f"{rate / lib_rate:.2f}x the library's rate"))
            rows.append(
                (label + ", p50 / p95", f"{p50:.2f} / {p95:.2f} ms", f"{p50 / floor:.1f}x / {p95 / floor:.1f}x floor")
            )
        if decisions:
            load_queue(store, project, decisions)
            token = tokens[0]
            path = f"/api/v1/projects/{project}/review?limit=50"
            status, first = server.request("GET", path, token=token, conn=conn)
            assert status == 200 and first["count"] >= decisions // 10, (status, first and first.get("count"))
            p50, p95 = percentiles(timed(lambda: server.request("GET", path, token=token, conn=conn), 200))
            rows.append(
                (
                    f"review queue over HTTP ({decisions:,} decisions, {first['count']:,} flagged), p50 / p95",
                    f"{p50:.2f} / {p95:.2f} ms",
                    f"{p50 / floor:.1f}x / {p95 / floor:.1f}x floor",
                )
            )
        conn.close()
    finally:
        server.stop()
        store.drop_project(project)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=4_000)
    parser.add_argument("--agents", type=int, default=4)
    parser.add_argument("--decisions", type=int, default=0)
    parser.add_argument("--backends", default="falkordb,neo4j")
    parser.add_argument("--server", choices=["runserver", "serve"], default="runserver")
    parser.add_argument("--workers", type=int, help="serve's worker processes (default: its own)")
    args = parser.parse_args()
    if args.server == "serve":
        print("server: manage.py serve (gunicorn worker processes), DEBUG off")
    else:
        print("server: Django's threaded WSGI server (runserver's), DEBUG off, in its own process")
    for title, store, url in each_store(args.backends):
        report(title, bench(store, url, args.events, args.agents, args.decisions, args.server, args.workers))


if __name__ == "__main__":
    main()
