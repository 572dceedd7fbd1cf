"""The zero-training certificate's numbers (RGBC proposal §method step 1; issue #13) from screen and
confirm groups drawn with a *frozen* model on a fixed task pool, before any training.  This module
holds only pure functions over given groups; the groups are drawn by ``coevo.stages.certify``
(``certify``, ``draw_groups``: the sample -> extract -> verify stage), above the audit layer.

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

from typing import Any, Optional, Sequence

import numpy as np

from coevo.audit.instruments import bearing_indicator, estimate_dict, kappa_bar, nu_bar
from coevo.audit.nullmodel import bearing_probability, invert_null_model, null_fit_error
from coevo.audit.predictions import judge
from coevo.audit.simulate import FRONTIER_KAPPA, NOISE_KAPPA
from coevo.audit.stats import Z95, wilson_interval

__all__ = ["CertifyError", "P1_HOLDS", "P1_TERMINATES", "certificate_from_groups", "kappa_truth"]

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
