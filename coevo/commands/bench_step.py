"""``coevo bench step``: where a step's time goes (docs/speed.md).

Runs a few steps of a preset (default ``cpu``) with a small budget, in a temporary run
directory, and prints (with ``--json``) one JSON object:

* ``stages``: seconds per stage (sample, verify, reward, update, ledger, eval, state, other)
  summed over the steps, from the ledger's ``steps.stage_seconds_json`` (``coevo.timing``),
  with each stage's share of the step time (the shares add up to 1);
* ``model_compute``: seconds of model forward / backward passes (sampling forward passes +
  ``forward_backward``), their share of the step time and the rest;
* ``reference``: on one solver batch of the run's shape, sampling tokens/s and our
  ``forward_backward`` against a bare forward + backward of the same model on the same
  tensors (``ours_over_bare``), measured in the same process.

``--run DIR`` reads the stages of an existing run instead of running one (no reference).
Timings are measurements, not results: nothing here decides a test.
"""
from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import List, Optional

import typer

from coevo.cli_common import UserError, fail
from coevo.commands.output import emit, json_option
from coevo.core.world import ANSWER

BUDGET_HELP = ("Run size: a budget the preset's recipe declares (RecipeInfo.bench_budgets: overrides of the "
               "preset; the default preset's: tiny | small | round).")


def budget_overrides(preset: str, budget: str, overrides: list[str]) -> list[str]:
    """The overrides of ``budget`` for the recipe of ``preset`` (asked of the registry), then ``overrides``."""
    from coevo.config import load_config
    from coevo.core.registry import get_recipe

    recipe = load_config(preset, None, list(overrides)).recipe
    budgets = get_recipe(recipe).bench_budgets
    if budget not in budgets:
        raise UserError(f"unknown budget {budget!r} for recipe {recipe!r}; "
                        f"available: {', '.join(budgets) or 'none (it declares no bench_budgets)'}")
    return [*budgets[budget], *overrides]


def stage_seconds(run_dir: Path) -> list[dict]:
    """``[{step, round, phase, stages: {...}}]`` of a run directory's ledger (steps without timings skipped)."""
    from coevo.ledger.store import open_run_ledger
    from coevo.ledger.views import step_stage_seconds

    led = open_run_ledger(run_dir)
    try:
        return step_stage_seconds(led)
    finally:
        led.close()


def summarize(steps: list[dict]) -> dict:
    """Stage totals and shares of the step time, and the model-compute share, over ``steps``."""
    from coevo.timing import MODEL_KEY

    total = sum(s["stages"].get("total", 0.0) for s in steps)
    names: dict[str, float] = {}
    for s in steps:
        for k, v in s["stages"].items():
            if k not in ("total", MODEL_KEY):
                names[k] = names.get(k, 0.0) + v
    model = sum(s["stages"].get(MODEL_KEY, 0.0) for s in steps)
    share = (lambda x: x / total if total > 0 else 0.0)  # noqa: E731
    by_phase: dict[str, float] = {}
    for s in steps:
        by_phase[s["phase"]] = by_phase.get(s["phase"], 0.0) + s["stages"].get("total", 0.0)
    return {"n_steps": len(steps), "step_seconds": round(total, 4),
            "stages": {k: {"seconds": round(v, 4), "share": round(share(v), 4)} for k, v in sorted(names.items())},
            "model_compute": {"seconds": round(model, 4), "share": round(share(model), 4),
                              "rest_share": round(1 - share(model), 4) if total > 0 else 0.0},
            "seconds_by_phase": {k: round(v, 4) for k, v in by_phase.items()}}


def solver_batch(cfg, n_prompts: int, n: int):
    """The solver policy of ``cfg``, its world and prompts of one solver batch (held-out tasks)."""
    from coevo.recipes.base import sampling_params
    from coevo.runner import make_policies, make_world
    from coevo.core.world import role_sampling

    world = make_world(cfg)
    policy = make_policies(cfg)["solver"]
    tasks = list(world.eval_set())[:n_prompts]
    sp = role_sampling(world, ANSWER, sampling_params(cfg))
    return policy, [world.solver_prompt(t) for t in tasks], sp


def sampling_speed(policy, prompts: list[str], n: int, sp, repeats: int = 3) -> tuple[dict, list]:
    """Tokens/s of ``policy.sample(prompts, n, sp)`` (best and all of ``repeats`` timed calls; the
    policy's train stream is restored before each, so every call draws the same tokens) and the
    completions of the last call."""
    state = policy.gen.get_state()
    secs, tokens = [], 0
    for _ in range(repeats):
        policy.gen.set_state(state)
        t = time.perf_counter()
        outs = policy.sample(prompts, n, sp)
        secs.append(time.perf_counter() - t)
        tokens = sum(len(c.token_ids) for g in outs for c in g)
    return {"rows": len(prompts) * n, "tokens": tokens, "seconds": [round(s, 4) for s in secs],
            "tokens_per_s": round(tokens / min(secs), 1)}, [c for g in outs for c in g]


def bare_fwd_bwd(model, idx, attn) -> None:
    """A bare forward + backward: next-token cross-entropy over the real tokens of the batch."""
    import torch.nn.functional as F

    logits = model(idx, attn)[:, :-1]
    tgt = idx[:, 1:].masked_fill(~attn[:, 1:], -100)
    F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt.reshape(-1), ignore_index=-100).backward()


def fwd_bwd_reference(policy, comps, loss, repeats: int = 3) -> dict:
    """Seconds of our ``forward_backward`` (GRPO loss, advantages 1/-1) and of ``bare_fwd_bwd`` on
    the same batch and model (best of ``repeats`` after one warm-up; gradients zeroed, weights
    unchanged)."""
    idx, attn = policy._batch_tensors(comps)[:2]
    adv = [1.0 if i % 2 else -1.0 for i in range(len(comps))]
    ours, bare = [], []
    for i in range(repeats + 1):  # the first round warms both up and is not counted
        policy.model.zero_grad(set_to_none=True)
        t = time.perf_counter()
        policy.forward_backward(comps, adv, loss)
        t_ours = time.perf_counter() - t
        policy.model.zero_grad(set_to_none=True)
        policy.model.train()
        t = time.perf_counter()
        bare_fwd_bwd(policy.model, idx, attn)
        if i:
            ours.append(t_ours)
            bare.append(time.perf_counter() - t)
    policy.model.zero_grad(set_to_none=True)
    return {"batch": [int(idx.shape[0]), int(idx.shape[1])], "ours_s": round(min(ours), 5),
            "bare_s": round(min(bare), 5), "ours_over_bare": round(min(ours) / min(bare), 3)}


def reference(cfg, repeats: int) -> dict:
    """Sampling tokens/s and ours/bare forward+backward on one solver batch of the run's shape."""
    from coevo.recipes.base import loss_config

    from coevo.core.registry import get_recipe

    # the Solver batch shape of the run's recipe: the first of its sections that sets one
    # (solver_prompts x solver_group); else 32 x 5
    secs = [getattr(cfg, name) for name in get_recipe(cfg.recipe).sections]
    sec = next((x for x in secs if hasattr(x, "solver_prompts") and hasattr(x, "solver_group")), None)
    n_prompts, n = (int(sec.solver_prompts), int(sec.solver_group)) if sec is not None else (32, 5)
    policy, prompts, sp = solver_batch(cfg, n_prompts, n)
    if not hasattr(policy, "_batch_tensors"):
        return {"note": f"no reference for backend {cfg.backend.kind!r} (tiny only)"}
    samp, comps = sampling_speed(policy, prompts, n, sp, repeats)
    return {"sampling": samp, "fwd_bwd": fwd_bwd_reference(policy, comps, loss_config(cfg), repeats)}


def bench_step(preset: str, budget: str, overrides: list[str], repeats: int, keep: Optional[Path]) -> dict:
    from coevo.config import load_config
    from coevo.runner import run_from_config

    overrides = budget_overrides(preset, budget, overrides)
    cfg = load_config(preset, None, overrides)
    with tempfile.TemporaryDirectory(prefix="coevo-bench-step-") as tmp:
        run_dir = keep or Path(tmp) / "run"
        t = time.perf_counter()
        run_from_config(cfg, run_dir, quiet=True)
        wall = time.perf_counter() - t
        steps = stage_seconds(run_dir)
    import torch

    out = {"preset": preset, "budget": budget, "overrides": overrides,
           "threads": torch.get_num_threads(), "run_wall_seconds": round(wall, 3), **summarize(steps),
           "per_step": steps, "reference": reference(cfg, repeats)}
    return out


def register(apps: dict) -> None:
    @apps["bench"].command("step")
    def step_cmd(
        preset: str = typer.Option("cpu", "--preset", "-p", help="Preset name or YAML file."),
        budget: str = typer.Option("small", help=BUDGET_HELP),
        set_: List[str] = typer.Option([], "--set", "-s", help="More overrides, key=value (after the budget's)."),
        repeats: int = typer.Option(3, min=1, help="Timed repeats of the reference measurements."),
        run: Optional[Path] = typer.Option(None, "--run", help="Summarize an existing run directory instead."),
        keep: Optional[Path] = typer.Option(None, "--keep", help="Run directory to keep (default: a temporary one)."),
        as_json: bool = json_option(),
    ):
        """Per-stage seconds of a short run and the share of step time spent in model compute."""
        from coevo.config import ConfigError
        from coevo.ledger.store import LedgerError
        from coevo.runner import RunError

        try:
            if run is not None:
                if not run.is_dir():
                    raise UserError(f"run directory not found: {run}")
                steps = stage_seconds(run)
                if not steps:
                    raise UserError(f"{run}: no per-stage timings in its ledger (written before coevo recorded them)")
                res = {"run": str(run), **summarize(steps), "per_step": steps}
            else:
                res = bench_step(preset, budget, list(set_), repeats, keep)
        except (UserError, ConfigError, RunError, LedgerError) as e:
            fail(str(e))
        emit(res, as_json)
