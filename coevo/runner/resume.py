"""``coevo run --resume RUN [--set key=value ...]``: a resumed run keeps the config it started with, except for
the few keys that may safely change, and says so.

Which keys are safe, and the config with them applied: ``coevo.knobs.prepare_resume`` (no torch import, so a
refusal is quick).  **Safe keys** change nothing the run has computed and nothing it computes from the same point on:

* ``<section>.rounds`` of the run's recipe (``rzero.rounds``, ``synco.rounds``, ``drzero.rounds``, ...):
  more rounds continue a finished run, fewer end it sooner.  Allowed only while every completed step is
  still a step of the new plan, at the same place (checked against the ledger before any step runs; e.g.
  Dr. Zero's post-hoc audit, planned before the last evaluation, cannot move once it has run);
* ``tracking.*`` (copies of committed steps for TensorBoard / W&B; the ledger stays the record);
* ``note`` (free text);
* ``max_error_rate`` (the share of failed endpoint calls above which the command exits 2; changes no number).

Everything else is refused with one line: the world, the eval set (its size or seed: the rounds' accuracies
would no longer be on one set), sampling, the loss, batch sizes, seeds, the backend.  A change is applied,
written to ``config.yaml`` (the config the rest of the run follows), appended to ``resumes.jsonl`` (one JSON
line per resume that changed something: when, after which step, each key's old and new value) and printed.
A damaged or missing ``config.yaml`` is one line, never a traceback.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from coevo.knobs import RESUME_RECORD as RECORD
from coevo.knobs import KnobError, prepare_resume
from coevo.ledger import views
from coevo.runner.loop import RunError, stamped


def check_plan(loop) -> int:
    """Every committed step must be the step of the (new) plan at its place; returns the last committed step."""
    done = views.step_metrics(loop.led, loop.run_id)
    plan = {s.step: s for s in loop.plan}
    for row in done:
        s = plan.get(row["step"])
        if s is None or (s.round, s.phase, s.phase_step) != (row["round"], row["phase"], row["phase_step"]):
            where = "has no such step" if s is None else f"has round {s.round} {s.phase} {s.phase_step + 1} there"
            raise RunError(f"cannot resume with this config: completed step {row['step']} (round {row['round']} "
                           f"{row['phase']} {row['phase_step'] + 1}) is not in its plan (the plan {where}); a "
                           f"resumed run keeps the steps it completed")
    return done[-1]["step"] if done else -1


def record_changes(run_dir: Path, cfg, changes: dict, after_step: int) -> None:
    """Write the new config.yaml (atomically), append the change to resumes.jsonl, print it (stderr)."""
    from coevo import __version__
    from coevo.config import dump_config

    run_dir = Path(run_dir)
    tmp = run_dir / f".config.yaml.tmp-{os.getpid()}"
    tmp.write_text(dump_config(cfg))
    os.replace(tmp, run_dir / "config.yaml")
    rec = {"at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "after_step": after_step, "coevo_version": __version__,
           "changes": {k: {"from": a, "to": b} for k, (a, b) in changes.items()}}
    with open(run_dir / RECORD, "a") as f:
        f.write(json.dumps(rec) + "\n")
    said = "; ".join(f"{k} {json.dumps(a)} -> {json.dumps(b)}" for k, (a, b) in changes.items())
    print(f"resume after step {after_step}: {said} (recorded in {run_dir / RECORD} and config.yaml)", file=sys.stderr,
          flush=True)


def resume_with(run_dir: Path, execute, overrides=(), quiet: bool = False, report: bool = True) -> Path:
    """Continue ``run_dir`` from its last committed step, with the safe ``overrides`` applied and recorded."""
    from coevo.runlock import writer_guard

    run_dir = Path(run_dir)
    try:
        cfg, changes = prepare_resume(run_dir, list(overrides))
    except KnobError as e:
        raise RunError(str(e)) from None

    def on_resume(loop) -> None:  # after the state is loaded, before any step runs
        last = check_plan(loop)
        if changes:
            record_changes(run_dir, cfg, changes, last)

    with stamped(run_dir), writer_guard(run_dir, RunError):  # stamped: an interruption names the step to resume
        execute(cfg, run_dir, fresh=not (run_dir / "ledger.duckdb").exists(), quiet=quiet, report=report,
                 on_resume=on_resume)
    return run_dir
