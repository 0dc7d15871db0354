"""The other events of a project that hold the text a redaction removes.

A redaction blanks one event; a later tool result that quoted it keeps the
words. The redaction preview lists the events whose body contains the
redacted text whole, or a run of ``RUN`` characters or more of it, so the
steward can redact them in the same action.

Bodies are encrypted at rest, so no index can hold their words: the search
reads and unseals them here, a page of ``PAGE`` at a time (a range of numbers of each task, by the index of its events), the redacted event's own task first
(the events after it, then before it), then the other tasks, newest first.
It stops after ``SCAN_EVENTS`` events or ``SCAN_CHARS`` characters of text,
and says so (``capped``): what it costs is bounded whatever the project's
size.

What a page costs, and what keeps it small: the next page is read (by a
worker thread, while the store works and the bytes travel) as this one is
unsealed and searched; a body too short to hold a copy (fewer characters
than the text, or than ``RUN``) is not unsealed, its length known from the
sealed text's; a page reads only what the search needs (id, number,
key slot, body), and the few copies found get their kind afterwards; the
keys of a page come in a read or two (``KeyStore.keys``). A page's span of
a task of more than ``ALONE`` events is read by a query of its own:
FalkorDB filters a task's events by number several times faster against
parameters than against an UNWIND's rows (3 against 15 ms for 1,000 of
10,000).

Finding a run of 40 without comparing every window. Every run of 39 or
more characters of the text covers one of the text's own 20-character
chunks (``text[20j:20j+20]``): a text of up to ``FIND_CHUNKS`` of them
looks for each in the page's bodies joined (``str.find``, in C), and
extends each place found along its diagonal to the longest common run.
A longer text turns it around: every run of 39 or more characters of a
body covers one of the body page's fixed 20-character chunks (the page's
bodies joined, cut every 20 characters). So the chunks that are
also among the redacted text's 20-character windows (one set intersection,
in C) name the only places a run can be; each is then checked exactly
against the text's 40-character windows. Nothing is computed ahead or kept:
the windows live for one request.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from ._workbench import _View
from .stores.base import GraphStore
from .stores.keystore import NONCE, UNREADABLE, open_sealed

__all__ = ["CopySearch", "EventCopy", "find_copies"]

#: a run of the redacted text this long or longer in another body is a copy
RUN = 40
#: copies listed (and redacted at most in one action); more are counted
SHOWN = 50
#: the scan stops after this many events or characters of their text
SCAN_EVENTS = 10_000
SCAN_CHARS = 4_000_000
#: steps of checking places (``_Matcher.find``) before the scan stops: a
#: text and bodies built to share many short pieces and no run cost no more
WORK = 300_000
#: events read and unsealed per round trip
PAGE = 1_000
#: other tasks looked at, newest first
TASKS = 2_000
#: characters of context each side of a copy's match on the page
CONTEXT = 80
#: a span of a task of more events than this is read by a query of its own
ALONE = 200
#: a text of up to this many whole 20-character chunks is looked for chunk
#: by chunk; a longer one through the page's chunks (see the module text)
FIND_CHUNKS = 16

_CHUNK = RUN // 2  # 20: a run of 2 * 20 - 1 covers a whole chunk
_SEP = "\x00"
_CHUNKS = re.compile("(?s).{" + str(_CHUNK) + "}")


class EventCopy(_View):
    """An event whose body holds the redacted text (``whole``) or a run of
    it; ``before`` + ``match`` + ``after`` is a window of its body around
    the first place found."""

    event_id: str
    task_name: str
    seq: int
    kind: str
    whole: bool
    before: str
    match: str
    after: str


class CopySearch(_View):
    """What the search found: ``copies`` (at most ``SHOWN``, in the order
    scanned), ``more`` found past them; ``scanned`` of the project's
    ``total`` events, ``capped`` when it stopped before the end."""

    copies: list[EventCopy] = []
    more: int = 0
    scanned: int = 0
    total: int = 0
    capped: bool = False
    run: int = RUN
    shown: int = SHOWN


class _Matcher:
    """Where ``text`` (whole, or a run of ``RUN`` or more of it) is in a
    page of bodies."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.long = len(text) >= RUN
        #: the text's own chunks -> where each starts in it (a text of up to ``FIND_CHUNKS``)
        self.own: dict[str, list[int]] | None = None
        if self.long and len(text) // _CHUNK <= FIND_CHUNKS:
            self.own = {}
            for p in range(0, len(text) - _CHUNK + 1, _CHUNK):
                self.own.setdefault(text[p : p + _CHUNK], []).append(p)
        elif self.long:
            self.chunks = {text[i : i + _CHUNK] for i in range(len(text) - _CHUNK + 1)}
            self.runs = {text[i : i + RUN] for i in range(len(text) - RUN + 1)}
        self.work = 0

    def find(self, bodies: list[str]) -> dict[int, tuple[int, int, bool]]:
        """Index of each body that holds a copy -> (start, end, whole) of
        the first place found. Each occurrence costs a step of ``work``;
        a body found is left at once, and no place of a body is checked
        twice, so a page costs at most about its length in steps, whatever
        its text; the caller stops when ``work`` passes its budget."""
        haystack = _SEP.join(bodies)
        starts = [0]
        for body in bodies:
            starts.append(starts[-1] + len(body) + 1)
        found: dict[int, tuple[int, int, bool]] = {}
        if not self.long:
            at = haystack.find(self.text)
            while at >= 0:
                self.work += 1
                i = bisect_right(starts, at) - 1
                if at - starts[i] + len(self.text) <= len(bodies[i]):
                    found[i] = (at - starts[i], at - starts[i] + len(self.text), True)
                    at = haystack.find(self.text, starts[i + 1])
                else:  # (a text holding the separator, across two bodies)
                    at = haystack.find(self.text, at + 1)
            return found
        if self.own is not None:
            return self._find_own(bodies, haystack, starts)
        checked: dict[int, set[int]] = {}
        for chunk in self.chunks.intersection(_CHUNKS.findall(haystack)):
            at = haystack.find(chunk)
            while at >= 0:
                i = bisect_right(starts, at) - 1
                if i not in found:
                    place = self._run_at(bodies[i], at - starts[i], checked.setdefault(i, set()))
                    if place is not None:
                        found[i] = place
                if i in found:
                    at = haystack.find(chunk, starts[i + 1])
                else:
                    at = haystack.find(chunk, at + 1)
                if self.work > WORK:
                    return found
        return found

    def _find_own(self, bodies: list[str], haystack: str, starts: list[int]) -> dict[int, tuple[int, int, bool]]:
        """``find`` for a text of few chunks: each place one of its chunks
        is in a body is extended to the longest run of the text there. A run
        shorter than ``RUN`` holds one chunk of the text at most, so no run
        is measured twice; each costs its length in ``work``."""
        found: dict[int, tuple[int, int, bool]] = {}
        for chunk, offsets in self.own.items():  # type: ignore[union-attr]
            at = haystack.find(chunk)
            while at >= 0:
                i = bisect_right(starts, at) - 1
                if i not in found and at + _CHUNK < starts[i + 1]:  # (not across two bodies)
                    for p in offsets:
                        place = self._extend(bodies[i], at - starts[i], p)
                        if place is not None:
                            found[i] = place
                            break
                    if self.work > WORK:
                        return found
                at = haystack.find(chunk, starts[i + 1] if i in found else at + 1)
        return found

    def _extend(self, body: str, q: int, p: int) -> tuple[int, int, bool] | None:
        """The run of the text through ``body[q:q+20] == text[p:p+20]``,
        as a copy's place when it is ``RUN`` long or more."""
        text = self.text
        b, t = q, p
        while b > 0 and t > 0 and body[b - 1] == text[t - 1]:
            b, t = b - 1, t - 1
        e, u = q + _CHUNK, p + _CHUNK
        while e < len(body) and u < len(text) and body[e] == text[u]:
            e, u = e + 1, u + 1
        self.work += 1 + e - b - _CHUNK
        if e - b < RUN:
            return None
        whole = body.find(text) if e - b < len(text) else b
        if whole >= 0:
            return whole, whole + len(text), True
        return b, e, False

    def _run_at(self, body: str, q: int, checked: set[int]) -> tuple[int, int, bool] | None:
        """A run of ``RUN`` or more of the text that covers ``body[q:q+20]``:
        it starts at most 20 characters before ``q``."""
        self.work += 1
        for r in range(max(0, q - _CHUNK), min(q, len(body) - RUN) + 1):
            if r in checked:
                continue
            checked.add(r)
            self.work += 1
            if body[r : r + RUN] in self.runs:
                whole = body.find(self.text)
                if whole >= 0:
                    return whole, whole + len(self.text), True
                p = self.text.find(body[r : r + RUN])
                end = r + RUN
                while end < len(body) and p + end - r < len(self.text) and body[end] == self.text[p + end - r]:
                    end += 1
                while r > 0 and p > 0 and body[r - 1] == self.text[p - 1]:
                    r, p = r - 1, p - 1
                return r, end, False
        return None


_WHERE = "AND e.redacted_at IS NULL "
#: a slot of -1 (none) opens nothing, as a sealed body without its slot
_FIELDS = (
    "e.id AS id, e.seq AS seq, CASE WHEN e.payload IS NULL THEN coalesce(e.key_slot, -1) END AS slot, "
    "coalesce(e.payload, e.payload_ct) AS body"
)
_SPAN = "MATCH (e:Event {task_id: $t}) WHERE e.seq >= $lo AND e.seq <= $hi " + _WHERE + "RETURN " + _FIELDS
_SPANS = (
    "UNWIND $page AS s MATCH (e:Event {task_id: s.t}) WHERE e.seq >= s.lo AND e.seq <= s.hi "
    + _WHERE
    + "RETURN s.i AS i, "
    + _FIELDS
)

#: (span of the page, event id, seq, key slot or None when the body is plain, body or sealed body)
_Row = tuple[int, str, int, Any, str]


def _least(text: str) -> tuple[int, int]:
    """The shortest body that can hold a copy of ``text``, in characters,
    and as the length of a sealed body (``base64(nonce + UTF-8 + 16-byte
    tag)``, at least a byte a character): a shorter one is not opened.
    (FalkorDB's ``size`` of a string costs more than the body's transfer.)"""
    least = min(len(text), RUN)
    return least, 4 * -(-(NONCE + least + 16) // 3)


def _read_page(store: GraphStore, project_id: str, page: list[dict[str, Any]]) -> list[_Row]:
    """A page's events, in the order searched."""
    rows: list[_Row] = []
    together = []
    for s in page:
        if s["n"] <= ALONE:
            together.append({"t": s["t"], "lo": s["lo"], "hi": s["hi"], "i": s["i"]})
            continue
        found = store.read(project_id, _SPAN, {"t": s["t"], "lo": s["lo"], "hi": s["hi"]})
        rows += [(s["i"], r["id"], r["seq"], r["slot"], r["body"]) for r in found]
    if together:
        found = store.read(project_id, _SPANS, {"page": together})
        rows += [(r["i"], r["id"], r["seq"], r["slot"], r["body"]) for r in found]
    rows.sort(key=lambda r: (r[0], r[2]))
    return rows


def _open(store: GraphStore, rows: list[_Row], least: tuple[int, int]) -> tuple[list[_Row], list[str]]:
    """The rows whose body is long enough and opens, and their bodies."""
    plain, sealed = least
    rows = [r for r in rows if r[4] and len(r[4]) >= (plain if r[3] is None else sealed)]
    opened = iter(open_sealed(store, [(r[1], r[3], r[4]) for r in rows if r[3] is not None]))
    kept, bodies = [], []
    for row in rows:
        body = next(opened) if row[3] is not None else row[4]
        if body and body != UNREADABLE:
            kept.append(row)
            bodies.append(body)
    return kept, bodies


def find_copies(
    store: GraphStore,
    project_id: str,
    *,
    event_id: str,
    task_id: str,
    seq: int,
    text: str,
    scan_events: int | None = None,
    scan_chars: int | None = None,
) -> CopySearch:
    """The events of ``project_id`` other than ``seq`` of ``task_id`` whose
    body holds ``text`` or a run of ``RUN`` of it. None for an empty text,
    or one already redacted or unreadable. ``scan_events``,
    ``scan_chars``: the caps (``SCAN_EVENTS``, ``SCAN_CHARS``)."""
    scan_events = SCAN_EVENTS if scan_events is None else scan_events
    scan_chars = SCAN_CHARS if scan_chars is None else scan_chars
    total = store.read(
        project_id,
        "MATCH (t:Task) WHERE t.project_id = $p RETURN sum(coalesce(t.event_seq, 0)) AS n",
        {"p": project_id},
    )[0]["n"]
    if not text.strip() or text in ("[REDACTED]", UNREADABLE):
        return CopySearch(total=total)
    tasks = store.read(
        project_id,
        "MATCH (t:Task {id: $own}) RETURN t.id AS id, t.name AS name, t.event_seq AS last",
        {"own": task_id},
    )
    tasks += store.read(  # the newest first
        project_id,
        "MATCH (t:Task) WHERE t.project_id = $p AND t.id <> $own AND t.event_seq > 0 "
        "WITH t ORDER BY t.created_at DESC, t.id LIMIT $n RETURN t.id AS id, t.name AS name, t.event_seq AS last",
        {"p": project_id, "own": task_id, "n": TASKS + 1},
    )
    capped = len(tasks) > TASKS + 1

    names = {t["id"]: t["name"] for t in tasks}
    # (task id, first seq, last seq, the task's events), in the order searched
    spans: list[tuple[str, int, int, int]] = []
    for t in tasks[: TASKS + 1]:
        last = t["last"] or 0
        if t["id"] == task_id:
            spans += [(task_id, seq + 1, last, last), (task_id, 1, seq - 1, last)]
        else:
            spans.append((t["id"], 1, last, last))
    spans = [s for s in spans if s[2] >= s[1]]
    matcher = _Matcher(text)
    least = _least(text)
    copies: list[dict[str, Any]] = []
    more = scanned = chars = planned = 0

    def next_page(ahead: ThreadPoolExecutor) -> tuple[Future[list[_Row]], list[dict[str, Any]], int] | None:
        """The next ``PAGE`` events (a span cut where the page ends), being read."""
        nonlocal planned
        page: list[dict[str, Any]] = []
        room = min(PAGE, scan_events - planned)
        while spans and room > 0:
            tid, lo, hi, n = spans[0]
            take = min(room, hi - lo + 1)
            page.append({"t": tid, "lo": lo, "hi": lo + take - 1, "i": len(page), "n": n})
            spans[0] = (tid, lo + take, hi, n)
            if lo + take > hi:
                spans.pop(0)
            room -= take
        if not page:
            return None
        count = sum(s["hi"] - s["lo"] + 1 for s in page)
        planned += count
        return ahead.submit(_read_page, store, project_id, page), page, count

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="reviewer-copies") as ahead:
        pending = next_page(ahead)
        while pending is not None:
            if scanned >= scan_events or chars >= scan_chars or matcher.work > WORK:
                capped = True
                pending[0].cancel()
                break
            reading, page, count = pending
            rows = reading.result()
            pending = next_page(ahead)  # read while this page is opened and searched
            scanned += count
            rows, bodies = _open(store, rows, least)
            chars += sum(map(len, bodies))
            places = matcher.find(bodies)
            if matcher.work > WORK:
                capped = True  # (the page searched in part: what it found is listed)
            for i, (start, end, whole) in sorted(places.items()):
                if len(copies) >= SHOWN:
                    more += 1
                    continue
                body = bodies[i]
                copies.append(
                    {
                        "event_id": rows[i][1],
                        "task_name": names[page[rows[i][0]]["t"]],
                        "seq": rows[i][2],
                        "whole": whole,
                        "before": ("…" if start > CONTEXT else "") + body[max(0, start - CONTEXT) : start],
                        "match": body[start:end],
                        "after": body[end : end + CONTEXT] + ("…" if end + CONTEXT < len(body) else ""),
                    }
                )
    capped = capped or bool(spans)  # (stopped at ``scan_events``)
    kinds = (
        {  # the copies' kinds, not read for every event
            r["id"]: r["kind"]
            for r in store.read(
                project_id,
                "UNWIND $ids AS id MATCH (e:Event {id: id}) RETURN e.id AS id, e.kind AS kind",
                {"ids": [cp["event_id"] for cp in copies]},
            )
        }
        if copies
        else {}
    )
    return CopySearch(
        copies=[EventCopy(kind=kinds.get(cp["event_id"], ""), **cp) for cp in copies],
        more=more,
        scanned=scanned,
        total=total,
        capped=capped,
    )
