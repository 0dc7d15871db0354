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

Several hosts share one key store on a Redis-compatible server instead
(:class:`RedisKeyStore`, ``keys=redis://…``): slots numbered by one counter,
keys in one hash, a destroyed key deleted from it and the server's
append-only file rewritten by the next purge round.

A key store belongs to its graph (:func:`bind_keys`): on first use both
record one id (the graph as a store-wide property, the file beside it as
``<file>.id``, the server as a key), and opening a graph with a key store
that is not its own is refused, so a redaction can never zero a slot of
another key store's numbering.

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
import binascii
import fcntl
import os
import threading
import time
import uuid
from collections.abc import Iterable
from itertools import pairwise
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from .base import GraphStoreError, redact_url
from .private import private_dir

__all__ = [
    "SLOT",
    "UNREADABLE",
    "KeyStore",
    "KeyStoreMismatchError",
    "RedisKeyStore",
    "bind_keys",
    "open_keystore",
    "open_sealed",
    "parse_ranges",
    "seal",
    "slot_ranges",
    "unseal",
]

SLOT = 32
NONCE = 12
_ZERO = bytes(SLOT)
#: The body shown when an event's key is gone but the event is not marked
#: redacted (a key store restored from an older backup, or a wrong ``keys=``).
UNREADABLE = "[UNREADABLE: key missing]"
SYNC_CHOICES = ("always", "everysec", "no")
#: the store-wide property of a graph that names its key store
BINDING = "event_key_store"


class KeyStoreMismatchError(GraphStoreError):
    """The key store opened with a graph is not the graph's own."""


class KeyStore:
    """One key file, shared by every process of a deployment. Thread-safe."""

    #: ``keys`` reads slots this close together in one read (the slots
    #: between them are read and dropped), at most this many wanted at once
    #: (a read of at most ``GAP * SPAN`` slots, 512 kB)
    GAP = 16
    SPAN = 1024

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
        """One ``pread`` per run of nearby slots, not one per slot: the
        events of a task hold runs of consecutive slots (a load takes its
        keys in one call), and a page of 1,000 of them is read at once."""
        asked = set(slots)
        wanted = sorted(s for s in asked if isinstance(s, int) and s >= 0)
        found: dict[int, bytes | None] = dict.fromkeys(asked.difference(wanted))  # no such slot: no key
        cuts = [0, *(k for k in range(1, len(wanted)) if wanted[k] - wanted[k - 1] > self.GAP), len(wanted)]
        for a, b in pairwise(cuts):
            for c in range(a, b, self.SPAN):
                run = wanted[c : min(b, c + self.SPAN)]
                first = run[0]
                raw = os.pread(self._plain, (run[-1] - first + 1) * SLOT, first * SLOT)
                for slot in run:
                    key = raw[(slot - first) * SLOT : (slot - first + 1) * SLOT]
                    found[slot] = key if len(key) == SLOT and key != _ZERO else None
        return found

    def holds(self, slot: int) -> bool:
        """Whether ``slot`` was ever given out (a destroyed key still was)."""
        return 0 <= slot < self.count()

    def count(self) -> int:
        """How many slots were given out."""
        return os.fstat(self._plain).st_size // SLOT

    # -- identity -------------------------------------------------------------

    @property
    def where(self) -> str:
        return str(self.path)

    @property
    def _id_path(self) -> Path:
        return self.path.with_name(self.path.name + ".id")

    def identity(self) -> str | None:
        """The id this key store shares with its graph, or None before its
        first binding."""
        try:
            return self._id_path.read_text().strip() or None
        except FileNotFoundError:
            return None

    def claim_identity(self, value: str) -> str:
        """Record ``value`` as the id unless one is recorded; the id now."""
        try:
            fd = os.open(self._id_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        except FileExistsError:
            found = self.identity()
            if found is None:  # a torn write: the creator died before writing
                self._id_path.write_text(value + "\n")
                return value
            return found
        try:
            os.write(fd, (value + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        return value

    def purge_files(self) -> dict[str, Any]:
        """A destroyed key is overwritten in place and synced: nothing to do."""
        return {"keys": "file", "where": self.where}

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
    """The body, or None when the key is gone or does not fit.
    (``a2b_base64`` takes the text as it is: ``b64decode`` would copy it
    to bytes first; a page of bodies is opened one by one.)"""
    if key is None:
        return None
    raw = binascii.a2b_base64(sealed)
    try:
        return AESGCM(key).decrypt(raw[:NONCE], raw[NONCE:], event_id.encode()).decode("utf-8")
    except InvalidTag:
        return None


class RedisKeyStore:
    """Keys on a Redis-compatible server, shared by every host of a
    deployment. Thread-safe (the client's connection pool).

    ``<prefix>next`` counts the slots given out (``INCRBY``, so two hosts
    never number two keys alike), ``<prefix>keys`` is a hash of slot -> key,
    ``<prefix>id`` the binding id. A destroyed key is deleted from the hash;
    the server must persist to an append-only file (checked on opening), and
    :meth:`purge_files` rewrites that file so the deleted bytes leave it.
    With ``sync="always"`` a write waits until the server has synced it to
    its append-only file (``WAITAOF``) before the graph names the key."""

    BATCH = 10_000

    def __init__(self, url: str, *, sync: str = "always", prefix: str = "reviewer:eventkeys:") -> None:
        import redis

        if sync not in SYNC_CHOICES:
            raise ValueError(f"sync must be one of {', '.join(SYNC_CHOICES)}")
        self.url = url
        self.sync = sync
        self._next = prefix + "next"
        self._hash = prefix + "keys"
        self._id = prefix + "id"
        try:
            self._redis = redis.Redis.from_url(url, socket_timeout=30, socket_connect_timeout=5)
            persistence = self._redis.info("persistence")
        except (redis.RedisError, ValueError) as exc:
            raise GraphStoreError(f"the event-key store {self.where} does not answer: {exc}") from exc
        if not persistence.get("aof_enabled"):
            self._redis.close()
            raise GraphStoreError(
                f"the event-key store {self.where} keeps no append-only file: start it with "
                "--appendonly yes (a destroyed key must leave its files, and a new one must be on disk)"
            )

    @property
    def where(self) -> str:
        return redact_url(self.url)

    def _call(self, fn: Any) -> Any:
        import redis

        try:
            return fn()
        except redis.RedisError as exc:
            raise GraphStoreError(f"the event-key store {self.where} failed: {exc}") from exc

    SYNC_WAIT_MS = 5000

    def _waitaof(self, pipe: Any) -> None:
        pipe.execute_command("WAITAOF", 1, 0, self.SYNC_WAIT_MS)

    def _check_synced(self, replies: list[Any]) -> None:
        local = replies[-1][0] if replies and isinstance(replies[-1], (list, tuple)) else 0
        if int(local) < 1:
            raise GraphStoreError(
                f"the event-key store {self.where} did not sync its append-only file within "
                f"{self.SYNC_WAIT_MS / 1000:g} s (run it with appendfsync always or everysec)"
            )

    def new_keys(self, n: int) -> tuple[int, list[bytes]]:
        keys = [AESGCM.generate_key(bit_length=256) for _ in range(n)]
        last = int(self._call(lambda: self._redis.incrby(self._next, n)))
        first = last - n
        for start in range(0, n, self.BATCH):
            pipe = self._redis.pipeline(transaction=False)
            pipe.hset(self._hash, mapping={first + i: keys[i] for i in range(start, min(n, start + self.BATCH))})
            synced = self.sync == "always" and start + self.BATCH >= n
            if synced:  # on disk before the graph names it
                self._waitaof(pipe)
            replies = self._call(pipe.execute)
            if synced:
                self._check_synced(replies)
        return first, keys

    def key(self, slot: int) -> bytes | None:
        return self.keys([slot])[slot]

    def keys(self, slots: Iterable[int]) -> dict[int, bytes | None]:
        wanted = list(dict.fromkeys(slots))
        if not wanted:
            return {}
        found = self._call(lambda: self._redis.hmget(self._hash, wanted))
        return {s: (k if k and len(k) == SLOT else None) for s, k in zip(wanted, found)}

    def count(self) -> int:
        return int(self._call(lambda: self._redis.get(self._next)) or 0)

    def holds(self, slot: int) -> bool:
        return 0 <= slot < self.count()

    def destroy(self, slots: Iterable[int] | Iterable[tuple[int, int]]) -> int:
        ranges = [item if isinstance(item, tuple) else (item, item) for item in slots]  # type: ignore[misc]
        if not ranges:
            return 0
        top = self.count() - 1
        count = 0
        batch: list[int] = []
        for first, last in _merge(ranges):  # type: ignore[arg-type]
            for slot in range(max(first, 0), min(last, top) + 1):
                batch.append(slot)
                if len(batch) >= self.BATCH:
                    count += self._delete(batch)
                    batch = []
        count += self._delete(batch, last=True)
        return count

    def _delete(self, slots: list[int], *, last: bool = False) -> int:
        if not slots and not last:
            return 0
        pipe = self._redis.pipeline(transaction=False)
        if slots:
            pipe.hdel(self._hash, *slots)
        if last:  # a destruction is on disk before it is reported
            self._waitaof(pipe)
        replies = self._call(pipe.execute)
        if last:
            self._check_synced(replies)
        return len(slots)

    def identity(self) -> str | None:
        found = self._call(lambda: self._redis.get(self._id))
        return found.decode() if found else None

    def claim_identity(self, value: str) -> str:
        self._call(lambda: self._redis.set(self._id, value, nx=True))
        return self.identity() or value

    def purge_files(self, *, timeout: float = 3600.0) -> dict[str, Any]:
        """Rewrite the server's append-only file, so the keys deleted before
        this call leave its files."""
        import redis

        from .purge import rewrite_append_only_file

        try:
            size = rewrite_append_only_file(self._redis, time.monotonic() + timeout)
        except redis.RedisError as exc:
            raise GraphStoreError(f"the event-key store {self.where}: the rewrite failed: {exc}") from exc
        return {"keys": "redis", "where": self.where, "aof_size": size}

    def flush(self) -> None:
        pipe = self._redis.pipeline(transaction=False)
        self._waitaof(pipe)
        self._check_synced(self._call(pipe.execute))

    def close(self) -> None:
        self._redis.close()

    def __repr__(self) -> str:
        return f"RedisKeyStore({self.where!r})"


REDIS_SCHEMES = ("redis", "rediss", "unix")
_KEYSTORES: dict[str, KeyStore | RedisKeyStore] = {}
_OPEN_LOCK = threading.Lock()


def open_keystore(spec: str | Path, *, sync: str) -> KeyStore | RedisKeyStore:
    """The one key store of a path, or of a ``redis://``, ``rediss://`` or
    ``unix://`` url, in this process (stores opened on the same url share it)."""
    text = str(spec)
    if urlsplit(text).scheme.lower() in REDIS_SCHEMES:
        with _OPEN_LOCK:
            found = _KEYSTORES.get(text)
            if found is None:
                found = _KEYSTORES[text] = RedisKeyStore(text, sync=sync)
            return found
    key = str(Path(text).resolve())
    with _OPEN_LOCK:
        found = _KEYSTORES.get(key)
        if found is not None:  # the same file still (not deleted and made anew)?
            try:
                same = os.stat(key).st_ino == os.fstat(found._plain).st_ino  # type: ignore[union-attr]
            except OSError:
                same = False
            if not same:
                found = None
        if found is None:
            found = _KEYSTORES[key] = KeyStore(key, sync=sync)
        return found


def keys_of(store: object) -> KeyStore | RedisKeyStore:
    """The key store of a graph store: the one ``open_store`` attached, or,
    for a store built directly, the default file for its url."""
    found = getattr(store, "keystore", None)
    if found is None:
        import hashlib

        from .embedded import default_data_dir

        digest = hashlib.sha256(redact_url(getattr(store, "url", "")).encode()).hexdigest()[:16]
        found = open_keystore(
            default_data_dir() / "keys" / f"{getattr(store, 'backend', 'store')}-{digest}.keys", sync="always"
        )
        store.keystore = found  # type: ignore[attr-defined]
    return found  # type: ignore[return-value]


#: events read, per project, to tell whether a key store opens a graph's bodies
SAMPLES = 3


def bind_keys(store: Any, keys: KeyStore | RedisKeyStore) -> str:
    """Bind ``keys`` to the graph of ``store`` (on first use both record one
    id), or raise :class:`KeyStoreMismatchError` when it is not the graph's
    own. Returns the id.

    Once bound, two small reads decide. Before that (a new graph, or one
    written by an older version), the graph's bodies decide: a key store
    is taken only when no encrypted body of the graph fails to open with it.
    Two graphs may share a key store (their slots never collide); a graph
    with its keys in two places is what this refuses."""
    graph_id = store.store_property(BINDING)
    key_id = keys.identity()
    if graph_id is not None and key_id == graph_id:
        return graph_id
    if graph_id is not None and key_id is not None:
        raise _mismatch(store, keys, graph_id, f"belongs to another graph (key store {key_id})")
    opened, failed = _sample(store, keys)
    if failed:
        project, event = failed
        what = "a new, empty key store" if keys.count() == 0 else "a key store that does not hold its keys"
        raise _mismatch(
            store, keys, graph_id, f"is {what}: event {event} of project {project!r} cannot be opened with it"
        )
    if graph_id is not None and not opened:
        raise _mismatch(store, keys, graph_id, "is not the one it was bound to")
    chosen = keys.claim_identity(graph_id or key_id or uuid.uuid4().hex)
    bound = store.claim_store_property(BINDING, chosen)
    if bound != chosen:  # another process bound the graph to another key store meanwhile
        raise _mismatch(store, keys, bound, f"belongs to key store {chosen}")
    return bound


def _sample(store: Any, keys: KeyStore | RedisKeyStore) -> tuple[int, tuple[str, str] | None]:
    """How many sampled bodies opened, and the first that could not."""
    opened = 0
    for project in store.list_projects():
        rows = store.read(
            project,
            "MATCH (e:Event) WHERE e.project_id = $p AND e.payload_ct IS NOT NULL "
            "RETURN e.id AS id, e.key_slot AS slot, e.payload_ct AS ct LIMIT $n",
            {"p": project, "n": SAMPLES},
        )
        found = keys.keys([r["slot"] for r in rows])
        for row in rows:
            key = found[row["slot"]]
            if key is None:
                if not keys.holds(row["slot"]):
                    return opened, (project, str(row["id"]))
                continue  # destroyed: says nothing either way
            if unseal(key, str(row["id"]), row["ct"]) is None:
                return opened, (project, str(row["id"]))
            opened += 1
    return opened, None


def _mismatch(store: Any, keys: Any, graph_id: str | None, why: str) -> KeyStoreMismatchError:
    owner = f"keeps its event keys in key store {graph_id}" if graph_id else "holds encrypted event bodies"
    return KeyStoreMismatchError(
        f"refusing to open {redact_url(getattr(store, 'url', ''))} with the event-key store {keys.where}: "
        f"the graph {owner}, and {keys.where} {why}. Open it with its own key store (a server url takes "
        "?keys=/absolute/path/events.keys or ?keys=redis://host:port; a key file's id is in <file>.id "
        "beside it), or restore that key store from the backup taken with the graph. Writing with another "
        "key store would leave redactions destroying the wrong keys."
    )


def open_bodies(store: object, rows: list[dict]) -> list[dict]:
    """Event rows (with ``payload``, ``payload_ct``, ``key_slot``) with the
    plain body in ``payload`` and the sealing fields gone. A row written
    before encryption keeps its stored ``payload``; a redacted one its marker.
    The keys are read in one call (one round trip for a server's key store)."""
    sealed_rows = []
    for row in rows:
        sealed = row.pop("payload_ct", None)
        slot = row.pop("key_slot", None)
        if sealed is not None and row.get("payload") is None:
            sealed_rows.append((row, slot, sealed))
    if sealed_rows:
        bodies = open_sealed(store, [(str(row["id"]), slot, sealed) for row, slot, sealed in sealed_rows])
        for (row, _, _), body in zip(sealed_rows, bodies):
            row["payload"] = UNREADABLE if body is None else body
    return rows


def open_sealed(store: object, sealed: list[tuple[str, Any, str]]) -> list[str | None]:
    """The bodies of (event id, key slot, sealed body) triples, in order:
    None where the key is gone or does not fit. The keys are read in one
    call."""
    found = keys_of(store).keys(slot for _, slot, _ in sealed)
    return [unseal(found.get(slot), event_id, text) for event_id, slot, text in sealed]
