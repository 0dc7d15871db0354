"""A word-level diff whose cost grows with the length of the texts, not with
its square: what a reviewer reads when a cited passage changed.

Words are runs of non-space characters; runs of whitespace are not words
(a rewording that only moves line breaks or spaces shows no change). The
diff anchors on words that occur once in each text, in the order that keeps
the most of them (patience diff: a longest increasing subsequence, so
``O(n log n)``), trims common ends, and recurses between anchors; a stretch
with no such anchor is diffed exactly only while it is small, and shown as
one replacement beyond that. So a 100 kB document diffs in milliseconds,
and a page that shows it never holds a worker for seconds.

:func:`passage_diff` is the view a reviewer needs: the cited passage of the
recorded text against the current text, marked inside a few lines of
context, with unchanged stretches collapsed.
"""

from __future__ import annotations

import bisect
import difflib
import functools
import re
from dataclasses import dataclass
from typing import Literal, NamedTuple

__all__ = ["Op", "PassageDiff", "Piece", "passage_diff", "word_diff"]

#: Beyond this many word pairs, a stretch without unique anchors is one replacement.
EXACT_LIMIT = 40_000


class Op(NamedTuple):
    """One step of a diff over word indexes: ``a[a0:a1]`` becomes ``b[b0:b1]``
    (a named tuple: a 100 kB document makes tens of thousands of them)."""

    tag: Literal["equal", "replace", "delete", "insert"]
    a0: int
    a1: int
    b0: int
    b1: int


_WORD = re.compile(r"\S+")


def _words(text: str) -> tuple[list[str], list[tuple[int, int]]]:
    """The words of ``text`` (runs of non-space characters) and their offsets."""
    spans = [m.span() for m in _WORD.finditer(text)]
    return [text[a:b] for a, b in spans], spans


def _lis(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest run of ``pairs`` (sorted by their first item) increasing in
    the second."""
    tails: list[int] = []
    tail_at: list[int] = []
    back = [-1] * len(pairs)
    for i, (_, j) in enumerate(pairs):
        k = bisect.bisect_left(tails, j)
        if k == len(tails):
            tails.append(j)
            tail_at.append(i)
        else:
            tails[k] = j
            tail_at[k] = i
        back[i] = tail_at[k - 1] if k else -1
    out = []
    i = tail_at[-1] if tail_at else -1
    while i != -1:
        out.append(pairs[i])
        i = back[i]
    return out[::-1]


def _region(a: list[str], b: list[str], a0: int, a1: int, b0: int, b1: int, out: list[Op]) -> None:
    stack = [(a0, a1, b0, b1)]
    # depth-first with an explicit stack; results are put in order afterwards
    regions: list[Op] = []
    while stack:
        a0, a1, b0, b1 = stack.pop()
        # common ends
        s = 0
        while a0 + s < a1 and b0 + s < b1 and a[a0 + s] == b[b0 + s]:
            s += 1
        if s:
            regions.append(Op("equal", a0, a0 + s, b0, b0 + s))
            a0, b0 = a0 + s, b0 + s
        e = 0
        while a1 - e > a0 and b1 - e > b0 and a[a1 - 1 - e] == b[b1 - 1 - e]:
            e += 1
        if e:
            regions.append(Op("equal", a1 - e, a1, b1 - e, b1))
            a1, b1 = a1 - e, b1 - e
        if a0 == a1 or b0 == b1:
            if a0 < a1:
                regions.append(Op("delete", a0, a1, b0, b0))
            elif b0 < b1:
                regions.append(Op("insert", a0, a0, b0, b1))
            continue
        anchors = _anchors(a, b, a0, a1, b0, b1)
        if not anchors:
            _small(a, b, a0, a1, b0, b1, regions)
            continue
        # the stretches between anchors, and each anchor as an equal word
        prev_a, prev_b = a0, b0
        for i, j in anchors:
            stack.append((prev_a, i, prev_b, j))
            regions.append(Op("equal", i, i + 1, j, j + 1))
            prev_a, prev_b = i + 1, j + 1
        stack.append((prev_a, a1, prev_b, b1))
    regions.sort(key=lambda op: (op.a0, op.b0, op.a1, op.b1))
    out.extend(op for op in regions if op.a0 < op.a1 or op.b0 < op.b1)


def _anchors(a: list[str], b: list[str], a0: int, a1: int, b0: int, b1: int) -> list[tuple[int, int]]:
    count_a: dict[str, int] = {}
    for i in range(a0, a1):
        count_a[a[i]] = count_a.get(a[i], 0) + 1
    count_b: dict[str, tuple[int, int]] = {}
    for j in range(b0, b1):
        w = b[j]
        if count_a.get(w) == 1:
            n, _ = count_b.get(w, (0, j))
            count_b[w] = (n + 1, j)
    pairs = [(i, count_b[a[i]][1]) for i in range(a0, a1) if count_a[a[i]] == 1 and count_b.get(a[i], (0, 0))[0] == 1]
    return _lis(pairs)


def _small(a: list[str], b: list[str], a0: int, a1: int, b0: int, b1: int, out: list[Op]) -> None:
    if (a1 - a0) * (b1 - b0) > EXACT_LIMIT:
        out.append(Op("replace", a0, a1, b0, b1))
        return
    matcher = difflib.SequenceMatcher(None, a[a0:a1], b[b0:b1], autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        out.append(Op(tag, a0 + i1, a0 + i2, b0 + j1, b0 + j2))  # type: ignore[arg-type]


def _merge(ops: list[Op]) -> list[Op]:
    """Adjacent steps of one kind as one; a delete next to an insert as a replace."""
    out: list[Op] = []
    for op in ops:
        if out:
            last = out[-1]
            both_changes = last.tag != "equal" and op.tag != "equal"
            if (last.tag == op.tag or both_changes) and last.a1 == op.a0 and last.b1 == op.b0:
                tag = last.tag if last.tag == op.tag else "replace"
                out[-1] = Op(tag, last.a0, op.a1, last.b0, op.b1)
                continue
        out.append(op)
    return [
        Op("replace", o.a0, o.a1, o.b0, o.b1) if o.tag != "equal" and o.a0 < o.a1 and o.b0 < o.b1 else o for o in out
    ]


@functools.lru_cache(maxsize=8)
def word_diff(old: str, new: str) -> tuple[list[Op], list[tuple[int, int]], list[tuple[int, int]]]:
    """The diff of the words of ``old`` and ``new``: the steps, and each
    text's word offsets (``(start, end)`` per word) to map them back. The
    last few answers are kept: a page diffs one pair of versions for the
    support it shows, the reason it cannot be reaffirmed and the passage the
    supersede form offers (callers must not change the lists)."""
    a, a_spans = _words(old)
    b, b_spans = _words(new)
    ops: list[Op] = []
    _region(a, b, 0, len(a), 0, len(b), ops)
    return _merge(ops), a_spans, b_spans


@dataclass(frozen=True)
class Piece:
    """A stretch of text in one side of a passage diff."""

    text: str
    kind: Literal["same", "removed", "added", "gap"]
    cited: bool = False
    #: the whitespace that follows it in its text, as one space, a line
    #: break or a paragraph break (so the pieces keep the text's paragraphs)
    sep: str = " "


@dataclass(frozen=True)
class PassageDiff:
    """The recorded text (``before``) and the current text (``after``)
    around a cited passage, as pieces; ``changed``: whether any word of the
    window differs."""

    before: list[Piece]
    after: list[Piece]
    changed: bool


def _line_window(text: str, start: int, end: int, lines: int) -> tuple[int, int]:
    """The character range of the lines holding ``text[start:end]`` and
    ``lines`` lines either side."""
    lo = start
    for _ in range(lines + 1):
        lo = text.rfind("\n", 0, lo)
        if lo < 0:
            break
    # the break ending the passage's last line: the one at or after its last
    # character (a passage may end at, or just after, a line break)
    hi = text.find("\n", max(start, end - 1))
    for _ in range(lines):
        if hi < 0:
            break
        hi = text.find("\n", hi + 1)
    return lo + 1, len(text) if hi < 0 else hi


def passage_diff(
    old: str, new: str, start: int, end: int, *, context_lines: int = 2, keep_words: int = 12
) -> PassageDiff:
    """The cited passage ``old[start:end]`` against the current text: the
    words of ``context_lines`` lines either side of it, diffed; the passage
    marked ``cited``; an unchanged stretch of more than ``2 * keep_words``
    words outside the passage collapsed to a gap."""
    start, end = max(0, min(start, len(old))), max(0, min(end, len(old)))
    ops, a_spans, b_spans = word_diff(old, new)
    w0, w1 = _line_window(old, start, end, context_lines)
    first = bisect.bisect_right(a_spans, w0, key=lambda span: span[1])  # first word ending after w0
    last = bisect.bisect_left(a_spans, w1, key=lambda span: span[0])  # words before index last start before w1

    def is_cited(i: int) -> bool:
        return a_spans[i][0] < end and a_spans[i][1] > start

    # rows: (kind, a0, a1, b0, b1, cited), kinds "same", "change"
    rows: list[tuple[str, int, int, int, int, bool]] = []
    # the steps are in order of the old words: only those reaching the window
    for op in ops[bisect.bisect_left(ops, first, key=lambda o: o.a1) :]:
        if op.a0 > last:
            break
        a0, a1 = max(op.a0, first), min(op.a1, last)
        if op.tag == "insert":
            if first <= op.a0 <= last:
                inside = 0 < op.a0 < len(a_spans) and is_cited(op.a0 - 1) and is_cited(op.a0)
                rows.append(("change", op.a0, op.a0, op.b0, op.b1, inside))
            continue
        if a0 >= a1:
            continue
        if op.tag == "equal":
            run_start = a0
            for i in range(a0, a1 + 1):
                if i == a1 or (i > run_start and is_cited(i) != is_cited(run_start)):
                    shift = op.b0 - op.a0
                    rows.append(("same", run_start, i, run_start + shift, i + shift, is_cited(run_start)))
                    run_start = i
        else:
            # a change reaching past the window keeps the same share of its new words
            b0 = min(op.b1, op.b0 + (a0 - op.a0))
            b1 = max(b0, op.b1 - (op.a1 - a1))
            rows.append(("change", a0, a1, b0, b1, any(is_cited(i) for i in range(a0, a1))))

    def text_of(spans: list[tuple[int, int]], source: str, x0: int, x1: int) -> str:
        return source[spans[x0][0] : spans[x1 - 1][1]] if x0 < x1 else ""

    def sep_of(spans: list[tuple[int, int]], source: str, x1: int) -> str:
        if x1 <= 0 or x1 >= len(spans):
            return ""
        gap = source[spans[x1 - 1][1] : spans[x1][0]]
        breaks = gap.count("\n")
        return "\n\n" if breaks > 1 else "\n" if breaks else " "

    before: list[Piece] = []
    after: list[Piece] = []
    for kind, a0, a1, b0, b1, cited in rows:
        if kind == "change":
            before.append(Piece(text_of(a_spans, old, a0, a1), "removed", cited, sep_of(a_spans, old, a1)))
            after.append(Piece(text_of(b_spans, new, b0, b1), "added", cited, sep_of(b_spans, new, b1)))
        elif not cited and a1 - a0 > 2 * keep_words:
            for side, spans, source, x0, x1 in ((before, a_spans, old, a0, a1), (after, b_spans, new, b0, b1)):
                side.append(Piece(text_of(spans, source, x0, x0 + keep_words), "same"))
                side.append(Piece("…", "gap"))
                side.append(Piece(text_of(spans, source, x1 - keep_words, x1), "same", sep=sep_of(spans, source, x1)))
        else:
            before.append(Piece(text_of(a_spans, old, a0, a1), "same", cited, sep_of(a_spans, old, a1)))
            after.append(Piece(text_of(b_spans, new, b0, b1), "same", cited, sep_of(b_spans, new, b1)))
    changed = any(kind == "change" for kind, *_ in rows)
    return PassageDiff(before=_joined(before), after=_joined(after), changed=changed)


def _joined(pieces: list[Piece]) -> list[Piece]:
    """Non-empty pieces; neighbours of one kind merged, their separator between."""
    out: list[Piece] = []
    for p in pieces:
        if not p.text:
            continue
        if out and out[-1].kind == p.kind and out[-1].cited == p.cited and p.kind != "gap":
            out[-1] = Piece(out[-1].text + (out[-1].sep or " ") + p.text, p.kind, p.cited, p.sep)
        else:
            out.append(p)
    return out
