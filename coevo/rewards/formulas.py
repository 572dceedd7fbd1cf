"""Reward formulas of the seeds, one pure function per quantity.

Every function accepts a Python scalar or a numpy array and returns the same shape
(a Python ``float`` for scalar input). Sources:

* RGBC proposal §background (SynCo appendix B.2, eqs. 24–25): ``teachability``, ``quality_gate``;
* RGBC proposal §core idea (RGBC): ``advantage_magnitude``;
* R-Zero: ``uncertainty_reward``, ``challenger_reward``, ``keep_for_solver``;
* CASA proposal §corollary 1 (CASA): ``criteria_scores``.

A reward that only one recipe folder uses lives there: SynCo's and RGBC's Synthesizer rewards in
``coevo/recipes/rgbc/rewards.py``, CrossFit's in ``coevo/recipes/drzero/rewards.py``.

See docs/formulas.md for the table of formulas and the published arithmetic we re-checked.
"""
from __future__ import annotations

import math
from typing import Any, Dict, Sequence

import numpy as np

__all__ = [
    "teachability", "quality_gate", "advantage_magnitude", "uncertainty_reward", "challenger_reward",
    "keep_for_solver", "keep_in_band", "criteria_scores", "UNCERTAINTY_VARIANTS",
]

UNCERTAINTY_VARIANTS = ("paper", "reference")


def _out(x: np.ndarray, scalar: bool):
    return float(x) if scalar else x


def _arr(x) -> tuple[np.ndarray, bool]:
    a = np.asarray(x, dtype=float)
    return a, a.ndim == 0


def _check_unit(a: np.ndarray, name: str) -> None:
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


def uncertainty_reward(p_hat, variant: str = "paper"):
    """R-Zero challenger uncertainty reward.

    R-Zero §2.2. ``variant="paper"`` (default): r_unc = 1 - 2|p_hat - 1/2|;
    ``variant="reference"``: min(p_hat, 1 - p_hat), the formula of the reference code.
    The two differ by exactly a factor of 2 (paper = 2 * reference), which changes the
    balance against the repetition penalty lambda * |C| / B.
    """
    a, s = _arr(p_hat)
    _check_unit(a, "p_hat")
    if variant == "paper":
        r = 1.0 - 2.0 * np.abs(a - 0.5)
    elif variant == "reference":
        r = np.minimum(a, 1.0 - a)
    else:
        raise ValueError(f"variant must be one of {UNCERTAINTY_VARIANTS}, got {variant!r}")
    return _out(r, s)


def challenger_reward(p_hat, r_rep, variant: str = "paper"):
    """R-Zero challenger reward r = max(0, r_unc - r_rep).

    R-Zero §2.2; ``variant`` as in :func:`uncertainty_reward`. A malformed
    challenger output (no ``<question>``) gets 0 before this is computed.
    """
    u = np.asarray(uncertainty_reward(p_hat, variant))
    r = np.maximum(0.0, u - np.asarray(r_rep, dtype=float))
    return float(r) if r.ndim == 0 else r


def keep_in_band(p_hat, low: float = 0.3, high: float = 0.8):
    """R-Zero's *code* solver-dataset filter: keep iff low <= p_hat <= high (both ends included).

    ``question_evaluate/upload.py`` in the R-Zero repository keeps ``min_score <= score <=
    max_score`` with ``--min_score 0.3 --max_score 0.8`` (``scripts/solver_train.sh``), where
    ``score`` is the majority share of ``--num_samples 9`` answers (``question_evaluate/evaluate.py``):
    3..7 of 9 are kept. The paper states |p_hat - 1/2| <= delta over m = 10 (:func:`keep_for_solver`).
    A 1e-9 tolerance absorbs float error.
    """
    if not 0 <= low <= high <= 1:
        raise ValueError(f"need 0 <= low <= high <= 1, got [{low}, {high}]")
    a, s = _arr(p_hat)
    keep = (a >= low - 1e-9) & (a <= high + 1e-9)
    return bool(keep) if s else keep


def keep_for_solver(p_hat, delta: float = 0.25):
    """R-Zero solver-dataset filter: keep iff |p_hat - 1/2| <= delta.

    R-Zero §2.3, §3.1: with m = 10 answers and delta = 0.25 this keeps
    3..7 of 10 agreeing with the majority. A 1e-9 tolerance absorbs float error.
    """
    a, s = _arr(p_hat)
    keep = np.abs(a - 0.5) <= delta + 1e-9
    return bool(keep) if s else keep


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
