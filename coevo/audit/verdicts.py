"""The one verdict rule: a claim against its source's own success and failure lines.

Used by every verdict coevo prints: the experiments' claims (``coevo.experiments.claims``), the design
proposals' predictions (``coevo audit --predictions`` through ``coevo.audit.predictions.judge``) and the
certificate's P1.  docs/experiments.md "The verdict rule" has worked examples.

A claim says the statistic lies on one side (``direction`` +1: large, -1: small).  Its **failure line**
``f`` is where the source says the claim no longer holds (RGBC P5: a gain under 1 point); its optional
**success line** ``s`` is what the source promises (P5: >= 3 points).  Where the source names no line the
claim declares a smallest effect of interest, which is its failure line.  With ``d = direction`` and the
decision interval ``[lo, hi]`` (the 95 % interval, or the wider one a multiplicity correction asks for):

- **supported**: the interval lies wholly beyond ``f`` on the source's side (``d * (x - f) > 0`` for every
  x in it) *and* the estimate reaches ``s`` where one is given;
- **refuted**: the interval lies wholly short of ``f`` (``d * (x - f) < 0`` for every x in it);
- **inconclusive**: otherwise, with the reason: ``between the lines`` (beyond ``f`` but the estimate short
  of ``s``), ``too wide`` / ``underpowered`` (the interval straddles ``f``; underpowered when the design's
  planned power was under 80 %), ``no interval``;
- **degenerate**: a sample without spread (identical seeds, a statistic constant by construction): a
  zero-width interval is no evidence, so no verdict.

Every comparison is strict: an interval that touches a line decides nothing.  The functions take
numpy arrays as well as floats (the Monte Carlo of ``coevo.experiments.montecarlo`` runs them on
thousands of simulated experiments at once).
"""
from __future__ import annotations

import math
from typing import Optional, Sequence

import numpy as np

__all__ = ["SUPPORTED", "REFUTED", "INCONCLUSIVE", "DEGENERATE", "ALPHA", "decide", "decide_array", "explain",
           "p_value", "holm", "holm_matrix", "decision_interval", "t_quantile"]

SUPPORTED, REFUTED, INCONCLUSIVE, DEGENERATE = "supported", "refuted", "inconclusive", "degenerate"
ALPHA = 0.05  # two-sided: the primary claim at 0.05, the secondary claims Holm-adjusted to 0.05 within the experiment
CODES = (INCONCLUSIVE, SUPPORTED, REFUTED, DEGENERATE)  # decide_array's integer codes 0..3


def t_quantile(q, df):
    """Student t quantile (the normal one for df = inf); arrays broadcast."""
    from scipy import stats

    df = np.asarray(df, dtype=float)
    out = np.where(np.isinf(df), stats.norm.ppf(q), stats.t.ppf(q, np.where(np.isinf(df), 1.0, df)))
    return float(out) if out.ndim == 0 else out


def p_value(estimate, se, df, failure):
    """Two-sided p of the test 'the statistic equals the failure line': 2 P(T_df > |est - f| / se).
    NaN where there is no interval (se NaN or 0, df < 1)."""
    from scipy import stats

    est, se, df = (np.asarray(x, dtype=float) for x in (estimate, se, df))
    ok = np.isfinite(est) & np.isfinite(se) & (se > 0) & (df >= 1)
    z = np.abs(est - failure) / np.where(ok, se, 1.0)
    safe_df = np.where(np.isinf(df) | ~ok, 1.0, df)
    tail = np.where(np.isinf(df), stats.norm.sf(z), stats.t.sf(z, safe_df))
    p = np.where(ok, np.minimum(1.0, 2.0 * tail), np.nan)
    return float(p) if p.ndim == 0 else p


def holm_matrix(p) -> np.ndarray:
    """Holm's step-down adjusted p-values of each row (one experiment) over its columns (claims): sorted
    ascending, ``p~(i) = max_{j <= i} min(1, (m - j + 1) p(j))``; NaN stays NaN and is not counted in the family."""
    p = np.atleast_2d(np.asarray(p, dtype=float))
    if p.shape[1] == 0:
        return p
    fin = np.isfinite(p)
    order = np.argsort(np.where(fin, p, np.inf), axis=1, kind="stable")
    srt = np.take_along_axis(np.where(fin, p, np.inf), order, axis=1)
    ok = np.isfinite(srt)
    factor = ok.sum(axis=1, keepdims=True) - np.arange(p.shape[1])[None, :]
    adj = np.maximum.accumulate(np.minimum(1.0, np.where(ok, factor * np.where(ok, srt, 0.0), np.inf)), axis=1)
    out = np.empty_like(adj)
    np.put_along_axis(out, order, adj, axis=1)
    return np.where(fin, out, np.nan)


def holm(pvalues: Sequence[float]) -> list:
    """``holm_matrix`` of one experiment: a list of adjusted p-values."""
    return [float(x) for x in holm_matrix([list(pvalues)])[0]]


def decision_interval(estimate, se, df, p, p_adjusted, alpha: float = ALPHA):
    """``(lo, hi, level)``: the t interval at level ``1 - alpha p / p_adjusted`` (``1 - alpha`` where that is
    undefined), whose ends cross the failure line exactly when ``p_adjusted < alpha``; NaN ends without an
    interval (SE not finite, df < 1).  Arrays broadcast (the Monte Carlo's simulated experiments)."""
    est, se, df, p, p_adj = (np.asarray(x, dtype=float) for x in (estimate, se, df, p, p_adjusted))
    with np.errstate(divide="ignore", invalid="ignore"):
        level = np.where(np.isfinite(p_adj) & (p_adj > 0), 1 - alpha * p / p_adj, 1 - alpha)
    level = np.where(np.isfinite(level), level, 1 - alpha)
    ok = np.isfinite(se) & (df >= 1)
    t = np.asarray(t_quantile(1 - (1 - level) / 2, np.where(ok, df, 1.0)), dtype=float)
    half = np.where(ok, t * np.where(ok, se, 0.0), np.nan)
    lo, hi = est - half, est + half
    if lo.ndim == 0:
        return float(lo), float(hi), float(level)
    return lo, hi, level


def decide_array(estimate, lo, hi, direction: int, failure: float, success: Optional[float] = None,
                 degenerate=False):
    """The rule on arrays: integer codes into ``CODES`` (0 inconclusive, 1 supported, 2 refuted, 3 degenerate)."""
    est, lo, hi = (np.asarray(x, dtype=float) for x in (estimate, lo, hi))
    d = 1.0 if direction > 0 else -1.0
    near, far = (lo, hi) if d > 0 else (hi, lo)  # the interval's end nearest the failure line from the source's side
    beyond = np.isfinite(near) & (d * (near - failure) > 0)
    short = np.isfinite(far) & (d * (far - failure) < 0)
    reaches = np.ones_like(est, dtype=bool) if success is None else (d * (est - success) >= 0)
    code = np.where(beyond & reaches, 1, np.where(short, 2, 0))
    code = np.where(np.asarray(degenerate, dtype=bool), 3, code)
    return code


def decide(estimate: float, lo: float, hi: float, direction: int, failure: float, success: Optional[float] = None,
           degenerate: bool = False) -> str:
    """supported | refuted | inconclusive | degenerate for one interval (rule in the module docstring)."""
    if direction not in (1, -1):
        raise ValueError(f"direction must be +1 or -1, got {direction!r}")
    if success is not None and direction * (success - failure) < 0:
        raise ValueError(f"the success line {success} lies short of the failure line {failure} for direction {direction}")
    return CODES[int(decide_array(estimate, lo, hi, direction, failure, success, degenerate))]


def explain(verdict: str, estimate: float, lo: float, hi: float, direction: int, failure: float,
            success: Optional[float] = None, power: Optional[float] = None, fmt=lambda x: f"{x:.4g}") -> str:
    """One line: why the verdict (which line, which end of the interval)."""
    if verdict == DEGENERATE:
        return "no spread (identical values): a zero-width interval is no evidence"
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "no interval (needs two or more seeds or clusters)"
    side = ">" if direction > 0 else "<"
    if verdict == SUPPORTED:
        return f"interval beyond the failure line ({side} {fmt(failure)})" + (
            "" if success is None else f", estimate reaches the success line ({fmt(success)})")
    if verdict == REFUTED:
        return f"interval wholly short of the failure line {fmt(failure)}"
    near = lo if direction > 0 else hi
    if direction * (near - failure) > 0:
        return f"between the lines: beyond the failure line {fmt(failure)}, estimate short of the success line {fmt(success)}"
    if power is not None and math.isfinite(power) and power < 0.8:
        return f"underpowered: the interval straddles the failure line {fmt(failure)} (planned power {100 * power:.0f} %)"
    return f"too wide: the interval straddles the failure line {fmt(failure)}"
