"""Instruments: pure functions on arrays, each returning a value with its uncertainty.

Another module wires these to the DuckDB ledger; here everything is numpy in, ``Estimate``
(value, se, ci_low/ci_high, n, extras) out. Sources: RGBC proposal §core idea and §method
(bearing rate, kappa-bar, nu-bar and the reference-in-doubt bucket, lag, top-quartile
enrichment, seed-to-seed range), R-Zero (pseudo-label accuracy), False Frontiers (FF) (FF),
CASA proposal §corollary 1 (abstention share phi stratified by r~). FF itself (and the solver-majority rule) is
defined in ``coevo.audit.false_agreement`` and re-exported here.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from coevo.audit.false_agreement import NOT_PROPOSER, false_agreement_mass, is_known, solver_majority
from coevo.audit.stats import Z95, Estimate, batch_bootstrap_ci, binomial_se, clustered_se, interval_estimate

__all__ = [
    "bearing_indicator", "bearing_rate", "kappa_indicator", "kappa_bar", "answer_mode", "nu_indicators", "nu_bar",
    "lag_values", "lag_bar", "lag_selection_bias", "lag_null_abs_median", "lag_excess", "estimate_dict",
    "solver_majority",
    "pseudo_label_accuracy", "false_agreement_mass", "abstention_share",
    "top_quartile_enrichment", "enrichment_se", "seed_range", "NOT_PROPOSER",
]


def _wald(value: float, se: float) -> tuple[float, float]:
    if not np.isfinite(se):
        return float("nan"), float("nan")
    return value - Z95 * se, value + Z95 * se


def _proportion(x: np.ndarray, clusters=None, batches=None, n_boot: int = 1000, seed: int = 0,
                **extra) -> Estimate:
    """Mean of a 0/1 array with a binomial SE, optional clustered SE and batch bootstrap CI."""
    n = int(x.size)
    if n == 0:
        return Estimate(float("nan"), n=0, extra=dict(extra))
    v = float(x.mean())
    se = binomial_se(v, n)
    ex = dict(extra)
    ex["se_binomial"] = se
    if clusters is not None:
        ex["se_clustered"] = clustered_se(x, np.asarray(clusters))
        se = ex["se_clustered"] if np.isfinite(ex["se_clustered"]) else se
    lo, hi = _wald(v, se)
    if batches is not None:
        bb = batch_bootstrap_ci(x, np.asarray(batches), n_boot=n_boot, seed=seed)
        ex["batch_bootstrap"] = bb
        lo, hi = bb["ci_low"], bb["ci_high"]
    return Estimate(v, se, lo, hi, n, ex)


def estimate_dict(e: Estimate) -> dict:
    """The five numbers a step's metrics and the report keep of an Estimate."""
    return {"value": e.value, "se": e.se, "ci_low": e.ci_low, "ci_high": e.ci_high, "n": e.n}


def bearing_indicator(mu):
    """g = 1[0 < mu < 1] (SPEC notation; RGBC proposal §background: "gradient-bearing")."""
    a = np.asarray(mu, dtype=float)
    return (a > 0) & (a < 1)


def bearing_rate(mu, batches=None, n_boot: int = 1000, seed: int = 0) -> Estimate:
    """Single-shot bearing rate P[g_1 = 1] with binomial SE (and a batch-bootstrap CI and
    batch-clustered SE when ``batches`` is given). RGBC proposal §background (16.2% pool level).
    Also the confirm-stage rollout budget increment (RGBC proposal §core idea)."""
    g = bearing_indicator(mu).astype(float)
    return _proportion(g, clusters=batches, batches=batches, n_boot=n_boot, seed=seed)


def kappa_indicator(mu_screen, mu_confirm) -> tuple[np.ndarray, np.ndarray]:
    """kappa's domain and its per-task values: the mask of tasks with 0 < mu_1 < 1 and a confirm
    group (finite mu_2), and 1[0 < mu_2 < 1] on them (RGBC proposal §core idea). NaN = no group."""
    s = np.asarray(mu_screen, dtype=float)
    c = np.asarray(mu_confirm, dtype=float)
    if s.shape != c.shape:
        raise ValueError("mu_screen and mu_confirm must have the same shape")
    sel = bearing_indicator(s) & np.isfinite(c)
    return sel, bearing_indicator(c[sel]).astype(float)


def kappa_bar(mu_screen, mu_confirm, tasks=None, batches=None, n_boot: int = 1000,
              seed: int = 0) -> Estimate:
    """Replication rate kappa-bar = mean of 1[0 < mu_2 < 1] over screen-bearing tasks.

    RGBC proposal §core idea (screen–confirm two-stage sampling): only tasks with 0 < mu_1 < 1 get a confirm
    group; rows whose screen is not mixed, or whose confirm is NaN, are ignored.
    ``se`` is task-clustered when ``tasks`` is given (a task screened in several steps),
    otherwise binomial; with ``batches`` the interval is a batch bootstrap (§limitation 2).
    The binomial SE is always in ``se_binomial``.
    """
    s = np.asarray(mu_screen, dtype=float)
    sel, kap = kappa_indicator(s, mu_confirm)
    t = None if tasks is None else np.asarray(tasks)[sel]
    b = None if batches is None else np.asarray(batches)[sel]
    est = _proportion(kap, clusters=t, batches=b, n_boot=n_boot, seed=seed,
                      n_screened=int(s.size), n_screen_bearing=int(bearing_indicator(s).sum()))
    if b is not None:
        est.extra["se_batch_clustered"] = clustered_se(kap, b) if kap.size else float("nan")
    return est


def answer_mode(answers: Sequence[Any]) -> tuple[Any, float]:
    """Mode of a list of (already normalised) answers and its share; ties go to the first seen.
    Empty or None answers do not vote but count in the denominator."""
    votes: dict = {}
    for a in answers:
        if a is None or a == "":
            continue
        votes[a] = votes.get(a, 0) + 1
    if not votes or not len(answers):
        return None, 0.0
    best = max(votes, key=lambda a: votes[a])  # dict order = first seen, max keeps the first
    return best, votes[best] / len(answers)


def nu_indicators(nu, mode_share, mu, stable: float = 0.75) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """nu's domain and per-task flags: the mask of tasks with a known nu (1 = the 2K-answer mode equals
    the reference, 0 = it does not; NaN = unknown) and 0 < mu < 1; on them the miss 1[nu = 0] and the
    reference-in-doubt flag 1[miss and mode share >= ``stable``] (RGBC proposal §core idea)."""
    n = np.asarray(nu, dtype=float)
    share = np.asarray(mode_share, dtype=float)
    m = np.asarray(mu, dtype=float)
    if not (n.shape == share.shape == m.shape):
        raise ValueError("nu (mode_agrees), mode_share and mu must have the same shape")
    dom = np.isfinite(n) & bearing_indicator(m)
    miss = n[dom] < 0.5
    doubt = miss & (np.nan_to_num(share[dom], nan=0.0) >= stable - 1e-12)
    return dom, miss.astype(float), doubt.astype(float)


def nu_bar(mode_agrees, mode_share, mu, stable: float = 0.75) -> dict:
    """Reference-anchor miss rate nu-bar and the reference-in-doubt share.

    RGBC proposal §core idea (reference-anchor miss rate nu): per task, nu_i = 1[mode of the 2K answers == a*];
    defined only when 0 < mu < 1. The pool metric is the *miss* rate 1 - mean(nu_i)
    (P3: "nu-bar >= 5%: at least 1 in 20 tasks whose mode disagrees with the reference").
    A task with nu_i = 0 and mode share >= ``stable`` goes to the reference-in-doubt bucket.
    Returns ``{"nu_bar": Estimate, "doubt_share": Estimate}`` over the defined tasks.
    """
    agree = np.asarray(mode_agrees, dtype=bool).astype(float)
    _, miss, doubt = nu_indicators(agree, mode_share, mu, stable)
    n_total = int(np.asarray(mu).size)
    return {
        "nu_bar": _proportion(miss, n_total=n_total),
        "doubt_share": _proportion(doubt, n_total=n_total),
    }


def lag_values(mu_pre, mu_post) -> tuple[np.ndarray, np.ndarray]:
    """The lag's domain (both groups drawn: finite mu_pre and mu_post) and l = mu_pre - mu_post on it."""
    a = np.asarray(mu_pre, dtype=float)
    b = np.asarray(mu_post, dtype=float)
    if a.shape != b.shape:
        raise ValueError("mu_pre and mu_post must have the same shape")
    ok = np.isfinite(a) & np.isfinite(b)
    return ok, a[ok] - b[ok]


def lag_bar(mu_pre, mu_post) -> Estimate:
    """One-step lag l = mu_pre - mu_post over the same tasks before / after the Reasoner update.

    RGBC proposal §core idea (one-step lag). Value = mean lag with its SE; extras carry the
    median |l| that prediction P4 uses (>= 0.10 predicted, < 0.02 falsifies).
    """
    _, lag = lag_values(mu_pre, mu_post)
    if lag.size == 0:
        return Estimate(float("nan"), n=0)
    return _mean_estimate(lag, {"median_abs": float(np.median(np.abs(lag)))})


def lag_selection_bias(p, k: int):
    """E[l | screen-bearing, no learning] = E[mu_1 | 0 < mu_1 < 1] - p = (p - p^K) / (1 - p^K - (1-p)^K) - p.

    The lag's zero-learning expectation (issue 13 item 4 on RGBC proposal §core idea, one-step lag): post
    groups are drawn only for screen-bearing tasks, and conditioning on a mixed screen group pulls
    mu_1 toward 1/2 while an independent post group keeps mean p.  K = 4: -0.112 at p = 0.75,
    -0.220 at p = 0.95, 0 at p = 1/2.  NaN where no group can bear (p in {0, 1})."""
    a = np.asarray(p, dtype=float)
    m = 1.0 - a ** k - (1.0 - a) ** k
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(m > 0, (a - a ** k) / np.where(m > 0, m, 1.0) - a, np.nan)
    return float(out) if out.ndim == 0 else out


def lag_null_abs_median(p: float, k: int) -> float:
    """Median |l| under zero learning: l = (X - Y) / K, X ~ Bin(K, p) given 0 < X < K, Y ~ Bin(K, p)
    independent (exact distribution). K = 4: 0.25 at every p from 0.5 to 0.95 (issue 13), so
    "median |l| >= 0.10" holds from binomial noise alone."""
    from scipy.stats import binom

    px = binom.pmf(np.arange(k + 1), k, p)
    pb = px.copy()
    pb[0] = pb[k] = 0.0
    if pb.sum() <= 0:
        return float("nan")
    pb /= pb.sum()
    dist: dict[int, float] = {}
    for x in range(k + 1):
        for y in range(k + 1):
            dist[abs(x - y)] = dist.get(abs(x - y), 0.0) + pb[x] * px[y]
    vals = sorted(dist)
    cum = np.cumsum([dist[v] for v in vals])
    return vals[int(np.searchsorted(cum, 0.5 - 1e-12))] / k


def lag_excess(mu_pre, mu_post, mu_null) -> Estimate:
    """l - l_null = (mu_pre - mu_post) - (mu_pre - mu_null) = mu_null - mu_post, per task where all three exist.

    ``mu_null``: an independent group of the same selected tasks drawn with the *pre-update* weights
    (a pre-timing confirm group or an audit-stream lag-null draw), so l_null carries the selection
    bias and the binomial noise of l but no learning. Value = mean excess with SE and Wald CI;
    extras: mean l, mean l_null, median |l| and median |l_null| (issue 13 item 4; P4)."""
    a, b, c = (np.asarray(x, dtype=float) for x in (mu_pre, mu_post, mu_null))
    ok = np.isfinite(a) & np.isfinite(b) & np.isfinite(c)
    if not ok.any():
        return Estimate(float("nan"), n=0)
    lag, null = a[ok] - b[ok], a[ok] - c[ok]
    return _mean_estimate(lag - null, {"lag_mean": float(lag.mean()), "lag_null_mean": float(null.mean()),
                                       "median_abs_lag": float(np.median(np.abs(lag))),
                                       "median_abs_lag_null": float(np.median(np.abs(null)))})


def _mean_estimate(x: np.ndarray, extra: dict) -> Estimate:
    """Mean of a non-empty sample with its SE (n - 1) and a Wald interval."""
    n = int(x.size)
    v = float(x.mean())
    se = float(x.std(ddof=1) / np.sqrt(n)) if n > 1 else float("nan")
    lo, hi = _wald(v, se)
    return Estimate(v, se, lo, hi, n, extra)


def _judged(values: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    """The mask of judged values (None/NaN left out) and the judged values as a 0/1 array."""
    ok = np.array([is_known(v) for v in values], dtype=bool)
    return ok, np.array([float(bool(v)) for v, k in zip(values, ok) if k], dtype=float)


def pseudo_label_accuracy(verdicts: Sequence[Any], batches=None, tasks=None) -> Estimate:
    """Pseudo-label accuracy: share of (pseudo-)labels that the oracle confirms.

    R-Zero §4.4 Table 5 (79.0 -> 69.0 -> 63.0% per round), False Frontiers (FF) (0.747 / 0.737).
    ``verdicts``: per label, the value of the oracle's verdict *on that label* (1 / True = correct,
    0 / False = wrong; None / NaN = the oracle or judge abstained, or there is no oracle: left out
    and counted in ``extra["n_unjudged"]``). The one definition the summary, the audit and the
    report use: an R-Zero majority-vote label or a SynCo/RGBC reference answer alike.
    Without ``batches``: binomial SE and Wald interval. With ``batches`` (the step of each label):
    the audit's interval rule (``coevo.audit.stats.interval_estimate``; ``tasks`` adds a
    task-clustered SE).
    """
    ok, x = _judged(verdicts)
    n_out = int((~ok).sum())
    if batches is None:
        return _proportion(x, n_unjudged=n_out)
    t = None if tasks is None else np.asarray(tasks, dtype=object)[ok]
    return interval_estimate(x, np.asarray(batches)[ok], t, n_unjudged=n_out)


def abstention_share(w_abstained, w_total, r_tilde, r=None,
                     bins: Sequence[float] = (0.0, 0.25, 0.5, 0.75, 1.0)) -> Estimate:
    """Abstention share phi = W_A / W per (prompt, axis) row, stratified by r~.

    CASA proposal §corollary 1: report phi and 1/(1-phi) per (prompt, axis), stratified by r~
    because clip(., 0, 1) distorts the top strata. Value = mean phi (SE across rows);
    extras: p95 of phi (P1's threshold 0.10 / falsifier 0.02), and per r~ stratum the mean
    phi, mean 1/(1-phi) and, when ``r`` is given, the measured mean r / r~.
    """
    wa = np.asarray(w_abstained, dtype=float)
    wt = np.asarray(w_total, dtype=float)
    rt = np.asarray(r_tilde, dtype=float)
    if not (wa.shape == wt.shape == rt.shape):
        raise ValueError("w_abstained, w_total and r_tilde must have the same shape")
    if np.any(wt <= 0) or np.any(wa < 0) or np.any(wa > wt + 1e-12):
        raise ValueError("need 0 <= W_A <= W and W > 0")
    phi = wa / wt
    if phi.size == 0:
        return Estimate(float("nan"), n=0)
    infl = np.where(phi < 1, 1.0 / np.where(phi < 1, 1.0 - phi, 1.0), np.inf)
    edges = np.asarray(bins, dtype=float)
    idx = np.clip(np.searchsorted(edges, rt, side="right") - 1, 0, len(edges) - 2)
    rr = None if r is None else np.asarray(r, dtype=float)
    strata = []
    for j in range(len(edges) - 1):
        sel = idx == j
        row = {"r_tilde_low": float(edges[j]), "r_tilde_high": float(edges[j + 1]), "n": int(sel.sum())}
        if sel.any():
            row["phi_mean"] = float(phi[sel].mean())
            row["inflation_mean"] = float(infl[sel].mean())
            if rr is not None:
                ok = sel & (rt > 0) & np.isfinite(rr)
                row["r_over_r_tilde"] = float((rr[ok] / rt[ok]).mean()) if ok.any() else float("nan")
        strata.append(row)
    return _mean_estimate(phi, {"phi_p95": float(np.quantile(phi, 0.95)), "strata": strata})


def enrichment_se(p_top: float, n_top: int, p_rest: float, n_rest: int) -> float:
    """Delta-method SE of E = p_top / p_pool with p_pool = q p_top + (1-q) p_rest (nested:
    the top quartile is part of the pool), p_top and p_rest independent binomials."""
    n = n_top + n_rest
    q = n_top / n
    pool = q * p_top + (1 - q) * p_rest
    d_top = (1 - q) * p_rest / pool ** 2
    d_rest = -(1 - q) * p_top / pool ** 2
    var = d_top ** 2 * p_top * (1 - p_top) / n_top + d_rest ** 2 * p_rest * (1 - p_rest) / n_rest
    return float(np.sqrt(var))


def top_quartile_enrichment(scores, bearing, q: float = 0.25) -> Estimate:
    """Bearing rate in the top ``q`` of tasks ranked by ``scores``, and its enrichment over the pool.

    RGBC proposal §background (SynCo Fig. 3: 62.3% / 64.6% in the top quartile, 3.9x / 4.0x over 16.2%).
    Value = enrichment p_top / p_pool; ``se`` is the nested delta-method SE
    (:func:`enrichment_se`); extras: p_top with its binomial SE, p_pool, and the ceiling
    min(1/q, 1/p_pool) (a score that puts every bearing task in the top quartile).
    Top set = the first ceil(q n) tasks of a stable descending sort: ties (T is three-level at
    K = 4) are broken by input order.
    """
    s = np.asarray(scores, dtype=float)
    g = np.asarray(bearing, dtype=float)
    if s.shape != g.shape:
        raise ValueError("scores and bearing must have the same shape")
    n = int(s.size)
    n_top = int(np.ceil(q * n))
    if n == 0 or n_top == 0 or n_top == n:
        return Estimate(float("nan"), n=n)
    order = np.argsort(-s, kind="stable")
    top = np.zeros(n, dtype=bool)
    top[order[:n_top]] = True
    p_top = float(g[top].mean())
    p_rest = float(g[~top].mean())
    p_pool = float(g.mean())
    if p_pool == 0:
        return Estimate(float("nan"), n=n)
    e = p_top / p_pool
    se = enrichment_se(p_top, n_top, p_rest, n - n_top)
    lo, hi = _wald(e, se)
    return Estimate(e, se, lo, hi, n, {
        "p_top": p_top, "p_top_se": binomial_se(p_top, n_top), "n_top": n_top,
        "p_pool": p_pool, "p_rest": p_rest, "ceiling": float(min(1 / q, 1 / p_pool)),
        "recall": float(g[top].sum() / g.sum()),
    })


def seed_range(values, labels: Optional[Sequence[Any]] = None) -> Estimate:
    """Seed-to-seed spread of one metric across runs given together.

    RGBC proposal §method step 4 / P6 (seed-to-seed range >= 2 points predicted for the productive rate).
    ``values`` holds one number per run (or one array per run, reduced by its mean).
    Value = mean over runs; ``se`` = SD across runs / sqrt(runs); extras: min, max, range.
    """
    per = np.array([float(np.mean(v)) for v in values], dtype=float)
    n = int(per.size)
    if n == 0:
        return Estimate(float("nan"), n=0)
    v = float(per.mean())
    se = float(per.std(ddof=1) / np.sqrt(n)) if n > 1 else float("nan")
    return Estimate(v, se, float(per.min()), float(per.max()), n, {
        "min": float(per.min()), "max": float(per.max()), "range": float(per.max() - per.min()),
        "per_run": per.tolist(), "labels": list(labels) if labels is not None else list(range(n)),
    })
