"""Settings read from the environment, each refused with a clear message
when it cannot be read. Shared by ``reviewer.settings`` and
``reviewer.gunicorn_conf`` (which gunicorn's master loads before Django's
settings can: those refuse to start without a secret key)."""

from __future__ import annotations

import os

from django.core.exceptions import ImproperlyConfigured


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ImproperlyConfigured(f"{name} must be 1 or 0 (true/false), not {raw!r}")


def env_int(name: str, default: int, *, minimum: int = 1) -> int:
    """A whole number of at least ``minimum`` (``default`` when unset)."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        value = minimum - 1
    if value < minimum:
        raise ImproperlyConfigured(f"{name} must be a whole number of at least {minimum}, not {raw!r}")
    return value


def env_positive_int(name: str, default: int) -> int:
    return env_int(name, default, minimum=1)


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]
