"""Django's file cache with counting that every process of a host agrees on.

``manage.py serve`` runs several worker processes; the API's per-token rate
limit (``reviewer/api/limits.py``) counts in Django's cache, so the count must
be one for all of them. Django's ``FileBasedCache`` is shared through its
directory, but its ``add`` and ``incr`` read, then write: two processes can
both read 41 and both write 42. Here both run under an exclusive ``flock`` on
one lock file in the directory, so no increment is lost. The directory and
its files are the owner's alone (0700 / 0600).
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.filebased import FileBasedCache

LOCK_NAME = ".counting.lock"


class SharedFileCache(FileBasedCache):
    @contextmanager
    def _counting(self) -> Iterator[None]:
        self._createdir()
        fd = os.open(os.path.join(self._dir, LOCK_NAME), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # drops the lock

    def add(self, key: str, value: Any, timeout: Any = DEFAULT_TIMEOUT, version: int | None = None) -> bool:
        with self._counting():
            return super().add(key, value, timeout, version)

    def incr(self, key: str, delta: int = 1, version: int | None = None) -> Any:
        with self._counting():
            return super().incr(key, delta, version)
