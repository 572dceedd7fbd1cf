"""``coevo experiment crossfit-ablation``: False Frontiers' fixed question-bank replay (False Frontiers §2.4).

Per seed: the proposer writes one bank of questions with draft answers on the facts world
(once); then, for each fold strategy (``same-source``, ``random-question``, ``source-id``;
``crossfit.py``), two fresh auxiliary solvers (the shipped checkpoint) train
``aux_steps`` GRPO steps on their fold's bank questions and score every bank question with
5 answers.  Per strategy: FF (the scoring group agrees with the draft under ``drzero.ff_agreement``,
strict majority by default, and the oracle rejects the draft; ``coevo.audit.false_agreement``) and the proposer reward R_P = f(k)
(``coevo.rewards.formulas.crossfit_reward``), each as a mean over seeds with a 95 % t
interval (``t_interval``; the per-seed spread is ``coevo.audit.instruments.seed_range``).

Optionally the arms' cost (``costs``): one ``coevo run`` of each recipe (Dr. Zero, CrossFit,
MSV+CrossFit) per seed with the same budget: rollouts, wall seconds and the held-out
Cover-EM of the final solver (``coevo.qa.metrics.cover_em`` against the oracle).
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Sequence

import numpy as np

from coevo.audit.false_agreement import false_agreement_from_flags
from coevo.audit.instruments import seed_range
from coevo.recipes.base import StepSpec
from coevo.recipes.drzero.crossfit import FOLD_STRATEGIES, question_fold
from coevo.rewards.formulas import crossfit_reward

ARMS = ("drzero", "crossfit", "msv+crossfit")


def t_interval(values: Sequence[float]) -> dict:
    """Mean over seeds with a 95 % Student-t interval (n - 1 degrees of freedom); the mean and
    its SE come from ``seed_range``.  One seed: no interval (None)."""
    from scipy.stats import t as student_t

    vals = [float(v) for v in values if v is not None and np.isfinite(v)]
    est = seed_range(vals)
    if est.n == 0:
        return {"mean": None, "ci_low": None, "ci_high": None, "n_seeds": 0, "per_seed": []}
    if est.n < 2:
        return {"mean": est.value, "ci_low": None, "ci_high": None, "n_seeds": 1, "per_seed": vals}
    half = float(student_t.ppf(0.975, est.n - 1)) * est.se
    return {"mean": est.value, "ci_low": est.value - half, "ci_high": est.value + half, "n_seeds": est.n,
            "per_seed": vals}


def ablation_config(preset: str, overrides: Sequence[str], seed: int, recipe: str = "crossfit"):
    from coevo.config import load_config

    return load_config(preset, None, [*overrides, f"recipe={recipe}", f"seed={seed}", "verify.workers=0",
                                      "verify.cache=false"])


def _recipe(cfg):
    """A CrossFit recipe with fresh policies (shipped checkpoints) and an in-process verifier."""
    from coevo.recipes.drzero.recipe import CrossFitRecipe
    from coevo.runner import make_policies, make_world, recipe_info
    from coevo.verify.run import run_verifier_from_config

    world = make_world(cfg)
    pols = make_policies(cfg, None, recipe_info(cfg))
    return CrossFitRecipe(cfg, world, pols, f"ablation-s{cfg.seed}", run_verifier_from_config(cfg.verify, world))


def question_bank(rec, bank_size: int) -> list[dict]:
    """The proposer's bank: its valid questions on ``bank_size`` contexts, with their drafts and the
    oracle's verdict on each draft (through the run's verifier)."""
    rec.cfg.drzero.prompts = bank_size
    _, _, _, parsed = rec._propose(StepSpec(1, 1, "proposer", 0))
    tasks = [p.task for p in parsed if p.ok]
    truths = [rec.world.oracle(t) for t in tasks]
    vs = rec.verifier.match_many([(t.reference, tr) for t, tr in zip(tasks, truths)])
    return [{"task": t, "truth": tr, "draft_correct": v.value} for t, tr, v in zip(tasks, truths, vs)]


def replay(rec, bank: list[dict], strategy: str, aux_steps: int) -> dict:
    """Train the two auxiliary solvers under ``strategy`` on the bank, then score the bank."""
    from coevo.ledger.store import StepWriter
    from coevo.recipes.drzero import steps

    cf = rec.cf = rec.cf.model_copy(update={"fold_strategy": strategy})
    folds = [question_fold(b["task"].task_id, b["task"].meta["source_id"], strategy, rec.folds, cf.fold_seed)
             for b in bank]
    rec.dataset = [{"task_id": b["task"].task_id, "question": b["task"].question, "label": b["task"].reference,
                    "meta": dict(b["task"].meta), "fold": f} for b, f in zip(bank, folds)]
    rec.cursor = {k: 0 for k in rec.cursor}
    w = StepWriter()
    for i in range(aux_steps):
        rec._aux(StepSpec(2 + i, 1, "aux", i), w)
    spec = StepSpec(2 + aux_steps, 1, "score", 0)
    tasks = [b["task"] for b in bank]
    score = steps.score_group(rec, rec.ctx(spec), tasks, [t.reference for t in tasks], [b["truth"] for b in bank],
                              folds, w)
    ff = false_agreement_from_flags(score["agrees"], [b["draft_correct"] for b in bank])
    n = rec.cfg.drzero.n_answers
    r_p = crossfit_reward(np.array(score["k"]), n, cf.outside) if bank else np.zeros(0)
    return {"ff": ff.value if ff.n else None, "n_audited": ff.n, "n_false_agreement": ff.extra["n_false_agreement"],
            "proposer_reward": float(np.mean(r_p)) if len(r_p) else None,
            "rollouts": len(w.rows.get("rollouts", []))}


def run_seed(preset: str, overrides: Sequence[str], seed: int, bank_size: int, aux_steps: int,
             strategies: Sequence[str]) -> dict:
    out = {"seed": seed, "strategies": {}}
    bank = None
    for strategy in strategies:
        rec = _recipe(ablation_config(preset, overrides, seed))  # fresh auxiliary solvers per strategy
        if bank is None:
            t0 = time.perf_counter()
            bank = question_bank(rec, bank_size)
            out["bank"] = {"size": len(bank), "prompts": bank_size, "seconds": time.perf_counter() - t0,
                           "draft_accuracy": float(np.mean([b["draft_correct"] == 1 for b in bank])) if bank else None}
        t0 = time.perf_counter()
        res = replay(rec, bank, strategy, aux_steps)
        res["seconds"] = time.perf_counter() - t0
        out["strategies"][strategy] = res
    return out


def arm_cost(preset: str, overrides: Sequence[str], seed: int, recipe: str, out_dir: Path) -> dict:
    """One run of ``recipe``: rollouts by role, wall seconds, final held-out EM and Cover-EM."""
    from coevo.ledger.store import Ledger
    from coevo.runner import run_from_config

    cfg = ablation_config(preset, overrides, seed, recipe)
    run_dir = run_from_config(cfg, out_dir / f"{recipe.replace('+', '_')}-s{seed}", quiet=True)
    summary = json.loads((run_dir / "summary.json").read_text())
    led = Ledger(run_dir / "ledger.duckdb")
    try:
        rolls = {r["role"]: int(r["n"]) for r in led.query(
            "SELECT role, count(*) AS n FROM rollouts WHERE purpose <> 'eval' GROUP BY role ORDER BY role")}
        last = max((r["round"] for r in summary["rounds"]), default=0)
        evals = led.query("SELECT task_id, answer, correct FROM evals WHERE round = ? AND mode = 'greedy'", [last])
    finally:
        led.close()
    return {"recipe": recipe, "seed": seed, "rollouts": sum(rolls.values()), "rollouts_by_role": rolls,
            "wall_seconds": summary["wall_seconds"], "run_dir": str(run_dir), **held_out_scores(cfg, evals)}


def held_out_scores(cfg, evals: list[dict]) -> dict:
    """EM (the run's verifier, as the ledger recorded it) and Cover-EM against the oracle answer."""
    from coevo.qa.metrics import cover_em
    from coevo.runner import make_world

    world = make_world(cfg)
    truth = {t.task_id: world.oracle(t) for t in world.eval_set()}
    cov = [cover_em(e["answer"] or "", [truth[e["task_id"]]]) for e in evals if truth.get(e["task_id"])]
    return {"em": float(np.mean([e["correct"] for e in evals])) if evals else None,
            "cover_em": float(np.mean(cov)) if cov else None, "n_eval": len(evals)}


def summarise(per_seed: list[dict], costs: list[dict], strategies: Sequence[str]) -> dict:
    table = {}
    for s in strategies:
        table[s] = {"ff": t_interval([r["strategies"][s]["ff"] for r in per_seed]),
                    "proposer_reward": t_interval([r["strategies"][s]["proposer_reward"] for r in per_seed]),
                    "n_audited": [r["strategies"][s]["n_audited"] for r in per_seed]}
    out = {"strategies": table, "per_seed": per_seed}
    if costs:
        arms = {}
        for arm in ARMS:
            rows = [c for c in costs if c["recipe"] == arm]
            if rows:
                arms[arm] = {k: t_interval([c[k] for c in rows]) for k in ("rollouts", "wall_seconds", "cover_em", "em")}
        base = arms.get("drzero")
        for arm, a in arms.items():
            if base and base["rollouts"]["mean"] and base["wall_seconds"]["mean"]:
                a["rollouts_ratio"] = a["rollouts"]["mean"] / base["rollouts"]["mean"]
                a["wall_ratio"] = a["wall_seconds"]["mean"] / base["wall_seconds"]["mean"]
        out["arms"] = arms
        out["per_run"] = costs
    mean = {s: table[s]["ff"]["mean"] for s in strategies}
    if all(mean.get(s) is not None for s in FOLD_STRATEGIES):
        out["ordering_holds"] = bool(mean["source-id"] < mean["random-question"] <= mean["same-source"])
    return out


def run_ablation(preset: str = "crossfit", overrides: Sequence[str] = (), seeds: int = 3, bank_size: int = 64,
                 aux_steps: int = 2, strategies: Sequence[str] = FOLD_STRATEGIES, costs: bool = True,
                 out_dir: Path | None = None, first_seed: int = 0) -> dict:
    """The whole experiment: ``seeds`` seeds (first_seed ..) of the bank replay, and the arms' cost."""
    seed_ids = range(first_seed, first_seed + seeds)
    per_seed = [run_seed(preset, overrides, s, bank_size, aux_steps, strategies) for s in seed_ids]
    cost_rows = []
    if costs:
        out_dir = Path(out_dir or "runs/crossfit-ablation")
        for s in seed_ids:
            for arm in ARMS:
                cost_rows.append(arm_cost(preset, overrides, s, arm, out_dir))
    res = summarise(per_seed, cost_rows, strategies)
    res.update({"preset": preset, "overrides": list(overrides), "seeds": seeds, "bank_prompts": bank_size,
                "aux_steps": aux_steps})
    return res


def ablation_plot(res: dict, path: Path) -> Path:
    """FF and proposer reward per fold strategy (mean and 95 % interval over seeds), as a PNG."""
    from coevo.report.plots import plt

    names = list(res["strategies"])
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
    for ax, key, title in zip(axes, ("ff", "proposer_reward"), ("false-agreement mass FF", "proposer reward f(k)")):
        m = [res["strategies"][n][key]["mean"] or 0.0 for n in names]
        lo = [m[i] - (res["strategies"][n][key]["ci_low"] if res["strategies"][n][key]["ci_low"] is not None
                      else m[i]) for i, n in enumerate(names)]
        hi = [(res["strategies"][n][key]["ci_high"] if res["strategies"][n][key]["ci_high"] is not None
               else m[i]) - m[i] for i, n in enumerate(names)]
        ax.bar(names, m, yerr=[lo, hi], capsize=4, color=["#c44", "#d93", "#38a"][:len(names)])
        ax.set_title(f"{title} ({res['seeds']} seeds, 95 % t interval)", fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
