"""Django's file cache with counting that every process of a host agrees on.

``manage.py serve`` runs several worker processes; the API's per-token rate
limit (``reviewer/api/limits.py``) counts in Django's cache, so the count must
be one for all of them. Django's ``FileBasedCache`` is shared through its
directory, but its ``add`` and ``incr`` read, then write: two processes can
both read 41 and both write 42. Here both run under an exclusive ``flock`` on
one lock file in the directory, so no increment is lost, and ``count`` does
the two in one go. An increment rewrites the number in place (keeping the
entry's expiry) rather than through a new file: counters are read under the
lock. The directory and its files are the owner's alone (0700 / 0600).
"""

from __future__ import annotations

import fcntl
import os
import pickle
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.filebased import FileBasedCache

LOCK_NAME = ".counting.lock"


class SharedFileCache(FileBasedCache):
    @contextmanager
    def _counting(self) -> Iterator[None]:
        try:
            fd = os.open(os.path.join(self._dir, LOCK_NAME), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except FileNotFoundError:  # the directory was removed
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
            return self._incr(key, delta, version)

    def count(self, key: str, timeout: Any = DEFAULT_TIMEOUT, version: int | None = None) -> int:
        """Add one to ``key`` (created at 0 for ``timeout`` seconds when
        missing or expired) and return the new count, in one locked step."""
        with self._counting():
            try:
                return int(self._incr(key, 1, version))
            except ValueError:
                self.set(key, 1, timeout, version)
                return 1

    def _incr(self, key: str, delta: int, version: int | None) -> Any:
        fname = self._key_to_file(key, version)
        try:
            f = open(fname, "r+b")  # noqa: SIM115  (closed below, or by _is_expired)
        except FileNotFoundError:
            raise ValueError(f"Key '{key}' not found") from None
        with f:
            if self._is_expired(f):
                raise ValueError(f"Key '{key}' not found")
            start = f.tell()  # after the expiry, which stays
            value = pickle.loads(zlib.decompress(f.read())) + delta
            f.seek(start)
            f.write(zlib.compress(pickle.dumps(value, self.pickle_protocol)))
            f.truncate()
        return value
