"""core.client keeps its token to the portal's origin: a redirect to another
origin (scheme, host, port) is followed without it, one within the origin
keeps it. Two real HTTP servers on loopback, one redirecting to the other."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from core import client
from core.client import _origin

TOKEN = "rvw_secret-token-never-elsewhere"


class _Server:
    """A loopback HTTP server that records the headers of every request and
    answers from ``routes``: path -> (status, extra headers)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, dict[str, str]]] = []
        self.routes: dict[str, tuple[int, dict[str, str]]] = {}
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                outer.seen.append((self.command, self.path, {k.lower(): v for k, v in self.headers.items()}))
                status, extra = outer.routes.get(self.path.split("?")[0], (200, {}))
                body = json.dumps({"path": self.path}).encode()
                self.send_response(status)
                for name, value in extra.items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _answer

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def servers() -> Iterator[tuple[_Server, _Server]]:
    portal, elsewhere = _Server(), _Server()
    yield portal, elsewhere
    portal.stop()
    elsewhere.stop()


def test_a_redirect_to_another_origin_does_not_carry_the_token(servers: tuple[_Server, _Server]) -> None:
    portal, elsewhere = servers
    portal.routes["/api/v1/projects/p/tasks/t"] = (302, {"Location": f"{elsewhere.url}/collect"})
    status, body = client.connect(portal.url, token=TOKEN, retries=0).call("GET", "/projects/p/tasks/t")
    assert status == 200 and body == {"path": "/collect"}  # the redirect was followed
    assert portal.seen[0][2]["authorization"] == f"Bearer {TOKEN}"  # the portal itself got it
    (_, path, headers) = elsewhere.seen[0]
    assert path == "/collect" and "authorization" not in headers
    assert TOKEN not in json.dumps(elsewhere.seen)


def test_the_token_stays_dropped_when_the_other_origin_redirects_back(servers: tuple[_Server, _Server]) -> None:
    portal, elsewhere = servers
    portal.routes["/api/v1/a"] = (302, {"Location": f"{elsewhere.url}/bounce"})
    elsewhere.routes["/bounce"] = (302, {"Location": f"{portal.url}/api/v1/b"})
    assert client.connect(portal.url, token=TOKEN, retries=0).call("GET", "/a")[0] == 200
    assert [p for _, p, _ in portal.seen] == ["/api/v1/a", "/api/v1/b"]
    assert "authorization" not in portal.seen[1][2] and "authorization" not in elsewhere.seen[0][2]


def test_a_redirect_within_the_portals_origin_keeps_the_token(servers: tuple[_Server, _Server]) -> None:
    portal, _ = servers
    portal.routes["/api/v1/old"] = (301, {"Location": "/api/v1/new"})
    status, body = client.connect(portal.url, token=TOKEN, retries=0).call("GET", "/old")
    assert status == 200 and body == {"path": "/api/v1/new"}
    assert [h.get("authorization") for _, _, h in portal.seen] == [f"Bearer {TOKEN}"] * 2


def test_another_port_or_scheme_or_host_is_another_origin() -> None:
    assert _origin("http://Example.org/a") == _origin("http://example.org:80/b")
    assert _origin("https://example.org/") == _origin("https://example.org:443/x")
    assert _origin("http://example.org/") != _origin("https://example.org/")
    assert _origin("http://example.org:8000/") != _origin("http://example.org:8001/")
    assert _origin("http://127.0.0.1:8000/") != _origin("http://localhost:8000/")
