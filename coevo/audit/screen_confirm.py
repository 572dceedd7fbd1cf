"""Screen/confirm instruments of a SynCo/RGBC step or run, over per-task rows (RGBC proposal §core idea).

The one place where kappa-bar, nu-bar (with the reference-in-doubt share), l-bar and the screen
bearing rate are computed from ``task_stats`` rows, and where their oracle truths are computed
from the per-task audit values. Callers: the recipe (``RGBCRecipe`` step metrics), the report
(``coevo.recipes.rgbc.report``); ``coevo.audit.run_audit`` uses the same per-task indicators
(``coevo.audit.instruments``) with the audit's interval rule.

A row is a mapping with the ``task_stats`` columns (missing keys read as None):

=============== ==========================================================================
``mu_screen``   share of the K screen answers matching the reference; None = not accepted
``mu_confirm``  same for the confirm group; None = no confirm group
``mu_tilde``    mean over the 2K answers (where a confirm group exists)
``nu``          1.0 = the 2K-answer mode equals the reference, 0.0 = not, None = unknown
``mode_share``  share of the mode among the 2K answers
``mu_pre``      = mu_screen (the pre-update group); ``mu_post``: the post group, None = none
``step``        the batch (only read with ``batches=True``)
=============== ==========================================================================
"""
from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

import numpy as np

from coevo.audit.instruments import bearing_rate, estimate_dict, kappa_bar, lag_bar, nu_bar
from coevo.audit.nullmodel import bearing_probability

__all__ = ["screen_confirm_metrics", "screen_confirm_truth", "finite_mean"]


def finite_mean(xs) -> Optional[float]:
    """Mean of the finite, non-None values; None when there is none."""
    a = np.asarray([x for x in xs if x is not None], dtype=float)
    a = a[np.isfinite(a)]
    return float(a.mean()) if a.size else None


def _rows_with(rows: Sequence[Mapping[str, Any]], *keys: str) -> list:
    return [r for r in rows if all(r.get(k) is not None for k in keys)]


def screen_confirm_metrics(stats: Sequence[Mapping[str, Any]], doubt_stable: float,
                           batches: bool = False) -> dict:
    """The screen/confirm instruments over ``stats`` rows (one step's, or a whole run's).

    Returns ``{"bearing_rate": d | None, "kappa_bar": d, "nu_bar": d, "doubt_share": d, "lag_bar": d}``,
    each ``d`` = ``{value, se, ci_low, ci_high, n}`` (:func:`estimate_dict`). ``bearing_rate`` is
    None when no row was accepted (``mu_screen`` None everywhere); the other keys are present only
    where defined: kappa-bar over rows with a confirm group, nu-bar and the doubt share (mode
    share >= ``doubt_stable``) over rows with a known nu, l-bar = mu_pre - mu_post over rows with a
    post group. Without ``batches``: binomial / Wald intervals (the recipe's per-step numbers);
    with ``batches=True`` the bearing rate and kappa-bar get a batch-bootstrap interval over the
    rows' ``step``. Rows are used in the order given (the recipe's task order).
    """
    acc = _rows_with(stats, "mu_screen")
    out: dict = {"bearing_rate": None}
    if not acc:
        return out

    def steps(rs):
        return [r["step"] for r in rs] if batches else None

    out["bearing_rate"] = estimate_dict(bearing_rate(np.array([r["mu_screen"] for r in acc]), batches=steps(acc)))
    conf = _rows_with(acc, "mu_confirm")
    if conf:
        out["kappa_bar"] = estimate_dict(kappa_bar(np.array([r["mu_screen"] for r in conf]),
                                                   np.array([r["mu_confirm"] for r in conf]), batches=steps(conf)))
    nu_rows = _rows_with(acc, "nu", "mu_tilde")
    if nu_rows:
        nb = nu_bar([r["nu"] == 1.0 for r in nu_rows], [r["mode_share"] for r in nu_rows],
                    [r["mu_tilde"] for r in nu_rows], doubt_stable)
        out["nu_bar"] = estimate_dict(nb["nu_bar"])
        out["doubt_share"] = estimate_dict(nb["doubt_share"])
    lag_rows = _rows_with(acc, "mu_post")
    if lag_rows:
        out["lag_bar"] = estimate_dict(lag_bar([r.get("mu_pre", r["mu_screen"]) for r in lag_rows],
                                               [r["mu_post"] for r in lag_rows]))
    return out


def _wrong(rows) -> Optional[float]:
    """Share of rows whose reference the oracle judged wrong (rows without a judgement left out)."""
    return finite_mean([0.0 if r["reference_correct"] else 1.0 for r in _rows_with(rows, "reference_correct")])


def screen_confirm_truth(tasks: Sequence[Mapping[str, Any]], k: int, mid_band: tuple[float, float]) -> dict:
    """Oracle truth beside each screen/confirm instrument (audit-only; the arithmetic world's oracle).

    ``tasks``: one mapping per Synthesizer task of the step (or run), with the ``task_stats``
    columns above plus ``validator_ok`` (passed rho), ``consensus_ok`` (False = rejected by the
    consensus check, None = not checked), ``reference_correct`` (oracle verdict on the reference:
    True / False / None = unjudged), ``true_p`` (true pass rate of the pre-update Reasoner from the
    audit samples), ``p_ref`` / ``p_ref_post`` (reference-match rate before / after the update from
    the audit samples) and ``confirm_timing`` ("pre" / "post": which policy drew the confirm group).
    ``k``: group size K; ``mid_band``: the teachable band of true pass rates.

    Returns (keys present when defined): ``mid_band_share``, ``true_p_mean``, ``true_bearing_rate``
    (mean m_K(p_ref)) over accepted tasks with audit values; ``kappa_bar`` = mean m_K(p) over tasks
    with a confirm group, p = p_ref_post for a post-update confirm group, else p_ref;
    ``wrong_reference_rate_validated`` / ``_accepted`` and ``consensus_rejected_wrong_ref_share``
    (None when no task is judged); ``nu_bar`` = wrong-reference rate over nu-defined tasks;
    ``lag_bar`` = mean p_ref - p_ref_post over tasks with a post group (None when no audit pair).
    """
    acc = _rows_with(tasks, "mu_screen")
    t: dict = {}
    tp = [r["true_p"] for r in _rows_with(acc, "true_p")]
    if tp:
        lo, hi = mid_band
        t["mid_band_share"] = float(np.mean([lo <= x <= hi for x in tp]))
        t["true_p_mean"] = float(np.mean(tp))
        t["true_bearing_rate"] = float(np.mean(bearing_probability(np.array([r["p_ref"] for r in _rows_with(acc, "p_ref")]), k)))
    conf = _rows_with(acc, "mu_confirm")
    if conf:
        ps = [r.get("p_ref_post") if r.get("confirm_timing") == "post" else r.get("p_ref") for r in conf]
        ps = [x for x in ps if x is not None]
        if ps:
            t["kappa_bar"] = float(np.mean(bearing_probability(np.array(ps), k)))
    t["wrong_reference_rate_validated"] = _wrong([r for r in tasks if r.get("validator_ok")])
    t["wrong_reference_rate_accepted"] = _wrong(acc)
    t["consensus_rejected_wrong_ref_share"] = _wrong([r for r in tasks if r.get("consensus_ok") is False])
    nu_def = _rows_with(acc, "nu")
    if nu_def:
        t["nu_bar"] = _wrong(nu_def)
    post = _rows_with(acc, "mu_post")
    if post:
        t["lag_bar"] = finite_mean([r["p_ref"] - r["p_ref_post"] for r in _rows_with(post, "p_ref", "p_ref_post")])
    return t
