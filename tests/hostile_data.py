"""The hostile data set of the decision page and the queue: documents that
repeat themselves, cited over long passages, then changed by one character.

Seeded through the library's own writes. A document size limit in the
write path (about 1 MiB) refuses the 1.9 MB and 2 MiB documents here, which
stand for documents stored before that limit existed: :func:`raised_limit`
lifts every such limit constant of the knowledge layer while the set is
written (a module constant of ``core.knowledge``, ``core._common`` or
``core.models.knowledge`` named for a document's or a text's length), so
what is stored is exactly what an old store holds.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

from core.decisions import DecisionTraces
from core.history import ConversationHistory
from core.knowledge import Graph


@contextlib.contextmanager
def raised_limit() -> Iterator[None]:
    """Every document length limit of the write path lifted, inside."""
    import core._common
    import core.knowledge
    import core.limits
    import core.models.knowledge

    saved = []
    for module in (core.limits, core.knowledge, core._common, core.models.knowledge):
        for name, value in list(vars(module).items()):
            named = name.isupper() and any(w in name for w in ("DOCUMENT", "TEXT", "DOC_", "PASSAGE"))
            if named and isinstance(value, int) and not isinstance(value, bool) and 10_000 <= value <= 2**26:
                saved.append((module, name, value))
                setattr(module, name, 2**40)
    try:
        yield
    finally:
        for module, name, value in saved:
            setattr(module, name, value)


@dataclass
class Hostile:
    many: str  # the decision citing ten long documents
    repeat: str  # the decision citing a self-repeating document


def one_char_changed(text: str, at: int) -> str:
    return text[:at] + ("b" if text[at] != "b" else "c") + text[at + 1 :]


def seed(
    store: object,
    project: str,
    *,
    documents: int = 10,
    length: int = 1_900_000,
    cited: int = 500_000,
    repeat: tuple[int, int] = (200_000, 20_000),
) -> Hostile:
    """A decision citing ``documents`` documents of ``length`` characters
    (lines of words and markup characters, each cited over ``cited`` from
    its middle) and one citing ``repeat[1]`` of ``repeat[0]`` "a"s; every
    document then changed by one character in the middle of its cited
    passage, so every support has moved (the passage stands nearest just
    before), and both decisions wait for review."""
    history = ConversationHistory(store, project_id=project, agent_id="planner")  # type: ignore[arg-type]
    graph = Graph(store, project_id=project, agent_id="ingest")  # type: ignore[arg-type]
    traces = DecisionTraces(store, project_id=project, agent_id="planner")  # type: ignore[arg-type]
    history.create_task("hostile", goal="Cite what cannot be shown whole")
    line = "x < y & z " * 7 + "\n"
    body = (line * (length // len(line) + 1))[:length]
    ids = []
    with raised_limit():
        for name, texts in (
            ("many", [(f"long-{i}", body, cited) for i in range(documents)]),
            ("repeat", [("repeat", "a" * repeat[0], repeat[1])]),
        ):
            supports, fetched = [], []
            for key, text, span in texts:
                assert graph.add(key, text).recorded, key
                start = (len(text) - span) // 2
                evidence = graph.span_evidence_id(key, start, start + span)
                supports.append({"kind": "document", "evidence_id": evidence})
                fetched.append(graph.fetch(evidence))
            d = traces.record_decision(
                "hostile",
                choice_key=name,
                conclusion=f"{name} holds",
                rationale="r",
                supports=supports,
                fetched=fetched,
            ).decision
            ids.append(str(d.id))
            for key, text, span in texts:
                # one character changed inside the passage: it now stands nearest half a passage earlier
                assert graph.update(key, one_char_changed(text, (len(text) - span) // 2 + span // 2)).recorded, key
    return Hostile(many=ids[0], repeat=ids[1])
