"""The word diff a reviewer reads: words, not whitespace; the cited passage
marked in its context; bounded cost however long the documents."""

from __future__ import annotations

import random
import time

from core.textdiff import passage_diff, word_diff


def _apply(old: str, new: str) -> list[str]:
    """The new words, rebuilt from the old ones and the diff's steps: a diff
    that loses or invents a word fails this."""
    ops, a_spans, b_spans = word_diff(old, new)
    a = [old[s:e] for s, e in a_spans]
    b = [new[s:e] for s, e in b_spans]
    out: list[str] = []
    pos = 0
    for op in ops:
        assert op.a0 == pos, "steps cover the old words in order"
        out += a[op.a0 : op.a1] if op.tag == "equal" else b[op.b0 : op.b1]
        if op.tag == "equal":
            assert a[op.a0 : op.a1] == b[op.b0 : op.b1]
        pos = op.a1
    assert pos == len(a)
    return out


def test_whitespace_is_not_a_word() -> None:
    ops, _, _ = word_diff("the  service\nuses  CockroachDB", "the service uses CockroachDB")
    assert [op.tag for op in ops] == ["equal"]


def test_a_rewording_is_one_change_not_alternating_words() -> None:
    old = "The orders service uses CockroachDB, for its multi-region writes."
    new = "The orders service may use PostgreSQL, for its multi-region writes."
    ops, a, b = word_diff(old, new)
    changes = [op for op in ops if op.tag != "equal"]
    assert len(changes) == 1
    only = changes[0]
    assert [old[s:e] for s, e in a[only.a0 : only.a1]] == ["uses", "CockroachDB,"]
    assert [new[s:e] for s, e in b[only.b0 : only.b1]] == ["may", "use", "PostgreSQL,"]


def test_random_edits_rebuild_the_new_text() -> None:
    rng = random.Random(7)
    vocab = [f"w{i}" for i in range(40)]
    for _ in range(200):
        old_words = [rng.choice(vocab) for _ in range(rng.randint(0, 60))]
        new_words = list(old_words)
        for _ in range(rng.randint(0, 8)):
            at = rng.randint(0, len(new_words))
            if new_words and rng.random() < 0.5:
                del new_words[min(at, len(new_words) - 1)]
            else:
                new_words.insert(at, rng.choice(vocab))
        assert _apply(" ".join(old_words), " ".join(new_words)) == new_words


def test_the_cited_passage_is_marked_in_its_context_and_long_same_stretches_collapse() -> None:
    filler = " ".join(f"f{i}" for i in range(200))
    old = f"{filler}\nPage the on-call engineer within 15 minutes.\n{filler}"
    new = f"{filler}\nPage the on-call engineer within 5 minutes.\n{filler}"
    start = old.index("Page")
    end = old.index("minutes.") + len("minutes.")
    view = passage_diff(old, new, start, end)
    assert view.changed
    removed = [p.text for p in view.before if p.kind == "removed"]
    added = [p.text for p in view.after if p.kind == "added"]
    assert (removed, added) == (["15"], ["5"])
    assert all(p.cited for p in view.before if p.kind == "removed")
    cited_same = " ".join(p.text for p in view.before if p.cited and p.kind == "same")
    assert "Page the on-call engineer within" in cited_same
    assert any(p.kind == "gap" for p in view.before), "200 unchanged words around it are collapsed"
    assert sum(len(p.text.split()) for p in view.before if p.kind == "same") < 120


def test_an_unchanged_passage_reads_unchanged() -> None:
    old = "alpha beta\ngamma delta\nepsilon"
    view = passage_diff(old, "intro\n" + old, old.index("gamma"), old.index("delta") + 5)
    assert not [p for p in view.before if p.kind == "removed"]
    assert any(p.cited and "gamma delta" in p.text for p in view.after)


def test_a_large_document_diffs_in_bounded_time() -> None:
    """Quadratic behaviour here would take seconds (the old SequenceMatcher
    took 48 s for 20 kB); the bound is generous so a busy machine passes."""
    rng = random.Random(3)
    words = [f"word{rng.randint(0, 5000)}" for _ in range(16_000)]  # about 100 kB
    old = " ".join(words)
    changed = list(words)
    for _ in range(300):
        changed[rng.randrange(len(changed))] = f"new{rng.randint(0, 10**6)}"
    new = " ".join(reversed(changed[:8000])) + " " + " ".join(changed[8000:])
    began = time.perf_counter()
    passage_diff(old, new, 50_000, 50_400)
    assert time.perf_counter() - began < 2.0


def test_the_pieces_keep_the_paragraph_breaks_of_their_text() -> None:
    old = "alpha beta\n\ngamma delta epsilon\nzeta"
    new = "alpha beta\n\ngamma DELTA epsilon\nzeta"
    view = passage_diff(old, new, 0, len(old))
    assert "".join(p.text + p.sep for p in view.after) == new
    assert "".join(p.text + p.sep for p in view.before) == old


def _repeating(n: int, words: tuple[str, ...]) -> str:
    """``n`` words that each occur more than once: no anchor for the diff."""
    return " ".join(words[i % len(words)] for i in range(n))


def test_a_stretch_without_anchors_is_diffed_exactly_only_within_its_budget_of_word_pairs() -> None:
    """The budget is the product of the two lengths (the work of the exact
    diff), not their sum: past it the stretch is one replacement."""
    from core.textdiff import EXACT_LIMIT

    side = int(EXACT_LIMIT**0.5)  # side * side word pairs: exactly the budget
    for n_old, n_new, exact in (
        (side, side, True),
        (side, side + 1, False),
        (EXACT_LIMIT // 8, 9, False),  # a long and a short stretch: pairs past the budget, the sum well within it
        (30, 30, True),
    ):
        # n words a side, the ends differ (nothing to trim) and no word occurs once
        old = "x x " + _repeating(n_old - 4, ("a", "b", "c")) + " y y"
        new = "p p " + _repeating(n_new - 4, ("a", "c", "b", "b")) + " q q"
        ops, _, _ = word_diff(old, new)
        assert (len(ops) > 1) is exact, (n_old, n_new, [op.tag for op in ops][:5])
        assert _apply(old, new) == new.split()
        if not exact:
            assert [op.tag for op in ops] == ["replace"]


def test_the_window_is_the_passages_lines_and_exactly_n_lines_either_side() -> None:
    from core.textdiff import _line_window

    lines = [f"line{n} words here" for n in range(7)]
    text = "\n".join(lines)
    at = [sum(len(x) + 1 for x in lines[:n]) for n in range(7)]  # where each line starts

    def window(first: int, last: int, n: int) -> str:
        lo, hi = _line_window(text, at[first] + 2, at[last] + 4, n)
        return text[lo:hi]

    assert window(3, 3, 0) == lines[3]
    assert window(3, 3, 1) == "\n".join(lines[2:5])
    assert window(3, 4, 2) == "\n".join(lines[1:7])
    assert window(0, 0, 1) == "\n".join(lines[0:2])  # the first line: from the start
    assert window(6, 6, 1) == "\n".join(lines[5:7])  # the last: to the end
    assert window(2, 3, 10) == text
    assert _line_window(text, 0, len(text), 0) == (0, len(text))


def test_the_passage_diff_shows_exactly_the_changed_words_in_their_context() -> None:
    old = "intro one\nalpha beta gamma\ncited words stay here\ndelta epsilon\nfar away line\nlast"
    new = "intro one\nalpha BETA gamma\ncited words moved here\ndelta epsilon\nfar away line\nlast"
    start = old.index("cited")
    d = passage_diff(old, new, start, start + len("cited words stay"), context_lines=1)
    assert d.changed
    assert [(p.text, p.kind, p.cited) for p in d.before] == [
        ("alpha", "same", False),
        ("beta", "removed", False),
        ("gamma", "same", False),
        ("cited words", "same", True),
        ("stay", "removed", True),
        ("here\ndelta epsilon", "same", False),
    ]
    assert [(p.text, p.kind, p.cited) for p in d.after] == [
        ("alpha", "same", False),
        ("BETA", "added", False),
        ("gamma", "same", False),
        ("cited words", "same", True),
        ("moved", "added", True),
        ("here\ndelta epsilon", "same", False),
    ]
    assert [p.sep for p in d.before][:5] == [" ", " ", "\n", " ", " "]


def test_a_passage_ending_at_a_line_break_gets_n_lines_after_it_too() -> None:
    from core.textdiff import _line_window

    text = "l0\nl1\nl2\nl3\nl4"
    at = text.index("l1")
    for end in (at + 2, at + 3):  # "l1" up to its line break, and with the break
        lo, hi = _line_window(text, at, end, 1)
        assert text[lo:hi] == "l0\nl1\nl2", end
    lo, hi = _line_window(text, at + 2, at + 2, 0)  # an empty passage at the break: its line
    assert text[lo:hi] == "l1"


def test_a_word_added_near_the_passage_is_shown_added_and_the_old_side_stays_whole() -> None:
    old = "intro one\nalpha beta gamma\ncited words stay here\ndelta epsilon\nlast"
    new = "intro one\nalpha NEW beta gamma\ncited words stay here\ndelta epsilon\nlast"
    start = old.index("cited")
    d = passage_diff(old, new, start, start + len("cited words"), context_lines=1)
    assert d.changed
    assert [(p.text, p.kind, p.cited) for p in d.before] == [
        ("alpha beta gamma", "same", False),  # nothing removed: one piece across the insertion
        ("cited words", "same", True),
        ("stay here\ndelta epsilon", "same", False),
    ]
    assert [(p.text, p.kind, p.cited) for p in d.after] == [
        ("alpha", "same", False),
        ("NEW", "added", False),
        ("beta gamma", "same", False),
        ("cited words", "same", True),
        ("stay here\ndelta epsilon", "same", False),
    ]
