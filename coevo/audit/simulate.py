"""`coevo simulate`: screen/confirm sampling on pools with known pass rates, instrument vs truth.

RGBC proposal §core idea: every task gets a screen group of K Bernoulli(p) rollouts; only if it is
mixed (0 < mu_1 < 1) does it get an independent confirm group; kappa = 1[0 < mu_2 < 1].
For fixed p, P[kappa = 1 | g_1 = 1] = m_K(p), so kappa-bar estimates E[m(p) | g_1 = 1],
while the single-shot bearing rate P[g_1 = 1] = E[m(p)] does not separate a frontier from
extreme-p noise. Decision lines: frontier kappa-bar >= 0.68, extreme-p noise <= 0.35,
confirm-stage budget increment = P[g_1 = 1].

Pools (p per task): ``frontier`` U(.25, .75); ``bimodal`` half U(0, .1), half U(.9, 1);
``uniform`` U(0, 1); ``beta`` Beta(a, b); ``nullmodel`` / ``nullmodel-last`` the RGBC proposal's
two-point fits of SynCo's first / last bucket (read from coevo/data/synco_published.yaml).
Deterministic given ``seed``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Dict, Sequence, Union

import numpy as np

from coevo.audit.instruments import bearing_indicator, bearing_rate, kappa_bar
from coevo.audit.nullmodel import bearing_probability

__all__ = ["SimulateError", "POOLS", "FRONTIER_KAPPA", "NOISE_KAPPA", "MID_BAND", "BATCH",
           "draw_pool", "simulate_pool", "print_simulation", "simulation_plot"]

POOLS = ("frontier", "bimodal", "uniform", "beta", "nullmodel", "nullmodel-last")
FRONTIER_KAPPA = 0.68   # RGBC proposal §core idea: a real frontier gives kappa-bar in 0.68–0.875
NOISE_KAPPA = 0.35      # RGBC proposal §core idea: pure extreme-p noise gives kappa-bar <= 0.35
MID_BAND = (0.25, 0.75)  # m_4(p) >= 0.68 on this band
BATCH = 32               # SynCo: 32 tasks per round (RGBC proposal §background)


class SimulateError(Exception):
    """Bad pool name or parameters; the CLI prints it as one line."""


PUBLISHED = Path(__file__).resolve().parents[1] / "data" / "synco_published.yaml"


def _nullmodel_params(which: str) -> Dict[str, float]:
    """The two-point fit of SynCo's first / last bucket (the RGBC proposal's reanalysis, stored with
    the published numbers it was fitted to)."""
    import yaml

    return yaml.safe_load(PUBLISHED.read_text(encoding="utf-8"))["seed000_fits"][which]


def draw_pool(pool: str, n_tasks: int, rng: np.random.Generator, a: float = 2.0, b: float = 2.0) -> np.ndarray:
    """Draw the true pass rate p of each task of a named pool."""
    if pool == "frontier":
        return rng.uniform(MID_BAND[0], MID_BAND[1], n_tasks)
    if pool == "bimodal":
        hi = rng.random(n_tasks) < 0.5
        return np.where(hi, rng.uniform(0.9, 1.0, n_tasks), rng.uniform(0.0, 0.1, n_tasks))
    if pool == "uniform":
        return rng.uniform(0.0, 1.0, n_tasks)
    if pool == "beta":
        return rng.beta(a, b, n_tasks)
    if pool in ("nullmodel", "nullmodel-last"):
        prm = _nullmodel_params("first" if pool == "nullmodel" else "last")
        hi = rng.random(n_tasks) < prm["w"]
        return np.where(hi, prm["p_hi"], prm["p_lo"])
    raise SimulateError(f"unknown pool {pool!r}; choose one of {', '.join(POOLS)}")


def _verdict(kappa: float) -> str:
    if kappa >= FRONTIER_KAPPA:
        return "frontier"
    if kappa <= NOISE_KAPPA:
        return "extreme-p noise"
    return "mixed"


def simulate_pool(pool: str, k: int = 4, n_tasks: int = 20000, a: float = 2.0, b: float = 2.0,
                  seed: int = 0, n_boot: int = 1000) -> Dict[str, Any]:
    """Simulate screen/confirm sampling on one pool; returns a JSON-able dict.

    Reports the single-shot bearing rate (with binomial SE and batch-bootstrap CI, batches of
    32), kappa-bar from screen/confirm pairs (binomial and batch-clustered SE, batch
    bootstrap CI), the truth (E[m(p) | g_1 = 1] over the pool and over the realised screen,
    the true bearing probability E[m(p)], the true mid-band share) and the confirm-stage
    rollout budget increment (= the observed bearing rate, by construction).
    """
    if pool not in POOLS:
        raise SimulateError(f"unknown pool {pool!r}; choose one of {', '.join(POOLS)}")
    if not isinstance(k, (int, np.integer)) or k < 2:
        raise SimulateError(f"k must be an integer >= 2, got {k!r}")
    if not isinstance(n_tasks, (int, np.integer)) or not 2 * BATCH <= n_tasks <= 10_000_000:
        raise SimulateError(f"n_tasks must be an integer in [{2 * BATCH}, 10000000], got {n_tasks!r}")
    if pool == "beta" and not (a > 0 and b > 0 and np.isfinite(a) and np.isfinite(b)):
        raise SimulateError(f"beta pool needs a > 0 and b > 0, got a={a}, b={b}")

    rng = np.random.default_rng(seed)
    p = draw_pool(pool, int(n_tasks), rng, a, b)
    screen = rng.binomial(k, p) / k
    g1 = bearing_indicator(screen)
    confirm = np.full(p.shape, np.nan)
    confirm[g1] = rng.binomial(k, p[g1]) / k
    batches = np.arange(p.size) // BATCH

    br = bearing_rate(screen, batches=batches, n_boot=n_boot, seed=seed)
    kb = kappa_bar(screen, confirm, batches=batches, n_boot=n_boot, seed=seed)
    m = np.asarray(bearing_probability(p, k))
    in_band = (p >= MID_BAND[0]) & (p <= MID_BAND[1])
    kappa_true = float((m * m).sum() / m.sum()) if m.sum() > 0 else float("nan")
    n_g1 = int(g1.sum())
    screen_rollouts = k * p.size
    confirm_rollouts = k * n_g1
    increment = confirm_rollouts / screen_rollouts
    counts, edges = np.histogram(p, bins=20, range=(0.0, 1.0))

    result: Dict[str, Any] = {
        "pool": pool, "k": int(k), "n_tasks": int(n_tasks), "seed": int(seed),
        "params": {"a": a, "b": b} if pool == "beta" else {},
        "bearing_rate": {"value": br.value, "se": br.se, "ci_low": br.ci_low, "ci_high": br.ci_high,
                         "n": br.n, "se_batch_clustered": br.extra.get("se_clustered")},
        "kappa_bar": {"value": kb.value, "se": kb.se, "ci_low": kb.ci_low, "ci_high": kb.ci_high, "n": kb.n,
                      "se_batch_clustered": kb.extra.get("se_batch_clustered")},
        "truth": {
            "kappa_bar": kappa_true,                                  # E[m(p) | g_1 = 1] over the pool
            "kappa_bar_given_screen": float(m[g1].mean()) if n_g1 else float("nan"),
            "bearing_probability": float(m.mean()),                   # P[g_1 = 1] = E[m(p)]
            "mid_band_share": float(in_band.mean()),
            "mid_band_share_given_bearing": float(in_band[g1].mean()) if n_g1 else float("nan"),
            "mid_band": list(MID_BAND),
        },
        "budget": {"screen_rollouts": int(screen_rollouts), "confirm_rollouts": int(confirm_rollouts),
                   "increment": increment, "increment_equals_bearing_rate": bool(abs(increment - br.value) < 1e-12)},
        "decision_lines": {"frontier_kappa_min": FRONTIER_KAPPA, "noise_kappa_max": NOISE_KAPPA},
        "verdict": _verdict(kb.value),
        "verdict_truth": _verdict(kappa_true),
        "p_histogram": {"edges": edges.tolist(), "counts": counts.tolist()},
    }
    return result


def print_simulation(result: Dict[str, Any]) -> None:
    """Rich table of one :func:`simulate_pool` result to stdout."""
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    r = result
    t = Table(title=f"simulate: pool={r['pool']} K={r['k']} tasks={r['n_tasks']} seed={r['seed']}")
    for c in ("quantity", "instrument", "95% CI", "truth"):
        t.add_column(c)
    br, kb, tr = r["bearing_rate"], r["kappa_bar"], r["truth"]
    t.add_row(escape("single-shot bearing rate P[g1=1]"), f"{br['value']:.4f} ± {br['se']:.4f}",
              f"{br['ci_low']:.4f} .. {br['ci_high']:.4f}", f"{tr['bearing_probability']:.4f}")
    t.add_row("kappa-bar (screen/confirm)", f"{kb['value']:.4f} ± {kb['se']:.4f} (n={kb['n']})",
              f"{kb['ci_low']:.4f} .. {kb['ci_high']:.4f}",
              f"{tr['kappa_bar']:.4f} (given screen {tr['kappa_bar_given_screen']:.4f})")
    t.add_row("true mid-band share p in [.25,.75]", "—", "—",
              f"{tr['mid_band_share']:.4f} (of bearing {tr['mid_band_share_given_bearing']:.4f})")
    t.add_row("confirm budget increment", f"{r['budget']['increment']:.4f}", "—",
              escape(f"= P[g1=1]: {r['budget']['increment_equals_bearing_rate']}"))
    Console().print(t)
    Console().print(f"verdict: {r['verdict']} (truth: {r['verdict_truth']}); lines: frontier >= "
                    f"{FRONTIER_KAPPA}, noise <= {NOISE_KAPPA}", highlight=False)


def simulation_plot(results: Sequence[Dict[str, Any]], path: Union[str, Path]) -> Path:
    """Plot m_K(p) with the pools' p histograms, and kappa-bar (instrument vs truth) per pool
    against the decision lines. Writes a PNG (matplotlib, Agg) and returns its path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    ks = sorted({int(r["k"]) for r in results}) or [4]
    x = np.linspace(0, 1, 401)
    for k in ks:
        ax1.plot(x, bearing_probability(x, k), lw=2, label=f"m_{k}(p)")
    ax1b = ax1.twinx()
    for r in results:
        h = r["p_histogram"]
        e = np.asarray(h["edges"])
        c = np.asarray(h["counts"], dtype=float)
        ax1b.stairs(c / max(c.sum(), 1), e, alpha=0.7, label=r["pool"])
    ax1b.set_ylabel("share of tasks")
    ax1.axhline(FRONTIER_KAPPA, ls="--", c="g", lw=1)
    ax1.axhline(NOISE_KAPPA, ls="--", c="r", lw=1)
    ax1.set_xlabel("true pass rate p")
    ax1.set_ylabel("P[group mixed]")
    ax1.set_title("bearing probability and pool shapes")
    h1, l1 = ax1.get_legend_handles_labels()
    h2, l2 = ax1b.get_legend_handles_labels()
    ax1.legend(h1 + h2, l1 + l2, fontsize=8, loc="upper right")

    names = [r["pool"] for r in results]
    idx = np.arange(len(results))
    kv = np.array([r["kappa_bar"]["value"] for r in results])
    lo = np.array([r["kappa_bar"]["ci_low"] for r in results])
    hi = np.array([r["kappa_bar"]["ci_high"] for r in results])
    ax2.errorbar(idx - 0.1, kv, yerr=[kv - lo, hi - kv], fmt="o", capsize=4, label="kappa-bar (screen/confirm)")
    ax2.plot(idx + 0.1, [r["truth"]["kappa_bar"] for r in results], "kx", ms=8, label="truth E[m(p)|g1=1]")
    ax2.plot(idx, [r["bearing_rate"]["value"] for r in results], "s", mfc="none", label="single-shot bearing rate")
    ax2.axhline(FRONTIER_KAPPA, ls="--", c="g", lw=1, label=f"frontier >= {FRONTIER_KAPPA}")
    ax2.axhline(NOISE_KAPPA, ls="--", c="r", lw=1, label=f"noise <= {NOISE_KAPPA}")
    ax2.set_xticks(idx)
    ax2.set_xticklabels(names, rotation=20)
    ax2.set_ylim(0, 1)
    ax2.set_title("instrument vs truth")
    ax2.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
