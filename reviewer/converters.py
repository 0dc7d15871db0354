"""The URL converter of project ids: any text an agent may name a project
(``a/b``, ``?``, ``#``, spaces, ``%``, markup, any script) is one path
segment of the dashboard's URLs, and links are built with it encoded."""

from __future__ import annotations

from core._common import escape_segment, unescape_segment


class ProjectIdConverter:
    regex = "[^/]+"

    def to_python(self, value: str) -> str:
        return unescape_segment(value)

    def to_url(self, value: object) -> str:
        return escape_segment(str(value))
