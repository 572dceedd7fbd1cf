"""Readers of other frameworks' rollout files, with every malformed line counted and located.

* **verl rollout dump** (``trainer.rollout_data_dir``; ``_dump_generations`` in
  ``verl/trainer/ppo/ray_trainer.py``): one ``{global_step}.jsonl`` per training step, one JSON
  object per line with ``input`` (decoded prompt), ``output`` (decoded response), ``gts``
  (``reward_model.ground_truth`` or null), ``score`` (the sequence's summed token-level score),
  ``step``, plus (old trainer and validation) every reward extra field whose list has one entry per
  sample; the v1 trainer's training dumps carry ``uid`` only. A GRPO group is
  the ``rollout.n`` consecutive lines with the same ``input``.
* **references** (``--references``): question -> reference answer, JSON or JSON lines. R-Zero's
  own ``*_results.json`` are read by its recipe folder, ``coevo.recipes.rzero.importer``.

A malformed record is returned as ``{"file", "line", "reason"}`` (1-based line of the record's
start), never dropped silently.
"""
from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

__all__ = ["Bad", "read_verl_dump", "read_references", "json_records", "natural_key"]

VERL_REQUIRED = ("input", "output", "score", "step")


from coevo.core.records import RecordError as Bad, json_records, jsonl_records as _jsonl, read_text as _read_text  # noqa: E402,F401


def natural_key(s: str) -> list:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s)]


def _bad(path: Path, line: int | None, reason: str) -> dict:
    return {"file": str(path), "line": line, "reason": reason}


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _verl_problem(rec: Any) -> str | None:
    if not isinstance(rec, dict):
        return f"not a JSON object ({type(rec).__name__})"
    missing = [k for k in VERL_REQUIRED if k not in rec]
    if missing:
        return f"missing field(s) {', '.join(missing)}"
    for k in ("input", "output"):
        if not isinstance(rec[k], str):
            return f"field {k!r} is {type(rec[k]).__name__}, not a string"
    if not _number(rec["score"]):
        return f"field 'score' is not a finite number ({rec['score']!r})"
    if isinstance(rec["step"], bool) or not isinstance(rec["step"], int):
        return f"field 'step' is not an integer ({rec['step']!r})"
    return None


def read_verl_dump(d: Path) -> tuple[list[dict], list[dict], list[str]]:
    """(records, malformed, files) of a verl ``rollout_data_dir``; each record gets ``_file``, ``_line``."""
    d = Path(d)
    if not d.is_dir():
        raise Bad(f"{d} is not a directory (give verl's trainer.rollout_data_dir)")
    files = sorted(d.glob("*.jsonl"), key=lambda p: natural_key(p.name))
    if not files:
        raise Bad(f"{d} holds no *.jsonl files (verl writes one {{step}}.jsonl per step)")
    recs, bad = [], []
    for f in files:
        for n, obj, err in _jsonl(_read_text(f)):
            why = err or _verl_problem(obj)
            if why:
                bad.append(_bad(f, n, why))
            else:
                recs.append(dict(obj, _file=f.name, _line=n))
    return recs, bad, [str(f) for f in files]


from coevo.ledger.imported import read_references  # noqa: E402,F401 (re-exported)
