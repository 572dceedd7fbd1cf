"""CASA report sections (CASA proposal): phi by axis stratified by r~, the inflation r / r~, rank reversals per
step, licensing rates per axis and the three probes.  Each ``(ledger, run_id, run_dir) -> HTML`` reads the
ledger tables ``criterion_scores``, ``casa_gates`` and ``probes``; "" when the run has none of that data.
Registry refs: ``coevo.recipes.vgopd.report:section`` (all five) or the single ``*_section`` functions.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from coevo.ledger.store import Ledger
from coevo.recipes.vgopd import tables as vg_tables
from coevo.recipes.vgopd.instruments import inflation_ratios, licensing_rates, phi_by_axis, rank_reversals
from coevo.report.plots import figure_html, plt, png_data_uri

__all__ = ["section", "phi_section", "inflation_section", "reversal_section", "licensing_section", "probe_section"]


def _f(col) -> np.ndarray:
    return np.array([np.nan if v is None else float(v) for v in col], dtype=float)


def _scores(led: Ledger, run_id: str):
    sc = vg_tables.criterion_score_columns(led, run_id)
    return sc if sc["step"] else None


def phi_section(led: Ledger, run_id: str, run_dir: Path) -> str:
    """Mean phi per axis in each r~ stratum (bars), with p95 per axis in the legend."""
    sc = _scores(led, run_id)
    if sc is None:
        return ""
    est = phi_by_axis(sc["axis"], _f(sc["W_A"]), _f(sc["W"]), _f(sc["r_tilde"]), _f(sc["r"]))
    fig, ax = plt.subplots(figsize=(6, 3.6))
    width = 0.8 / max(1, len(est))
    for i, (a, e) in enumerate(est.items()):
        st = e.extra["strata"]
        x = np.arange(len(st)) + i * width
        ax.bar(x, [s.get("phi_mean", 0.0) for s in st], width, label=f"{a} (p95 {e.extra['phi_p95']:.3f})")
    labels = [f"[{s['r_tilde_low']:g},{s['r_tilde_high']:g})" for s in next(iter(est.values())).extra["strata"]]
    ax.set_xticks(np.arange(len(labels)) + 0.4 - width / 2, labels)
    ax.set_xlabel("r~ stratum (fixed-denominator score)")
    ax.set_ylabel("mean phi = W_A / W")
    ax.legend(fontsize=7)
    ax.set_title("Abstention share phi by axis, stratified by r~")
    return figure_html(png_data_uri(fig), "phi by axis, stratified by r~ (CASA proposal §corollary 1)")


def inflation_section(led: Ledger, run_id: str, run_dir: Path) -> str:
    """Measured r / r~ against 1 / (1 - phi) for every (rollout, axis) row with r~ > 0 and no clip."""
    sc = _scores(led, run_id)
    if sc is None:
        return ""
    inf = inflation_ratios(_f(sc["r_raw"]), _f(sc["r_tilde_raw"]), _f(sc["phi"]))
    if not inf["n"]:
        return ""
    fig, ax = plt.subplots(figsize=(5, 4))
    ax.scatter(inf["predicted"], inf["measured"], s=10, alpha=0.6)
    hi = float(max(inf["predicted"].max(), inf["measured"].max()))
    ax.plot([1, hi], [1, hi], "k--", lw=0.8, label="identity r = r~ / (1 - phi)")
    ax.set_xlabel("1 / (1 - phi)")
    ax.set_ylabel("measured r / r~")
    ax.legend(fontsize=7)
    ax.set_title(f"Inflation (n={inf['n']}, {inf['n_clipped']} clipped rows excluded)")
    return figure_html(png_data_uri(fig), f"r / r~ vs 1/(1-phi); max |error| {inf['max_abs_error']:.2e}")


def reversal_section(led: Ledger, run_id: str, run_dir: Path) -> str:
    """Rank reversals per step inside each (step, prompt, group, axis): exact count and the CASA proposal's approximation."""
    sc = _scores(led, run_id)
    if sc is None:
        return ""
    steps = np.array(sc["step"])
    groups = [(s, t, g, a) for s, t, g, a in zip(sc["step"], sc["task_id"], sc["group_idx"], sc["axis"])]
    rt, ph = _f(sc["r_tilde_raw"]), _f(sc["phi"])
    xs, ex, ap = [], [], []
    for s in sorted(set(steps.tolist())):
        sel = np.flatnonzero(steps == s)
        rr = rank_reversals([groups[i] for i in sel], rt[sel], ph[sel])
        xs.append(s)
        ex.append(rr["n_exact"])
        ap.append(rr["n_approx"])
    fig, ax = plt.subplots(figsize=(6, 3.6))
    ax.plot(xs, ex, "o-", label="exact: r~1 phi2 - r~2 phi1 > Delta")
    ax.plot(xs, ap, "x--", label="approximation phi2 - phi1 > Delta / r-bar (undercounts)")
    ax.set_xlabel("step")
    ax.set_ylabel("reversed pairs")
    ax.legend(fontsize=7)
    ax.set_title("Rank reversals inside groups")
    return figure_html(png_data_uri(fig), "rank reversals per step (CASA proposal §corollary 2)")


def licensing_section(led: Ledger, run_id: str, run_dir: Path) -> str:
    """Licensing rate per axis: failure channel, and arm C's abstention channel, with Wilson intervals."""
    sc = _scores(led, run_id)
    if sc is None:
        return ""
    lr = licensing_rates(sc["axis"], _f(sc["n_failed"]), _f(sc["n_failed_licensed"]),
                         _f(sc["n_abstain_candidates"]), _f(sc["n_abstain_licensed"]))
    fig, ax = plt.subplots(figsize=(6, 3.6))
    axes = list(lr)
    for i, ch in enumerate(("failure", "abstention")):
        vals = [lr[a].get(ch, {}).get("rate", np.nan) for a in axes]
        lo = [lr[a].get(ch, {}).get("ci_low", np.nan) for a in axes]
        hi = [lr[a].get(ch, {}).get("ci_high", np.nan) for a in axes]
        v = np.nan_to_num(np.array(vals, dtype=float))
        err = np.clip(np.nan_to_num(np.array([v - np.array(lo, dtype=float), np.array(hi, dtype=float) - v])), 0, None)
        ax.bar(np.arange(len(axes)) + 0.4 * i, v, 0.4, yerr=err, label=f"{ch} channel")
    ax.set_xticks(np.arange(len(axes)) + 0.2, axes)
    ax.set_ylabel("share of candidates licensed")
    ax.legend(fontsize=7)
    ax.set_title("Licensing rate per axis")
    return figure_html(png_data_uri(fig), "licensing rates per axis (failure channel; arm C: abstention channel)")


def probe_section(led: Ledger, run_id: str, run_dir: Path) -> str:
    """Pass and abstention rates of the three probes per step (verifier drift vs student change)."""
    rows = vg_tables.probe_rates(led, run_id)
    if not rows:
        return ""
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for k in sorted({r["kind"] for r in rows}):
        rs = [r for r in rows if r["kind"] == k]
        line, = ax.plot([r["step"] for r in rs], [r["pass_rate"] for r in rs], "o-", label=f"{k} pass")
        ax.plot([r["step"] for r in rs], [r["abstention_rate"] for r in rs], "x--", color=line.get_color(),
                label=f"{k} abstain")
    ax.set_xlabel("step")
    ax.set_ylim(-0.05, 1.05)
    ax.legend(fontsize=7)
    ax.set_title("Probes: own reference, mismatched reference, vacuous template")
    return figure_html(png_data_uri(fig), "probes per step (fixed answers: drift here is the verifier's)")


def section(led: Ledger, run_id: str, run_dir: Path) -> str:
    """All CASA plots as one HTML fragment; "" when the run has no CASA rows."""
    parts = [f(led, run_id, run_dir) for f in (phi_section, inflation_section, reversal_section,
                                               licensing_section, probe_section)]
    shown = [p for p in parts if p]
    if not shown:
        return ""
    return ("<h2>CASA: criterion-set accounting</h2><p class=note>phi = W_A / W per (rollout, axis); r original "
            "protocol, r~ fixed denominator; see docs/casa.md.</p>" + "".join(shown))
