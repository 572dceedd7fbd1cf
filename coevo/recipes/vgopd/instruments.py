"""CASA instruments (CASA proposal): phi by axis stratified by r~, the inflation r / r~ vs 1 / (1 - phi), rank
reversals inside each group (exact condition and the CASA proposal's approximation), licensing rates per axis.

Pure functions on arrays (the ``criterion_scores`` / ``casa_gates`` columns of coevo.recipes.vgopd.tables), each
returning numbers with their uncertainty where one is defined.  Definitions: docs/casa.md.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Dict, Sequence

import numpy as np

from coevo.audit.instruments import abstention_share
from coevo.audit.stats import Estimate, wilson_interval

__all__ = ["phi_by_axis", "inflation_ratios", "reversal_exact", "reversal_approx", "rank_reversals",
           "licensing_rates"]


def phi_by_axis(axis: Sequence[str], w_abstained, w_total, r_tilde, r=None) -> Dict[str, Estimate]:
    """phi per axis (CASA proposal §corollary 1, qualification 1: per (prompt, axis), never averaged across axes), each an
    ``abstention_share`` estimate stratified by r~ (qualification 2: the clip bends the top strata)."""
    ax = np.asarray(axis, dtype=object)
    wa, wt, rt = (np.asarray(x, dtype=float) for x in (w_abstained, w_total, r_tilde))
    rr = None if r is None else np.asarray(r, dtype=float)
    return {a: abstention_share(wa[ax == a], wt[ax == a], rt[ax == a], None if rr is None else rr[ax == a])
            for a in sorted(set(ax.tolist()))}


def inflation_ratios(r_raw, r_tilde_raw, phi) -> Dict[str, Any]:
    """Measured r / r~ against 1 / (1 - phi) (CASA proposal §corollary 1: an identity before the clip).

    Rows used: r~ > 0, phi < 1 and no clip (0 <= r~_raw and r_raw <= 1).  Returns the per-row measured
    and predicted ratios on those rows, their max absolute difference, and how many rows the clip or
    r~ = 0 excluded."""
    rr, rt, ph = (np.asarray(x, dtype=float) for x in (r_raw, r_tilde_raw, phi))
    ok = (rt > 0) & (ph < 1) & np.isfinite(rr) & (rr <= 1.0) & (rt >= 0)
    meas = rr[ok] / rt[ok]
    pred = 1.0 / (1.0 - ph[ok])
    clipped = int((np.isfinite(rr) & (rr > 1.0)).sum())
    return {"measured": meas, "predicted": pred, "n": int(ok.sum()), "n_clipped": clipped,
            "n_zero": int((rt <= 0).sum()),
            "max_abs_error": float(np.max(np.abs(meas - pred))) if ok.any() else float("nan")}


def reversal_exact(rt1, phi1, rt2, phi2) -> bool:
    """Exact: with r~1 - r~2 = Delta > 0, r1 < r2 (r = r~ / (1 - phi), unclipped) iff
    r~1 phi2 - r~2 phi1 > Delta (CASA proposal §corollary 2, rearranged without approximation)."""
    return (rt1 * phi2 - rt2 * phi1) > (rt1 - rt2)


def reversal_approx(rt1, phi1, rt2, phi2) -> bool:
    """The CASA proposal's approximation phi2 - phi1 > Delta / r-bar with r-bar = (r~1 + r~2) / 2 (CASA proposal §corollary 2).
    exact LHS = r-bar (phi2 - phi1) + Delta (phi1 + phi2) / 2, so it never over-counts and misses reversals."""
    rbar = (rt1 + rt2) / 2.0
    return rbar > 0 and (phi2 - phi1) > (rt1 - rt2) / rbar


def rank_reversals(groups: Sequence[Any], r_tilde_raw, phi, min_gap: float = 0.0, truth=None) -> Dict[str, Any]:
    """Rank reversals inside each group (rows of one (step, prompt, axis)): ordered pairs with true gap
    Delta = r~1 - r~2 > min_gap whose original-protocol order flips.  Counts with the exact condition and,
    beside it, the CASA proposal's approximation (labelled as such); pairs with phi = 1 (r undefined) are skipped.
    ``truth`` (the oracle's axis score of each row, every criterion judged, no abstention): of the exact
    reversals, how many the oracle orders as r~ does (r misorders them), as r does, or ties."""
    rt = np.asarray(r_tilde_raw, dtype=float)
    ph = np.asarray(phi, dtype=float)
    tr = None if truth is None else np.asarray(truth, dtype=float)
    idx: Dict[Any, list] = defaultdict(list)
    for i, g in enumerate(groups):
        idx[g].append(i)
    n_pairs = n_exact = n_approx = 0
    oracle = {"r_tilde": 0, "r": 0, "tie": 0}
    per_group: Dict[Any, int] = {}
    for g, ii in idx.items():
        c = 0
        for a in ii:
            for b in ii:
                if rt[a] - rt[b] <= min_gap or ph[a] >= 1 or ph[b] >= 1:
                    continue
                n_pairs += 1
                if reversal_exact(rt[a], ph[a], rt[b], ph[b]):
                    n_exact += 1
                    c += 1
                    if tr is not None:
                        oracle["r_tilde" if tr[a] > tr[b] else ("r" if tr[a] < tr[b] else "tie")] += 1
                n_approx += int(reversal_approx(rt[a], ph[a], rt[b], ph[b]))
        per_group[g] = c
    rate = n_exact / n_pairs if n_pairs else float("nan")
    out = {"n_groups": len(idx), "n_pairs": n_pairs, "n_exact": n_exact, "rate_exact": rate,
           "n_approx": n_approx, "approx_label": "CASA proposal §corollary 2 approximation phi2 - phi1 > Delta / r-bar (undercounts)",
           "per_group": per_group}
    if tr is not None:
        out["oracle"] = oracle
    return out


def licensing_rates(axis: Sequence[str], n_failed, n_failed_licensed, n_abstain_candidates=None,
                    n_abstain_licensed=None) -> Dict[str, Dict[str, Any]]:
    """Per axis: the share of failed criteria (F(y)) with at least one licensed expert, and (arm C) the share
    of abstained positive criteria licensed through the low-confidence channel, with Wilson intervals."""
    ax = np.asarray(axis, dtype=object)
    cols = {"failure": (n_failed, n_failed_licensed), "abstention": (n_abstain_candidates, n_abstain_licensed)}
    out: Dict[str, Dict[str, Any]] = {}
    for a in sorted(set(ax.tolist())):
        sel = ax == a
        row: Dict[str, Any] = {}
        for ch, (den, num) in cols.items():
            if den is None or num is None:
                continue
            d = float(np.nansum(np.asarray(den, dtype=float)[sel]))
            n = float(np.nansum(np.asarray(num, dtype=float)[sel]))
            p = n / d if d > 0 else float("nan")
            lo, hi = wilson_interval(p, d) if d > 0 else (float("nan"), float("nan"))
            row[ch] = {"rate": p, "licensed": int(n), "candidates": int(d), "ci_low": lo, "ci_high": hi}
        out[a] = row
    return out
