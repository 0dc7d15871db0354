"""The URL converter of names agents choose: any text an agent may name a
project, a task or a step (``a/b``, ``?``, ``#``, spaces, ``%``, markup, any
script) is one path segment of the dashboard's and the API's URLs, and links
are built with it encoded. Registered as ``project`` (the dashboard) and
``segment`` (the API's task and step names)."""

from __future__ import annotations

from django.urls import register_converter

from core._common import escape_segment, unescape_segment


class ProjectIdConverter:
    regex = "[^/]+"

    def to_python(self, value: str) -> str:
        return unescape_segment(value)

    def to_url(self, value: object) -> str:
        return escape_segment(str(value))


register_converter(ProjectIdConverter, "project")
register_converter(ProjectIdConverter, "segment")
