"""Event bodies encrypted at rest, with a key per event kept outside the graph.

A redaction or a deletion destroys the key (crypto-shredding): whatever copy
of the ciphertext a store keeps (freed records, transaction logs, an old
append-only file, a backup), it stops being text.

The key store is one file of fixed-size slots (32 bytes: an AES-256 key).
New keys are appended (``O_APPEND``, under an exclusive ``flock`` so two
processes never interleave) and numbered by their position; a destroyed key
is overwritten in place with zeros and the file is synced, not unlinked. The
event node keeps the slot number and ``base64(nonce + ciphertext)`` (AES-GCM,
bound to the event id); the plain body never reaches the graph.

Durability follows the graph's: with ``sync="always"`` a key is on disk
before the write that references it is sent; with ``"everysec"`` keys are
synced by the first write a second or more after the last sync, and at exit
(a power failure may lose the keys written since, as the store's own
``everysec`` may lose its last second of writes); ``"no"``
leaves it to the operating system. A process crash loses nothing: the bytes
are in the kernel once ``write`` returns.
"""

from __future__ import annotations

import atexit
import base64
import fcntl
import os
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from .private import private_dir

__all__ = ["SLOT", "UNREADABLE", "KeyStore", "parse_ranges", "seal", "slot_ranges", "unseal"]

SLOT = 32
NONCE = 12
_ZERO = bytes(SLOT)
#: The body shown when an event's key is gone but the event is not marked
#: redacted (a key store restored from an older backup, or a wrong ``keys=``).
UNREADABLE = "[UNREADABLE: key missing]"
SYNC_CHOICES = ("always", "everysec", "no")


class KeyStore:
    """One key file, shared by every process of a deployment. Thread-safe."""

    def __init__(self, path: str | os.PathLike[str], *, sync: str = "always") -> None:
        if sync not in SYNC_CHOICES:
            raise ValueError(f"sync must be one of {', '.join(SYNC_CHOICES)}")
        self.path = Path(path)
        self.sync = sync
        private_dir(self.path.parent)
        # append: new keys; plain: reads and in-place overwrites (on Linux a
        # pwrite on an O_APPEND descriptor appends whatever the offset)
        self._append = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        os.fchmod(self._append, 0o600)
        self._plain = os.open(self.path, os.O_RDWR | os.O_CLOEXEC)
        self._lock = threading.Lock()
        self._synced_at = 0.0
        self._dirty = False
        atexit.register(self._flush_at_exit)

    # -- keys -------------------------------------------------------------

    def new_keys(self, n: int) -> tuple[int, list[bytes]]:
        """``n`` fresh keys written with one ``write``: (first slot, keys)."""
        keys = [AESGCM.generate_key(bit_length=256) for _ in range(n)]
        data = b"".join(keys)
        with self._lock:
            fcntl.flock(self._append, fcntl.LOCK_EX)
            try:
                size = os.fstat(self._append).st_size
                if size % SLOT:  # a torn append from a crash: start on a boundary
                    os.write(self._append, bytes(SLOT - size % SLOT))
                    size += SLOT - size % SLOT
                view = memoryview(data)
                while view:
                    written = os.write(self._append, view)
                    view = view[written:]
            finally:
                fcntl.flock(self._append, fcntl.LOCK_UN)
            self._after_write()
        return size // SLOT, keys

    def key(self, slot: int) -> bytes | None:
        """The key in ``slot``, or None when it was destroyed or never written."""
        raw = os.pread(self._plain, SLOT, slot * SLOT)
        return raw if len(raw) == SLOT and raw != _ZERO else None

    def keys(self, slots: Iterable[int]) -> dict[int, bytes | None]:
        return {s: self.key(s) for s in slots}

    def live_keys(self) -> int:
        """How many slots hold a key (neither destroyed nor never written):
        for checks and tests, it reads the whole file."""
        size = os.fstat(self._plain).st_size // SLOT * SLOT
        live, offset = 0, 0
        while offset < size:
            chunk = os.pread(self._plain, min(size - offset, SLOT << 15), offset)
            if not chunk:
                break
            live += sum(1 for i in range(0, len(chunk), SLOT) if chunk[i : i + SLOT] != _ZERO)
            offset += len(chunk)
        return live

    def destroy(self, slots: Iterable[int] | Iterable[tuple[int, int]]) -> int:
        """Overwrite the keys (slot numbers or inclusive ``(first, last)``
        ranges) with zeros and sync the file. Idempotent. Returns the
        number of slots overwritten."""
        ranges: list[tuple[int, int]] = []
        for item in slots:
            ranges.append(item if isinstance(item, tuple) else (item, item))  # type: ignore[arg-type]
        if not ranges:
            return 0
        size = os.fstat(self._plain).st_size
        count = 0
        with self._lock:
            for first, last in _merge(ranges):
                last = min(last, size // SLOT - 1)
                offset = first * SLOT
                remaining = (last - first + 1) * SLOT
                chunk = bytes(min(remaining, 1 << 20)) if remaining > 0 else b""
                while remaining > 0:
                    part = chunk[: min(remaining, len(chunk))]
                    os.pwrite(self._plain, part, offset)
                    offset += len(part)
                    remaining -= len(part)
                count += max(0, last - first + 1)
            os.fsync(self._plain)
        return count

    # -- durability ---------------------------------------------------------

    def _after_write(self) -> None:
        if self.sync == "always":
            os.fdatasync(self._append)
        elif self.sync == "everysec":
            moment = time.monotonic()
            if moment - self._synced_at >= 1.0:
                os.fdatasync(self._append)
                self._synced_at = moment
                self._dirty = False
            else:
                self._dirty = True

    def flush(self) -> None:
        with self._lock:
            os.fsync(self._append)
            self._dirty = False

    def _flush_at_exit(self) -> None:
        if self._dirty and self._append >= 0:
            try:
                os.fsync(self._append)
            except OSError:
                pass

    def close(self) -> None:
        for fd in (self._append, self._plain):
            try:
                os.fsync(fd)
            except OSError:
                pass
            try:
                os.close(fd)
            except OSError:
                pass
        self._append = self._plain = -1

    def __repr__(self) -> str:
        return f"KeyStore({str(self.path)!r})"


def _merge(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for first, last in sorted(ranges):
        if merged and first <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], last))
        else:
            merged.append((first, last))
    return merged


def slot_ranges(slots: Iterable[int]) -> str:
    """Slot numbers as compact text: ``"3-7,12"`` (load_events writes runs)."""
    parts = []
    for first, last in _merge([(s, s) for s in slots]):
        parts.append(str(first) if first == last else f"{first}-{last}")
    return ",".join(parts)


def parse_ranges(text: str | None) -> list[tuple[int, int]]:
    out = []
    for part in (text or "").split(","):
        if not part:
            continue
        first, _, last = part.partition("-")
        out.append((int(first), int(last or first)))
    return out


def seal(key: bytes, event_id: str, body: str) -> str:
    """``base64(nonce + ciphertext)`` of ``body``, bound to ``event_id``."""
    nonce = os.urandom(NONCE)
    return base64.b64encode(nonce + AESGCM(key).encrypt(nonce, body.encode("utf-8"), event_id.encode())).decode()


def unseal(key: bytes | None, event_id: str, sealed: str) -> str | None:
    """The body, or None when the key is gone or does not fit."""
    if key is None:
        return None
    raw = base64.b64decode(sealed)
    try:
        return AESGCM(key).decrypt(raw[:NONCE], raw[NONCE:], event_id.encode()).decode("utf-8")
    except InvalidTag:
        return None


_KEYSTORES: dict[str, KeyStore] = {}


def open_keystore(path: str | Path, *, sync: str) -> KeyStore:
    """The one key store of a path in this process (stores opened on the
    same url share it)."""
    key = str(Path(path).resolve())
    found = _KEYSTORES.get(key)
    if found is not None:  # the same file still (not deleted and made anew)?
        try:
            same = os.stat(key).st_ino == os.fstat(found._plain).st_ino  # type: ignore[attr-defined]
        except OSError:
            same = False
        if not same:
            found = None
    if found is None:
        found = _KEYSTORES[key] = KeyStore(key, sync=sync)
    return found


def keys_of(store: object) -> KeyStore:
    """The key store of a graph store: the one ``open_store`` attached, or,
    for a store built directly, the default file for its url."""
    found = getattr(store, "keystore", None)
    if found is None:
        import hashlib

        from .base import redact_url
        from .embedded import default_data_dir

        digest = hashlib.sha256(redact_url(getattr(store, "url", "")).encode()).hexdigest()[:16]
        found = open_keystore(
            default_data_dir() / "keys" / f"{getattr(store, 'backend', 'store')}-{digest}.keys", sync="always"
        )
        store.keystore = found  # type: ignore[attr-defined]
    return found  # type: ignore[return-value]


def open_bodies(store: object, rows: list[dict]) -> list[dict]:
    """Event rows (with ``payload``, ``payload_ct``, ``key_slot``) with the
    plain body in ``payload`` and the sealing fields gone. A row written
    before encryption keeps its stored ``payload``; a redacted one its marker."""
    keys = None
    for row in rows:
        sealed = row.pop("payload_ct", None)
        slot = row.pop("key_slot", None)
        if sealed is None or row.get("payload") is not None:
            continue
        keys = keys or keys_of(store)
        body = unseal(keys.key(slot), str(row["id"]), sealed)
        row["payload"] = UNREADABLE if body is None else body
    return rows
