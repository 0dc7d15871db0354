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

Finding a run of 40 without comparing every window: every run of 39 or more
characters of a body covers one of the body page's fixed 20-character chunks
(the page's bodies joined, cut every 20 characters). So the chunks that are
also among the redacted text's 20-character windows (one set intersection,
in C) name the only places a run can be; each is then checked exactly
against the text's 40-character windows. Nothing is computed ahead or kept:
the windows live for one request.
"""

from __future__ import annotations

import re
from bisect import bisect_right

from ._workbench import _View
from .stores.base import GraphStore
from .stores.keystore import UNREADABLE, open_bodies

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
        if self.long:
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
    spans: list[tuple[str, int, int]] = []  # (task id, first seq, last seq), in the order searched
    for t in tasks[: TASKS + 1]:
        if t["id"] == task_id:
            spans += [(task_id, seq + 1, t["last"] or 0), (task_id, 1, seq - 1)]
        else:
            spans.append((t["id"], 1, t["last"]))
    spans = [s for s in spans if s[2] >= s[1]]
    matcher = _Matcher(text)
    copies: list[EventCopy] = []
    more = scanned = chars = 0
    while spans:
        if scanned >= scan_events or chars >= scan_chars or matcher.work > WORK:
            capped = True
            break
        page, room = [], min(PAGE, scan_events - scanned)
        while spans and room:  # the next PAGE events, a span cut where the page ends
            tid, lo, hi = spans[0]
            take = min(room, hi - lo + 1)
            page.append({"t": tid, "lo": lo, "hi": lo + take - 1, "i": len(page)})
            spans[0] = (tid, lo + take, hi)
            if lo + take > hi:
                spans.pop(0)
            room -= take
            scanned += take
        # by each task's index, numbers filtered: a page reads its own events, not by one id each
        rows = store.read(
            project_id,
            "UNWIND $page AS s MATCH (e:Event {task_id: s.t}) "
            "WHERE e.seq >= s.lo AND e.seq <= s.hi AND e.redacted_at IS NULL "
            "RETURN s.i AS i, e.id AS id, e.seq AS seq, e.kind AS kind, e.payload AS payload, "
            "e.payload_ct AS payload_ct, e.key_slot AS key_slot",
            {"page": page},
        )
        rows.sort(key=lambda r: (r["i"], r["seq"]))
        rows = [r for r in open_bodies(store, rows) if r["payload"] and r["payload"] != UNREADABLE]
        bodies = [r["payload"] for r in rows]
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
                EventCopy(
                    event_id=rows[i]["id"],
                    task_name=names[page[rows[i]["i"]]["t"]],
                    seq=rows[i]["seq"],
                    kind=rows[i]["kind"],
                    whole=whole,
                    before=("…" if start > CONTEXT else "") + body[max(0, start - CONTEXT) : start],
                    match=body[start:end],
                    after=body[end : end + CONTEXT] + ("…" if end + CONTEXT < len(body) else ""),
                )
            )
    return CopySearch(copies=copies, more=more, scanned=scanned, total=total, capped=capped)
