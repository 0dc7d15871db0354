"""``manage.py mcp_server --api-url URL [--host H] [--port P]``: Reviewer's
MCP tools over streamable HTTP at ``http://H:P/mcp`` (see reviewer.api.mcp_server)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser


class Command(BaseCommand):
    help = "Serve Reviewer's MCP tools (streamable HTTP) in front of the JSON API."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--api-url", required=True, help="where the app serves /api/v1, e.g. http://127.0.0.1:8000")
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8765)

    def handle(self, *args: Any, api_url: str, host: str, port: int, **options: Any) -> None:
        from reviewer.api.mcp_server import build_server

        self.stderr.write(f"MCP tools at http://{host}:{port}/mcp, in front of {api_url}/api/v1")
        build_server(api_url, host=host, port=port).run(transport="streamable-http")
