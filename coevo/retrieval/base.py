"""The retrieval contract shared by worlds, recipes and benchmarks (issue #11, seed 004).

A :class:`Passage` is one retrievable unit; every passage belongs to exactly one *source*
(document) id, which is what CrossFit folds split on.  A :class:`Retriever` answers a batch
of queries with the top-k passages per query, best first, optionally restricted to a set of
sources (fold-restricted retrieval)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Collection, Protocol, Sequence, runtime_checkable


@dataclass(frozen=True)
class Passage:
    pid: str  # unique passage id
    source: str  # source (document) id; every passage belongs to one source
    text: str
    title: str = ""
    score: float = 0.0


@runtime_checkable
class Retriever(Protocol):
    def search(self, queries: Sequence[str], k: int,
               sources: Collection[str] | None = None) -> list[list[Passage]]:
        """top-k passages per query, best first; ``sources``: only passages of these sources
        (CrossFit fold-restricted retrieval); None = all."""
        ...


def format_passages(passages: Sequence[Passage]) -> str:
    """Search-R1's rendering of retrieved passages (``_passages2string`` in
    PeterGriffinJin/Search-R1 search_r1/llm_agent/generation.py): ``Doc i(Title: t) text``,
    one per line."""
    lines = []
    for i, p in enumerate(passages, 1):
        lines.append(f"Doc {i}(Title: {p.title}) {p.text}" if p.title else f"Doc {i} {p.text}")
    return "\n".join(lines)
