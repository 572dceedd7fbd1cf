"""Small statistics the instruments report: binomial and difference SEs, cluster-robust SEs,
batch bootstrap, the abstention inflation factor, and the ``Estimate`` result type.

RGBC proposal §background (Table 3 SEs), §limitation 2 (task-clustered / batch bootstrap
intervals: tasks in one batch share the Synthesizer's parameters and context, so plain
binomial intervals are too narrow); CASA proposal §corollary 1 (1/(1-phi)).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Dict, List, Optional

import numpy as np

__all__ = [
    "Estimate", "binomial_se", "difference_se", "abstention_inflation", "clustered_se",
    "batch_bootstrap_ci", "Z95",
]

Z95 = 1.959963984540054


@dataclass
class Estimate:
    """A value with its uncertainty. ``se`` and the interval may be NaN when undefined."""

    value: float
    se: float = float("nan")
    ci_low: float = float("nan")
    ci_high: float = float("nan")
    n: int = 0
    extra: Dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        d = asdict(self)
        extra = d.pop("extra")
        d.update(extra)
        return d


def _out(x, scalar: bool):
    return float(x) if scalar else x


def binomial_se(p, n):
    """Binomial standard error sqrt(p (1 - p) / n).

    RGBC proposal §background: 13.7% and 14.5% on n = 1,856 -> 0.80 and 0.82 points;
    62.3% on the top quartile n = 735 -> 1.79 points; worst case on n = 475 -> 2.29 points.
    """
    p_a = np.asarray(p, dtype=float)
    n_a = np.asarray(n, dtype=float)
    if np.any(n_a <= 0):
        raise ValueError("n must be positive")
    se = np.sqrt(p_a * (1.0 - p_a) / n_a)
    return _out(se, se.ndim == 0)


def difference_se(p1, n1, p2, n2):
    """SE of a difference of two independent proportions sqrt(se1^2 + se2^2).

    RGBC proposal §background (Table 3): 13.7% vs 14.5% on 1,856 tasks each -> 1.14 points, so the
    +0.8 point gain is 0.70 SE. Independence makes this a lower bound when tasks cluster.
    """
    se = np.sqrt(np.asarray(binomial_se(p1, n1)) ** 2 + np.asarray(binomial_se(p2, n2)) ** 2)
    return _out(se, se.ndim == 0)


def abstention_inflation(phi):
    """Abstention inflation factor 1 / (1 - phi): r = r~ / (1 - phi) before clipping.

    CASA proposal §corollary 1: phi = .05 -> 1.053, phi = .20 -> 1.25, phi = .50 -> 2.00.
    """
    a = np.asarray(phi, dtype=float)
    if np.any((a < 0) | (a >= 1)):
        raise ValueError("phi must lie in [0, 1)")
    return _out(1.0 / (1.0 - a), a.ndim == 0)


def clustered_se(values, clusters, weights=None) -> float:
    """Cluster-robust (CR1-style) SE of a (weighted) mean with arbitrary cluster ids.

    The mean is a ratio estimator sum(w y) / sum(w); its linearised variance is
    G/(G-1) * sum_g (sum_{i in g} w_i (y_i - ybar))^2 / (sum w)^2 over G clusters.
    Use task ids for a task-clustered SE, batch ids for a batch-clustered one
    (RGBC proposal §limitation 2). NaN when fewer than two clusters.
    """
    y = np.asarray(values, dtype=float)
    c = np.asarray(clusters)
    w = np.ones_like(y) if weights is None else np.asarray(weights, dtype=float)
    if y.shape != c.shape or y.shape != w.shape:
        raise ValueError("values, clusters and weights must have the same shape")
    if y.size == 0:
        return float("nan")
    ybar = float((w * y).sum() / w.sum())
    _, inv = np.unique(c, return_inverse=True)
    g = int(inv.max()) + 1
    if g < 2:
        return float("nan")
    s = np.bincount(inv, weights=w * (y - ybar), minlength=g)
    var = g / (g - 1.0) * float((s ** 2).sum()) / float(w.sum()) ** 2
    return float(np.sqrt(var))


def batch_bootstrap_ci(values, batches, n_boot: int = 1000, seed: int = 0, alpha: float = 0.05,
                       weights: Optional[np.ndarray] = None) -> Dict[str, float]:
    """Percentile bootstrap of a (weighted) mean, resampling whole batches with replacement.

    RGBC proposal §limitation 2 (batch-level bootstrap). Returns ``{"ci_low", "ci_high", "se", "n_batches"}``;
    deterministic given ``seed``. NaN interval with fewer than two batches.
    """
    y = np.asarray(values, dtype=float)
    b = np.asarray(batches)
    w = np.ones_like(y) if weights is None else np.asarray(weights, dtype=float)
    if y.shape != b.shape or y.shape != w.shape:
        raise ValueError("values, batches and weights must have the same shape")
    nan = float("nan")
    if y.size == 0:
        return {"ci_low": nan, "ci_high": nan, "se": nan, "n_batches": 0}
    _, inv = np.unique(b, return_inverse=True)
    g = int(inv.max()) + 1
    if g < 2:
        return {"ci_low": nan, "ci_high": nan, "se": nan, "n_batches": g}
    num = np.bincount(inv, weights=w * y, minlength=g)
    den = np.bincount(inv, weights=w, minlength=g)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, g, size=(n_boot, g))
    counts = np.zeros((n_boot, g))
    np.add.at(counts, (np.repeat(np.arange(n_boot), g), idx.ravel()), 1.0)
    d = counts @ den
    with np.errstate(invalid="ignore", divide="ignore"):
        stats = (counts @ num) / d
    stats = stats[np.isfinite(stats)]
    lo, hi = np.quantile(stats, [alpha / 2, 1 - alpha / 2])
    return {"ci_low": float(lo), "ci_high": float(hi), "se": float(stats.std(ddof=1)), "n_batches": g}


def wilson_interval(p: float, n: float, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a proportion; stays inside [0, 1] and is not degenerate at p = 0 or 1."""
    if n <= 0:
        return float("nan"), float("nan")
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return float(max(0.0, c - h)), float(min(1.0, c + h))


def bootstrap_stat(values, batches, stat: Callable[[np.ndarray], float], n_boot: int = 1000, seed: int = 0,
                   alpha: float = 0.05) -> Dict[str, float]:
    """Percentile bootstrap of any statistic of the pooled values, resampling whole batches
    (RGBC proposal §limitation 2). Used for statistics that are not means (median |lag|)."""
    y = np.asarray(values, dtype=float)
    b = np.asarray(batches)
    keys, inv = np.unique(b, return_inverse=True)
    g = len(keys)
    nan = float("nan")
    if g < 2:
        return {"ci_low": nan, "ci_high": nan, "se": nan, "n_batches": g}
    members = [y[inv == j] for j in range(g)]
    rng = np.random.default_rng(seed)
    stats = np.array([stat(np.concatenate([members[j] for j in rng.integers(0, g, size=g)]))
                      for _ in range(n_boot)])
    stats = stats[np.isfinite(stats)]
    lo, hi = np.quantile(stats, [alpha / 2, 1 - alpha / 2])
    return {"ci_low": float(lo), "ci_high": float(hi), "se": float(stats.std(ddof=1)), "n_batches": g}


MIN_BATCHES = 5  # fewer batches (steps) than this: no batch bootstrap, a Wilson/Wald interval instead


def interval_estimate(x: np.ndarray, batches: np.ndarray, tasks: Optional[np.ndarray] = None, **extra) -> Estimate:
    """Proportion/mean with binomial SE, task-clustered SE, batch-clustered SE and batch-bootstrap CI."""
    n = int(x.size)
    if n == 0:
        return Estimate(float("nan"), n=0, extra=extra)
    v = float(x.mean())
    ex = dict(extra)
    binary = bool(np.all((x == 0) | (x == 1)))
    ex["se_binomial"] = binomial_se(v, n) if binary else float(x.std(ddof=1) / np.sqrt(n)) if n > 1 else float("nan")
    if tasks is not None:
        ex["se_task_clustered"] = clustered_se(x, tasks)
    ex["se_batch_clustered"] = clustered_se(x, batches)
    bb = batch_bootstrap_ci(x, batches, n_boot=1000, seed=0)
    ex["batch_bootstrap"] = bb
    if bb["n_batches"] >= MIN_BATCHES and not (binary and v in (0.0, 1.0)):
        se, lo, hi = bb["se"], bb["ci_low"], bb["ci_high"]
        ex["interval_method"] = f"batch bootstrap ({bb['n_batches']} batches)"
    else:  # too few batches for a bootstrap (or no event at all): the wider of the binomial and clustered SEs
        cands = [ex["se_binomial"], ex.get("se_task_clustered", float("nan"))]
        if bb["n_batches"] >= 2:
            cands.append(ex["se_batch_clustered"])
        se = max(c for c in cands if np.isfinite(c)) if any(np.isfinite(c) for c in cands) else float("nan")
        why = f"{bb['n_batches']} batches < {MIN_BATCHES}" if bb["n_batches"] < MIN_BATCHES else "no event"
        if binary:  # Wilson score interval at the design-effect sample size p(1-p)/se^2
            n_eff = v * (1 - v) / se ** 2 if (0 < v < 1 and se > 0) else float(n)
            lo, hi = wilson_interval(v, n_eff)
            ex["interval_method"] = f"Wilson, clustered n_eff={n_eff:.0f} ({why})"
        else:
            lo, hi = v - Z95 * se, v + Z95 * se
            ex["interval_method"] = f"Wald, clustered ({why})"
    return Estimate(v, se, lo, hi, n, ex)


def per_step_means(x: np.ndarray, steps: np.ndarray) -> List[dict]:
    out = []
    for s in np.unique(steps):
        sel = steps == s
        y = x[sel]
        v = float(y.mean())
        binary = bool(np.all((y == 0) | (y == 1)))
        se = binomial_se(v, y.size) if binary else (float(y.std(ddof=1) / np.sqrt(y.size)) if y.size > 1 else float("nan"))
        out.append({"step": int(s), "value": v, "se": se if np.isfinite(se) else None, "n": int(y.size)})
    return out
