"""Agent tokens: made, checked and revoked here; the only place that sees a
token in the clear is the moment it is made."""

from __future__ import annotations

import hashlib
import re
import secrets
import threading
import time

from django.db import IntegrityError, transaction
from django.utils import timezone

from ..models import ApiToken

PREFIX = "rvw_"
AGENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@-]{0,99}$")


class TokenError(ValueError):
    """A token that cannot be made as asked (the message says why)."""


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def create_token(
    *, project_id: str, name: str, agent_id: str, role: str = ApiToken.AGENT, created_by: object | None = None
) -> tuple[ApiToken, str]:
    """A new token for one project: (its record, the token, shown once)."""
    name, agent_id, project_id = name.strip(), agent_id.strip(), project_id.strip()
    if not name or len(name) > 100:
        raise TokenError("a token needs a name of 1 to 100 characters")
    if not AGENT_ID.match(agent_id):
        raise TokenError("an agent id is 1 to 100 letters, digits or . _ : @ -, starting with a letter or digit")
    if not project_id or len(project_id) > 200:
        raise TokenError("a token needs a project")
    if role not in (ApiToken.AGENT, ApiToken.AUTOMATION):
        raise TokenError(f"a token's role is {ApiToken.AGENT} or {ApiToken.AUTOMATION}")
    token = PREFIX + secrets.token_urlsafe(32)
    try:
        with transaction.atomic():
            record = ApiToken.objects.create(
                name=name,
                project_id=project_id,
                agent_id=agent_id,
                role=role,
                prefix=token[:10],
                digest=digest(token),
                created_by=created_by,
            )
    except IntegrityError:
        raise TokenError(f"the agent id {agent_id!r} already has a token in this project") from None
    return record, token


#: How long a process trusts a token it has looked up, in seconds: a revocation
#: in this process (the tokens page) counts at once; one made by another
#: process (another worker, the command) within this time.
TRUST_SECONDS = 2.0
_seen: dict[str, tuple[float, ApiToken | None]] = {}
_seen_lock = threading.Lock()


def find_token(token: str) -> ApiToken | None:
    """The token's record (revoked ones too: the caller answers 401 for them)."""
    if not token.startswith(PREFIX) or len(token) > 200:
        return None
    key = digest(token)
    now = time.monotonic()
    with _seen_lock:
        found = _seen.get(key)
    if found is not None and now - found[0] < TRUST_SECONDS:
        return found[1]
    record = ApiToken.objects.filter(digest=key).first()
    with _seen_lock:
        if len(_seen) > 10_000:
            _seen.clear()
        _seen[key] = (now, record)
    return record


def forget(record: ApiToken) -> None:
    with _seen_lock:
        _seen.pop(record.digest, None)


def touch(record: ApiToken) -> None:
    """Note the use, at most once a minute per token (a write per request
    would serialise every agent on the auth database)."""
    now = timezone.now()
    if record.last_used_at is None or (now - record.last_used_at).total_seconds() >= 60:
        ApiToken.objects.filter(pk=record.pk).update(last_used_at=now)
        record.last_used_at = now


def revoke(record: ApiToken) -> None:
    if record.revoked_at is None:
        record.revoked_at = timezone.now()
        record.save(update_fields=["revoked_at"])
    forget(record)
