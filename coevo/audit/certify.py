"""The zero-training certificate (RGBC proposal §method step 1; issue #13): screen and confirm groups
drawn with a *frozen* model on a fixed task pool, before any training.

Per task: a screen group of K rollouts, mu_1 = share judged correct against the task's
reference by the run verifier; only when 0 < mu_1 < 1 a second, independent confirm group of
K (mu_2). From these (every formula is the audit's own, nothing is re-derived here):

* kappa-bar = mean 1[0 < mu_2 < 1] over screen-bearing tasks (``kappa_bar``), with a
  task-clustered SE and a batch-bootstrap interval (batches of ``batch`` tasks in file order);
* the screen triple (all-correct, bearing, all-wrong), the bimodal null model's best fit and
  its reproduction error (``null_fit_error``) and the kappa-bar range of the exact two-point
  family (``invert_null_model``);
* nu-bar: the mode of the 2K answers (grouped by the verifier's equivalence) against the
  reference, on bearing tasks, and the reference-in-doubt share (``nu_bar``);
* P1's verdict against its decision lines (kappa-bar <= 0.45 holds; >= 0.70 terminates) with
  the resolution the RGBC proposal states (SE ~2.3 points at n = 475 separates 0.45 from 0.70, not
  from 0.52).

``truth_p`` (optional, one true pass rate per task: a simulated pool, or a plug-in estimate
from many extra samples) adds the truth E[m(p) | g_1 = 1] = sum m(p)^2 / sum m(p), the same
quantity ``coevo simulate`` reports, so the interval can be checked against it.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Optional, Sequence

import numpy as np

from coevo.audit.instruments import bearing_indicator, estimate_dict, kappa_bar, nu_bar
from coevo.audit.nullmodel import bearing_probability, invert_null_model, null_fit_error
from coevo.audit.predictions import judge
from coevo.audit.simulate import FRONTIER_KAPPA, NOISE_KAPPA
from coevo.audit.stats import Z95, wilson_interval
from coevo.core.world import ANSWER

__all__ = ["CertifyError", "P1_HOLDS", "P1_TERMINATES", "certify", "draw_groups", "certificate_from_groups",
           "kappa_truth"]

P1_HOLDS = 0.45        # RGBC proposal §prediction P1: kappa-bar <= 0.45 (single-shot bearing is mostly noise)
P1_TERMINATES = 0.70   # RGBC proposal §prediction P1: kappa-bar >= 0.70 -> a real frontier; the main axis is void
RESOLUTION_NOTE = "P1's resolution: SE ~2.3 points at n=475 separates 0.45 from 0.70, not from 0.52 (RGBC proposal §predictions)"


class CertifyError(ValueError):
    """Bad certificate input (empty pool, K < 2, ...); the CLI prints it as one line."""


def kappa_truth(p: Sequence[float], k: int) -> float:
    """E[m_K(p) | g_1 = 1] = sum m(p)^2 / sum m(p) over a pool of true pass rates (RGBC proposal
    §core idea), as ``coevo simulate`` reports it."""
    m = np.asarray(bearing_probability(np.asarray(p, dtype=float), k))
    return float((m * m).sum() / m.sum()) if m.sum() > 0 else float("nan")


def draw_groups(sample: Callable[[list[int]], list[list[Optional[str]]]],
                judge_many: Callable[[list[tuple[Optional[str], str]]], list[int]],
                references: Sequence[str], k: int) -> dict:
    """Screen groups for every task, confirm groups for the bearing ones.

    ``sample(task_indices)`` -> per task K extracted answers (None = no answer);
    ``judge_many(pairs)`` -> 1/0 per (answer, reference) pair (an abstention is 0)."""
    n = len(references)
    screen = sample(list(range(n)))
    mu1 = _mu(screen, references, judge_many)
    bearing = [i for i in range(n) if 0 < mu1[i] < 1]
    confirm_ans: list[list[Optional[str]]] = [[] for _ in range(n)]
    mu2 = np.full(n, np.nan)
    if bearing:
        drawn = sample(bearing)
        vals = _mu(drawn, [references[i] for i in bearing], judge_many)
        for j, i in enumerate(bearing):
            confirm_ans[i], mu2[i] = drawn[j], vals[j]
    return {"screen": screen, "confirm": confirm_ans, "mu_screen": mu1, "mu_confirm": mu2}


def _mu(groups, refs, judge_many) -> np.ndarray:
    pairs = [(a, r) for g, r in zip(groups, refs) for a in g]
    vals = judge_many(pairs) if pairs else []
    out, pos = np.zeros(len(groups)), 0
    for i, g in enumerate(groups):
        out[i] = float(np.mean(vals[pos:pos + len(g)])) if g else np.nan
        pos += len(g)
    return out


def certificate_from_groups(groups: dict, k: int, batch: int = 32, mode_agrees: Optional[Sequence[float]] = None,
                            mode_share: Optional[Sequence[float]] = None, doubt_stable: float = 0.75,
                            truth_p: Optional[Sequence[float]] = None, n_boot: int = 1000, seed: int = 0) -> dict:
    """The certificate's numbers from drawn groups (see the module docstring)."""
    s, c = np.asarray(groups["mu_screen"], float), np.asarray(groups["mu_confirm"], float)
    n = s.size
    tasks, batches = np.arange(n), np.arange(n) // max(1, batch)
    kb = kappa_bar(s, c, tasks=tasks, batches=batches, n_boot=n_boot, seed=seed)
    triple = [float(np.mean(s == 1)), float(np.mean(bearing_indicator(s))), float(np.mean(s == 0))]
    fit = null_fit_error(triple, k)
    try:
        fam = invert_null_model(*triple, k=k)
        family = {"n_members": fam["n_members"], "kappa_bar_min": fam["kappa_bar_min"],
                  "kappa_bar_max": fam["kappa_bar_max"]}
    except ValueError as e:
        family = {"n_members": 0, "error": str(e)}
    kv = estimate_dict(kb)
    bb = kb.extra.get("batch_bootstrap") or {}
    # a proportion: the Wald interval is clipped to [0, 1] (unclipped, it reached 1.06 at 7/8 bearing)
    wald = ((max(0.0, kb.value - Z95 * kb.se), min(1.0, kb.value + Z95 * kb.se)) if np.isfinite(kb.se)
            else (kb.ci_low, kb.ci_high))
    wil = wilson_interval(kb.value, kb.n) if kb.n else (float("nan"), float("nan"))
    # few batches make a batch bootstrap far too narrow, and a Wald interval collapses at 0 or 1 with few
    # tasks: the headline interval is the widest of the three
    for lo, hi in (wald, wil):
        if not (hi - lo <= kv["ci_high"] - kv["ci_low"]):
            kv["ci_low"], kv["ci_high"] = lo, hi
    kv.update(interval="widest of task-clustered Wald, Wilson and batch bootstrap",
              ci_wald=list(wald), ci_wilson=list(wil), ci_batch_bootstrap=[bb.get("ci_low"), bb.get("ci_high")],
              n_batches=int(np.unique(batches[bearing_indicator(s) & np.isfinite(c)]).size),
              se_binomial=kb.extra.get("se_binomial"), se_task_clustered=kb.extra.get("se_clustered"),
              se_batch_clustered=kb.extra.get("se_batch_clustered"), n_screened=int(n),
              n_screen_bearing=kb.extra.get("n_screen_bearing"))
    out: dict[str, Any] = {
        "k": int(k), "n_tasks": int(n), "batch": int(batch),
        "screen_triple": {"all_correct": triple[0], "bearing": triple[1], "all_wrong": triple[2]},
        "kappa_bar": kv,
        "null_model": {"fit_error": fit["error"], "best_fit": fit, "exact_family": family},
        "budget": {"screen_rollouts": int(k * n), "confirm_rollouts": int(k * np.isfinite(c).sum()),
                   "increment": float(np.isfinite(c).sum() / n) if n else float("nan")},
        "decision_lines": {"p1_holds_max": P1_HOLDS, "p1_terminates_min": P1_TERMINATES,
                           "frontier_kappa_min": FRONTIER_KAPPA, "noise_kappa_max": NOISE_KAPPA},
    }
    j = judge(kb.value, kv["ci_low"], kv["ci_high"], ("<=", P1_HOLDS),
              [(">=", P1_TERMINATES, "the pool has a real frontier: the main axis is void, switch to "
                                     "'how to widen the frontier band'")])
    out["p1"] = {"claim": "kappa-bar <= 0.45 (single-shot bearing is mostly binomial noise)", **j,
                 "resolution": RESOLUTION_NOTE, "interval": kv["interval"]}
    if mode_agrees is not None:
        nb = nu_bar(np.asarray(mode_agrees, float), np.asarray(mode_share, float), s, stable=doubt_stable)
        out["nu_bar"] = estimate_dict(nb["nu_bar"])
        out["doubt_share"] = estimate_dict(nb["doubt_share"])
        out["doubt_stable"] = doubt_stable
    if truth_p is not None:
        tp = np.asarray(truth_p, dtype=float)
        truth = kappa_truth(tp, k)
        out["truth"] = {"kappa_bar": truth, "bearing_probability": float(np.mean(bearing_probability(tp, k))),
                        "kappa_in_interval": bool(kv["ci_low"] <= truth <= kv["ci_high"])}
    return out


def _mode_flags(verifier, groups: dict, references: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per bearing task, whether the 2K-answer mode (grouped by the verifier) matches the reference,
    and the mode's share; NaN elsewhere."""
    n = len(references)
    agrees, share = np.full(n, np.nan), np.full(n, np.nan)
    idx = [i for i in range(n) if np.isfinite(groups["mu_confirm"][i])]
    if not idx:
        return agrees, share
    votes = verifier.majority_votes([list(groups["screen"][i]) + list(groups["confirm"][i]) for i in idx])
    pairs = [(v.label, references[i]) for v, i in zip(votes, idx)]
    checks = verifier.match_many(pairs)
    for v, i, chk in zip(votes, idx, checks):
        agrees[i] = 1.0 if (v.label is not None and chk.value == 1) else 0.0
        share[i] = v.p_hat
    return agrees, share


def certify(policy, world, tasks: Sequence[Any], verifier, k: int = 4, sampling=None, batch: int = 32,
            doubt_stable: float = 0.75, truth_p: Optional[Sequence[float]] = None, chunk: int = 16,
            n_boot: int = 1000, seed: int = 0, progress: Optional[Callable[[str], None]] = None) -> dict:
    """The certificate of a frozen ``policy`` on ``tasks`` (``world.solver_prompt`` prompts,
    ``world.extract_answer`` answers, ``verifier.match_many`` judgements; sampling on the audit
    stream so no training RNG moves)."""
    from dataclasses import replace

    from coevo.core.policy import SamplingParams
    from coevo.core.world import role_sampling

    if k < 2:
        raise CertifyError(f"k must be >= 2, got {k}")
    if not tasks:
        raise CertifyError("the task pool is empty")
    refs = [t.reference for t in tasks]
    if any(r is None for r in refs):
        raise CertifyError("every task needs a reference answer")
    sp = role_sampling(world, ANSWER, replace(sampling or SamplingParams(), stream="audit"))
    prompts = [world.solver_prompt(t) for t in tasks]
    t0 = time.time()

    def sample(indices: list[int]) -> list[list[Optional[str]]]:
        out = []
        for a in range(0, len(indices), chunk):
            part = [prompts[i] for i in indices[a:a + chunk]]
            for g in policy.sample(part, k, sp):
                out.append([world.extract_answer(c.text) if c.finish_reason != "error" else None for c in g])
            if progress:
                progress(f"sampled {min(a + chunk, len(indices))}/{len(indices)} tasks")
        return out

    def judge_many(pairs):
        return [1 if v.value == 1 else 0 for v in verifier.match_many(pairs)]

    groups = draw_groups(sample, judge_many, refs, k)
    agrees, share = _mode_flags(verifier, groups, refs)
    out = certificate_from_groups(groups, k, batch=batch, mode_agrees=agrees, mode_share=share,
                                  doubt_stable=doubt_stable, truth_p=truth_p, n_boot=n_boot, seed=seed)
    out.update(policy_version=getattr(policy, "version", ""), world=getattr(world, "name", ""),
               verifier_kind=verifier.kind, seconds=round(time.time() - t0, 2),
               tasks=[{"task_id": t.task_id, "mu_screen": float(m1), "mu_confirm": None if not np.isfinite(m2) else float(m2)}
                      for t, m1, m2 in zip(tasks, groups["mu_screen"], groups["mu_confirm"])])
    return out
