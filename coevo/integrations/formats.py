"""Readers of other frameworks' rollout files, with every malformed line counted and located.

* **verl rollout dump** (``trainer.rollout_data_dir``; ``_dump_generations`` in
  ``verl/trainer/ppo/ray_trainer.py``): one ``{global_step}.jsonl`` per training step, one JSON
  object per line with ``input`` (decoded prompt), ``output`` (decoded response), ``gts``
  (``reward_model.ground_truth`` or null), ``score`` (the sequence's summed token-level score),
  ``step``, plus every reward extra field whose list has one entry per sample. A GRPO group is
  the ``rollout.n`` consecutive lines with the same ``input``.
* **R-Zero question evaluation** (``question_evaluate/evaluate.py``): ``{save_name}_{suffix}_results.json``,
  a JSON array (``indent=4``) of ``{"question", "answer" (the majority answer), "score" (its
  share of the boxed answers), "results" (the non-empty boxed answers of the 9 samples)}``;
  ``question_evaluate/upload.py`` keeps ``0.3 <= score <= 0.7`` for the Solver.

A malformed record is returned as ``{"file", "line", "reason"}`` (1-based line of the record's
start), never dropped silently.
"""
from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

__all__ = ["Bad", "read_verl_dump", "read_rzero", "read_references", "json_records", "natural_key"]

VERL_REQUIRED = ("input", "output", "score", "step")
_RESULTS_RE = re.compile(r"^(?P<save>.+)_(?P<suffix>\d+)_results\.json$")


from coevo.core.records import RecordError as Bad, _jsonl, _read_text, json_records  # noqa: E402,F401


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


def _rzero_problem(it: Any) -> str | None:
    if not isinstance(it, dict):
        return f"not a JSON object ({type(it).__name__})"
    missing = [k for k in ("question", "answer", "score", "results") if k not in it]
    if missing:
        hint = " (a question_generate file? import the *_results.json of question_evaluate)" \
            if "results" in missing and "score" in it else ""
        return f"missing field(s) {', '.join(missing)}{hint}"
    if not isinstance(it["question"], str) or not isinstance(it["answer"], str):
        return "'question' and 'answer' must be strings"
    if not _number(it["score"]) or not 0 <= it["score"] <= 1:
        return f"'score' is not a share in [0, 1] ({it['score']!r})"
    if not isinstance(it["results"], list) or not all(isinstance(r, str) for r in it["results"]):
        return "'results' is not a list of strings"
    return None


def read_rzero(path: Path) -> tuple[list[dict], list[dict], list[str]]:
    """(items, malformed, files) of R-Zero result files: one file or every ``*_results.json`` of a
    directory (else its ``*.json``). Each item gets ``_file``, ``_line`` and ``_save`` (the
    ``save_name``: one R-Zero iteration; files ``{save_name}_{suffix}_results.json`` share it)."""
    path = Path(path)
    if path.is_dir():
        files = sorted(path.glob("*_results.json"), key=lambda p: natural_key(p.name)) or \
            sorted(path.glob("*.json"), key=lambda p: natural_key(p.name))
        if not files:
            raise Bad(f"{path} holds no *_results.json or *.json files")
    elif path.is_file():
        files = [path]
    else:
        raise Bad(f"{path} does not exist")
    items, bad = [], []
    for f in files:
        m = _RESULTS_RE.match(f.name)
        save = m.group("save") if m else f.stem
        for n, obj, err in json_records(f):
            why = err or _rzero_problem(obj)
            if why:
                bad.append(_bad(f, n, why))
            else:
                items.append(dict(obj, _file=f.name, _line=n, _save=save))
    return items, bad, [str(f) for f in files]


def read_references(path: Path) -> tuple[dict[str, str], list[dict]]:
    """question -> reference answer from a JSON array or JSON-lines file of objects with
    ``question`` and one of ``reference`` / ``ground_truth`` / ``answer`` (first present)."""
    path = Path(path)
    if not path.is_file():
        raise Bad(f"references file {path} does not exist")
    refs, bad = {}, []
    for n, obj, err in json_records(path):
        if err:
            bad.append(_bad(path, n, err))
            continue
        key = next((k for k in ("reference", "ground_truth", "answer") if isinstance(obj, dict) and k in obj), None)
        if not isinstance(obj, dict) or not isinstance(obj.get("question"), str) or key is None:
            bad.append(_bad(path, n, "needs 'question' and one of 'reference', 'ground_truth', 'answer'"))
            continue
        refs[obj["question"]] = str(obj[key])
    return refs, bad
