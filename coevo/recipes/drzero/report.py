"""Report section of the Dr. Zero / CrossFit / MSV+CrossFit recipes (False Frontiers): per round, the
false-agreement mass FF (oracle; the auditor model's too when the run has one), pseudo-label
accuracy, the proposer reward and the hop mix of the proposals.  Everything is read from the
steps' metrics in the ledger (``coevo.ledger.views.step_metrics``), which the recipe computed
with ``coevo.audit`` at each round's audit step."""
from __future__ import annotations

import html
from pathlib import Path

from coevo.ledger import views
from coevo.report.plots import figure_html, plt, png_data_uri, table_html

FF_KEYS = (("false_agreement", "oracle"), ("false_agreement_auditor", "auditor"))


def _val(x):
    if isinstance(x, dict):
        x = x.get("value")
    return x if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def round_series(steps: list[dict]) -> dict:
    """Per round: FF (oracle, auditor) and pseudo-label accuracy with their SE and n (audit step),
    mean proposer reward and the summed hop mix (proposer steps)."""
    out: dict[int, dict] = {}
    for s in steps:
        r, m = s["round"], s["metrics"]
        row = out.setdefault(r, {"proposer_reward": [], "hops": {}, "hops_accepted": {}})
        if s["phase"] == "audit":
            for key, _ in FF_KEYS:
                if isinstance(m.get(key), dict):
                    row[key] = m[key]
            row["pseudo_label_accuracy"] = m.get("pseudo_label_accuracy")
        elif s["phase"] == "proposer":
            if _val(m.get("proposer_reward_mean")) is not None:
                row["proposer_reward"].append(m["proposer_reward_mean"])
            for key, mkey in (("hops", "hop_mix"), ("hops_accepted", "hop_mix_accepted")):
                for h, n in (m.get(mkey) or {}).items():
                    row[key][h] = row[key].get(h, 0) + n
    return {r: v for r, v in sorted(out.items()) if r > 0}


def _errbar(ax, rounds, ests, label):
    pts = [(r, _val(e), (e or {}).get("se")) for r, e in zip(rounds, ests) if _val(e) is not None]
    if pts:
        ax.errorbar([p[0] for p in pts], [p[1] for p in pts], yerr=[1.96 * (p[2] or 0) for p in pts],
                    marker="o", capsize=3, label=label)


def plot_rounds(series: dict):
    rounds = list(series)
    fig, axes = plt.subplots(1, 4, figsize=(15, 3.2))
    for key, label in FF_KEYS:
        _errbar(axes[0], rounds, [series[r].get(key) for r in rounds], f"FF ({label})")
    axes[0].set_title("false-agreement mass FF (±1.96 SE)", fontsize=9)
    if axes[0].get_legend_handles_labels()[0]:
        axes[0].legend(fontsize=8)
    _errbar(axes[1], rounds, [series[r].get("pseudo_label_accuracy") for r in rounds], "pseudo-label accuracy")
    axes[1].set_title("pseudo-label accuracy vs oracle (±1.96 SE)", fontsize=9)
    pr = [(r, sum(series[r]["proposer_reward"]) / len(series[r]["proposer_reward"]))
          for r in rounds if series[r]["proposer_reward"]]
    axes[2].plot([p[0] for p in pr], [p[1] for p in pr], marker="o")
    axes[2].set_title("proposer reward (mean)", fontsize=9)
    hops = sorted({h for r in rounds for k in ("hops", "hops_accepted") for h in series[r][k]})
    for k, off, hatch in (("hops", -0.2, ""), ("hops_accepted", 0.2, "//")):
        bottom = [0.0] * len(rounds)
        tot = [sum(series[r][k].values()) or 1 for r in rounds]
        for i, h in enumerate(hops):
            share = [series[r][k].get(h, 0) / t for r, t in zip(rounds, tot)]
            axes[3].bar([r + off for r in rounds], share, width=0.38, bottom=bottom, hatch=hatch,
                        color=f"C{i}", label=h if k == "hops" else None)
            bottom = [b + s for b, s in zip(bottom, share)]
    axes[3].set_title("hop mix: asked (left) / accepted, as written (hatched)", fontsize=9)
    if hops:
        axes[3].legend(fontsize=7)
    for ax in axes:
        ax.set_xlabel("round")
        ax.set_xticks(rounds)
    fig.tight_layout()
    return fig


def _fmt(e) -> str:
    if not isinstance(e, dict) or _val(e) is None:
        return "-"
    se = e.get("se")
    return f"{100 * e['value']:.1f}% ± {100 * 1.96 * se:.1f} (n={e.get('n')})" if se is not None else f"{e['value']:.3f}"


def section(led, run_id: str, run_dir: Path) -> str:
    """The False Frontiers section: a table of the round instruments and the four plots."""
    series = round_series(views.step_metrics(led, run_id))
    if not series:
        return "<h2>Co-cheating audit (False Frontiers)</h2><p class=note>no completed round yet.</p>"
    rows = []
    for r, s in series.items():
        pr = s["proposer_reward"]
        rows.append([r, _fmt(s.get("false_agreement")), _fmt(s.get("false_agreement_auditor")),
                     _fmt(s.get("pseudo_label_accuracy")), f"{sum(pr) / len(pr):.3f}" if pr else "-",
                     ", ".join(f"{h}:{n}" for h, n in sorted(s["hops"].items())),
                     ", ".join(f"{h}:{n}" for h, n in sorted(s["hops_accepted"].items()))])
    table = table_html(rows, ["round", "FF oracle (95% CI half-width)", "FF auditor", "pseudo-label accuracy",
                              "proposer reward", "hop mix asked", "hop mix accepted"])
    fig = figure_html(png_data_uri(plot_rounds(series)),
                      "FF per round (oracle; auditor when configured), pseudo-label accuracy, proposer reward, "
                      "hop mix")
    note = ("<p>FF: share of the round's accepted (question, label) pairs where the scoring solvers' majority "
            "answer equals the label and the oracle rejects it (<code>coevo.audit.false_agreement</code>); "
            "the label is the proposer's draft, or the MSV consensus that replaced it.</p>")
    return f"<h2>Co-cheating audit (False Frontiers): {html.escape(run_id)}</h2>{note}{table}{fig}"
