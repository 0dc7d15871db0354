"""Reviewer as Model Context Protocol tools (the official ``mcp`` SDK,
streamable HTTP transport), so an agent host can attach it as a memory tool.

Its own process, started by one command beside the app::

    manage.py mcp_server --api-url http://127.0.0.1:8000 --port 8765

It holds no store and no secret: each tool call passes the caller's
``Authorization: Bearer rvw_…`` header on to the JSON API (through
``core.client``), so the same tokens, project scope, roles, limits and error
codes hold, and the API stays the one door to the store.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
from mcp.server.fastmcp import Context, FastMCP

from core import client

INSTRUCTIONS = (
    "Reviewer records an agent's work (tasks, events, steps, documents, decisions with their supports) in one "
    "project and shows people what needs review. Refused writes answer {recorded: false, error: <code>}."
)


def _dump(value: Any) -> Any:
    if isinstance(value, list):
        return [_dump(v) for v in value]
    if isinstance(value, tuple):
        return [_dump(v) for v in value]
    return _unhashed(value.model_dump(mode="json")) if hasattr(value, "model_dump") else value


def _unhashed(data: Any) -> Any:
    """A tool's answer with no redacted event's ``payload_sha256`` (the API
    already leaves it out; an answer is checked again here, as it leaves)."""
    if isinstance(data, list):
        return [_unhashed(v) for v in data]
    if isinstance(data, dict):
        if data.get("redacted_at") is not None and "payload_sha256" in data:
            data = {**data, "payload_sha256": None}
        return {k: _unhashed(v) for k, v in data.items()}
    return data


def build_server(api_url: str, *, host: str = "127.0.0.1", port: int = 8765) -> FastMCP:
    mcp = FastMCP("reviewer", instructions=INSTRUCTIONS, host=host, port=port, stateless_http=True, json_response=True)

    def portal(ctx: Context) -> client.Portal:
        request = ctx.request_context.request
        header = request.headers.get("authorization", "") if request is not None else ""
        token = header.removeprefix("Bearer ").strip()
        if not token:
            raise ValueError("send your project token as 'Authorization: Bearer rvw_…'")
        return client.connect(api_url, token=token, retries=1)

    async def run(ctx: Context, kind: type, project: str, call: Callable[[Any], Any]) -> Any:
        service = kind(portal(ctx), project_id=project)
        return _dump(await anyio.to_thread.run_sync(lambda: call(service)))

    H, T, G, D = client.ConversationHistory, client.DecisionTraces, client.Graph, client.Discussion

    @mcp.tool()
    async def create_task(project: str, name: str, goal: str, ctx: Context, request_id: str | None = None) -> Any:
        """Start a task (a unit of an agent's work) in the project."""
        return await run(ctx, H, project, lambda h: h.create_task(name, goal=goal, request_id=request_id))

    @mcp.tool()
    async def record_event(
        project: str,
        task_name: str,
        kind: str,
        payload: str,
        ctx: Context,
        role: str | None = None,
        name: str | None = None,
        request_id: str | None = None,
    ) -> Any:
        """Append an event (message, tool_call, tool_result, note, …) to a task's history."""
        return await run(
            ctx,
            H,
            project,
            lambda h: h.record_event(
                task_name, kind=kind, payload=payload, role=role, name=name, request_id=request_id
            ),
        )

    @mcp.tool()
    async def set_step(
        project: str,
        task_name: str,
        name: str,
        state: str,
        ctx: Context,
        kind: str = "other",
        result_event_seq: int | None = None,
        result_basis: str = "unknown",
        result_supports: list[dict[str, Any]] | None = None,
        request_id: str | None = None,
    ) -> Any:
        """Set a step of a task (its state and, when done, what its result rests on)."""
        return await run(
            ctx,
            H,
            project,
            lambda h: h.set_step(
                task_name,
                name=name,
                state=state,
                kind=kind,
                result_event_seq=result_event_seq,
                result_basis=result_basis,
                result_supports=result_supports,
                request_id=request_id,
            ),
        )

    @mcp.tool()
    async def get_task(project: str, name: str, ctx: Context) -> Any:
        """The task's view: steps by state, active decisions, those needing review, conflicts."""
        return await run(ctx, H, project, lambda h: h.get_task(name))

    @mcp.tool()
    async def list_events(project: str, task_name: str, ctx: Context, after_seq: int = 0, limit: int = 50) -> Any:
        """A page of a task's events, oldest first."""
        return await run(ctx, H, project, lambda h: h.list_events(task_name, after_seq=after_seq, limit=limit))

    @mcp.tool()
    async def record_decision(
        project: str,
        task_name: str,
        choice_key: str,
        conclusion: str,
        rationale: str,
        supports: list[dict[str, Any]],
        ctx: Context,
        assumptions: list[str] | None = None,
        open_questions: list[str] | None = None,
        fetched: list[dict[str, Any]] | None = None,
        request_id: str | None = None,
    ) -> Any:
        """Record a decision with what it rests on (document spans, events, other decisions)."""
        return await run(
            ctx,
            T,
            project,
            lambda t: t.record_decision(
                task_name,
                choice_key=choice_key,
                conclusion=conclusion,
                rationale=rationale,
                supports=supports,
                assumptions=assumptions,
                open_questions=open_questions,
                fetched=fetched,
                request_id=request_id,
            ),
        )

    @mcp.tool()
    async def supersede_decision(
        project: str,
        decision_id: str,
        conclusion: str,
        rationale: str,
        explanation: str,
        supports: list[dict[str, Any]],
        ctx: Context,
        request_id: str | None = None,
    ) -> Any:
        """Replace a decision with a new revision, saying why."""
        return await run(
            ctx,
            T,
            project,
            lambda t: t.supersede_decision(
                decision_id,
                conclusion=conclusion,
                rationale=rationale,
                explanation=explanation,
                supports=supports,
                request_id=request_id,
            ),
        )

    @mcp.tool()
    async def get_decision(project: str, decision_id: str, ctx: Context) -> Any:
        """One decision with its supports and review state."""
        return await run(ctx, T, project, lambda t: t.get_decision(decision_id))

    @mcp.tool()
    async def list_decisions_for_review(
        project: str, ctx: Context, task_name: str | None = None, limit: int = 50, offset: int = 0
    ) -> Any:
        """Decisions whose supports changed or whose dependencies are in doubt, oldest flag first."""
        return await run(ctx, T, project, lambda t: t.list_decisions_for_review(task_name, limit=limit, offset=offset))

    @mcp.tool()
    async def search_decisions(project: str, query: str, ctx: Context, task_name: str | None = None) -> Any:
        """Earlier decisions that match the words (precedents)."""
        return await run(ctx, T, project, lambda t: t.search_decisions(query, task_name=task_name))

    @mcp.tool()
    async def list_threads(project: str, decision_id: str, ctx: Context, limit: int = 10, offset: int = 0) -> Any:
        """The discussion of a decision: its threads of comments (questions people put), open threads first, at
        most 10 a call; each with its first and latest comments (omitted: those between, read with get_thread)."""
        return await run(ctx, D, project, lambda d: d.list_threads(decision_id, limit=limit, offset=offset))

    @mcp.tool()
    async def get_thread(project: str, thread_id: str, ctx: Context, offset: int = 0, limit: int = 20) -> Any:
        """One thread with a page of its comments, oldest first, from position offset (0 is the question), at most
        20 a call."""
        return await run(ctx, D, project, lambda d: d.get_thread(thread_id, offset=offset, limit=limit))

    @mcp.tool()
    async def post_comment(
        project: str,
        decision_id: str,
        body: str,
        ctx: Context,
        thread_id: str | None = None,
        request_id: str | None = None,
    ) -> Any:
        """Comment on a decision: answer in a thread (thread_id) or open a new one. Plain text; @name mentions
        a person of the project."""
        return await run(
            ctx, D, project, lambda d: d.post_comment(decision_id, body, thread_id=thread_id, request_id=request_id)
        )

    @mcp.tool()
    async def resolve_thread(
        project: str, thread_id: str, ctx: Context, resolved: bool = True, request_id: str | None = None
    ) -> Any:
        """Mark a thread resolved once its question is answered (resolved=false opens it again)."""
        return await run(
            ctx, D, project, lambda d: d.resolve_thread(thread_id, resolved=resolved, request_id=request_id)
        )

    @mcp.tool()
    async def add_document(project: str, key: str, text: str, ctx: Context, request_id: str | None = None) -> Any:
        """Add a document that decisions can cite."""
        return await run(ctx, G, project, lambda g: g.add(key, text, request_id=request_id))

    @mcp.tool()
    async def span_evidence_id(project: str, key: str, char_start: int, char_end: int, ctx: Context) -> Any:
        """The evidence id of a span of a document's current text."""
        return await run(ctx, G, project, lambda g: g.span_evidence_id(key, char_start, char_end))

    @mcp.tool()
    async def fetch(project: str, evidence_id: str, ctx: Context) -> Any:
        """The text an evidence id names; pass the result back as `fetched` when citing it."""
        return await run(ctx, G, project, lambda g: g.fetch(evidence_id))

    return mcp
