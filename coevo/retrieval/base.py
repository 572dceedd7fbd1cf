"""The retrieval contract shared by worlds, recipes and benchmarks (Search-R1, Dr. Zero).

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
    # the corpus row's / retrieval server's ``contents`` as given (wiki-18: '"Title"\ntext'); None when the
    # passage was built from title and text. Search-R1 renders a hit from this string alone.
    contents: str | None = None


@runtime_checkable
class Retriever(Protocol):
    def search(self, queries: Sequence[str], k: int,
               sources: Collection[str] | None = None) -> list[list[Passage]]:
        """top-k passages per query, best first; ``sources``: only passages of these sources
        (CrossFit fold-restricted retrieval); None = all."""
        ...


def format_passages(passages: Sequence[Passage]) -> str:
    """Search-R1's rendering of retrieved passages, byte for byte (``_passages2string`` in
    PeterGriffinJin/Search-R1 search_r1/llm_agent/generation.py)::

        content = doc_item['document']['contents']
        title = content.split("\n")[0]; text = "\n".join(content.split("\n")[1:])
        format_reference += f"Doc {idx+1}(Title: {title}) {text}\n"

    A passage with ``contents`` (a wiki-18 corpus row, a ``/retrieve`` answer) is rendered from it
    alone, so its title keeps the corpus's quotes (``Doc 1(Title: "Paris") ...``). A passage built
    from title and text (coevo's generated worlds) renders ``Doc i(Title: t) text``, or ``Doc i text``
    without a title. Every entry ends in a newline, as Search-R1's; callers strip the whole."""
    out = []
    for i, p in enumerate(passages, 1):
        if p.contents is not None:
            lines = p.contents.split("\n")
            out.append(f"Doc {i}(Title: {lines[0]}) {chr(10).join(lines[1:])}\n")
        else:
            out.append(f"Doc {i}(Title: {p.title}) {p.text}\n" if p.title else f"Doc {i} {p.text}\n")
    return "".join(out)
