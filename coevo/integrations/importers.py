"""``coevo import``: other frameworks' rollouts (and the verl adapter's ledger parts) into a coevo
run directory — ``ledger.duckdb`` (runs, steps, tasks, rollouts, verdicts, rewards, as the native
recipes write them), ``summary.json``, ``config.yaml`` and ``import.json`` (files read, records,
every malformed line with its file and line number) — so ``coevo audit`` / ``coevo report`` run.

Mapping (docs/verl.md):

* verl dump: one step per ``step`` value; one task per distinct ``input`` of a step (the GRPO
  group); one Solver rollout per line, its answer extracted and judged by coevo's verifier
  against ``gts`` — target ``oracle`` (``gts=oracle``: a dataset reference; rollouts purpose
  ``p_hat``, so the bearing rate and the null model read them) or ``pseudo_label``
  (``gts=pseudo_label``: R-Zero-style labels; purpose ``train``); verl's ``score`` becomes the
  Solver's reward row (extra fields in ``components_json``).
* R-Zero results: R-Zero's recipe folder (``coevo.recipes.rzero.importer.import_rzero``, re-exported
  here; one round per ``save_name``, one ``candidate`` task per question, one Solver rollout per
  entry of ``results``, "None" = no answer).
The run directory is written by ``coevo.ledger.imported.write_run``.
"""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Optional

from coevo.integrations.common import as_reference, build_verifier, extract_answer, rollout_row_of, task_row_of
from coevo.integrations.formats import natural_key, read_verl_dump
from coevo.ledger.imported import Bad, check_out, first_bad as _first, result_line, write_run as _write_run  # noqa: F401
from coevo.ledger.store import dumps, reward_row, verdict_row_of
from coevo.recipes.rzero.importer import import_rzero  # noqa: F401 (re-exported: R-Zero's folder imports its files)

__all__ = ["Bad", "import_verl", "import_rzero", "import_parts", "check_out", "result_line"]

RECIPE = {"verl": "coevo.integrations.imported:verl", "parts": "coevo.integrations.imported:adapter"}


def recipe_of(source: str) -> str:
    """``runs.recipe`` of an imported run (an entry of ``coevo.integrations.imported.RECIPES``)."""
    return RECIPE.get(source, f"coevo.integrations.imported:{source}")
VERL_BASE = ("input", "output", "gts", "score", "step", "_file", "_line")


# ---------------------------------------------------------------------- verl dump
def _verl_step(run_id: str, step: int, recs: list[dict], verdicts: list, gts_mode: str, extract: str) -> tuple:
    rows: dict[str, list] = defaultdict(list)
    groups: dict[str, list[int]] = {}
    for i, r in enumerate(recs):
        groups.setdefault(r["input"], []).append(i)
    target, purpose = ("oracle", "p_hat") if gts_mode == "oracle" else ("pseudo_label", "train")
    for j, (prompt, idx) in enumerate(groups.items()):
        tid = f"verl-s{step}-p{j}"
        ref = as_reference(recs[idx[0]].get("gts"))
        judged = [verdicts[i].value for i in idx if verdicts[i].value is not None]
        rows["tasks"].append(task_row_of(
            run_id, 1, step, tid, "verl", prompt, ref, parse_ok=True, prompt_version="verl",
            oracle_answer=ref if gts_mode == "oracle" else None, pseudo_label=ref if gts_mode != "oracle" else None,
            p_hat=sum(judged) / len(judged) if judged else None,
            meta_json=dumps({"n": len(idx), "first_line": f"{recs[idx[0]]['_file']}:{recs[idx[0]]['_line']}"})))
        for k, i in enumerate(idx):
            r, rid = recs[i], f"{tid}-{k}"
            rows["rollouts"].append(rollout_row_of(run_id, 1, step, rid, tid, "solver", purpose, k, r["output"],
                                                   extract_answer(r["output"], extract), "verl"))
            rows["verdicts"].append(verdict_row_of(run_id, step, rid, tid, target, verdicts[i]))
            comp = {k2: v for k2, v in r.items() if k2 not in VERL_BASE}
            comp["line"] = f"{r['_file']}:{r['_line']}"
            rows["rewards"].append(reward_row(run_id, step, "solver", rid, tid, float(r["score"]), 0.0, comp))
            rows["rewards"][-1]["advantage"] = None
    vals = [v.value for v in verdicts]
    agree = [int(r["score"] > 0.5) == v for r, v in zip(recs, vals) if v is not None]
    metrics = {"n_prompts": len(groups), "n_rollouts": len(recs),
               "score_mean": sum(r["score"] for r in recs) / len(recs),
               "verdict_mean": (sum(v for v in vals if v is not None) / len(agree)) if agree else None,
               "n_abstained": sum(v is None for v in vals),
               "score_verdict_agreement": sum(agree) / len(agree) if agree else None}
    return dict(rows), metrics


def import_verl(src: Path, out: Path, verifier: str = "math", workers: Optional[int] = None,
                extract: str = "auto", gts: str = "oracle") -> dict:
    """A verl ``rollout_data_dir`` into the run directory ``out`` (see the module docstring)."""
    if gts not in ("oracle", "pseudo_label"):
        raise Bad(f"--gts must be oracle or pseudo_label, got {gts!r}")
    src, out = Path(src), Path(out)
    check_out(out)
    recs, bad, files = read_verl_dump(src)
    if not recs:
        raise Bad(f"no readable record in {src} ({len(bad)} malformed lines; first: {_first(bad)})")
    rv = build_verifier(verifier, None, workers)
    by_step: dict[int, list[dict]] = defaultdict(list)
    for r in recs:
        by_step[int(r["step"])].append(r)
    steps = {}
    for s in sorted(by_step):
        rs = by_step[s]
        verdicts = rv.match_many([(extract_answer(r["output"], extract), as_reference(r.get("gts"))) for r in rs])
        steps[s] = (1, "imported", *_verl_step(out.name, s, rs, verdicts, gts, extract))
    cfg = {"recipe": RECIPE["verl"], "import": {"source": "verl", "path": str(src), "verifier": verifier,
                                                  "extract": extract, "gts": gts}}
    return _write_run(out, "verl", cfg, steps, files, len(recs), bad, rv)


# ---------------------------------------------------------------------- the adapter's ledger parts
def import_parts(src: Path, out: Path) -> dict:
    """Merge the verl adapter's ledger parts (``<COEVO_LEDGER>/parts/*/ledger.duckdb``) into ``out``;
    a part whose writer is still alive is refused (its writer holds ``run.lock``)."""
    from coevo.ledger.store import Ledger, LedgerError
    from coevo.runlock import describe_holder, holder_alive, read_lock

    src, out = Path(src), Path(out)
    check_out(out)
    parts = sorted((src / "parts").glob("*/ledger.duckdb"), key=lambda p: natural_key(p.parent.name))
    if not parts:
        raise Bad(f"{src} holds no ledger parts (expected {src}/parts/<host>-<pid>/ledger.duckdb)")
    by_step: dict[int, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    seen_tasks, bad, n = set(), [], 0
    for p in parts:
        held = read_lock(p.parent)
        if held and holder_alive(held):
            raise Bad(f"ledger part {p.parent} is still being written by {describe_holder(held)}; "
                      "import after training ends")
        try:
            led = Ledger(p, read_only=True)
        except LedgerError as e:
            bad.append({"file": str(p), "line": None, "reason": str(e)})
            continue
        try:
            for table in ("tasks", "rollouts", "verdicts", "rewards", "task_stats"):
                for r in led.rows(table):
                    if table == "tasks":  # the per-sample reward writes its task once per sample
                        if (r["task_id"], r["step"]) in seen_tasks:
                            continue
                        seen_tasks.add((r["task_id"], r["step"]))
                    r["run_id"] = out.name
                    by_step[int(r["step"] if r["step"] is not None else 0)][table].append(r)
                    n += 1
        finally:
            led.close()
    steps = {s: (1, "imported", dict(rows), {"n_rows": sum(len(v) for v in rows.values())})
             for s, rows in sorted(by_step.items())}
    cfg = {"recipe": RECIPE["parts"], "import": {"source": "parts", "path": str(src)}}
    return _write_run(out, "parts", cfg, steps, [str(p) for p in parts], n, bad, None)
