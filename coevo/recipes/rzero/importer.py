"""R-Zero's own files into a coevo run directory: ``coevo import rzero`` (the command:
``coevo/recipes/rzero/commands.py``; ``import_rzero`` here, re-exported by
``coevo.integrations.importers``; the run directory is written by ``coevo.ledger.imported``;
docs/verl.md, "R-Zero").

What R-Zero writes (``question_evaluate/evaluate.py``, ``json.dump(results_all, f, indent=4)``):
``{save_name}_{suffix}_results.json``, a list of ``{question, answer, score, results}``, where
``results`` is mathruler 0.1.0's ``extract_boxed_content`` of each of the 9 samples minus the empty
ones (an empty ``\\boxed{}``), so a sample *without* a box is the string ``"None"`` and groups hold
9 entries unless a sample boxed nothing; ``answer`` is the majority answer and ``score`` its share.

Mapping: one round (= one step, phase ``dataset``) per ``save_name``; one ``candidate`` task per
question (pseudo-label = ``answer``, ``p_hat`` = R-Zero's score, kept iff ``|score - 1/2| <= delta``
and the label is neither empty nor "None", as ``question_evaluate/upload.py`` filters); one Solver
rollout per entry of ``results``, with a ``pseudo_label`` verdict and, where ``--references`` gives
the question's answer, an ``oracle`` verdict. An entry "None" is no answer: its verdicts are
abstentions with reason ``no-answer`` (not the wrong answer "None").
"""
from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any, Optional

from coevo.core.policy import Completion
from coevo.core.records import RecordError, json_records
from coevo.core.world import Task
from coevo.ledger.imported import Bad, check_out, first_bad, read_references, write_run
from coevo.ledger.store import dumps, rollout_row, task_row, verdict_row_of
from coevo.recipes.rzero import CHALLENGER, NAME, SOLVER

__all__ = ["NO_BOX", "read_results", "round_rows", "import_config"]

NO_BOX = "None"  # mathruler 0.1.0's extract_boxed_content when a sample has no \boxed{} (R-Zero's grader)
_RESULTS_RE = re.compile(r"^(?P<save>.+)_(?P<suffix>\d+)_results\.json$")
ROLES = (SOLVER, CHALLENGER)


def _natural_key(s: str) -> list:
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s)]


def _share(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and 0 <= x <= 1


def _problem(it: Any) -> Optional[str]:
    if not isinstance(it, dict):
        return f"not a JSON object ({type(it).__name__})"
    missing = [k for k in ("question", "answer", "score", "results") if k not in it]
    if missing:
        hint = " (a question_generate file? import the *_results.json of question_evaluate)" \
            if "results" in missing and "score" in it else ""
        return f"missing field(s) {', '.join(missing)}{hint}"
    if not isinstance(it["question"], str) or not isinstance(it["answer"], str):
        return "'question' and 'answer' must be strings"
    if not _share(it["score"]):
        return f"'score' is not a share in [0, 1] ({it['score']!r})"
    if not isinstance(it["results"], list) or not all(isinstance(r, str) for r in it["results"]):
        return "'results' is not a list of strings"
    return None


def read_results(path: Path) -> tuple[list[dict], list[dict], list[str]]:
    """(items, malformed, files) of R-Zero result files: one file or every ``*_results.json`` of a
    directory (else its ``*.json``). Each item gets ``_file``, ``_line`` and ``_save`` (the
    ``save_name``: one R-Zero iteration; files ``{save_name}_{suffix}_results.json`` share it)."""
    path = Path(path)
    if path.is_dir():
        files = sorted(path.glob("*_results.json"), key=lambda p: _natural_key(p.name)) or \
            sorted(path.glob("*.json"), key=lambda p: _natural_key(p.name))
        if not files:
            raise RecordError(f"{path} holds no *_results.json or *.json files")
    elif path.is_file():
        files = [path]
    else:
        raise RecordError(f"{path} does not exist")
    items, bad = [], []
    for f in files:
        m = _RESULTS_RE.match(f.name)
        save = m.group("save") if m else f.stem
        for n, obj, err in json_records(f):
            why = err or _problem(obj)
            if why:
                bad.append({"file": str(f), "line": n, "reason": why})
            else:
                items.append(dict(obj, _file=f.name, _line=n, _save=save))
    return items, bad, [str(f) for f in files]


def saves(items: list[dict]) -> list[str]:
    """The save_names in R-Zero's iteration order (v1, v2, ..., v10)."""
    return sorted({it["_save"] for it in items}, key=_natural_key)


def _no_box(v):
    """A sample R-Zero recorded as "None": no answer (an abstention with its reason), not the answer "None"."""
    return replace(v, value=None, reason="no-answer",
                   detail={NAME: "mathruler extract_boxed_content returned 'None': the sample has no \\boxed{}"})


def _task(run_id: str, rnd: int, tid: str, question: str, **extra) -> dict:
    row = task_row(run_id, rnd, rnd, tid, "candidate", None, NAME, Task(task_id=tid, question=question), "", **extra)
    row.update({"raw_text": None, "parse_ok": True})
    return row


def _rollout(run_id: str, rnd: int, rid: str, tid: str, k: int, answer: Optional[str]) -> dict:
    c = Completion(prompt="", text="", prompt_ids=[], token_ids=[], logprobs=[], finish_reason="stop",
                   policy_version=NAME)
    row = rollout_row(run_id, rnd, rnd, rid, tid, SOLVER, "candidate", k, c, answer)
    row.update({"text": None, "n_tokens": None, "finish_reason": None, "n_masked_tokens": None})
    return row


def round_rows(run_id: str, rnd: int, items: list[dict], refs: dict, rv, delta: float) -> tuple[dict, dict]:
    """The ledger rows ``{table: rows}`` and step metrics of one R-Zero round (one save_name); ``rv``
    is a run verifier (``match_many``), ``refs`` question -> reference answer."""
    from coevo.recipes.rzero.rewards import keep_for_solver

    rows: dict[str, list] = defaultdict(list)
    pairs, where = [], []
    for j, it in enumerate(items):
        ref = refs.get(it["question"])
        for k, a in enumerate(it["results"]):
            pairs.append((a, it["answer"]))
            where.append((j, k, "pseudo_label"))
            if ref is not None:
                pairs.append((a, ref))
                where.append((j, k, "oracle"))
    verdicts = dict(zip(where, rv.match_many(pairs)))
    for (j, k, tgt), v in list(verdicts.items()):
        if items[j]["results"][k] == NO_BOX:
            verdicts[(j, k, tgt)] = _no_box(v)
    n_kept, n_none_label, diffs = 0, 0, []
    for j, it in enumerate(items):
        tid, ref, label = f"rz-r{rnd}-q{j}", refs.get(it["question"]), it["answer"]
        kept = bool(label not in ("", NO_BOX) and keep_for_solver(it["score"], delta))
        n_kept += kept
        # R-Zero's score counts "None" as an answer; with a "None" label there is no answer to agree with
        ours = None
        if label == NO_BOX:
            n_none_label += 1
        elif it["results"]:
            ours = sum(verdicts[(j, k, "pseudo_label")].value == 1 for k in range(len(it["results"]))) \
                / len(it["results"])
            diffs.append(abs(ours - it["score"]))
        rows["tasks"].append(_task(run_id, rnd, tid, it["question"], oracle_answer=ref, pseudo_label=label,
                                   p_hat=float(it["score"]), kept=kept,
                                   meta_json=dumps({"line": f"{it['_file']}:{it['_line']}", "coevo_p_hat": ours})))
        for k, a in enumerate(it["results"]):
            rid = f"{tid}-candidate-{k}"
            rows["rollouts"].append(_rollout(run_id, rnd, rid, tid, k, None if a == NO_BOX else a))
            for tgt in ("pseudo_label", "oracle"):
                if (j, k, tgt) in verdicts:
                    rows["verdicts"].append(verdict_row_of(run_id, rnd, rid, tid, tgt, verdicts[(j, k, tgt)]))
    metrics = {"n_candidates": len(items), "n_kept": n_kept, "kept_fraction": n_kept / len(items),
               "n_with_reference": sum(it["question"] in refs for it in items),
               "n_label_none": n_none_label,
               "p_hat_rzero_vs_coevo_max_abs_diff": max(diffs) if diffs else None,
               "n_p_hat_disagree": sum(d > 1e-9 for d in diffs)}
    return dict(rows), metrics


def import_config(recipe: str, src: Path, verifier: str, references: Optional[Path], delta: float) -> dict:
    """The imported run's config.yaml."""
    return {"recipe": recipe, "import": {"source": NAME, "path": str(src), "verifier": verifier,
                                         "references": str(references) if references else None},
            NAME: {"delta": delta}}


# runs.recipe of an imported R-Zero run: its registry entry among the imported runs' (coevo report)
IMPORTED_RECIPE = f"coevo.integrations.imported:{NAME}"


def import_rzero(src: Path, out: Path, references: Optional[Path] = None, delta: float = 0.2,
                 verifier: str = "math", workers: Optional[int] = None) -> dict:
    """R-Zero ``*_results.json`` files into the run directory ``out`` (one round per save_name).
    ``delta`` = 0.2 keeps 0.3 <= score <= 0.7 (``question_evaluate/upload.py``'s defaults)."""
    from coevo.recipes.rzero.summary import round_columns
    from coevo.verify.run import shared_run_verifier

    src, out = Path(src), Path(out)
    check_out(out)
    items, bad, files = read_results(src)
    refs: dict[str, str] = {}
    if references is not None:
        refs, bad_refs = read_references(Path(references))
        bad += bad_refs
        files.append(str(references))
    if not items:
        raise Bad(f"no readable question in {src} ({len(bad)} malformed records; first: {first_bad(bad)})")
    rv = shared_run_verifier(verifier, None, workers)
    steps = {}
    for rnd, save in enumerate(saves(items), 1):
        rows, metrics = round_rows(out.name, rnd, [it for it in items if it["_save"] == save], refs, rv, delta)
        metrics["save_name"] = save
        steps[rnd] = (rnd, "dataset", rows, metrics)
    cfg = import_config(IMPORTED_RECIPE, src, verifier, references, delta)
    return write_run(out, NAME, cfg, steps, files, len(items), bad, rv, round_columns=round_columns)
