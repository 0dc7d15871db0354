"""What every project page shares: the project's core services acting as the
logged-in person, the access check that opens a project page, and reading
query and form values."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from django.http import Http404, HttpRequest

from core.decisions import DecisionTraces
from core.history import ConversationHistory
from core.knowledge import Graph
from core.models import ActorKind, Decision
from core.retention import ActivityLog, HistoryRetention
from core.review_views import ReviewViews

from .. import access
from ..context import PROJECT_ATTRIBUTE
from ..store import SAFE_METHODS, check_store, get_store

PAGE = 20
CONFLICT_PAGE = 10  # groups per page: each shows up to 50 decisions side by side


@dataclass
class Project:
    """The core services of one project, acting as the logged-in person."""

    id: str
    user: Any
    #: the store as the access check found it answering in this request
    checked: Any = None
    #: a page that only reads (GET, HEAD) skips the ping: if the process's
    #: handle has died, its first read fails and the page is asked once
    #: more on a reopened store (``StoreUnavailableMiddleware``); an action
    #: pings first, so a dead handle never fails half of it, unless the
    #: store's client reconnects by itself (Neo4j: a round trip saved)
    reads_only: bool = False

    @cached_property
    def store(self) -> Any:
        if self.checked is not None:
            return self.checked
        store = get_store()
        return store if self.reads_only or store.reconnects else check_store()

    @cached_property
    def agent(self) -> str:
        return self.user.get_username()

    @cached_property
    def history(self) -> ConversationHistory:
        return ConversationHistory(self.store, project_id=self.id, agent_id=self.agent)

    @cached_property
    def traces(self) -> DecisionTraces:
        # a signed-in person acts here: the activity log says so (an agent's
        # services, the API's and the library's, write as an agent)
        return DecisionTraces(self.store, project_id=self.id, agent_id=self.agent, actor_kind=ActorKind.person)

    @cached_property
    def graph(self) -> Graph:
        return Graph(self.store, project_id=self.id, agent_id=self.agent)

    @cached_property
    def retention(self) -> HistoryRetention:
        return HistoryRetention(self.store, project_id=self.id, agent_id=self.agent, actor_kind=ActorKind.person)

    @cached_property
    def views(self) -> ReviewViews:
        """What the review screens show, read from the core."""
        return ReviewViews(
            self.store,
            project_id=self.id,
            agent_id=self.agent,
            traces=self.traces,
            history=self.history,
            graph=self.graph,
        )

    @cached_property
    def activity(self) -> ActivityLog:
        return ActivityLog(self.store, project_id=self.id)


def _project(request: HttpRequest, project_id: str) -> Project:
    """The project's services, once the person may open it; from here on
    the page context has the project (``reviewer.context``)."""
    checked = access.require_project(request.user, project_id)
    setattr(request, PROJECT_ATTRIBUTE, project_id)
    return Project(project_id, request.user, checked, reads_only=request.method in SAFE_METHODS)


def _param(source: Any, name: str, limit: int = 1000) -> str:
    """A query or form value as text the core accepts: NUL characters (which
    no name or key can hold) dropped, and cut to ``limit`` characters."""
    return (source.get(name) or "").replace("\x00", "")[:limit]


def _int(value: str | None, default: int, *, minimum: int = 0, maximum: int = 10**9) -> int:
    try:
        number = int(value) if value not in (None, "") else default
    except (TypeError, ValueError):
        return default
    return max(minimum, min(maximum, number))


def _decision_or_404(project: Project, decision_id: Any) -> Decision:
    found = project.traces.get_decision(decision_id)
    if not found.found or found.decision is None:
        raise Http404("no such decision")
    return found.decision
