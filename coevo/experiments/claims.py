"""Pre-registered claims and their statistics (docs/experiments.md "Claims" and "The verdict rule").

A claim declares, before any run: the source's words, its **success line** and **failure line** in the
statistic's units (or, where the source gives none, a **smallest effect of interest** with the reason in
one sentence: it is then the failure line), whether it is the experiment's **primary** claim (exactly one)
or a secondary one, and its **design** (units, the effect it is powered for, the pilot SD and where it
came from).  ``Claim.problems()`` lists what a declaration lacks; the engine refuses an experiment
whose claims have any.  Rows that carry no verdict say so by their role: ``measurement`` (a level beside the
source's), ``by construction`` (a value the world's settings fix: a unit test checks the identity, the row
carries none), ``descriptive`` (a cost in other units than the source's).

Samples and intervals (pure functions, hand-computed tests in tests/test_experiment_claims.py):

- ``SeedSample``: one value per seed (a paired difference already taken): mean, ``SE = sd / sqrt(n)``,
  Student t with ``n - 1`` df;
- ``RatioSample``: counts per seed (``y`` of ``n``: false agreements of audited questions, productive tasks
  of screened ones, reversals), optionally minus a baseline's counts on the same seeds: the pooled ratio
  ``sum y / sum n`` (each unit weighs once) with the CR1 cluster-robust SE over seeds (the ratio's
  linearisation ``u_g = (y_g - R n_g) / N``), t with ``G - 1`` df: the seeds may differ beyond binomial
  noise (another bank, another world draw), which a pooled score interval would ignore;
- ``ClusteredSample``: units with cluster ids, CR1 SE, ``G - 1`` df;
- ``PointSample``: a statistic that carries its own 95 % interval (a bootstrap of a range), ``SE`` =
  width / 3.92, normal.

A sample without spread (identical seeds, all counts zero, a zero-width interval) is **degenerate**: no
verdict.  The verdict itself is ``coevo.audit.verdicts.decide`` on the decision interval, after the
multiplicity correction of ``judge_rows`` (the primary at two-sided 0.05, the secondaries Holm-adjusted).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from coevo.audit.verdicts import ALPHA, DEGENERATE, decide, decision_interval, explain, holm, p_value, t_quantile

__all__ = ["Claim", "Design", "SeedSample", "RatioSample", "ClusteredSample", "PointSample", "seed_interval",
           "pooled_ratio", "ratio_interval", "clustered_interval", "point_interval", "mde", "evaluate", "judge_rows",
           "over_seeds", "paired_by_seed", "ratio_over_seeds", "ratio_paired", "t_quantile", "ROLES", "TESTED", "POWER"]

POWER = 0.80
ROLES = ("primary", "secondary", "measurement", "by construction", "descriptive")
TESTED = ("primary", "secondary")
KINDS = ("t", "ratio", "rate", "point")
NO_VERDICT = {"measurement": "measured", "by construction": "by construction", "descriptive": "descriptive"}


@dataclass(frozen=True)
class Design:
    """How a tested claim was planned.  ``kind``: ``t`` (a value per seed; ``pilot_sd`` = the SD of one
    seed's value), ``ratio`` (two arms' counts per seed, paired: ``n_per_seed`` units at ``base_rate``;
    ``pilot_sd`` = the SD of the rate between seeds), ``rate`` (one arm's counts: ``n_per_seed`` units per
    seed, ``pilot_sd`` the SD of its rate between seeds), ``point`` (``pilot_sd`` = the SE of the statistic).  ``seeds``: a fixed
    count (P6's three seeds); None: the grid's seeds of the claim's arms."""

    units: str
    powered_for: float
    powered_for_what: str
    pilot_sd: float
    pilot_origin: str
    kind: str = "t"
    n_per_seed: int = 0
    base_rate: float = 0.0
    seeds: Optional[int] = None


@dataclass(frozen=True)
class SeedSample:
    values: Dict[int, float]
    method: str = "t over seeds"


@dataclass(frozen=True)
class RatioSample:
    """Counts per seed: ``num[seed]`` of ``den[seed]``, minus ``base_num / base_den`` on the same seeds when given."""

    num: Dict[int, float]
    den: Dict[int, float]
    base_num: Optional[Dict[int, float]] = None
    base_den: Optional[Dict[int, float]] = None
    method: str = "pooled ratio, CR1 over seeds"


@dataclass(frozen=True)
class ClusteredSample:
    values: Sequence[float]
    clusters: Sequence
    method: str = "clustered"


@dataclass(frozen=True)
class PointSample:
    estimate: float
    ci_low: float
    ci_high: float
    n: int
    method: str = "interval of the statistic"


@dataclass(frozen=True)
class Claim:
    """A pre-registered claim (module docstring).  ``sample(runs)`` gives one of the samples above; ``arms``
    (the arms it reads; set by the sample builders) size its design; ``scale`` / ``unit`` only format."""

    name: str
    statement: str
    statistic: str
    sample: Callable
    role: str = "secondary"
    direction: int = 1
    success_line: Optional[float] = None
    failure_line: Optional[float] = None
    smallest_effect: Optional[float] = None
    smallest_effect_why: str = ""
    design: Optional[Design] = None
    source_value: Optional[float] = None
    source_note: str = ""
    construction: str = ""
    scale: float = 1.0
    unit: str = ""
    arms: Tuple[str, ...] = ()

    def __post_init__(self):
        if not self.arms and getattr(self.sample, "arms", None):
            object.__setattr__(self, "arms", tuple(self.sample.arms))

    @property
    def tested(self) -> bool:
        return self.role in TESTED

    @property
    def failure(self) -> Optional[float]:
        return self.failure_line if self.failure_line is not None else self.smallest_effect

    def problems(self) -> List[str]:
        """What the declaration lacks (empty: complete)."""
        out = [] if self.statement.strip() and self.statistic.strip() else ["the source's words and the statistic"]
        if self.role not in ROLES:
            return out + [f"role {self.role!r} (one of {', '.join(ROLES)})"]
        if self.role == "by construction" and not self.construction.strip():
            out.append("the identity that fixes it and the unit test that checks it (construction)")
        if not self.tested:
            return out
        if self.direction not in (1, -1):
            out.append("direction +1 or -1")
        if self.failure_line is None and self.smallest_effect is None:
            out.append("a failure line, or a smallest effect of interest with its reason")
        if self.failure_line is not None and self.smallest_effect is not None:
            out.append("either a failure line or a smallest effect of interest, not both")
        if self.smallest_effect is not None and not self.smallest_effect_why.strip():
            out.append("the reason for the smallest effect of interest (one sentence)")
        if self.success_line is not None and self.failure is not None and \
                self.direction * (self.success_line - self.failure) < 0:
            out.append("a success line beyond the failure line")
        d = self.design
        if d is None:
            return out + ["a design (units, powered-for effect, pilot SD and its origin)"]
        if d.kind not in KINDS:
            out.append(f"design kind {d.kind!r} (one of {', '.join(KINDS)})")
        if not (d.units.strip() and d.powered_for_what.strip() and d.pilot_origin.strip()):
            out.append("the design's units, what its effect is and where the pilot SD came from")
        if not (math.isfinite(d.pilot_sd) and d.pilot_sd > 0) or not math.isfinite(d.powered_for):
            out.append("a positive pilot SD and a finite powered-for effect")
        elif self.failure is not None and self.direction * (d.powered_for - self.failure) <= 0:
            out.append("a powered-for effect beyond the failure line (at the line the power is the test's level)")
        if d.kind in ("ratio", "rate") and not (d.n_per_seed >= 1 and 0.0 <= d.base_rate <= 1.0):
            out.append("a ratio design's units per seed and base rate")
        if d.seeds is None and not self.arms:
            out.append("the arms it reads (or a fixed seed count in its design)")
        return out


# ---------------------------------------------------------------------- intervals
def mde(se: float, df: float, alpha: float = ALPHA, power: float = POWER) -> float:
    """The observed-SE minimum detectable effect (t_{1-alpha/2,df} + t_{power,df}) SE: a secondary column, after
    the data (the planned power is the design's, before them).  NaN when df < 1."""
    if not (df >= 1) or not math.isfinite(se):
        return float("nan")
    return (t_quantile(1 - alpha / 2, df) + t_quantile(power, df)) * se


def _interval(d: dict, level: float = 1 - ALPHA) -> dict:
    t = t_quantile(1 - (1 - level) / 2, d["df"])
    d["ci_low"], d["ci_high"] = d["estimate"] - t * d["se"], d["estimate"] + t * d["se"]
    d["mde_observed"] = mde(d["se"], d["df"])
    return d


def seed_interval(values: Sequence[float]) -> dict:
    """Mean, SE = sd/sqrt(n), df = n - 1 and the t interval; ``degenerate`` when the values have no spread."""
    x = np.asarray(list(values), dtype=float)
    n = int(x.size)
    if n == 0:
        return {"estimate": float("nan"), "se": float("nan"), "df": 0, "n": 0}
    est = float(x.mean())
    if n < 2:
        return {"estimate": est, "se": float("nan"), "df": 0, "n": n}
    flat = bool(np.ptp(x) == 0)
    se = 0.0 if flat else float(x.std(ddof=1) / math.sqrt(n))
    return _interval({"estimate": est, "se": se, "df": n - 1, "n": n, "degenerate": flat})


def pooled_ratio(y, n, base_y=None, base_n=None):
    """The pooled ratio ``sum y / sum n`` over the last axis (seeds), minus the baseline's where given, and its
    CR1 SE over that axis from the ratio's linearisation ``u_g = (y_g - R n_g) / N`` (minus the baseline's):
    ``sqrt(G / (G - 1) sum u_g^2)``.  Any leading shape: one experiment here, the Monte Carlo's many at once."""
    y, n = np.asarray(y, dtype=float), np.asarray(n, dtype=float)
    g = y.shape[-1]
    total = n.sum(axis=-1, keepdims=True)
    r = y.sum(axis=-1, keepdims=True) / total
    est, u = r[..., 0], (y - r * n) / total
    if base_y is not None:
        by, bn = np.asarray(base_y, dtype=float), np.asarray(base_n, dtype=float)
        btotal = bn.sum(axis=-1, keepdims=True)
        rb = by.sum(axis=-1, keepdims=True) / btotal
        est, u = est - rb[..., 0], u - (by - rb * bn) / btotal
    se = np.sqrt(g / (g - 1) * np.sum(u ** 2, axis=-1)) if g >= 2 else np.full(est.shape, np.nan)
    return est, se


def ratio_interval(num: Dict[int, float], den: Dict[int, float], base_num: Optional[Dict[int, float]] = None,
                   base_den: Optional[Dict[int, float]] = None) -> dict:
    """``pooled_ratio`` of one experiment's counts (on the seeds every side has), with its t interval."""
    seeds = sorted(s for s in num if s in den and (base_num is None or (s in base_num and s in base_den)))
    y, n = np.array([num[s] for s in seeds], float), np.array([den[s] for s in seeds], float)
    g = len(seeds)
    base = None if base_num is None else (np.array([base_num[s] for s in seeds], float),
                                          np.array([base_den[s] for s in seeds], float))
    if g == 0 or n.sum() <= 0 or (base is not None and base[1].sum() <= 0):
        return {"estimate": float("nan"), "se": float("nan"), "df": 0, "n": g, "clusters": g}
    est, se = (float(x) for x in pooled_ratio(y, n, *(base or ())))
    per = y / np.where(n > 0, n, np.nan)
    out = {"estimate": est, "n": g, "clusters": g, "units": float(n.sum())}
    if base is not None:
        per = per - base[0] / np.where(base[1] > 0, base[1], np.nan)
        out["base_units"] = float(base[1].sum())
    out["per_seed"] = {str(s): float(v) for s, v in zip(seeds, per)}
    if g < 2:
        return {**out, "se": float("nan"), "df": 0}
    flat = bool(se < 1e-12)
    return _interval({**out, "se": 0.0 if flat else se, "df": g - 1, "degenerate": flat})


def clustered_interval(values: Sequence[float], clusters: Sequence) -> dict:
    """Mean with the CR1 cluster-robust SE (coevo.audit.stats.clustered_se), df = G - 1."""
    from coevo.audit.stats import clustered_se

    y, c = np.asarray(list(values), dtype=float), np.asarray(list(clusters))
    g = int(np.unique(c).size) if c.size else 0
    if y.size == 0:
        return {"estimate": float("nan"), "se": float("nan"), "df": 0, "n": 0, "clusters": 0}
    se = float(clustered_se(y, c))
    out = {"estimate": float(y.mean()), "se": se, "df": max(g - 1, 0), "n": int(y.size), "clusters": g,
           "degenerate": bool(g >= 2 and se < 1e-12)}
    return _interval(out) if g >= 2 else out


def point_interval(s: PointSample) -> dict:
    se = (s.ci_high - s.ci_low) / (2 * t_quantile(1 - ALPHA / 2, math.inf))
    return {"estimate": float(s.estimate), "ci_low": float(s.ci_low), "ci_high": float(s.ci_high), "se": se,
            "df": math.inf, "n": int(s.n), "mde_observed": mde(se, math.inf),
            "degenerate": bool(math.isfinite(se) and se <= 0)}


def _estimate(s) -> dict:
    if isinstance(s, RatioSample):
        return ratio_interval(s.num, s.den, s.base_num, s.base_den)
    if isinstance(s, ClusteredSample):
        return clustered_interval(s.values, s.clusters)
    if isinstance(s, PointSample):
        return point_interval(s)
    est = seed_interval([s.values[k] for k in sorted(s.values)])
    est["per_seed"] = {str(k): s.values[k] for k in sorted(s.values)}
    return est


# ---------------------------------------------------------------------- rows and verdicts
def evaluate(claim: Claim, runs) -> dict:
    """The claim's row before the multiplicity correction: estimate, 95 % interval, SE, df, the two-sided p
    against the failure line (tested claims), the declaration."""
    s = claim.sample(runs)
    est = _estimate(s)
    row = {"name": claim.name, "role": claim.role, "statement": claim.statement, "statistic": claim.statistic,
           "method": s.method, "direction": claim.direction, "success_line": claim.success_line,
           "failure_line": claim.failure, "smallest_effect": claim.smallest_effect,
           "smallest_effect_why": claim.smallest_effect_why, "source_value": claim.source_value,
           "source_note": claim.source_note, "construction": claim.construction, "scale": claim.scale,
           "unit": claim.unit, "headline": claim.role == "primary",
           **{k: est.get(k, float("nan")) for k in ("estimate", "ci_low", "ci_high", "se", "mde_observed")},
           "df": est.get("df", 0), "n": est.get("n", 0), "degenerate": bool(est.get("degenerate", False))}
    for k in ("per_seed", "clusters", "units", "base_units"):
        if k in est:
            row[k] = est[k]
    row["p"] = float(p_value(row["estimate"], row["se"], row["df"], claim.failure)) \
        if claim.tested and not row["degenerate"] else float("nan")
    return row


def judge_rows(rows: List[dict], powers: Optional[Dict[str, float]] = None, alpha: float = ALPHA) -> List[dict]:
    """Verdicts for the experiment's rows: the primary at ``alpha`` (co-primaries Holm-adjusted among themselves);
    the secondaries Holm-adjusted within the experiment (``p_adjusted``); the decision interval at the level that makes ``lo`` / ``hi`` cross the
    failure line exactly when ``p_adjusted < alpha``; then ``decide``.  Rows without a test get their role's word."""
    powers = powers or {}
    adj = {}
    for role in TESTED:  # co-primaries Holm-adjusted among themselves (one primary: its own p), secondaries likewise
        idx = [i for i, r in enumerate(rows) if r["role"] == role and r.get("verdict") != "not evaluated"]
        adj.update(zip(idx, holm([rows[i]["p"] for i in idx])))
    for i, r in enumerate(rows):
        if r.get("verdict") == "not evaluated":
            continue
        if r["role"] not in TESTED:
            r.update(verdict=NO_VERDICT.get(r["role"], r["role"]), p_adjusted=None)
            continue
        r["p_adjusted"] = adj.get(i, r["p"])
        lo, hi, level = decision_interval(r["estimate"], r["se"], r["df"], r["p"], r["p_adjusted"], alpha)
        if r["degenerate"]:
            lo, hi = r["ci_low"], r["ci_high"]
        r["decision_low"], r["decision_high"], r["decision_level"] = lo, hi, level
        v = decide(r["estimate"], lo, hi, r["direction"], r["failure_line"], r["success_line"],
                   degenerate=r["degenerate"])
        r["verdict"] = v
        r["power"] = powers.get(r["name"])
        if v != "supported":
            k, u = r["scale"] or 1.0, r["unit"] or ""
            r["why"] = explain(v, r["estimate"], lo, hi, r["direction"], r["failure_line"], r["success_line"],
                               r["power"], fmt=lambda x: f"{x * k:+.3g}{u}")
            if v != DEGENERATE and level < 1 - alpha - 1e-12:
                r["why"] += f" (Holm: p {r['p']:.2g} -> {r['p_adjusted']:.2g}, the {100 * level:.2f} % interval)"
    return rows


# ---------------------------------------------------------------------- sample builders
class _Sampler:
    """A claim's ``sample`` that knows the arms it reads (the design sizes its seeds from them)."""

    def __init__(self, fn: Callable, arms: Sequence[str]):
        self.fn, self.arms = fn, tuple(arms)

    def __call__(self, runs):
        return self.fn(runs)


def over_seeds(arm: str, metric: Callable[[dict], Optional[float]]) -> Callable:
    """metric(summary.json) per seed of one arm."""
    return _Sampler(lambda runs: SeedSample(runs.per_seed(arm, metric), f"t over the seeds of {arm}"), (arm,))


def paired_by_seed(arm: str, baseline: str, metric: Callable[[dict], Optional[float]]) -> Callable:
    """metric(arm) - metric(baseline) on the seeds both ran (a paired t)."""
    def sample(runs) -> SeedSample:
        a, b = runs.per_seed(arm, metric), runs.per_seed(baseline, metric)
        return SeedSample({s: a[s] - b[s] for s in sorted(set(a) & set(b))}, f"paired t over seeds ({arm} - {baseline})")
    return _Sampler(sample, (arm, baseline))


def _counts(runs, arm: str, count: Callable) -> Tuple[dict, dict]:
    num, den = {}, {}
    for s in runs.seeds(arm):
        c = count(runs, arm, s)
        if c is not None and c[1]:
            num[s], den[s] = float(c[0]), float(c[1])
    return num, den


def ratio_over_seeds(arm: str, count: Callable) -> Callable:
    """``count(runs, arm, seed) -> (y, n)`` pooled over the arm's seeds (a RatioSample)."""
    def sample(runs) -> RatioSample:
        num, den = _counts(runs, arm, count)
        return RatioSample(num, den, method=f"pooled ratio over the seeds of {arm}, CR1 over seeds")
    return _Sampler(sample, (arm,))


def ratio_paired(arm: str, baseline: str, count: Callable, base_count: Optional[Callable] = None) -> Callable:
    """Pooled ratio of ``arm`` minus that of ``baseline`` on the seeds both ran, CR1 over seeds (paired)."""
    def sample(runs) -> RatioSample:
        num, den = _counts(runs, arm, count)
        bn, bd = _counts(runs, baseline, base_count or count)
        return RatioSample(num, den, bn, bd, f"pooled ratios, {arm} - {baseline}, CR1 over seeds (paired)")
    return _Sampler(sample, (arm, baseline))
