"""Load a wiki-18-format JSONL corpus into Passages, streaming.

The format is the one Search-R1 and FlashRAG index (Search-R1 ``search_r1/search/
retrieval_server.py``: ``title = contents.split("\\n")[0].strip('"')``, ``text`` = the other
lines; FlashRAG ``examples/quick_start/indexes/sample_data.jsonl``): one JSON object per
line, ``{"id": "0", "contents": "\\"Evan Morris\\"\\nEvan Morris Evan L. Morris (January ..."}``.
Lines with ``title`` and ``text`` instead of ``contents`` are accepted too.

``source`` of a passage (the document id CrossFit folds split on) is its title by default
(wiki-18 splits each article into 100-word passages that share the title), or any other
field of the line (``source_field="id"``, ``"url"`` ...).  Malformed lines (not JSON, not an
object, no id, no text, a duplicate id) are skipped and reported with their line numbers.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from coevo.retrieval.base import Passage


class CorpusError(ValueError):
    """The corpus file cannot be read at all (missing, empty of valid passages)."""


@dataclass
class CorpusLoad:
    """Result of ``load_corpus``: the passages and the malformed lines ``(line_no, reason)``."""

    passages: list[Passage]
    malformed: list[tuple[int, str]] = field(default_factory=list)
    lines: int = 0

    def summary(self, show: int = 10) -> dict:
        return {"passages": len(self.passages), "lines": self.lines, "malformed": len(self.malformed),
                "malformed_lines": [{"line": n, "reason": r} for n, r in self.malformed[:show]]}


def split_contents(contents: str) -> tuple[str, str]:
    """wiki-18 ``contents`` -> (title, text): the first line without its quotes, the rest."""
    head, _, rest = contents.partition("\n")
    return head.strip().strip('"'), rest


def parse_corpus_line(line: str, source_field: str = "title") -> Passage:
    """One JSONL line -> a Passage; raises ValueError with a short reason."""
    try:
        obj = json.loads(line)
    except ValueError as e:
        raise ValueError(f"not JSON ({e.msg})") from None
    if not isinstance(obj, dict):
        raise ValueError(f"not a JSON object ({type(obj).__name__})")
    pid = obj.get("id", obj.get("_id"))
    if pid is None or str(pid) == "":
        raise ValueError("no id")
    contents = obj.get("contents") if isinstance(obj.get("contents"), str) else None
    if contents is not None:
        title, text = split_contents(contents)
    elif isinstance(obj.get("text"), str):
        title, text = str(obj.get("title") or ""), obj["text"]
    else:
        raise ValueError("no 'contents' (or 'text') string")
    if not text.strip() and not title:
        raise ValueError("empty passage")
    if source_field == "title":
        source = title or str(pid)
    else:
        val = obj.get(source_field)
        if val is None:
            raise ValueError(f"no source field {source_field!r}")
        source = str(val)
    return Passage(pid=str(pid), source=source, text=text, title=title, contents=contents)


def iter_corpus(path: str | Path, source_field: str = "title", malformed: list | None = None,
                limit: int | None = None, stats: dict | None = None) -> Iterator[Passage]:
    """Stream the passages of a JSONL corpus; malformed lines are appended to ``malformed``
    as ``(line_no, reason)`` (1-based) and skipped; blank lines are ignored; ``stats["lines"]``
    counts the lines read."""
    seen: set[str] = set()
    n = 0
    stats = {} if stats is None else stats
    with open(path, encoding="utf-8", errors="replace") as f:
        for no, line in enumerate(f, 1):
            stats["lines"] = no
            if not line.strip():
                continue
            try:
                p = parse_corpus_line(line, source_field)
                if p.pid in seen:
                    raise ValueError(f"duplicate id {p.pid!r}")
            except ValueError as e:
                if malformed is not None:
                    malformed.append((no, str(e)))
                continue
            seen.add(p.pid)
            yield p
            n += 1
            if limit is not None and n >= limit:
                return


def load_corpus(path: str | Path, source_field: str = "title", limit: int | None = None) -> CorpusLoad:
    """All passages of a wiki-18-format JSONL file (``CorpusError`` if missing or none valid)."""
    p = Path(path)
    if not p.is_file():
        raise CorpusError(f"corpus file not found: {p}")
    bad: list[tuple[int, str]] = []
    stats: dict = {"lines": 0}
    passages = list(iter_corpus(p, source_field, bad, limit, stats))
    if not passages:
        first = f"; first malformed line {bad[0][0]}: {bad[0][1]}" if bad else ""
        raise CorpusError(f"no valid passage in {p}{first}")
    return CorpusLoad(passages, bad, stats["lines"])
