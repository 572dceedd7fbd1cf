"""Reward formulas of the seeds, one pure function per quantity.

Every function accepts a Python scalar or a numpy array and returns the same shape
(a Python ``float`` for scalar input). Sources:

* RGBC proposal §background (SynCo appendix B.2, eqs. 24–25): ``teachability``, ``quality_gate``;
* RGBC proposal §core idea (RGBC): ``advantage_magnitude``;
* CASA proposal §corollary 1 (CASA): ``criteria_scores``.

A reward that only one recipe folder uses lives there: SynCo's and RGBC's Synthesizer rewards in
``coevo/recipes/rgbc/rewards.py``, CrossFit's in ``coevo/recipes/drzero/rewards.py``, R-Zero's
uncertainty and Challenger rewards and its Solver-set filters in ``coevo/recipes/rzero/rewards.py``.

See docs/formulas.md for the table of formulas and the published arithmetic we re-checked.
"""
from __future__ import annotations

import math
from typing import Any, Dict, Sequence

import numpy as np

__all__ = ["teachability", "quality_gate", "advantage_magnitude", "criteria_scores"]


def _out(x: np.ndarray, scalar: bool):
    """A formula's result in the input's shape: a float for a scalar input."""
    return float(x) if scalar else x


def _arr(x) -> tuple[np.ndarray, bool]:
    """The input as a float array, and whether it was a scalar."""
    a = np.asarray(x, dtype=float)
    return a, a.ndim == 0


def _check_unit(a: np.ndarray, name: str) -> None:
    """ValueError unless every value lies in [0, 1]."""
    if np.any((a < 0) | (a > 1)):
        raise ValueError(f"{name} must lie in [0, 1]")


def teachability(mu):
    """SynCo teachability T(mu) = 2 mu if mu <= 0.5 else 2 (1 - mu).

    RGBC proposal §background (SynCo appendix B.2, eq. 25). With K = 4 rollouts mu is in
    {0, .25, .5, .75, 1}, so T takes only the three values {0, .5, 1}.
    """
    a, s = _arr(mu)
    _check_unit(a, "mu")
    return _out(np.where(a <= 0.5, 2.0 * a, 2.0 * (1.0 - a)), s)


def quality_gate(v):
    """SynCo gate G(v) = clip((v - 0.5) / 0.5, 0, 1).

    RGBC proposal §background (SynCo appendix B.2, eq. 24): scores below 0.5 are zeroed.
    """
    a, s = _arr(v)
    return _out(np.clip((a - 0.5) / 0.5, 0.0, 1.0), s)


def advantage_magnitude(mu_tilde, n: int):
    """Continuous advantage magnitude adv = n / (n - 1) * mu~ (1 - mu~), n = 2K rollouts.

    RGBC proposal §core idea: the unbiased within-group variance of a Bernoulli group, to which
    the GRPO advantage magnitude is proportional.
    """
    if n < 2:
        raise ValueError("n must be >= 2")
    a, s = _arr(mu_tilde)
    _check_unit(a, "mu_tilde")
    return _out(n / (n - 1.0) * a * (1.0 - a), s)


def _is_unknown(v: Any) -> bool:
    if v is None:
        return True
    if isinstance(v, str):
        return v.strip().lower() in ("unknown", "abstain", "none", "")
    try:
        return math.isnan(float(v))
    except (TypeError, ValueError):
        return True


def criteria_scores(weights: Sequence[float], verdicts: Sequence[Any]) -> Dict[str, float]:
    """CASA criterion accounting for one (prompt, axis, answer).

    CASA proposal §corollary 1 (VG-OPD axis reward and CASA's fixed denominator).
    ``verdicts`` holds 1, 0 or unknown (None / NaN / "unknown") per criterion.

    * numerator = sum_j w_j V_j over scored criteria (a penalty w_j < 0 subtracts when V_j = 1);
    * W = sum of positive weights; W_A = positive weight abstained; phi = W_A / W;
    * r = clip(numerator / (W - W_A), 0, 1) — VG-OPD: abstentions out of numerator and
      denominator (NaN when every positive criterion abstained);
    * r_tilde = clip(numerator / W, 0, 1) — CASA fixed denominator.

    Before clipping ``r_raw = r_tilde_raw / (1 - phi)`` holds exactly (both returned).
    """
    w = np.asarray(weights, dtype=float)
    if w.shape != (len(verdicts),):
        raise ValueError("weights and verdicts must have the same length")
    unk = np.array([_is_unknown(v) for v in verdicts], dtype=bool)
    v = np.array([0.0 if u else float(x) for x, u in zip(verdicts, unk)])
    if np.any((v != 0) & (v != 1)):
        raise ValueError("verdicts must be 1, 0 or unknown")
    pos = w > 0
    W = float(w[pos].sum())
    if W <= 0:
        raise ValueError("at least one criterion needs a positive weight")
    W_A = float(w[pos & unk].sum())
    numerator = float((w * v)[~unk].sum())
    phi = W_A / W
    denom = W - W_A
    r_raw = numerator / denom if denom > 0 else float("nan")
    r_tilde_raw = numerator / W
    return {
        "numerator": numerator,
        "W": W,
        "W_A": W_A,
        "phi": phi,
        "r": float(np.clip(r_raw, 0.0, 1.0)) if denom > 0 else float("nan"),
        "r_tilde": float(np.clip(r_tilde_raw, 0.0, 1.0)),
        "r_raw": r_raw,
        "r_tilde_raw": r_tilde_raw,
    }
