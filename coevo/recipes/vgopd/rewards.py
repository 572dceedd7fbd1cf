"""VG-OPD's and CASA's criteria scores: a pure function (CASA proposal §corollary 1).

``criteria_scores(weights, verdicts)`` gives, for one answer's criteria, VG-OPD's r (abstentions out of
numerator and denominator), CASA's fixed-denominator r~ and the abstained weight share phi
(``coevo/recipes/vgopd/casa/scoring.py`` scores every (answer, axis) with it; docs/formulas.md,
tests/test_formulas.py).
"""
from __future__ import annotations

import math
from typing import Any, Dict, Sequence

import numpy as np

__all__ = ["criteria_scores", "is_abstention"]


def is_abstention(v: Any) -> bool:
    """True for an unknown verdict value: None, NaN, a non-numeric value, or the strings "unknown" /
    "abstain" / "none" / "" (how ``criteria_scores`` and the CASA scoring read a verdict)."""
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
    unk = np.array([is_abstention(v) for v in verdicts], dtype=bool)
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
