"""Run orchestration: build world, policies and recipe; step through the plan with
atomic ledger commits and per-step state files; resume; summary, table and report.

Crash safety: for step s the runner (1) runs it, collecting rows in memory, (2) writes
``state/step-s.pt`` (policies, optimizers, generators, recipe state) atomically, and
(3) commits the step's rows and its ``steps`` marker in one DuckDB transaction. The
ledger's last completed step is the resume point; a state file without its commit is
simply overwritten when the step is re-run. Same seed ⇒ same numbers, resumed or not.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import torch

from coevo import __version__
from coevo.checkpoint import CheckpointError
from coevo.config import RunConfig, dump_config
from coevo.ledger import views
from coevo.ledger.store import Ledger, LedgerError
from coevo.runlock import disk_trouble, occupied, writer_guard
from coevo.tracking import open_tracker

ASSETS = Path(__file__).resolve().parents[1] / "assets"


from coevo.runner.loop import Loop, RunError, distinct_policies, stamped  # noqa: E402,F401
from coevo.runner.summary import build_summary, errors_over, print_round_table, recipe_columns  # noqa: E402,F401


# ---------------------------------------------------------------------- factories
def make_world(cfg: RunConfig):
    from coevo.worlds import WorldNotFound
    from coevo.worlds import make_world as build

    try:
        return build(cfg)
    except WorldNotFound as e:
        raise RunError(str(e)) from None


def recipe_info(cfg: RunConfig):
    from coevo.core.registry import RecipeNotFound, get_recipe

    try:
        return get_recipe(cfg.recipe)
    except RecipeNotFound as e:
        raise RunError(str(e)) from None


ASSET_PREFIX = "asset:"  # backend.checkpoints.<role>=asset:NAME: the shipped asset NAME (coevo/assets/NAME.pt)


def _tiny(name: str, asset: str, ckpt: str | None, lr: float, seed: int, grad_clip: float):
    from coevo.backends.tiny import TinyPolicy

    if ckpt and ckpt.startswith(ASSET_PREFIX):  # another role's shipped asset: e.g. R-Zero's Solver from the
        asset, ckpt = ckpt[len(ASSET_PREFIX):], None  # "Single" policy, so both arms start from one checkpoint
    path = Path(ckpt) if ckpt else ASSETS / f"{asset}.pt"
    if not path.exists():
        raise RunError(f"checkpoint not found: {path} (run `coevo pretrain` to create the tiny checkpoints)")
    try:  # a legacy pickle only from a path the user named (backend.checkpoints.<role>=old.pt)
        pol = TinyPolicy.from_checkpoint(name, path, lr=lr, seed=seed, allow_legacy=ckpt is not None)
    except CheckpointError as e:
        raise RunError(str(e)) from None
    pol.grad_clip = grad_clip
    return pol


def _role_lr(b, spec) -> float:
    return float(b.lr.get(spec.name, getattr(b, spec.lr)))


def _tiny_policies(cfg: RunConfig, roles) -> dict:
    b = cfg.backend
    if b.roles == "shared":  # R-Zero "Single": one set of parameters for every role
        first = roles[0]
        pol = _tiny("shared", "shared", b.checkpoints.get("shared", b.solver_checkpoint), _role_lr(b, first),
                    cfg.seed, b.grad_clip)
        return {r.name: pol for r in roles}
    if b.roles != "separate":
        raise RunError("backend.roles=lora needs backend.kind=hf")
    # backend.<role>_checkpoint: the per-role fields of older configs (backend.checkpoints.<role> wins)
    return {r.name: _tiny(r.name, r.asset or r.name, b.checkpoints.get(r.name, getattr(b, f"{r.name}_checkpoint", None)),
                          _role_lr(b, r), cfg.seed + r.seed_offset, b.grad_clip) for r in roles}


def make_policies(cfg: RunConfig, run_dir: Path | None = None, info=None) -> dict:
    """One policy per role the recipe declares (``RecipeInfo.roles``), mapped by ``backend.roles``:
    separate policies, one shared policy, or LoRA adapters on one base (hf).  ``run_dir``: where
    the openai backend writes the LoRA adapters it syncs to the servers."""
    info = info or recipe_info(cfg)
    roles = info.roles
    b = cfg.backend
    if b.kind == "tiny":
        pols = _tiny_policies(cfg, roles)
    else:
        try:
            from coevo.backends.roles import RoleConfigError, make_role_policies
            from coevo.backends.smollm2 import SmolLM2Unavailable
        except ImportError as e:
            raise RunError(f"backend {b.kind!r} unavailable (pip install -e '.[hf]'): {e}") from None
        extra = {"lr_by_role": {r.name: _role_lr(b, r) for r in roles}}
        if b.kind == "openai" and run_dir is not None and not (b.options or {}).get("adapter_dir"):
            extra["adapter_dir"] = str(Path(run_dir).resolve() / "adapters")
        try:
            pols = make_role_policies(cfg, roles=tuple(r.name for r in roles), **extra)
        except (RoleConfigError, SmolLM2Unavailable) as e:
            raise RunError(f"backend.options: {e}") from None
    if cfg.loss.kl_coef > 0:
        trainable = {id(pols[r.name]) for r in roles if r.trainable}
        for p in distinct_policies(pols):
            if id(p) in trainable:
                p.set_reference()
    return pols


def make_recipe(cfg: RunConfig, world, policies, run_id: str, verifier, info=None):
    from coevo.core.registry import RecipeNotFound, load

    info = info or recipe_info(cfg)
    try:
        cls = load(info.factory)
    except RecipeNotFound as e:
        raise RunError(f"recipe {cfg.recipe!r} is not available in this build: {e}") from None
    return cls(cfg, world, policies, run_id, verifier)


# ---------------------------------------------------------------------- running
def _new_run_dir(cfg: RunConfig, out: Path | None) -> Path:
    if out is None:  # <recipe>-<timestamp>, taken by mkdir: two runs started in one second never share it
        from coevo.runner.naming import claim_default_run_dir
        out = claim_default_run_dir(cfg.out_root, cfg.recipe, RunError)
    if out.exists() and not out.is_dir():
        raise RunError(f"--out {out} is a file; give a directory")
    if occupied(out):
        raise RunError(f"run directory {out} exists and is not empty (use --resume {out} to continue it)")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise RunError(disk_trouble(e, out) or f"cannot create run directory {out}: {e.strerror}") from None
    return out


def run_from_config(cfg: RunConfig, out: Path | None = None, quiet: bool = False, report: bool = True) -> Path:
    """A new run in ``out``; ``report=False`` skips report.html (``coevo report RUN`` writes it later)."""
    from coevo.interrupt import held

    run_dir = _new_run_dir(cfg, out)
    with stamped(run_dir), writer_guard(run_dir, RunError):  # one writer per run directory; disk trouble as one line
        with held():  # a signal here leaves a whole config.yaml (resumable) or none (the directory is removed)
            (run_dir / "config.yaml").write_text(dump_config(cfg))
        _execute(cfg, run_dir, fresh=True, quiet=quiet, report=report)
    return run_dir


def resume_run(run_dir: Path, quiet: bool = False, report: bool = True, overrides=()) -> Path:
    """Continue a run from its last committed step; ``overrides``: the ``--set`` items that may change on resume
    (coevo/runner/resume.py: which, the plan check, the record in resumes.jsonl)."""
    from coevo.runner.resume import resume_with

    return resume_with(run_dir, _execute, overrides, quiet=quiet, report=report)


def thread_count(configured: int) -> int:
    """torch's CPU threads: ``backend.threads``, capped by the environment's ``COEVO_MAX_THREADS`` when set
    (the test suite sets 1: two pytest-xdist workers with two threads each on 2 cores ran steps several times
    slower). The cap changes speed only: the tiny model's results are the same for 1 and 2 threads."""
    import os

    cap = os.environ.get("COEVO_MAX_THREADS", "").strip()
    return max(1, min(configured, int(cap))) if cap.isdigit() and int(cap) > 0 else configured


def _execute(cfg: RunConfig, run_dir: Path, fresh: bool, quiet: bool, report: bool = True, on_resume=None) -> None:
    from coevo.executors import ExecutorError, make_executor
    from coevo.verify.run import run_verifier_from_config

    torch.set_num_threads(thread_count(cfg.backend.threads))
    run_id = run_dir.resolve().name
    info = recipe_info(cfg)
    world = make_world(cfg)
    policies = make_policies(cfg, run_dir, info)
    try:  # where verification and sampling run (executor.kind: local | ray, coevo/executors)
        executor = make_executor(cfg)
        policies = executor.wrap_policies(policies)
    except ExecutorError as e:
        raise RunError(str(e)) from None
    try:
        led = Ledger(run_dir / "ledger.duckdb", tables=info.tables)
    except LedgerError as e:
        raise RunError(disk_trouble(e, run_dir) or str(e)) from None
    pool = None
    try:
        if led.count("runs") == 0:
            led.append("runs", [{"run_id": run_id, "created_at": time.time(), "recipe": cfg.recipe,
                                 "world": world.name, "seed": cfg.seed, "config_yaml": dump_config(cfg),
                                 "coevo_version": __version__}])
        else:
            run_id = views.run_info(led)["run_id"]
        pool = executor.verifier_pool(cfg.verify)  # None: verify.workers = 0 (in-process)
        verifier = run_verifier_from_config(cfg.verify, world, pool, led)
        recipe = make_recipe(cfg, world, policies, run_id, verifier, info)
        tracker = open_tracker(cfg, run_dir, led, run_id)  # TensorBoard / W&B copies of committed steps
        try:
            loop = Loop(led, run_id, recipe, policies, run_dir, tracker, quiet, info.summary_columns)
            loop.resume()
            if on_resume is not None:  # coevo/runner/resume.py: the plan check and a recorded --set on resume
                on_resume(loop)
            loop.run()
        finally:
            tracker.close()
        summary = build_summary(led, run_id, cfg)
        (run_dir / "summary.json").write_text(json.dumps(summary, indent=2))
    finally:
        if pool is not None:
            pool.close()
        led.close()
        for p in distinct_policies(policies):
            if hasattr(p, "close"):  # openai backend: HTTP client and request threads
                p.close()
        executor.close()
    if report:
        try:
            from coevo.report.html import write_report

            write_report(run_dir)
        except Exception as e:  # the run's data is safe in the ledger; say what failed
            print(f"warning: report not written: {e!r}", file=sys.stderr)
    if not quiet:
        print_round_table(summary, run_dir)
    over = errors_over(summary, cfg.max_error_rate)
    if over:  # the run is complete and reported; its failed endpoint calls make the command fail
        raise RunError(f"{over}; the run is complete in {run_dir} (summary.json: errors)")


