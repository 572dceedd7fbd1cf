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
* R-Zero results: R-Zero's recipe folder reads them and builds the rows
  (``coevo.recipes.rzero.importer``: one round per ``save_name``, one ``candidate`` task per
  question, one Solver rollout per entry of ``results``, "None" = no answer); this module writes
  the run directory.
"""
from __future__ import annotations

import json
import time
from collections import defaultdict
from pathlib import Path
from typing import Optional

import yaml

from coevo.integrations.common import as_reference, build_verifier, extract_answer, rollout_row_of, task_row_of
from coevo.integrations.formats import Bad, natural_key, read_references, read_verl_dump
from coevo.ledger.rows import dumps, reward_row, verdict_row_of

__all__ = ["Bad", "import_verl", "import_rzero", "import_parts", "check_out"]

RECIPE = {"verl": "coevo.integrations.imported:verl", "parts": "coevo.integrations.imported:adapter"}


def recipe_of(source: str) -> str:
    """``runs.recipe`` of an imported run (an entry of ``coevo.integrations.imported.RECIPES``)."""
    return RECIPE.get(source, f"coevo.integrations.imported:{source}")
VERL_BASE = ("input", "output", "gts", "score", "step", "_file", "_line")


def check_out(out: Path) -> None:
    """RUN must be new or an empty directory (an import never appends to a run)."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise Bad(f"{out} exists and is not empty: import into a new run directory")


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


# ---------------------------------------------------------------------- R-Zero question evaluation
def import_rzero(src: Path, out: Path, references: Optional[Path] = None, delta: float = 0.2,
                 verifier: str = "math", workers: Optional[int] = None) -> dict:
    """R-Zero ``*_results.json`` files into the run directory ``out``: the reading and the rows are
    R-Zero's recipe folder's (``coevo.recipes.rzero.importer``). ``delta`` = 0.2 keeps
    0.3 <= score <= 0.7 (``question_evaluate/upload.py``'s defaults)."""
    from coevo.recipes.rzero import NAME
    from coevo.recipes.rzero import importer as rz
    from coevo.recipes.rzero.summary import round_columns

    src, out = Path(src), Path(out)
    check_out(out)
    items, bad, files = rz.read_results(src)
    refs: dict[str, str] = {}
    if references is not None:
        refs, bad_refs = read_references(Path(references))
        bad += bad_refs
        files.append(str(references))
    if not items:
        raise Bad(f"no readable question in {src} ({len(bad)} malformed records; first: {_first(bad)})")
    rv = build_verifier(verifier, None, workers)
    steps = {}
    for rnd, save in enumerate(rz.saves(items), 1):
        rows, metrics = rz.round_rows(out.name, rnd, [it for it in items if it["_save"] == save], refs, rv, delta)
        metrics["save_name"] = save
        steps[rnd] = (rnd, "dataset", rows, metrics)
    cfg = rz.import_config(recipe_of(NAME), src, verifier, references, delta)
    return _write_run(out, NAME, cfg, steps, files, len(items), bad, rv, round_columns=round_columns)


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
                for r in led.query(f"SELECT * FROM {table}"):
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


# ---------------------------------------------------------------------- writing the run directory
def _first(bad: list[dict]) -> str:
    return f"{bad[0]['file']}:{bad[0]['line']}: {bad[0]['reason']}" if bad else "-"


def _write_run(out: Path, source: str, cfg: dict, steps: dict, files: list[str], n_records: int, bad: list[dict],
               rv, round_columns=None) -> dict:
    """Write ledger.duckdb (one transaction per step, as the runner), config.yaml, import.json, summary.json;
    ``round_columns(led, run_id, round)``: the source recipe's round table columns (summary ``rounds``)."""
    from coevo.ledger import views
    from coevo.ledger.store import Ledger
    from coevo.runlock import writer_guard

    t0 = time.time()
    out.mkdir(parents=True, exist_ok=True)
    with writer_guard(out, Bad):
        led = Ledger(out / "ledger.duckdb")
        try:
            run_id = out.name
            led.append("runs", [{"run_id": run_id, "created_at": t0, "recipe": cfg["recipe"], "world": source,
                                 "seed": None, "config_yaml": yaml.safe_dump(cfg, sort_keys=False),
                                 "coevo_version": _version()}])
            for i, (s, (rnd, phase, rows, metrics)) in enumerate(sorted(steps.items())):
                with led.step(run_id, s, rnd, phase, i) as w:
                    w.extend(rows)
                    w.metrics = metrics
            counts = {t: led.count(t, run_id) for t in ("steps", "tasks", "rollouts", "verdicts", "rewards",
                                                       "task_stats")}
            rounds = sorted({rnd for rnd, *_ in steps.values()})
            round_rows = [{**views.round_row(led, run_id, r), **round_columns(led, run_id, r)}
                          for r in rounds] if round_columns is not None else []
        finally:
            led.close()
        info = {"source": source, "path": cfg["import"]["path"], "files": files, "n_records": n_records,
                "n_malformed": len(bad), "malformed": bad,
                "verifier": {"kind": rv.kind, "version": rv.version} if rv is not None else None}
        (out / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
        (out / "import.json").write_text(json.dumps(info, indent=1, default=float) + "\n")
        summary = {"recipe": cfg["recipe"], "preset": f"import:{source}", "run_id": out.name, "imported": True,
                   "source": source, "n_records": n_records, "n_malformed": len(bad), "counts": counts,
                   "rounds": round_rows, "steps": {str(s): m for s, (_, _, _, m) in sorted(steps.items())},
                   "wall_seconds": time.time() - t0}
        (out / "summary.json").write_text(json.dumps(summary, indent=1, default=float) + "\n")
    return {"run_dir": str(out), "source": source, "files": files, "n_records": n_records, "n_malformed": len(bad),
            "malformed": bad, "counts": counts}


def _version() -> str:
    from coevo import __version__

    return str(__version__)


def result_line(res: dict) -> str:
    """One line for the terminal."""
    c = res["counts"]
    return (f"imported {res['n_records']} records from {len(res['files'])} file(s) into {res['run_dir']}: "
            f"{c['steps']} steps, {c['tasks']} tasks, {c['rollouts']} rollouts, {c['verdicts']} verdicts; "
            f"{res['n_malformed']} malformed" + (f" (first: {_first(res['malformed'])})" if res["malformed"] else ""))
