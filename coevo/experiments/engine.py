"""Run an experiment's grid and analyse it: local processes (``jobs`` at a time) or Ray tasks on a
cluster (each task asks for its run's declared CPUs / GPUs), then the claims on the finished runs.

Layout of ``out``::

    experiment.json        the grid (run name -> ``coevo run`` arguments): a rerun with another grid is refused
    runs/<arm>-s<seed>/    one normal coevo run directory per cell
    runs/<name>.log        the child's output; runs/<name>.timing.json its wall / CPU seconds
    result.json            the result (below); report.html the claims, one plot each

Resumable: each cell is reused when finished (summary.json written after its last step),
resumed with ``coevo run --resume`` when unfinished, started otherwise; a kill -9 of the
experiment's process group loses at most the uncommitted step of each running child.

The result is a pure function of the finished run directories: identical whatever the
executor and the job count.  Seconds are kept apart under ``"timing"`` (``comparable()`` drops
it).  A failed run is named on one line as it fails; the other runs go on, the analysis uses
what finished, ``failed`` lists the failures, and the command exits non-zero.
"""
from __future__ import annotations

import json
import math
import os
import queue
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, TextIO

from coevo.experiments.claims import TESTED, evaluate, judge_rows
from coevo.experiments.rundirs import (LOG_NAME, WarmWorker, clean_summary, read_summary, run_child, run_state,
                                       stage_seconds, steps_done)
from coevo.experiments.spec import Experiment, RunSpec, Runs, manifest_conflict, read_manifest

__all__ = ["run_experiment", "analyze", "comparable", "ExperimentError"]
_ = LOG_NAME


class ExperimentError(Exception):
    """A problem the user can fix (bad grid, occupied output directory, unreachable cluster)."""


class Progress:
    """Console lines: runs done / total and each running run's committed step; errors as they come."""

    def __init__(self, name: str, grid: List[RunSpec], runs_dir: Path, stream: Optional[TextIO]):
        self.name, self.grid, self.runs_dir, self.stream = name, grid, runs_dir, stream
        self.done: set = set()
        self.running: set = set()
        self.last, self.last_t = "", 0.0
        self.lock = threading.Lock()

    def say(self, msg: str) -> None:
        if self.stream is not None:
            with self.lock:
                self.stream.write(msg + "\n")
                self.stream.flush()

    def tick(self, force: bool = False) -> None:
        with self.lock:  # worker threads change both sets
            running, done = sorted(self.running), len(self.done)
        run = ", ".join(f"{n} ({_steps(steps_done(self.runs_dir / n))})" for n in running)
        line = f"[{self.name}] {done}/{len(self.grid)} runs done" + (f"; running {run}" if run else "")
        now = time.monotonic()
        if force or line != self.last and now - self.last_t > 2.0 or now - self.last_t > 30.0:
            self.last, self.last_t = line, now
            self.say(line)


def _steps(last: int) -> str:
    return "starting" if last < 0 else f"{last + 1} steps done"


def _timing_path(runs_dir: Path, name: str) -> Path:
    return runs_dir / f"{name}.timing.json"


def _record(runs_dir: Path, name: str, res: dict) -> None:
    """Add one child's seconds to the run's timing file (a resumed run sums its pieces)."""
    p = _timing_path(runs_dir, name)
    try:
        old = json.loads(p.read_text())
    except (OSError, ValueError):
        old = {"wall_s": 0.0, "cpu_s": 0.0, "children": 0}
    if res["command"] != "reused":
        old = {"wall_s": old["wall_s"] + res["wall_s"], "cpu_s": old["cpu_s"] + res["cpu_s"],
               "children": old["children"] + 1}
        tmp = p.with_suffix(".tmp")
        tmp.write_text(json.dumps(old))
        os.replace(tmp, p)


def _finish(prog: Progress, spec: RunSpec, res: dict, failed: Dict[str, str]) -> None:
    _record(prog.runs_dir, spec.name, res)
    with prog.lock:
        prog.running.discard(spec.name)
        prog.done.add(spec.name)
    if res["error"]:
        failed[spec.name] = res["error"]
        prog.say(f"error: run {spec.name} failed: {res['error']} (log: {prog.runs_dir / (spec.name + '.log')})")
    prog.tick(force=True)


def _execute_local(grid: List[RunSpec], prog: Progress, jobs: int) -> Dict[str, str]:
    """``jobs`` threads, each running one child at a time; returns {run name: error}."""
    todo: "queue.Queue[RunSpec]" = queue.Queue()
    for r in grid:
        todo.put(r)
    failed: Dict[str, str] = {}
    warm = os.environ.get("COEVO_EXPERIMENT_WARM", "1") != "0"  # 0: a fresh interpreter per run

    def worker() -> None:
        ww = WarmWorker() if warm else None
        try:
            while True:
                try:
                    spec = todo.get_nowait()
                except queue.Empty:
                    return
                with prog.lock:
                    prog.running.add(spec.name)
                d, log = prog.runs_dir / spec.name, prog.runs_dir / f"{spec.name}.log"
                try:
                    res = ww.run(d, spec.run_args(), log) if ww else run_child(d, spec.run_args(), log)
                except OSError as e:  # cannot start the child (disk, fork): this run fails, the others go on
                    res = {"rc": 1, "wall_s": 0.0, "cpu_s": 0.0, "command": "run",
                           "error": f"{type(e).__name__}: {e}"}
                _finish(prog, spec, res, failed)
        finally:
            if ww:
                ww.close()

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(max(1, min(jobs, len(grid))))]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        for t in threads:
            t.join(timeout=1.0)
        prog.tick()
    return failed


def _execute_ray(grid: List[RunSpec], prog: Progress, address: str, jobs: Optional[int]) -> Dict[str, str]:
    """One Ray task per run (``num_cpus`` / ``num_gpus`` = the run's resources); the run directories
    must be on a filesystem every node sees (the tests' local cluster: this machine)."""
    from coevo.executors.base import ExecutorError
    from coevo.executors.ray_executor import import_ray, reach

    try:
        ray = import_ray()
        reach(address)
    except ExecutorError as e:
        raise ExperimentError(str(e)) from None
    ray.init(address=address, log_to_driver=False, logging_level="ERROR", include_dashboard=False)
    try:
        task = ray.remote(run_child)
        pending, inflight, failed = list(grid), {}, {}
        cap = len(grid) if not jobs else max(1, jobs)
        while pending or inflight:
            while pending and len(inflight) < cap:
                spec = pending.pop(0)
                d = prog.runs_dir / spec.name
                ref = task.options(num_cpus=spec.resources.cpus, num_gpus=spec.resources.gpus, max_retries=1).remote(
                    d, spec.run_args(), prog.runs_dir / f"{spec.name}.log", None)
                inflight[ref] = spec
                with prog.lock:
                    prog.running.add(spec.name)
            ready, _ = ray.wait(list(inflight), num_returns=1, timeout=1.0)
            for ref in ready:
                spec = inflight.pop(ref)
                try:
                    res = ray.get(ref)
                except Exception as e:  # noqa: BLE001 - a lost node / task: one line, the others go on
                    res = {"rc": 1, "wall_s": 0.0, "cpu_s": 0.0, "command": "run",
                           "error": f"Ray task failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"}
                _finish(prog, spec, res, failed)
            prog.tick()
        return failed
    finally:
        ray.shutdown()


def _prepare(exp: Experiment, out: Path, budget: str, seeds: Optional[int], preset: Optional[str],
             extra: List[str]) -> List[RunSpec]:
    try:
        grid = exp.grid(budget, seeds, preset, extra)
    except ValueError as e:
        raise ExperimentError(str(e)) from None
    out.mkdir(parents=True, exist_ok=True)
    (out / "runs").mkdir(exist_ok=True)
    man = exp.manifest(budget, grid)
    old = read_manifest(out / "experiment.json")
    if old is not None:
        why = manifest_conflict(old, man)
        if why:
            raise ExperimentError(f"{out} cannot be reused for this grid: {why}; pass another --out")
        man["runs"] = {**old.get("runs", {}), **man["runs"]}
    tmp = out / "experiment.json.tmp"
    tmp.write_text(json.dumps(man, indent=2))
    os.replace(tmp, out / "experiment.json")
    return grid


def run_experiment(exp: Experiment, out: Path, budget: str = "default", seeds: Optional[int] = None,
                   jobs: Optional[int] = None, executor: str = "local", address: Optional[str] = None,
                   stream: Optional[TextIO] = sys.stderr, preset: Optional[str] = None,
                   extra: Optional[List[str]] = None, allow_partial: bool = False) -> dict:
    """Run (or continue) the grid, then analyse it; writes result.json and report.html in ``out``.
    ``preset`` / ``extra``: every arm's preset replaced / overrides added (Experiment.grid)."""
    t0 = time.perf_counter()
    out = Path(out).resolve()
    grid = _prepare(exp, out, budget, seeds, preset, list(extra or []))
    runs_dir = out / "runs"
    prog = Progress(exp.name, grid, runs_dir, stream)
    reused = [r for r in grid if run_state(runs_dir / r.name) == "finished"]
    prog.done.update(r.name for r in reused)
    prog.tick(force=True)
    todo = [r for r in grid if r not in reused]
    if executor == "ray":
        if not address:
            raise ExperimentError("--executor ray needs --address HOST:PORT")
        failed = _execute_ray(todo, prog, address, jobs) if todo else {}
    elif executor == "local":
        failed = _execute_local(todo, prog, jobs or 1) if todo else {}
    else:
        raise ExperimentError(f"--executor must be local or ray, got {executor!r}")
    result = analyze(exp, grid, out, budget, failed, allow_partial)
    if preset or extra:
        result["preset_override"], result["extra_overrides"] = preset, list(extra or [])
    result["timing"] = timing(grid, runs_dir, time.perf_counter() - t0, jobs, executor, len(reused))
    write_result(out, result)
    return result


def analyze(exp: Experiment, grid: List[RunSpec], out: Path, budget: str, failed: Dict[str, str],
            allow_partial: bool = False) -> dict:
    """The result of the finished runs (no seconds in it).  Verdicts: ``claims.judge_rows`` (the primary at
    0.05, the secondaries Holm-adjusted, planned powers from the design); a smoke budget prints
    ``smoke: no verdict`` and a grid with a failed or missing run ``incomplete`` (unless ``allow_partial``)."""
    from coevo.experiments.montecarlo import familywise_false_supported, planned_powers

    runs_dir = Path(out) / "runs"
    summaries, dirs, runs = {}, {}, {}
    for r in grid:
        s = read_summary(runs_dir / r.name)
        state = "finished" if s is not None else "failed" if r.name in failed else run_state(runs_dir / r.name)
        runs[r.name] = {"arm": r.arm, "seed": r.seed, "status": state,
                        "summary": clean_summary(s) if s is not None else None}
        if s is not None:
            summaries[(r.arm, r.seed)] = clean_summary(s)
            dirs[(r.arm, r.seed)] = runs_dir / r.name
    view = Runs(summaries, dirs)
    seeds = sorted({r.seed for r in grid})
    claims = judge_rows([_safe_evaluate(c, view) for c in exp.claims], planned_powers(exp, len(seeds)))
    complete = len(summaries) == len(grid)
    missing = [r.name for r in grid if (r.arm, r.seed) not in summaries]
    smoke = budget in exp.smoke
    for row in claims:
        if smoke:
            row["verdict"], row["why"] = SMOKE, f"budget {budget!r} exercises the grid, not the science"
        elif not complete and not allow_partial and row.get("role") in TESTED:
            row["verdict"], row["why"] = INCOMPLETE, f"{len(missing)} of {len(grid)} runs missing: {', '.join(missing)}"
    tables = {}
    if exp.tables is not None and summaries:
        try:
            tables = exp.tables(view)
        except Exception as e:  # noqa: BLE001 - a table of a partial grid: say so, keep the claims
            tables = {"error": {"head": ["error"], "rows": [[f"{type(e).__name__}: {e}"]]}}
    if smoke:
        tables = _scrub(tables)
    fw = familywise_false_supported(exp, len(seeds))
    return _clean({
        "experiment": exp.name, "description": exp.description, "budget": budget, "smoke": smoke,
        "budget_note": exp.notes.get(budget, ""), "seeds": seeds,
        "arms": {a.name: {"preset": a.preset, "overrides": list(a.overrides)} for a in exp.arms},
        "budget_overrides": list(exp.budgets[budget]), "complete": complete, "missing": missing,
        "calibration": [c.as_dict() for c in exp.calibration], "seeded": dict(exp.seeded),
        "allow_partial": bool(allow_partial and not complete),
        "familywise_false_supported": fw["rate"], "familywise_mc_se": fw["mc_se"],
        "failed": [{"run": n, "error": failed[n]} for n in sorted(failed)],
        "claims": claims, "tables": tables, "runs": runs})


SMOKE, INCOMPLETE = "smoke: no verdict", "incomplete"
VERDICT_WORDS = ("supported", "refuted", "inconclusive", "degenerate", "reproduced")


def _scrub(tables: dict) -> dict:
    """A smoke budget's tables: any cell that is a verdict (a pooled prediction's, say) reads ``smoke: no verdict``."""
    return {title: {**t, "rows": [[SMOKE if isinstance(x, str) and x.startswith(VERDICT_WORDS) else x for x in row]
                                  for row in t["rows"]]} for title, t in tables.items()}


def _safe_evaluate(claim, view: Runs) -> dict:
    try:
        return evaluate(claim, view)
    except Exception as e:  # noqa: BLE001 - one claim on a partial grid must not hide the others
        return {"name": claim.name, "role": claim.role, "statement": claim.statement, "statistic": claim.statistic,
                "verdict": "not evaluated", "why": f"{type(e).__name__}: {e}", "source_value": claim.source_value,
                "headline": claim.role == "primary", "direction": claim.direction, "scale": claim.scale,
                "unit": claim.unit, "failure_line": claim.failure, "success_line": claim.success_line,
                "estimate": float("nan"), "ci_low": float("nan"), "ci_high": float("nan"), "se": float("nan"),
                "df": 0, "n": 0, "p": float("nan"), "degenerate": False}


def timing(grid: List[RunSpec], runs_dir: Path, wall: float, jobs, executor: str, reused: int) -> dict:
    """Seconds: this invocation's wall, each run's summed child wall / CPU seconds, and the share of
    the runs' time in model compute (forward / backward passes; ledger per-stage timings)."""
    per, stages = {}, {}
    for r in grid:
        try:
            per[r.name] = json.loads(_timing_path(runs_dir, r.name).read_text())
        except (OSError, ValueError):
            per[r.name] = None
        for k, v in stage_seconds(runs_dir / r.name).items():
            stages[k] = stages.get(k, 0.0) + v
    known = [p for p in per.values() if p]
    run_wall = sum(p["wall_s"] for p in known)
    mc, steps_total = stages.get("model_compute", 0.0), stages.get("total", 0.0)
    return _clean({
        "wall_s": wall, "executor": executor, "jobs": jobs, "runs_reused": reused, "runs": per,
        "runs_wall_s": run_wall, "runs_cpu_s": sum(p["cpu_s"] for p in known), "stage_seconds": stages,
        "per_arm": per_arm_seconds(grid, per),
        "model_compute_share_of_steps": mc / steps_total if steps_total else None,
        "model_compute_share_of_run_wall": mc / run_wall if run_wall else None})


def per_arm_seconds(grid: List[RunSpec], per: Dict[str, Optional[dict]]) -> dict:
    """Mean CPU and wall seconds of one run per arm (arms in grid order; runs without timing left out)."""
    out: Dict[str, dict] = {}
    for r in grid:
        if per.get(r.name) and r.arm not in out:
            rows = [per[g.name] for g in grid if g.arm == r.arm and per.get(g.name)]
            out[r.arm] = {"runs": len(rows), "cpu_s": sum(p["cpu_s"] for p in rows) / len(rows),
                          "wall_s": sum(p["wall_s"] for p in rows) / len(rows)}
    return out


def _clean(x):
    """NaN / inf -> None (valid JSON, and equal to itself)."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: _clean(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_clean(v) for v in x]
    return x


def comparable(result: dict) -> dict:
    """The result without its seconds: what two executors / job counts must agree on."""
    return {k: v for k, v in result.items() if k not in ("timing", "report", "report_error")}


def write_result(out: Path, result: dict, report: Optional[Callable] = None) -> None:
    tmp = out / "result.json.tmp"
    tmp.write_text(json.dumps(result, indent=2, sort_keys=True))
    os.replace(tmp, out / "result.json")
    from coevo.experiments.report import write_report

    try:
        result["report"] = str(write_report(result, out / "report.html"))
    except Exception as e:  # noqa: BLE001 - the JSON is written; say why the HTML is not
        result["report_error"] = f"{type(e).__name__}: {e}"
