"""What every service shares: derived ids, argument checks, request ids, time."""

from __future__ import annotations

import hashlib
import hmac
import json
import urllib.parse
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import Any, TypeVar

from pydantic import BaseModel

from . import limits
from .stores.base import Tx

E = TypeVar("E", bound=Enum)
R = TypeVar("R", bound=BaseModel)

#: The namespace of every derived id (uuid5), the same in every process and backend.
NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "https://reviewer.invalid/ids")

REQUEST_ID_MAX = limits.REQUEST_ID_MAX


def escape_segment(text: str) -> str:
    """``text`` made fit to be one path segment of a URL whatever it holds:
    ``%`` and ``/`` escaped (a web server decodes ``%2F`` to ``/`` before the
    application sees the path, so a plain encoding of ``a/b`` would split
    it), and an id of dots only spelled out (a browser resolves ``.`` and
    ``..`` segments away). The result is percent-encoded once more on its way
    into a URL (Django's ``reverse`` does it); ``unescape_segment`` undoes it
    after the server's decoding."""
    escaped = str(text).replace("%", "%25").replace("/", "%2F")
    return escaped.replace(".", "%2E") if escaped and set(escaped) == {"."} else escaped


def unescape_segment(segment: str) -> str:
    """The text ``escape_segment`` was given."""
    return urllib.parse.unquote(segment)


def task_id(project_id: str, name: str) -> str:
    return str(uuid.uuid5(NAMESPACE, f"task\x1f{project_id}\x1f{name}"))


def event_id(task: str, seq: int) -> str:
    return str(uuid.uuid5(NAMESPACE, f"event\x1f{task}\x1f{seq}"))


def step_id(task: str, name: str) -> str:
    return str(uuid.uuid5(NAMESPACE, f"step\x1f{task}\x1f{name}"))


def decision_id(task: str, choice_key: str, revision: int, generation: int = 0) -> str:
    """``generation``: how many earlier tasks of the same name were deleted
    with their decisions kept (0 for almost every task, whose ids are the
    seed's derivation): a new task of a reused name starts empty, and its
    decisions cannot take the kept decisions' ids."""
    if generation:
        return str(uuid.uuid5(NAMESPACE, f"decision\x1f{task}\x1f{generation}\x1f{choice_key}\x1f{revision}"))
    return str(uuid.uuid5(NAMESPACE, f"decision\x1f{task}\x1f{choice_key}\x1f{revision}"))


def detached_task_id(task: str, generation: int) -> str:
    """The task id that the decisions kept by ``delete_task`` carry instead of
    their deleted task's (of that ``generation``): it names no task."""
    return str(uuid.uuid5(NAMESPACE, f"detached\x1f{task}\x1f{generation}"))


def choice_node_id(project_id: str, choice_key: str) -> str:
    return str(uuid.uuid5(NAMESPACE, f"choice\x1f{project_id}\x1f{choice_key}"))


def is_uuid(value: Any) -> bool:
    """True for a uuid in its canonical text form (any case)."""
    try:
        return str(uuid.UUID(value)) == value.lower()
    except (ValueError, AttributeError, TypeError):
        return False


def request_node_id(project_id: str, agent_id: str | None, request_id: str) -> str:
    """The id of a request record: a request id belongs to its project and
    to the agent that wrote it (``None``: a writer with no agent id), so one
    agent's id can neither answer nor refuse another's write."""
    return str(uuid.uuid5(NAMESPACE, f"request-by\x1f{project_id}\x1f{agent_id or ''}\x1f{request_id}"))


#: The time the writes of this context happened, when it is not now: the
#: importer's route for a line's ``at`` (not public API; see ``happened_at``).
_HAPPENED_AT: ContextVar[datetime | None] = ContextVar("reviewer_happened_at", default=None)


def now() -> datetime:
    """When a write happens: the current time, or inside ``happened_at`` the
    time given there."""
    moment = _HAPPENED_AT.get()
    return moment if moment is not None else datetime.now(UTC)


def imported_at() -> datetime | None:
    """The real time of a write that ``happened_at`` an earlier time (so the
    activity log can keep both), or None for a write happening now."""
    return datetime.now(UTC) if _HAPPENED_AT.get() is not None else None


@contextmanager
def happened_at(moment: datetime | None) -> Iterator[None]:
    """Writes inside take ``moment`` (aware, or UTC when naive) as the time
    they happened: events, decisions, revisions and reviews keep it. None
    changes nothing."""
    if moment is None:
        yield
        return
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    token = _HAPPENED_AT.set(moment.astimezone(UTC))
    try:
        yield
    finally:
        _HAPPENED_AT.reset(token)


def micros(moment: datetime | str) -> int:
    """A time as whole microseconds since 1970 (UTC): a number, which every
    backend's range index answers (FalkorDB's does not answer a range of
    ISO strings correctly)."""
    when = datetime.fromisoformat(moment) if isinstance(moment, str) else moment
    return (when.astimezone(UTC) - _EPOCH) // timedelta(microseconds=1)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def iso(moment: datetime) -> str:
    """Stored form of a time: UTC ISO-8601 with microseconds, sortable as text."""
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


# -- argument checks: wrong types raise ValueError before anything is written --


def text(value: Any, field: str, *, allow_empty: bool = True) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{field} must be a string, not {type(value).__name__}")
    if "\x00" in value:
        raise ValueError(f"{field} must not contain NUL characters")
    if not allow_empty and not value.strip():
        raise ValueError(f"{field} must not be blank")
    return value


def optional_text(value: Any, field: str) -> str | None:
    return None if value is None else text(value, field)


def integer(value: Any, field: str, *, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{field} must be an integer, not {type(value).__name__}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{field} must be at least {minimum}")
    return value


def enum_value(enum: type[E], value: Any, field: str) -> E:
    try:
        return enum(value)
    except ValueError:
        allowed = ", ".join(member.value for member in enum)
        raise ValueError(f"{field} must be one of {allowed}, not {value!r}") from None


def clamp(limit: Any, default: int, maximum: int, field: str = "limit") -> int:
    value = default if limit is None else integer(limit, field)
    return max(1, min(maximum, value))


def check_request_id(request_id: Any) -> bool:
    """True when usable; False when it must be refused with invalid_request_id.
    A value that is not a string at all is a programming error."""
    if request_id is None:
        return True
    if not isinstance(request_id, str):
        raise ValueError(f"request_id must be a string, not {type(request_id).__name__}")
    return 1 <= len(request_id) <= REQUEST_ID_MAX and "\x00" not in request_id


def fingerprint(operation: str, arguments: dict[str, Any]) -> str:
    body = json.dumps({"op": operation, "args": arguments}, sort_keys=True, default=str)
    return hashlib.sha256(body.encode()).hexdigest()


class Replay:
    """The request-id part of a unit of work.

    A request record is the project's and the writing agent's
    (``request_node_id``). ``lookup`` reads the stored request in the unit;
    ``remember`` queues the result into the same commit as the write it
    belongs to.

    ``body``: for a write of an event body, the body's SHA-256, kept out of
    the fingerprint. The record keeps it only as an HMAC under the event's
    own key (``body_mac``), so a redaction or a deletion, which destroys
    that key, destroys it too: a retry of such a write can no longer tell a
    right guess of the body from a wrong one, and answers both alike.
    """

    def __init__(
        self,
        project_id: str,
        agent_id: str | None,
        request_id: str | None,
        operation: str,
        arguments: dict[str, Any],
        *,
        body: str | None = None,
    ) -> None:
        self.project_id = project_id
        self.agent_id = agent_id
        self.request_id = request_id
        self.fingerprint = fingerprint(operation, arguments)
        self.body = body
        #: the body's HMAC the stored request holds (set by ``found``)
        self.stored_mac: str | None = None

    #: a read's opening that finds the stored request (``request_fp``,
    #: ``request_result`` and ``request_mac``, null when there is none) with
    #: ``$request`` (``node_id``), for a unit that reads it with its first read
    FIRST = (
        "OPTIONAL MATCH (rq:Request {id: $request}) "
        "WITH rq.fingerprint AS request_fp, rq.result AS request_result, rq.body_mac AS request_mac "
    )

    @property
    def node_id(self) -> str | None:
        return None if self.request_id is None else request_node_id(self.project_id, self.agent_id, self.request_id)

    def lookup(self, tx: Tx) -> tuple[bool, str | None]:
        """(seen, stored result JSON). seen with no JSON means: reused."""
        if self.request_id is None:
            return False, None
        rows = tx.read(
            "MATCH (r:Request {id: $id}) "
            "RETURN r.fingerprint AS request_fp, r.result AS request_result, r.body_mac AS request_mac",
            {"id": self.node_id},
        )
        return self.found(rows[0] if rows else {})

    def found(self, row: dict[str, Any]) -> tuple[bool, str | None]:
        """(seen, stored result JSON) from a row read with :attr:`FIRST`."""
        if self.request_id is None or row.get("request_fp") is None:
            return False, None
        self.stored_mac = row.get("request_mac")
        if row["request_fp"] != self.fingerprint:
            return True, None
        return True, row["request_result"]

    def same_body(self, key: bytes | None) -> bool | None:
        """Whether this request's body is the stored request's, checked
        under the event's key: None when that cannot be told any more (the
        key is gone: the event was redacted or deleted)."""
        if self.body is None or self.stored_mac is None or key is None:
            return None
        return hmac.compare_digest(body_mac(key, self.body), self.stored_mac)

    def remember(self, tx: Tx, result: BaseModel, *, body_key: bytes | None = None) -> None:
        if self.request_id is None:
            return
        tx.write(*self.create_clause(result, body_key=body_key))

    def create_clause(self, result: BaseModel, *, body_key: bytes | None = None) -> tuple[str, dict[str, Any]]:
        """The ``CREATE`` of the request node holding ``result`` (and, with
        ``body_key``, the event's key, the body's HMAC); its parameters are
        named ``rq_*`` so it can join another statement."""
        return (
            "CREATE (:Request {project_id: $rq_p, agent_id: $rq_agent, id: $rq_id, request_id: $rq_rid, "
            "fingerprint: $rq_fp, body_mac: $rq_mac, result: $rq_result, at: $rq_at})",
            {
                "rq_p": self.project_id,
                "rq_agent": self.agent_id or "",
                "rq_id": self.node_id,
                "rq_rid": self.request_id,
                "rq_fp": self.fingerprint,
                "rq_mac": body_mac(body_key, self.body) if body_key is not None and self.body is not None else None,
                "rq_result": stored_result(result),
                "rq_at": iso(now()),
            },
        )


def body_mac(key: bytes, body: str) -> str:
    """The HMAC-SHA256 of an event body's hash under the event's key."""
    return hmac.new(key, f"body\x1f{body}".encode(), hashlib.sha256).hexdigest()


def stored_result(result: BaseModel) -> str:
    """The JSON a request record keeps: the result without any event body
    or its hash (an event's ``payload`` is stored empty, its
    ``payload_sha256`` null). A replay fills both in from the graph as it
    is then, so a redaction or a deletion reaches retries too."""
    data = result.model_dump(mode="json")
    event = data.get("event")
    if isinstance(event, dict) and "payload" in event:
        event["payload"] = ""
        event["payload_sha256"] = None
    return json.dumps(data, separators=(",", ":"))


def replayed(
    tx: Tx,
    replay: Replay,
    result_type: type[R],
    reused: Callable[[], R],
    row: dict[str, Any] | None = None,
) -> R | None:
    """The stored result of an earlier identical request, a refusal for a
    reused id, or None when the write should go ahead. ``row``: what a read
    opened with :attr:`Replay.FIRST` found (else the request is read here)."""
    seen, stored = replay.lookup(tx) if row is None else replay.found(row)
    if not seen:
        return None
    if stored is None:
        return reused()
    return result_type.model_validate_json(stored)


W = TypeVar("W")  # a row of a widening read


def widening(
    read: Callable[[int, int], list[W]],
    *,
    n: int,
    near: int,
    far: int,
    width: int,
    skip: int = 0,
    count: Callable[[int, int], int] | None = None,
    bounded: bool = True,
) -> list[W]:
    """Up to ``n`` rows nearest ``near`` from an index of whole numbers that
    gives no order (FalkorDB's range index): ranges from ``near`` towards
    ``far`` (both included; a ``far`` below ``near`` reads downwards), each
    wider than the last, until one yields ``n`` or reaches ``far``. No range
    passes ``far``, unless not ``bounded``: then the last runs on as far as
    its growth takes it (a ``far`` that is an estimate, past which rows are
    not expected but not refused). ``read(lo, hi)`` reads ``[lo, hi]``, nearest
    first, at most ``n``, after passing over its ``skip`` nearest (a later
    page). A range that yields ``n`` holds every row nearer than its last,
    so the answer is exact, and only the rows of the ranges read are
    sorted.

    The next range is as wide as the density found says the answer needs
    (``skip + n``), with half again as a margin: two to sixty-four times
    wider, sixty-four when a range held none (positions far apart). A fixed
    factor either reads many ranges (dense places thinned by settling) or
    sorts up to a thousand times the answer (a bulk load gives consecutive
    positions). A range that yielded nothing after passing over ``skip``
    rows is counted with ``count(lo, hi)`` (needed when ``skip`` is given)
    to learn how many it held."""
    up = far >= near
    need = skip + n
    while True:
        lo, hi = (near, near + width - 1) if up else (near - width + 1, near)
        if bounded:
            lo, hi = (lo, min(far, hi)) if up else (max(far, lo), hi)
        rows = read(lo, hi)
        if len(rows) >= n or (hi >= far if up else lo <= far):
            return rows
        if rows or not skip:
            held = skip + len(rows)
        else:  # every row of the range was passed over: how many were there?
            held = count(lo, hi) if count else 0
        width *= 64 if not held else max(2, min(64, -(-need * 3 // (held * 2))))
