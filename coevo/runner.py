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
import os
import shutil
import time
from pathlib import Path

import torch

from coevo import __version__
from coevo.audit.stats import binomial_se
from coevo.core.policy import BackendError
from coevo.checkpoint import CheckpointError, atomic_dir, is_stale_temp, load_legacy_pickle, load_tree, save_tree
from coevo.config import ConfigError, RunConfig, build_config, dump_config
from coevo.ledger import views
from coevo.ledger.store import Ledger, LedgerError
from coevo.runlock import LOCK_NAME, disk_trouble, writer_guard
from coevo.tracking import open_tracker

ASSETS = Path(__file__).parent / "assets"


class RunError(Exception):
    pass


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


def _tiny(name: str, asset: str, ckpt: str | None, lr: float, seed: int, grad_clip: float):
    from coevo.backends.tiny import TinyPolicy

    path = Path(ckpt) if ckpt else ASSETS / f"{asset}.pt"
    if not path.exists():
        raise RunError(f"checkpoint not found: {path} (run `coevo pretrain` to create the tiny checkpoints)")
    try:  # a legacy pickle only from a path the user named (backend.checkpoints.<role>=old.pt)
        pol = TinyPolicy.from_checkpoint(name, path, lr=lr, seed=seed, allow_legacy=ckpt is not None)
    except CheckpointError as e:
        raise RunError(str(e)) from None
    pol.grad_clip = grad_clip
    return pol


def distinct_policies(policies: dict) -> list:
    """Each policy object once (roles may share one: ``backend.roles=shared``)."""
    return list({id(p): p for p in policies.values()}.values())


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
    legacy = {"solver": b.solver_checkpoint, "challenger": b.challenger_checkpoint,
              "synthesizer": b.synthesizer_checkpoint}
    return {r.name: _tiny(r.name, r.asset or r.name, b.checkpoints.get(r.name, legacy.get(r.name)),
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
    from coevo.core.registry import RecipeNotFound, resolve

    info = info or recipe_info(cfg)
    try:
        cls = resolve(info.factory)
    except RecipeNotFound as e:
        raise RunError(f"recipe {cfg.recipe!r} is not available in this build: {e}") from None
    return cls(cfg, world, policies, run_id, verifier)


# ---------------------------------------------------------------------- state files
def _save_state(run_dir: Path, step: int, policies: dict, recipe) -> None:
    sd = run_dir / "state"
    sd.mkdir(exist_ok=True)
    uniq = {}
    for role, p in policies.items():
        uniq.setdefault(id(p), (role, p))
    st = {"step": step, "policies": {role: p.state() for role, p in uniq.values()},
          "aliases": {role: uniq[id(p)][0] for role, p in policies.items()}, "recipe": recipe.state_dict()}
    # a directory of data (state.json + state.safetensors), swapped in atomically; the name
    # keeps the .pt suffix of the pickle files it replaces (scripts glob state/step-*.pt)
    atomic_dir(sd / f"step-{step}.pt", lambda d: save_tree(d, st))


def _load_state(run_dir: Path, step: int, policies: dict, recipe) -> None:
    path = run_dir / "state" / f"step-{step}.pt"
    if not path.exists():
        raise RunError(f"cannot resume: state file for completed step {step} is missing ({path})")
    try:  # a file: the pickle of an older coevo, in the run directory the user named (--resume)
        st = load_legacy_pickle(path) if path.is_file() else load_tree(path)
    except CheckpointError as e:
        raise RunError(f"cannot resume: {e}") from None
    for role, p in policies.items():
        p.load_state(st["policies"][st["aliases"][role]])
    recipe.load_state_dict(st["recipe"])


def _prune_states(run_dir: Path, keep_from: int) -> None:
    for f in (run_dir / "state").glob("step-*"):
        if is_stale_temp(f):  # left by a write a crash interrupted
            shutil.rmtree(f, ignore_errors=True)
            continue
        try:
            if f.suffix == ".pt" and int(f.stem.split("-")[1]) < keep_from:
                if f.is_dir():  # renamed first: a kill mid-delete leaves a stale temp, not a broken state
                    gone = f.with_name(f"{f.name}.old-{os.getpid()}")
                    os.replace(f, gone)
                    shutil.rmtree(gone)
                else:
                    f.unlink()
        except (ValueError, IndexError):
            pass


# ---------------------------------------------------------------------- running
def _new_run_dir(cfg: RunConfig, out: Path | None) -> Path:
    if out is None:
        out = Path(cfg.out_root) / f"{cfg.recipe}-{time.strftime('%Y%m%d-%H%M%S')}"
    if out.exists() and any(f.name != LOCK_NAME for f in out.iterdir()):  # a lone lock: a writer killed at start
        raise RunError(f"run directory {out} exists and is not empty (use --resume {out} to continue it)")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise RunError(disk_trouble(e, out) or f"cannot create run directory {out}: {e.strerror}") from None
    return out


def run_from_config(cfg: RunConfig, out: Path | None = None, quiet: bool = False) -> Path:
    run_dir = _new_run_dir(cfg, out)
    with writer_guard(run_dir, RunError):  # one writer per run directory; disk trouble as one line
        (run_dir / "config.yaml").write_text(dump_config(cfg))
        _execute(cfg, run_dir, fresh=True, quiet=quiet)
    return run_dir


def resume_run(run_dir: Path, quiet: bool = False) -> Path:
    import yaml

    cfg_path = run_dir / "config.yaml"
    if not cfg_path.is_file():
        raise RunError(f"{run_dir} is not a coevo run directory (no config.yaml)")
    try:
        cfg = build_config(yaml.safe_load(cfg_path.read_text()))
    except ConfigError as e:
        raise RunError(f"{cfg_path}: {e}") from None
    with writer_guard(run_dir, RunError):
        _execute(cfg, run_dir, fresh=not (run_dir / "ledger.duckdb").exists(), quiet=quiet)
    return run_dir


def _execute(cfg: RunConfig, run_dir: Path, fresh: bool, quiet: bool) -> None:
    from coevo.executors import ExecutorError, make_executor
    from coevo.stages.equivalence import run_verifier_from_config

    torch.set_num_threads(cfg.backend.threads)
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
        led = Ledger(run_dir / "ledger.duckdb")
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
        plan = recipe.plan()
        last = led.last_completed_step(run_id)
        if last >= 0:
            _load_state(run_dir, last, policies, recipe)
        todo = [s for s in plan if s.step > last]
        tracker = open_tracker(cfg, run_dir, led, run_id)  # TensorBoard / W&B copies of committed steps
        try:
            _loop(cfg, run_dir, led, run_id, recipe, policies, todo, len(plan), quiet, tracker)
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
    try:
        from coevo.report.html import write_report

        write_report(run_dir)
    except Exception as e:  # the run's data is safe in the ledger; say what failed
        print(f"warning: report not written: {e!r}")
    if not quiet:
        print_round_table(summary, run_dir)


def _loop(cfg, run_dir, led, run_id, recipe, policies, todo, total, quiet, tracker=None) -> None:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from coevo import timing  # per-stage seconds of each step (steps.stage_seconds_json)

    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.fields[info]}"), disable=quiet, transient=False) as bar:
        task = bar.add_task("coevo", total=total, completed=total - len(todo), info="")
        uniq = distinct_policies(policies)
        for spec in todo:
            bar.update(task, description=f"round {spec.round} {spec.phase} {spec.phase_step + 1}")
            seen = [len(getattr(p, "errors", None) or []) for p in uniq]
            try:
                with timing.record(), led.step(run_id, spec.step, spec.round, spec.phase, spec.phase_step) as w:
                    with timing.stage("reward"):  # the recipe's own work, less the shared stages inside it
                        metrics = recipe.run_step(spec, w)
                    errs = [e for p, n in zip(uniq, seen) for e in (getattr(p, "errors", None) or [])[n:]]
                    if errs:  # inference-server failures of this step, with their reasons (openai backend)
                        metrics["backend_errors"] = {"n": len(errs), "first": errs[:5]}
                    w.metrics = metrics
                    w.versions = {role: p.version for role, p in policies.items()}
                    with timing.stage("state"):
                        _save_state(run_dir, spec.step, policies, recipe)
            except BackendError as e:
                raise RunError(f"step {spec.step} (round {spec.round} {spec.phase}) failed: {e}. Nothing of this "
                               f"step was written; the steps before it are saved: fix the cause, then "
                               f"`coevo run --resume {run_dir}`") from None
            except Exception as e:  # noqa: BLE001 - disk trouble becomes one line, the rest is re-raised
                msg = disk_trouble(e, run_dir)
                if msg is None:
                    raise
                raise RunError(f"step {spec.step} (round {spec.round} {spec.phase}) not saved: {msg}; the steps "
                               f"before it are saved: free space, then `coevo run --resume {run_dir}`") from None
            _prune_states(run_dir, spec.step)
            if tracker is not None:  # after the commit: never raises, the ledger stays the record
                tracker.sync(led, run_id)
            if spec.phase == "eval" and spec.round > 0:
                ck = run_dir / "checkpoints" / f"round-{spec.round}"
                ck.mkdir(parents=True, exist_ok=True)
                for role, p in policies.items():
                    p.save(ck / f"{role}.pt")  # a checkpoint directory (see docs/real-models.md)
            bar.update(task, advance=1, info=_short(metrics))


def _short(m: dict) -> str:
    for k in ("challenger_reward_mean", "solver_reward_mean", "kept_fraction"):
        if k in m and m[k] is not None:
            return f"{k}={m[k]:.3f}"
    if "eval" in m:
        return f"eval={m['eval'].get('greedy', {}).get('overall', float('nan')):.3f}"
    return ""


# ---------------------------------------------------------------------- summary
def frontier_levels(cfg: RunConfig, init: dict | None, counts: dict) -> list[str]:
    """The frontier band: given levels, or (``auto``) those whose initial accuracy lies in
    [frontier_low, frontier_high] — fixed by the round-0 evaluation, before any training."""
    fb = cfg.world.frontier_band
    if fb != "auto":
        return [b for b in fb if b in counts]
    if not init:
        return []
    lo, hi = cfg.world.frontier_low, cfg.world.frontier_high
    return [d for d, a in init["by_difficulty"].items() if lo <= a <= hi]


def _metric_value(v):
    if isinstance(v, dict):
        v = v.get("value")
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def recipe_columns(steps: list[dict], round_: int, columns, whole_only: bool = False) -> dict:
    """Per-round means of the recipe's summary columns over its steps' metrics (None if absent).
    An estimate measured once per round (a metric dict with ``"scope": "round"``, e.g. the Dr. Zero
    recipes' ``false_agreement``) is kept whole: ``{value, se, n, ...}``."""
    out = {}
    for col in columns:
        whole = [s["metrics"][col] for s in steps if s["round"] == round_ and s["phase"] != "eval"
                 and isinstance(s["metrics"].get(col), dict) and s["metrics"][col].get("scope") == "round"]
        if len(whole) == 1:
            out[col] = {k: v for k, v in whole[0].items() if k != "scope"}
            continue
        if whole_only:
            continue
        vals = [_metric_value(s["metrics"].get(col)) for s in steps if s["round"] == round_ and s["phase"] != "eval"]
        vals = [v for v in vals if v is not None]
        out[col] = sum(vals) / len(vals) if vals else None
    return out


def build_summary(led: Ledger, run_id: str, cfg: RunConfig) -> dict:
    columns = recipe_info(cfg).summary_columns
    steps = views.step_metrics(led, run_id)
    rounds = []
    for r in views.rounds_completed(led, run_id):
        row = views.round_row(led, run_id, r, recipe_info(cfg).solver_role)
        for col, v in recipe_columns(steps, r, [c for c in columns if c not in row]).items():
            row[col] = v
        for col, v in recipe_columns(steps, r, [c for c in columns if c in row and row[c] is None],
                                     whole_only=True).items():  # a round estimate where the ledger view has none
            row[col] = v
        for col, v in recipe_columns(steps, r, recipe_info(cfg).optional_summary_columns).items():
            if v is not None:  # e.g. R-Zero's pseudo-label accuracy by a judge, only when one is configured
                row[col] = v
        rounds.append(row)
    init = views.eval_accuracy(led, run_id, 0)
    counts = views.eval_counts(led, run_id, 0)
    wall = led.query("SELECT coalesce(sum(seconds), 0) AS s FROM steps WHERE run_id = ?", [run_id])[0]["s"]
    summary = {"rounds": rounds, "initial_solver_eval_accuracy": init, "eval_n_by_difficulty": counts,
               "wall_seconds": float(wall), "recipe": cfg.recipe, "preset": cfg.preset, "seed": cfg.seed,
               "summary_columns": list(columns)}
    band = frontier_levels(cfg, init, counts)
    if init and rounds and rounds[-1]["solver_eval_accuracy"] and band:
        n = sum(counts[b] for b in band)
        a0 = sum(init["by_difficulty"][b] * counts[b] for b in band) / n
        fin = rounds[-1]["solver_eval_accuracy"]["by_difficulty"]
        a1 = sum(fin[b] * counts[b] for b in band) / n
        se = float(binomial_se(a0, n))
        summary["frontier"] = {"band": band, "n": n, "initial": a0, "final": a1, "gain": a1 - a0,
                               "initial_se": se, "gain_in_se": (a1 - a0) / se if se > 0 else None}
    return summary


SHORT_NAMES = {"pseudo_label_accuracy": "PL acc", "kept_fraction": "kept", "challenger_reward_mean": "C reward",
               "format_failure_rate": "C fmt fail", "synthesizer_reward_mean": "S reward",
               "solver_reward_mean": "R reward", "bearing_rate": "bearing", "kappa_bar": "kappa", "nu_bar": "nu",
               "lag_bar": "lag", "proposer_reward_mean": "P reward"}
LONG_NAMES = {"pseudo_label_accuracy": "pseudo-label accuracy of kept candidates",
              "challenger_reward_mean": "Challenger reward", "format_failure_rate": "Challenger format failures",
              "synthesizer_reward_mean": "Synthesizer reward", "solver_reward_mean": "solver (Reasoner) reward",
              "bearing_rate": "screen bearing rate", "kappa_bar": "kappa-bar (step mean)", "nu_bar": "nu-bar",
              "lag_bar": "lag l-bar", "proposer_reward_mean": "proposer reward"}


def print_round_table(summary: dict, run_dir: Path) -> None:
    from rich.console import Console
    from rich.table import Table

    cols = summary.get("summary_columns") or list(SHORT_NAMES)
    caption = "accuracy = oracle, greedy, held-out set" + "".join(
        f"; {SHORT_NAMES[c]} = {LONG_NAMES[c]}" for c in cols if c in LONG_NAMES)
    t = Table(title=f"coevo {summary['recipe']} · {run_dir}", caption=caption)
    diffs = list(summary["eval_n_by_difficulty"])
    for col in ["round", "acc", *diffs, *[SHORT_NAMES.get(c, c) for c in cols], "rollouts"]:
        t.add_column(col, justify="right", no_wrap=True)
    fmt = lambda x: "-" if _metric_value(x) is None else f"{_metric_value(x):.3f}"  # noqa: E731 (a dict: its value)
    init = summary["initial_solver_eval_accuracy"] or {"overall": None, "by_difficulty": {}}
    t.add_row("0", fmt(init["overall"]), *[fmt(init["by_difficulty"].get(d)) for d in diffs],
              *["-"] * len(cols), "-")
    for r in summary["rounds"]:
        acc = r["solver_eval_accuracy"] or {"overall": None, "by_difficulty": {}}
        t.add_row(str(r["round"]), fmt(acc["overall"]), *[fmt(acc["by_difficulty"].get(d)) for d in diffs],
                  *[fmt(r.get(c)) for c in cols], str(r["n_rollouts"]))
    c = Console(width=max(Console().width, 110, 12 * (len(diffs) + len(cols) + 3)))
    c.print(t)
    f = summary.get("frontier")
    if f:
        c.print(f"frontier band {','.join(f['band'])} (n={f['n']}): {f['initial']:.3f} -> {f['final']:.3f} "
                f"(gain {f['gain']:+.3f} = {f['gain_in_se'] or 0:.1f} x binomial SE {f['initial_se']:.3f})")
    c.print(f"run directory: {run_dir}  (report.html, summary.json, ledger.duckdb)")
