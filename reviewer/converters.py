"""The URL converter of names agents choose: any text an agent may name a
project, a task or a step (``a/b``, ``?``, ``#``, spaces, ``%``, markup, any
script) is one path segment of the dashboard's and the API's URLs, and links
are built with it encoded. Registered as ``project`` (the dashboard) and
``segment`` (the API's task and step names)."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlencode

from django.http import Http404
from django.urls import register_converter

from core import limits
from core._common import escape_segment, task_id, unescape_segment
from core._evidence import document_node_id


class ProjectIdConverter:
    regex = "[^/]+"

    def to_python(self, value: str) -> str:
        return unescape_segment(value)

    def to_url(self, value: object) -> str:
        return escape_segment(str(value))


register_converter(ProjectIdConverter, "project")
register_converter(ProjectIdConverter, "segment")


# -- a task in a dashboard URL ----------------------------------------------------
#
# A task's pages take its name in the query (``?name=``, the event log's
# ``?task=``). A name longer than ``limits.TASK_NAME_MAX`` (written before the
# limits) would make the URL too long for the server (414) and is cut by the
# views' reading of parameters anyway: such a task is named by its id
# (``?id=<task id>``) instead, which every task page takes.


def task_query(project_id: str, name: str, param: str = "name") -> str:
    """The query string that names the task ``name`` on a dashboard page:
    ``<param>=<name>``, or ``id=<task id>`` for a name too long for a URL."""
    if len(name) > limits.TASK_NAME_MAX:
        return urlencode({"id": task_id(project_id, name)})
    return urlencode({param: name})


def task_from_query(history: object, params: object, param: str = "name") -> str:
    """The task name a page's query (or form) names: by ``id`` (404 when no
    task has it) or by ``param``."""
    return _named(params, history.task_name_by_id, param, "task")  # type: ignore[attr-defined]


def document_query(project_id: str, key: str) -> str:
    """The query string that names a document on its page: ``key=<key>``, or
    ``id=<document node id>`` for a key too long for a URL."""
    if len(key) > limits.DOCUMENT_KEY_MAX:
        return urlencode({"id": document_node_id(project_id, key)})
    return urlencode({"key": key})


def document_from_query(graph: object, params: object) -> str:
    """The document key a page's query names: by ``id`` (404 when no
    document has it) or by ``key``."""
    return _named(params, graph.document_key_by_id, "key", "document")  # type: ignore[attr-defined]


def _named(params: object, by_id: Callable[[str], str | None], param: str, what: str) -> str:
    """A record's name or key from a query: ``id`` looked up with ``by_id``
    (404 when it names none), else ``param`` as given, bounded."""
    wanted = params.get("id")  # type: ignore[attr-defined]
    if wanted:
        found = by_id(str(wanted)[:100])
        if found is None:
            raise Http404(f"no such {what}")
        return found
    return (params.get(param) or "").replace("\x00", "")[:1000]  # type: ignore[attr-defined]
