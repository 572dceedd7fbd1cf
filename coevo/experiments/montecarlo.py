"""The design, before any run: planned power per claim and the experiment's familywise false-``supported``
rate, both from the engine's own verdict code run on simulated experiments (docs/experiments.md "Design").

Each tested claim is simulated from its ``Design`` at the seeds the grid gives it:

- ``t``: ``n`` per-seed values ~ N(theta, pilot_sd); mean, SE = sd / sqrt(n), df = n - 1;
- ``ratio``: per seed a baseline rate ~ N(base_rate, pilot_sd) clipped to [0, 1], the arm's rate that plus
  theta, ``n_per_seed`` units each drawn binomially; the pooled difference with the CR1 SE over seeds
  (``coevo.experiments.claims.ratio_interval``'s formulas, vectorised); identical per-seed rates are degenerate;
- ``rate``: one arm's pooled rate, per seed ~ N(theta, pilot_sd) clipped, ``n_per_seed`` binomial units;
- ``point``: the estimate ~ N(theta, pilot_sd), SE = pilot_sd, normal.

Then the same steps as ``claims.judge_rows``: the two-sided p against the failure line, Holm over the
secondaries of each simulated experiment, the decision interval, ``coevo.audit.verdicts.decide_array``.

- **power** of a claim: P(supported) at ``theta = powered_for``, alone at its level (the primary at 0.05, a
  secondary at the Bonferroni level 0.05 / m: a lower bound on its Holm power);
- **familywise_false_supported**: P(at least one claim supported) under the global null, every claim at
  its failure line (the least favourable point of "the claim is false").

Seeded (``seed``): the same numbers on every call.  ``n_sims`` 20,000: MC error about 0.15 points at 5 %.
"""
from __future__ import annotations

import math
from typing import Dict, List, Optional

import numpy as np

from coevo.audit.verdicts import ALPHA, decide_array, decision_interval, holm_matrix, p_value
from coevo.experiments.claims import pooled_ratio

__all__ = ["simulate", "power", "familywise_false_supported", "design", "claim_seeds", "planned_powers", "power_alpha",
           "seeds_for_power", "N_SIMS", "TARGET_POWER"]

N_SIMS = 20000
TARGET_POWER = 0.8  # the power a headline's seed count is chosen for (issue: seeds from power)


def claim_seeds(exp, claim, seeds: Optional[int] = None) -> int:
    """The units a claim gets in the grid: its design's fixed count, else the seeds every arm it reads runs."""
    if claim.design is not None and claim.design.seeds is not None:
        return int(claim.design.seeds)
    n = int(seeds) if seeds is not None else exp.seeds
    arms = {a.name: a for a in exp.arms}
    caps = [arms[a].max_seeds for a in claim.arms if a in arms and arms[a].max_seeds is not None]
    return min([n, *caps])


def simulate(claim, n: int, theta: float, n_sims: int, rng: np.random.Generator) -> dict:
    """Arrays ``estimate``, ``se``, ``df``, ``degenerate`` of ``n_sims`` simulated samples of the claim."""
    d = claim.design
    if d.kind == "point":
        est = theta + d.pilot_sd * rng.standard_normal(n_sims)
        return {"estimate": est, "se": np.full(n_sims, d.pilot_sd), "df": np.full(n_sims, np.inf),
                "degenerate": np.zeros(n_sims, bool)}
    if n < 2:
        nan = np.full(n_sims, np.nan)
        return {"estimate": nan, "se": nan, "df": np.zeros(n_sims), "degenerate": np.zeros(n_sims, bool)}
    if d.kind == "t":
        x = theta + d.pilot_sd * rng.standard_normal((n_sims, n))
        sd = x.std(axis=1, ddof=1)
        return {"estimate": x.mean(axis=1), "se": sd / math.sqrt(n), "df": np.full(n_sims, n - 1.0),
                "degenerate": np.ptp(x, axis=1) == 0}
    m = d.n_per_seed
    if d.kind == "rate":  # one arm's pooled rate: per seed rate ~ N(theta, pilot_sd) clipped, binomial units
        y = rng.binomial(m, np.clip(theta + d.pilot_sd * rng.standard_normal((n_sims, n)), 0.0, 1.0))
        est, se = pooled_ratio(y, np.full(y.shape, m))
    else:
        base = np.clip(d.base_rate + d.pilot_sd * rng.standard_normal((n_sims, n)), 0.0, 1.0)
        arm = np.clip(base + theta, 0.0, 1.0)
        yb, ya = rng.binomial(m, base), rng.binomial(m, arm)
        est, se = pooled_ratio(ya, np.full(ya.shape, m), yb, np.full(yb.shape, m))
    return {"estimate": est, "se": se, "df": np.full(n_sims, n - 1.0), "degenerate": se < 1e-12}


def _codes(claim, sim: dict, p: np.ndarray, p_adj: np.ndarray, alpha: float) -> np.ndarray:
    """decide_array on the decision interval (claims.judge_rows' rule, vectorised)."""
    lo, hi, _ = decision_interval(sim["estimate"], sim["se"], sim["df"], p, p_adj, alpha)
    return decide_array(sim["estimate"], lo, hi, claim.direction, claim.failure, claim.success_line, sim["degenerate"])


def _p(claim, sim: dict) -> np.ndarray:
    p = np.asarray(p_value(sim["estimate"], sim["se"], sim["df"], claim.failure), dtype=float)
    return np.where(sim["degenerate"], np.nan, p)


def power_alpha(exp, claim) -> float:
    """The level a claim's planned power is computed at: 0.05 / k for each of k (co-)primaries, 0.05 / m for each
    of m secondaries (Bonferroni: a lower bound on the Holm power)."""
    m = sum(1 for c in exp.claims if c.role == claim.role)
    return ALPHA / max(m, 1)


def planned_powers(exp, seeds: Optional[int] = None, n_sims: int = N_SIMS) -> Dict[str, float]:
    """``{claim: planned power}`` for the tested claims at the grid's seeds."""
    return {c.name: power(c, claim_seeds(exp, c, seeds), power_alpha(exp, c), n_sims) for c in exp.claims if c.tested}


def power(claim, n: int, alpha: float = ALPHA, n_sims: int = N_SIMS, seed: int = 0,
          theta: Optional[float] = None) -> float:
    """P(supported) at ``theta`` (default: the design's powered-for effect), the claim tested alone at ``alpha``."""
    rng = np.random.default_rng(seed)
    sim = simulate(claim, n, claim.design.powered_for if theta is None else theta, n_sims, rng)
    p = _p(claim, sim)
    return float(np.mean(_codes(claim, sim, p, p, alpha) == 1))


def seeds_for_power(claim, alpha: float = ALPHA, target: float = TARGET_POWER, max_seeds: int = 60,
                    n_sims: int = 4000) -> Optional[int]:
    """The fewest seeds at which the claim's planned power (at its design's powered-for effect) reaches
    ``target``; None when even ``max_seeds`` do not (or the design has a fixed unit count)."""
    if claim.design is None or claim.design.seeds is not None:
        return None
    lo, hi = 2, max_seeds
    if power(claim, hi, alpha, n_sims) < target:
        return None
    while lo < hi:  # power rises with n (up to MC noise): bisect on the seeded estimate
        mid = (lo + hi) // 2
        if power(claim, mid, alpha, n_sims) >= target:
            hi = mid
        else:
            lo = mid + 1
    return lo


def familywise_false_supported(exp, seeds: Optional[int] = None, n_sims: int = N_SIMS, seed: int = 0,
                               thetas: Optional[Dict[str, float]] = None, alpha: float = ALPHA) -> dict:
    """P(>= 1 supported) over the experiment's tested claims with every claim at its failure line (or at
    ``thetas[name]``): the primary at ``alpha``, the secondaries Holm-adjusted, as ``judge_rows`` does."""
    rng = np.random.default_rng(seed)
    tested = [c for c in exp.claims if c.tested]
    sims = [simulate(c, claim_seeds(exp, c, seeds), (thetas or {}).get(c.name, c.failure), n_sims, rng)
            for c in tested]
    ps = np.stack([_p(c, s) for c, s in zip(tested, sims)], axis=1) if tested else np.zeros((n_sims, 0))
    adj = ps.copy()
    for role in ("primary", "secondary"):
        idx = [i for i, c in enumerate(tested) if c.role == role]
        adj[:, idx] = holm_matrix(ps[:, idx])
    codes = np.stack([_codes(c, s, ps[:, i], adj[:, i], alpha) for i, (c, s) in enumerate(zip(tested, sims))],
                     axis=1) if tested else np.zeros((n_sims, 0), int)
    any_sup = (codes == 1).any(axis=1)
    rate = float(any_sup.mean()) if tested else 0.0
    return {"rate": rate, "mc_se": math.sqrt(max(rate * (1 - rate), 1e-12) / n_sims), "n_sims": n_sims,
            "claims": len(tested), "per_claim": {c.name: float((codes[:, i] == 1).mean()) for i, c in enumerate(tested)}}


def design(exp, seeds: Optional[int] = None, n_sims: int = N_SIMS, budget: str = "default") -> dict:
    """Every claim's pre-registration and planned power, and the familywise false-supported rate."""
    seeds = int(seeds) if seeds is not None else exp.seeds_for.get(budget, exp.seeds)
    rows: List[dict] = []
    for c in exp.claims:
        row = {"name": c.name, "role": c.role, "statement": c.statement, "statistic": c.statistic,
               "direction": c.direction if c.tested else None, "success_line": c.success_line,
               "failure_line": c.failure, "smallest_effect": c.smallest_effect,
               "smallest_effect_why": c.smallest_effect_why or None, "source_value": c.source_value,
               "source_note": c.source_note or None, "construction": c.construction or None, "scale": c.scale,
               "unit": c.unit, "arms": list(c.arms)}
        if c.tested:
            n, a = claim_seeds(exp, c, seeds), power_alpha(exp, c)
            d = c.design
            row.update(seeds=n, units=d.units, kind=d.kind, powered_for=d.powered_for,
                       powered_for_what=d.powered_for_what, pilot_sd=d.pilot_sd, pilot_origin=d.pilot_origin,
                       n_per_seed=d.n_per_seed or None, base_rate=d.base_rate if d.kind == "ratio" else None,
                       power_alpha=a, power=power(c, n, a, n_sims),
                       seeds_for_80=seeds_for_power(c, a) if c.role == "primary" else None)
        rows.append(row)
    fw = familywise_false_supported(exp, seeds, n_sims)
    return {"experiment": exp.name, "budget": budget, "seeds": seeds, "first_seed": exp.first_seed,
            "calibration": [c.as_dict() for c in exp.calibration], "seeded": dict(exp.seeded),
            "claims": rows, "familywise_false_supported": fw["rate"], "familywise_mc_se": fw["mc_se"],
            "n_sims": n_sims}
