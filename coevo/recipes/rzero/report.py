"""R-Zero's report section (registry: ``coevo.recipes.rzero.report:section``): what the Challenger does.

Three plots from the ledger: rewards per step (Challenger reward, format failures, Solver reward),
the difficulty mix of proposed questions per round, and the self-consistency p_hat of the
candidate questions (the kept band |p_hat - 1/2| <= delta shaded).
"""
from __future__ import annotations

from pathlib import Path

from coevo.ledger import views
from coevo.ledger.store import Ledger
from coevo.recipes.rzero.summary import challenger_difficulty_mix, p_hat_values
from coevo.report.plots import figure_html, plt, png_data_uri

__all__ = ["section", "plot_steps", "plot_mix", "plot_phat"]


def plot_steps(steps: list[dict]) -> str | None:
    """Rewards per step (data URI), None when no Challenger or Solver step logged a reward."""
    ch = [(s["step"], s["metrics"]) for s in steps if s["phase"] == "challenger"
          and "challenger_reward_mean" in s["metrics"]]
    sv = [(s["step"], s["metrics"]) for s in steps if s["phase"] == "solver" and "solver_reward_mean" in s["metrics"]]
    if not ch and not sv:
        return None
    fig, ax = plt.subplots(figsize=(6, 3.6))
    if ch:
        ax.plot([x for x, _ in ch], [m["challenger_reward_mean"] for _, m in ch], "o-", label="Challenger reward")
        ax.plot([x for x, _ in ch], [m.get("format_failure_rate") for _, m in ch], "x--", label="format failure rate")
    if sv:
        ax.plot([x for x, _ in sv], [m["solver_reward_mean"] for _, m in sv], ".-",
                label="Solver reward (pseudo-label match)")
    ax.set_xlabel("step")
    ax.legend(fontsize=7)
    ax.set_title("Rewards per step")
    return png_data_uri(fig)


def plot_mix(mix: dict) -> str | None:
    """Difficulty mix of the proposed questions per round (data URI), None without questions."""
    if not mix:
        return None
    fig, ax = plt.subplots(figsize=(6, 3.6))
    rounds = sorted(mix)
    labels = sorted({d for r in rounds for d in mix[r]})
    bottom = [0.0] * len(rounds)
    for d in labels:
        vals = [mix[r].get(d, 0.0) for r in rounds]
        ax.bar([str(r) for r in rounds], vals, bottom=bottom, label=d)
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_xlabel("round")
    ax.set_ylabel("share of proposed questions")
    ax.legend(fontsize=7, ncol=3)
    ax.set_title("What the proposer asks: difficulty mix per round")
    return png_data_uri(fig)


def plot_phat(ph: dict, delta: float = 0.25) -> str | None:
    """Histogram of the candidates' p_hat per round (data URI), None without candidates."""
    if not ph:
        return None
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for r in sorted(ph):
        ax.hist(ph[r], bins=[i / 10 - 0.05 for i in range(12)], histtype="step", label=f"round {r}")
    ax.axvspan(0.5 - delta, 0.5 + delta, alpha=0.1, color="green", label=f"kept band |p-1/2|<={delta:g}")
    ax.set_xlabel("p_hat (majority share of m answers)")
    ax.legend(fontsize=7)
    ax.set_title("Candidate questions: self-consistency")
    return png_data_uri(fig)


def _delta(led: Ledger) -> float:
    import yaml

    try:
        cfg = yaml.safe_load(views.run_info(led).get("config_yaml") or "") or {}
        return float((cfg.get("rzero") or {}).get("delta", 0.25))
    except (yaml.YAMLError, AttributeError, TypeError, ValueError):
        return 0.25


def section(led: Ledger, run_id: str, run_dir: Path) -> str:
    """The R-Zero plots as an HTML fragment; "" when the ledger has none of their data."""
    figs = [(plot_steps(views.step_metrics(led, run_id)), "Rewards per step"),
            (plot_mix(challenger_difficulty_mix(led, run_id)), "Difficulty mix of proposed questions"),
            (plot_phat(p_hat_values(led, run_id), _delta(led)), "p_hat of candidate questions")]
    shown = [figure_html(uri, cap) for uri, cap in figs if uri]
    if not shown:
        return ""
    return ("<h2>R-Zero: Challenger and Solver</h2><p class=note>Pseudo-label accuracy (per round table) is the share "
            "of kept majority-vote labels that the oracle confirms.</p>" + "".join(shown))
