"""Loaders for QA benchmarks in FlashRAG format (``id``, ``question``, ``golden_answers``).

Names and layout follow FlashRAG (RUC-NLPIR/FlashRAG, ``flashrag/utils/utils.py::get_dataset``:
``<data_dir>/<dataset_name>/<split>.jsonl``; the files of the HF dataset
``RUC-NLPIR/FlashRAG_datasets``) and the split Search-R1 evaluates on
(``scripts/data_process/qa_search_test_merge.py``: ``test`` if the dataset has one, else
``dev``): NQ, TriviaQA, PopQA and Bamboogle on ``test``; HotpotQA, 2WikiMultihopQA and
MuSiQue on ``dev``.  ``load_benchmark`` takes the first existing file of the split order.
A split file is ``<split>.jsonl``, ``<split>.json`` (a JSON array, or JSON lines) or
``<split>.parquet`` (one row per question), the three forms FlashRAG's datasets ship in; all
three are read alike (for parquet the "line" of a record is its 1-based row number).

A malformed line (not JSON, not an object, no question, ``golden_answers`` not a non-empty
list of strings) is skipped and reported with its line number.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# name -> (FlashRAG directory, splits in order of preference)
BENCHMARKS: dict[str, tuple[str, tuple[str, ...]]] = {
    "nq": ("nq", ("test", "dev")),
    "triviaqa": ("triviaqa", ("test", "dev")),
    "popqa": ("popqa", ("test", "dev")),
    "hotpotqa": ("hotpotqa", ("dev", "test")),
    "2wikimultihopqa": ("2wikimultihopqa", ("dev", "test")),
    "musique": ("musique", ("dev", "test")),
    "bamboogle": ("bamboogle", ("test", "dev")),
}
ALIASES = {"2wikimqa": "2wikimultihopqa", "2wiki": "2wikimultihopqa", "hotpot": "hotpotqa", "trivia": "triviaqa"}
SHIPPED_DATA_DIR = Path(__file__).resolve().parents[1] / "data" / "qa"
SHIPPED_CORPUS = SHIPPED_DATA_DIR / "corpus_sample.jsonl"


class BenchmarkError(ValueError):
    """A benchmark cannot be loaded (unknown name, missing file, no valid question)."""


@dataclass
class QAExample:
    qid: str
    question: str
    golds: list[str]
    benchmark: str = ""
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class BenchmarkLoad:
    name: str
    path: Path
    examples: list[QAExample]
    malformed: list[tuple[int, str]] = field(default_factory=list)

    def summary(self, show: int = 10) -> dict:
        return {"path": str(self.path), "questions": len(self.examples), "malformed": len(self.malformed),
                "malformed_lines": [{"line": n, "reason": r} for n, r in self.malformed[:show]]}


def canonical_name(name: str) -> str:
    """Lower-cased benchmark name with aliases resolved (``2wikimqa`` -> ``2wikimultihopqa``)."""
    n = name.strip().lower()
    n = ALIASES.get(n, n)
    if n not in BENCHMARKS:
        raise BenchmarkError(f"unknown benchmark {name!r}; known: {', '.join(BENCHMARKS)} "
                             f"(aliases: {', '.join(ALIASES)})")
    return n


SPLIT_SUFFIXES = (".jsonl", ".json", ".parquet")


def parse_qa_line(line: str, default_id: str, benchmark: str = "") -> QAExample:
    """One FlashRAG JSONL line -> QAExample; raises ValueError with a short reason."""
    try:
        obj = json.loads(line)
    except ValueError as e:
        raise ValueError(f"not JSON ({e.msg})") from None
    return parse_qa_record(obj, default_id, benchmark)


def parse_qa_record(obj: Any, default_id: str, benchmark: str = "") -> QAExample:
    """One FlashRAG record (a decoded JSON object or a parquet row) -> QAExample; ValueError with a reason."""
    if not isinstance(obj, dict):
        raise ValueError(f"not a JSON object ({type(obj).__name__})")
    q = obj.get("question")
    if not isinstance(q, str) or not q.strip():
        raise ValueError("no 'question' string")
    golds = obj.get("golden_answers", obj.get("answers", obj.get("answer")))
    if isinstance(golds, str):
        golds = [golds]
    if not isinstance(golds, list) or not golds or not all(isinstance(g, (str, int, float)) for g in golds):
        raise ValueError("'golden_answers' must be a non-empty list of strings")
    golds = [str(g) for g in golds]
    meta = {k: v for k, v in obj.items() if k not in ("id", "question", "golden_answers", "answers", "answer")}
    return QAExample(str(obj.get("id", default_id)), q.strip(), golds, benchmark, meta)


def _records(p: Path):
    """(line or row number, object, None) or (number, None, reason) per record of a split file."""
    if p.suffix == ".parquet":
        import pyarrow.parquet as pq

        try:
            rows = pq.read_table(p).to_pylist()
        except Exception as e:  # pyarrow raises ArrowInvalid / OSError on a damaged file
            raise BenchmarkError(f"cannot read parquet file {p}: {e}") from None
        return ((no, row, None) for no, row in enumerate(rows, 1))
    if p.suffix == ".json":
        from coevo.core.records import RecordError, json_records

        try:
            return json_records(p)  # a JSON array (FlashRAG's .json) or JSON lines
        except RecordError as e:
            raise BenchmarkError(str(e)) from None
    return _jsonl_records(p)


def _jsonl_records(p: Path):
    with open(p, encoding="utf-8", errors="replace") as f:
        for no, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                yield no, json.loads(line), None
            except ValueError as e:
                yield no, None, f"not JSON ({e.msg})"


def load_qa_file(path: str | Path, benchmark: str = "", limit: int | None = None) -> BenchmarkLoad:
    """Every valid question of a FlashRAG-format ``.jsonl``, ``.json`` or ``.parquet`` file
    (malformed records reported with their line / row number)."""
    p = Path(path)
    if not p.is_file():
        raise BenchmarkError(f"benchmark file not found: {p}")
    out: list[QAExample] = []
    bad: list[tuple[int, str]] = []
    for no, obj, err in _records(p):
        try:
            if err:
                raise ValueError(err)
            out.append(parse_qa_record(obj, f"{benchmark or p.stem}_{no}", benchmark))
        except ValueError as e:
            bad.append((no, str(e)))
            continue
        if limit is not None and len(out) >= limit:
            break
    if not out:
        first = f"; first malformed line {bad[0][0]}: {bad[0][1]}" if bad else ""
        raise BenchmarkError(f"no valid question in {p}{first}")
    return BenchmarkLoad(benchmark or p.stem, p, out, bad)


def benchmark_path(name: str, data_dir: str | Path, split: str | None = None) -> Path:
    """``<data_dir>/<dir>/<split>.jsonl`` (else ``.json``, else ``.parquet``) of a benchmark (first
    existing split unless given)."""
    n = canonical_name(name)
    d, splits = BENCHMARKS[n]
    base = Path(data_dir) / d
    cands = [base / f"{s}{suf}" for s in ([split] if split else list(splits)) for suf in SPLIT_SUFFIXES]
    for c in cands:
        if c.is_file():
            return c
    tried = ", ".join(str(c) for c in cands)
    raise BenchmarkError(f"benchmark {n!r}: no file found (tried {tried})")


def load_benchmark(name: str, data_dir: str | Path = SHIPPED_DATA_DIR, split: str | None = None,
                   limit: int | None = None) -> BenchmarkLoad:
    n = canonical_name(name)
    return load_qa_file(benchmark_path(n, data_dir, split), n, limit)


def parse_benchmark_list(spec: str) -> list[str]:
    """``"nq,hotpotqa"`` -> canonical names, in order, without repeats (``all`` = every one)."""
    parts = [s for s in (x.strip() for x in spec.split(",")) if s]
    if not parts:
        raise BenchmarkError("no benchmark named")
    if parts == ["all"]:
        return list(BENCHMARKS)
    out: list[str] = []
    for s in parts:
        c = canonical_name(s)
        if c not in out:
            out.append(c)
    return out
