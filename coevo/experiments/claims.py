"""Claims with a verdict: the paper's statement, its number, the direction, the statistic; per claim
an estimate, a 95 % interval, the minimum detectable effect (MDE) and a verdict.

Intervals (pure functions below, hand-computed tests in tests/test_experiment_claims.py):

- over seeds: one value per seed, ``est = mean``, ``SE = sd / sqrt(n)`` (sd with ``n - 1``),
  ``df = n - 1``; the interval ``est +/- t_{0.975,df} SE`` (Student t);
- paired by seed (two arms that share seeds): the same over the per-seed differences
  ``arm(seed) - baseline(seed)`` (a paired t interval);
- clustered (units that share a batch, a task, a seed): ``SE`` = the cluster-robust SE of the
  mean (``coevo.audit.stats.clustered_se``, CR1), ``df = G - 1`` over G clusters.

MDE at 80 % power, two-sided 5 % test, for the budget used::

    MDE = (t_{0.975,df} + t_{0.80,df}) * SE

(the effect a replication with this SE would detect 80 % of the time; df = inf gives the normal
1.96 + 0.84 = 2.80 SE).

Verdict (``direction`` +1: the paper says the statistic is > 0; -1: < 0):

- *reproduced*: the interval excludes zero on the paper's side (lo > 0 for +1, hi < 0 for -1);
- *refuted*: otherwise, if the interval excludes the paper's value (or, with no number, lies
  wholly on the other side of zero);
- *inconclusive*: neither (the MDE says how large an effect this budget could have seen).

``magnitude`` says separately whether the paper's value lies inside the interval ("consistent"),
below it or above it.  A claim with ``direction = 0`` is a measurement (a level shown beside the
paper's, no test): its verdict is "measured".
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Dict, Optional, Sequence

import numpy as np

__all__ = ["Claim", "SeedSample", "ClusteredSample", "PointSample", "seed_interval", "clustered_interval", "mde",
           "verdict", "magnitude", "evaluate", "over_seeds", "paired_by_seed", "t_quantile"]

ALPHA, POWER = 0.05, 0.80


def t_quantile(q: float, df: float) -> float:
    """Student t quantile (normal for df = inf)."""
    from scipy import stats

    return float(stats.norm.ppf(q) if math.isinf(df) else stats.t.ppf(q, df))


@dataclass(frozen=True)
class SeedSample:
    """One value per seed (a paired difference already taken where the claim pairs arms)."""

    values: Dict[int, float]
    method: str = "t over seeds"


@dataclass(frozen=True)
class ClusteredSample:
    """Units with cluster ids (their batch, task or seed): a cluster-robust interval."""

    values: Sequence[float]
    clusters: Sequence
    method: str = "clustered"


@dataclass(frozen=True)
class PointSample:
    """A statistic that carries its own 95 % interval (e.g. a bootstrap of a range over seeds, which is no
    mean): estimate, interval and n as given; MDE = (t_0.975 + t_0.80) SE with SE = interval width / 3.92
    (the normal interval's), df = inf."""

    estimate: float
    ci_low: float
    ci_high: float
    n: int
    method: str = "interval of the statistic"


def point_interval(s: PointSample) -> dict:
    se = (s.ci_high - s.ci_low) / (2 * t_quantile(1 - ALPHA / 2, math.inf))
    return {"estimate": float(s.estimate), "ci_low": float(s.ci_low), "ci_high": float(s.ci_high), "se": se,
            "df": math.inf, "n": int(s.n), "mde": mde(se, math.inf)}


def seed_interval(values: Sequence[float]) -> dict:
    """Mean, SE = sd/sqrt(n), df = n - 1 and the t interval of per-seed values (NaN below 2)."""
    x = np.asarray(list(values), dtype=float)
    n = int(x.size)
    if n == 0:
        return {"estimate": float("nan"), "se": float("nan"), "df": 0, "n": 0}
    est = float(x.mean())
    if n < 2:
        return {"estimate": est, "se": float("nan"), "df": 0, "n": n}
    se = 0.0 if np.ptp(x) == 0 else float(x.std(ddof=1) / math.sqrt(n))  # exact 0 for identical seeds
    return _with_interval({"estimate": est, "se": se, "df": n - 1, "n": n})


def clustered_interval(values: Sequence[float], clusters: Sequence) -> dict:
    """Mean with the CR1 cluster-robust SE (coevo.audit.stats.clustered_se), df = G - 1."""
    from coevo.audit.stats import clustered_se

    y = np.asarray(list(values), dtype=float)
    c = np.asarray(list(clusters))
    g = int(np.unique(c).size) if c.size else 0
    if y.size == 0:
        return {"estimate": float("nan"), "se": float("nan"), "df": 0, "n": 0, "clusters": 0}
    se = clustered_se(y, c)
    out = {"estimate": float(y.mean()), "se": float(se), "df": max(g - 1, 0), "n": int(y.size), "clusters": g}
    return _with_interval(out) if g >= 2 else out


def _with_interval(d: dict) -> dict:
    t = t_quantile(1 - ALPHA / 2, d["df"])
    d["ci_low"], d["ci_high"] = d["estimate"] - t * d["se"], d["estimate"] + t * d["se"]
    d["mde"] = mde(d["se"], d["df"])
    return d


def mde(se: float, df: float, alpha: float = ALPHA, power: float = POWER) -> float:
    """Minimum detectable effect: (t_{1-alpha/2,df} + t_{power,df}) * SE (NaN when df < 1)."""
    if not (df >= 1) or not math.isfinite(se):
        return float("nan")
    return (t_quantile(1 - alpha / 2, df) + t_quantile(power, df)) * se


def verdict(lo: float, hi: float, direction: int, paper_value: Optional[float]) -> str:
    """reproduced | refuted | inconclusive (rule in the module docstring); "measured" for direction 0."""
    if direction == 0:
        return "measured"
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "inconclusive"
    if (direction > 0 and lo > 0) or (direction < 0 and hi < 0):
        return "reproduced"
    if paper_value is not None and not (lo <= paper_value <= hi):
        return "refuted"
    if paper_value is None and ((direction > 0 and hi < 0) or (direction < 0 and lo > 0)):
        return "refuted"
    return "inconclusive"


def magnitude(lo: float, hi: float, paper_value: Optional[float]) -> Optional[str]:
    """Where the paper's value lies against the interval: consistent | below | above (None: no value)."""
    if paper_value is None or not (math.isfinite(lo) and math.isfinite(hi)):
        return None
    if paper_value < lo:
        return "paper below the interval"
    if paper_value > hi:
        return "paper above the interval"
    return "consistent with the paper"


@dataclass(frozen=True)
class Claim:
    """A claim of the paper: ``statement`` (its words), ``paper_value`` (its number, in the
    statistic's units; None where the paper's setting has no comparable number), ``direction``
    (+1 / -1 / 0 = a measurement), ``statistic`` (what is estimated, in words) and ``sample``
    (the finished runs -> a SeedSample or ClusteredSample).  ``scale`` only formats (100: points)."""

    name: str
    statement: str
    statistic: str
    sample: Callable
    direction: int = 1
    paper_value: Optional[float] = None
    paper_note: str = ""
    headline: bool = False
    scale: float = 1.0
    unit: str = ""


def evaluate(claim: Claim, runs) -> dict:
    """The claim's row of the result: estimate, interval, SE, df, MDE, paper value, verdict."""
    s = claim.sample(runs)
    if isinstance(s, ClusteredSample):
        est = clustered_interval(s.values, s.clusters)
    elif isinstance(s, PointSample):
        est = point_interval(s)
    else:
        est = seed_interval([s.values[k] for k in sorted(s.values)])
        est["per_seed"] = {str(k): s.values[k] for k in sorted(s.values)}
    lo, hi = est.get("ci_low", float("nan")), est.get("ci_high", float("nan"))
    v = verdict(lo, hi, claim.direction, claim.paper_value)
    row = {"name": claim.name, "statement": claim.statement, "statistic": claim.statistic,
           "method": s.method, "direction": claim.direction, "paper_value": claim.paper_value,
           "paper_note": claim.paper_note, "headline": claim.headline, "scale": claim.scale, "unit": claim.unit,
           **{k: est.get(k, float("nan")) for k in ("estimate", "ci_low", "ci_high", "se", "mde")},
           "df": est.get("df", 0), "n": est.get("n", 0), "verdict": v,
           "magnitude": magnitude(lo, hi, claim.paper_value) if claim.direction else None}
    for k in ("per_seed", "clusters"):
        if k in est:
            row[k] = est[k]
    if v == "inconclusive":
        row["why"] = _why(row)
    return row


def _why(row: dict) -> str:
    if row["n"] < 2 or not math.isfinite(row["se"]):
        return f"{row['n']} value(s): no interval (needs >= 2 seeds or clusters)"
    if row["se"] == 0:
        return (f"every value is {row['estimate'] * row['scale']:.3g}{row['unit']}: a zero-width interval "
                f"that does not exclude zero")
    return (f"|estimate| {abs(row['estimate']) * row['scale']:.3g}{row['unit']} is below the MDE "
            f"{row['mde'] * row['scale']:.3g}{row['unit']} of this budget")


def over_seeds(arm: str, metric: Callable[[dict], Optional[float]]) -> Callable:
    """``sample`` of a claim on one arm: metric(summary.json) per seed."""
    def sample(runs) -> SeedSample:
        return SeedSample(runs.per_seed(arm, metric), f"t over the seeds of {arm}")
    return sample


def paired_by_seed(arm: str, baseline: str, metric: Callable[[dict], Optional[float]]) -> Callable:
    """``sample`` of a claim comparing two arms: metric(arm) - metric(baseline) on the seeds both ran."""
    def sample(runs) -> SeedSample:
        a, b = runs.per_seed(arm, metric), runs.per_seed(baseline, metric)
        return SeedSample({s: a[s] - b[s] for s in sorted(set(a) & set(b))},
                          f"paired t over seeds ({arm} - {baseline})")
    return sample
