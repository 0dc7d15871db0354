"""A client for a real server on loopback with the few methods of Django's
test client that the API tests use, so the same tests run both ways."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any


class LiveResponse:
    def __init__(self, status: int, headers: Any, content: bytes) -> None:
        self.status_code, self.headers, self.content = status, headers, content

    def json(self) -> Any:
        return json.loads(self.content)

    def __getitem__(self, name: str) -> str:
        value = self.headers.get(name)
        if value is None:
            raise KeyError(name)
        return value


class LiveClient:
    def __init__(self, base: str) -> None:
        self.base = base.rstrip("/")

    def _send(
        self,
        method: str,
        url: str,
        body: Any = None,
        headers: dict[str, str] | None = None,
        content_type: str | None = None,
    ) -> LiveResponse:
        data = None
        headers = dict(headers or {})
        if body is not None:
            data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
            headers["Content-Type"] = content_type or "application/json"
        request = urllib.request.Request(self.base + url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=60) as r:
                return LiveResponse(r.status, r.headers, r.read())
        except urllib.error.HTTPError as e:
            return LiveResponse(e.code, e.headers, e.read())

    def get(self, url: str, query: dict[str, Any] | None = None, *, headers: dict[str, str] | None = None) -> Any:
        if query:
            url += "?" + urllib.parse.urlencode(query)
        return self._send("GET", url, headers=headers)

    def post(
        self, url: str, body: Any = None, content_type: str | None = None, *, headers: dict[str, str] | None = None
    ) -> Any:
        return self._send("POST", url, body if body is not None else {}, headers, content_type)

    def put(
        self, url: str, body: Any = None, content_type: str | None = None, *, headers: dict[str, str] | None = None
    ) -> Any:
        return self._send("PUT", url, body if body is not None else {}, headers, content_type)

    def delete(self, url: str, *, headers: dict[str, str] | None = None) -> Any:
        return self._send("DELETE", url, headers=headers)
