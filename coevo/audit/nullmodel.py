"""Bearing probability m_K(p), the bimodal null model, its existence inversion, and kappa-bar.

RGBC proposal §background: a task with true pass rate p is called gradient-bearing by one group of
K rollouts with probability m_K(p) = 1 - p^K - (1 - p)^K. A two-point pool (fraction w at
p_hi, 1 - w at p_lo, nothing in between) predicts the (all-correct, bearing, all-wrong)
triple; the RGBC proposal shows that SynCo's first and last buckets are reproduced by such pools
(an existence inversion: three parameters, two independent constraints).
RGBC proposal §core idea: kappa-bar = E[m(p) | g_1 = 1] = sum w m^2 / sum w m.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence

import numpy as np

__all__ = [
    "bearing_probability", "null_model_shares", "invert_null_model", "expected_kappa",
    "mid_share_given_bearing", "expected_teachability",
]


def bearing_probability(p, k: int = 4):
    """m_K(p) = 1 - p^K - (1 - p)^K, the chance one group of K rollouts is mixed.

    RGBC proposal §background: m_4(0.5) = 0.875; m_4(0.95) = m_4(0.05) = 0.1855.
    """
    a = np.asarray(p, dtype=float)
    if np.any((a < 0) | (a > 1)):
        raise ValueError("p must lie in [0, 1]")
    m = 1.0 - a ** k - (1.0 - a) ** k
    return float(m) if m.ndim == 0 else m


def null_model_shares(w, p_hi, p_lo, k: int = 4):
    """(all_correct, bearing, all_wrong) predicted by the two-point pool (w at p_hi, 1-w at p_lo).

    RGBC proposal §background: w = .6494, p = .98/.0334 -> 59.9 / 9.5 / 30.6 %;
    w = .524, p = .9001/.0787 -> 34.4 / 31.3 / 34.3 %.
    """
    w = np.asarray(w, dtype=float)
    hi = np.asarray(p_hi, dtype=float)
    lo = np.asarray(p_lo, dtype=float)
    ac = w * hi ** k + (1 - w) * lo ** k
    aw = w * (1 - hi) ** k + (1 - w) * (1 - lo) ** k
    be = w * bearing_probability(hi, k) + (1 - w) * bearing_probability(lo, k)
    f = (lambda x: float(x)) if ac.ndim == 0 else (lambda x: x)
    return f(ac), f(be), f(aw)


def expected_kappa(weights: Sequence[float], ps: Sequence[float], k: int = 4) -> float:
    """kappa-bar = E[m(p) | g_1 = 1] = sum w m(p)^2 / sum w m(p) for a discrete pool.

    RGBC proposal §core idea: a screen group is mixed with prob. m(p); an independent confirm group
    is mixed again with prob. m(p). Frontier pools (p in [.25, .75]) give 0.68–0.875;
    pools with p outside [.1, .9] give <= 0.344.
    """
    w = np.asarray(weights, dtype=float)
    m = np.asarray(bearing_probability(np.asarray(ps, dtype=float), k))
    den = float((w * m).sum())
    return float((w * m * m).sum() / den) if den > 0 else float("nan")


def mid_share_given_bearing(p, k: int = 4):
    """P[mu = 1/2 | g = 1] for one task at p with K = 4: 6 p^2 q^2 / m_4(p) (K = 4 only)."""
    if k != 4:
        raise ValueError("mid_share_given_bearing is defined for k = 4")
    a = np.asarray(p, dtype=float)
    m = np.asarray(bearing_probability(a, 4))
    with np.errstate(invalid="ignore", divide="ignore"):
        s = np.where(m > 0, 6 * a ** 2 * (1 - a) ** 2 / np.where(m > 0, m, 1), 0.0)
    return float(s) if s.ndim == 0 else s


def expected_teachability(p, k: int = 4):
    """E[T(mu)] for one task at true pass rate p and K rollouts (RGBC proposal §background: T is a
    three-level quantity at K = 4). For K = 4 this is 2 p q (1 + p q)."""
    a = np.asarray(p, dtype=float)
    from math import comb
    out = np.zeros_like(a)
    for j in range(1, k):
        mu = j / k
        t = 2 * mu if mu <= 0.5 else 2 * (1 - mu)
        out = out + comb(k, j) * a ** j * (1 - a) ** (k - j) * t
    return float(out) if out.ndim == 0 else out


def _solve_other(A: float, Z: float, p_fixed: float, fixed_is_hi: bool, k: int,
                 grid: int = 4001) -> List[float]:
    """Roots p_other of the all-wrong residual with w eliminated through the all-correct equation."""
    a_f, z_f = p_fixed ** k, (1 - p_fixed) ** k

    def resid(q):
        a_o, z_o = q ** k, (1 - q) ** k
        # share at the fixed point: A = s a_f + (1 - s) a_o
        s = (A - a_o) / (a_f - a_o)
        return s * z_f + (1 - s) * z_o - Z

    lo, hi = (0.0, p_fixed) if fixed_is_hi else (p_fixed, 1.0)
    eps = 1e-9
    xs = np.linspace(lo + eps, hi - eps, grid)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = resid(xs)
    ok = np.isfinite(r[:-1]) & np.isfinite(r[1:])
    exact = np.nonzero(ok & (r[:-1] == 0))[0]
    change = np.nonzero(ok & (r[:-1] * r[1:] < 0))[0]
    roots = [float(xs[i]) for i in exact]
    if change.size:
        a, b = xs[change].copy(), xs[change + 1].copy()
        fa = r[change].copy()
        for _ in range(60):
            mid = 0.5 * (a + b)
            with np.errstate(invalid="ignore", divide="ignore"):
                fm = resid(mid)
            left = fa * fm <= 0
            b = np.where(left, mid, b)
            a = np.where(left, a, mid)
            fa = np.where(left, fa, fm)
        roots.extend(float(x) for x in 0.5 * (a + b))
    return roots


def _member(A, B, Z, w, p_hi, p_lo, k) -> Dict[str, float]:
    ac, be, aw = null_model_shares(w, p_hi, p_lo, k)
    return {
        "w": float(w), "p_hi": float(p_hi), "p_lo": float(p_lo),
        "all_correct": ac, "bearing": be, "all_wrong": aw,
        "max_abs_error": float(max(abs(ac - A), abs(be - B), abs(aw - Z))),
        "kappa_bar": expected_kappa([w, 1 - w], [p_hi, p_lo], k),
    }


def invert_null_model(all_correct: float, bearing: float, all_wrong: float, k: int = 4,
                      p_hi: Optional[float] = None, p_lo: Optional[float] = None,
                      grid: Optional[Sequence[float]] = None) -> Dict[str, object]:
    """Two-point pools (w, p_hi, p_lo) that reproduce an observed (all-correct, bearing, all-wrong).

    RGBC proposal §background: an existence inversion — 3 parameters, 2 independent constraints
    (the shares sum to one). The triple is normalised to sum to 1 first.

    * fix ``p_hi`` (or ``p_lo``): solve the other two parameters; returns
      ``{"solutions": [...]}`` (usually one member);
    * fix neither: return the one-parameter family over ``grid`` of p_hi values (default
      an adaptive grid over the p_hi range where members exist), with the range of kappa-bar it implies:
      ``{"family": [...], "kappa_bar_min", "kappa_bar_max", ...}``.

    Each member is a dict with w, p_hi, p_lo, the predicted triple, max_abs_error and
    kappa_bar. Members need 0 <= w <= 1 and p_lo < p_hi.
    """
    tot = float(all_correct + bearing + all_wrong)
    if tot <= 0 or min(all_correct, bearing, all_wrong) < 0:
        raise ValueError("shares must be non-negative and not all zero")
    A, B, Z = all_correct / tot, bearing / tot, all_wrong / tot
    if p_hi is not None and p_lo is not None:
        raise ValueError("fix at most one of p_hi / p_lo")

    def members_for(p_fixed: float, fixed_is_hi: bool) -> List[Dict[str, float]]:
        out = []
        for q in _solve_other(A, Z, p_fixed, fixed_is_hi, k):
            a_f, a_o = p_fixed ** k, q ** k
            s = (A - a_o) / (a_f - a_o)
            w = s if fixed_is_hi else 1 - s
            hi_, lo_ = (p_fixed, q) if fixed_is_hi else (q, p_fixed)
            if -1e-9 <= w <= 1 + 1e-9:
                out.append(_member(A, B, Z, min(max(w, 0.0), 1.0), hi_, lo_, k))
        return out

    if p_hi is not None:
        return {"observed": (A, B, Z), "solutions": members_for(float(p_hi), True)}
    if p_lo is not None:
        return {"observed": (A, B, Z), "solutions": members_for(float(p_lo), False)}
    if grid is None:
        coarse = np.linspace(0.5, 1 - 1e-6, 400)
        valid = [ph for ph in coarse if any(f["max_abs_error"] < 1e-6 for f in members_for(float(ph), True))]
        if valid:
            i0 = max(int(np.searchsorted(coarse, valid[0])) - 1, 0)
            grid = np.linspace(coarse[i0], valid[-1], 200)
        else:
            grid = coarse
    grid = np.asarray(grid, dtype=float)
    family = []
    for ph in grid:
        family.extend(members_for(float(ph), True))
    family = [f for f in family if f["max_abs_error"] < 1e-6]
    kap = [f["kappa_bar"] for f in family]
    return {
        "observed": (A, B, Z),
        "family": family,
        "n_members": len(family),
        "kappa_bar_min": float(min(kap)) if kap else float("nan"),
        "kappa_bar_max": float(max(kap)) if kap else float("nan"),
        "p_hi_range": (family[0]["p_hi"], family[-1]["p_hi"]) if family else (float("nan"),) * 2,
    }


def _cos_grid(n: int = 201) -> np.ndarray:
    return 0.5 * (1 - np.cos(np.pi * np.linspace(0, 1, n)))  # dense near 0 and 1, where p^K moves fast


def null_fit_error(triple: Sequence[float], k: int, grid: int = 201) -> Dict[str, float]:
    """Smallest max-abs error (share units) with which a two-point pool (w at p_hi, 1-w at p_lo)
    reproduces an observed (all-correct, bearing, all-wrong) triple (RGBC proposal §background, P2).

    For each (p_lo < p_hi) pair on a grid dense near 0 and 1 the error is a max of three
    |linear functions of w|; its minimum lies at a zero or a crossing of two of them, so w is
    solved exactly among those candidates. Returns error, w, p_hi, p_lo.
    """
    A, B, Z = (float(x) for x in triple)
    tot = A + B + Z
    A, B, Z = A / tot, B / tot, Z / tot
    p = _cos_grid(grid)
    i, j = np.triu_indices(len(p), 1)  # p_lo = p[i] < p_hi = p[j]
    lo, hi = p[i], p[j]
    a_lo, z_lo = lo ** k, (1 - lo) ** k
    a_hi, z_hi = hi ** k, (1 - hi) ** k
    b_lo, b_hi = 1 - a_lo - z_lo, 1 - a_hi - z_hi
    # error_c(w) = c_lo - obs + w (c_hi - c_lo), c in (A, B, Z)
    a0 = np.stack([a_lo - A, b_lo - B, z_lo - Z])
    a1 = np.stack([a_hi - a_lo, b_hi - b_lo, z_hi - z_lo])
    cands = [np.zeros_like(lo), np.ones_like(lo)]
    with np.errstate(divide="ignore", invalid="ignore"):
        for c in range(3):
            cands.append(-a0[c] / a1[c])
        for c in range(3):
            for d in range(c + 1, 3):
                cands.append(-(a0[c] - a0[d]) / (a1[c] - a1[d]))
                cands.append(-(a0[c] + a0[d]) / (a1[c] + a1[d]))
    W = np.clip(np.nan_to_num(np.stack(cands), nan=0.0, posinf=0.0, neginf=0.0), 0, 1)  # (cand, pairs)
    err = np.max(np.abs(a0[:, None, :] + a1[:, None, :] * W[None]), axis=0)  # (cand, pairs)
    ci = np.argmin(err, axis=0)
    best = err[ci, np.arange(err.shape[1])]
    m = int(np.argmin(best))
    return {"error": float(best[m]), "w": float(W[ci[m], m]), "p_hi": float(hi[m]), "p_lo": float(lo[m])}
