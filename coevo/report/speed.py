"""The report's "Loop speed" section: where each step's time went (``steps.stage_seconds_json``,
recorded by ``coevo.timing``): a stacked bar per step and a table per phase, with the share of
the step time spent in model compute (forward / backward passes, overlapping the stages)."""
from __future__ import annotations

from matplotlib.ticker import MaxNLocator

from coevo.ledger import views
from coevo.ledger.store import Ledger
from coevo.report.plots import figure_html, plt, png_data_uri, table_html
from coevo.timing import MODEL_KEY, STAGES

ORDER = (*STAGES, "other")
COLORS = {"sample": "#4c72b0", "verify": "#dd8452", "reward": "#55a868", "update": "#c44e52", "ledger": "#8172b3",
          "eval": "#937860", "state": "#da8bc3", "other": "#8c8c8c"}


def plot_stages(steps: list[dict]) -> str:
    """Stacked seconds per stage for every step (data URI)."""
    fig, ax = plt.subplots(figsize=(max(6.0, min(14.0, 0.18 * len(steps) + 4)), 3.4))
    xs = [s["step"] for s in steps]
    bottom = [0.0] * len(steps)
    for name in ORDER:
        ys = [float(s["stages"].get(name, 0.0)) for s in steps]
        if any(ys):
            ax.bar(xs, ys, bottom=bottom, color=COLORS[name], label=name, width=0.8)
            bottom = [b + y for b, y in zip(bottom, ys)]
    model = [float(s["stages"].get(MODEL_KEY, 0.0)) for s in steps]
    ax.plot(xs, model, "k.", label="model compute", markersize=4)
    ax.set_xlabel("step")
    ax.set_ylabel("seconds")
    ax.set_ylim(bottom=0)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title("Seconds per step by stage (dots: model compute, part of the bars)")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside the bars, never over them
    return png_data_uri(fig)


def phase_table(steps: list[dict]) -> str:
    """Per phase: steps, mean seconds per step, each stage's share and the model-compute share."""
    phases: dict[str, list[dict]] = {}
    for s in steps:
        phases.setdefault(str(s["phase"]), []).append(s["stages"])
    present = [n for n in ORDER if any(st.get(n) for ss in phases.values() for st in ss)]
    rows = []
    for phase, ss in phases.items():
        total = sum(st.get("total", 0.0) for st in ss)
        share = (lambda x: f"{x / total:.0%}" if total > 0 else "-")  # noqa: E731
        rows.append([phase, len(ss), f"{total / len(ss):.2f}", *[share(sum(st.get(n, 0.0) for st in ss))
                                                                 for n in present],
                     share(sum(st.get(MODEL_KEY, 0.0) for st in ss))])
    return table_html(rows, ["phase", "steps", "s / step", *present, "model compute"])


def speed_section(led: Ledger, run_id: str) -> str:
    """The section's HTML; a one-line note for a ledger without per-stage timings."""
    steps = views.step_stage_seconds(led, run_id)
    head = "<h2>Loop speed</h2>"
    if not steps:
        return head + "<p class=note>no per-stage timings in this ledger (written before coevo recorded them)</p>"
    total = sum(s["stages"].get("total", 0.0) for s in steps)
    model = sum(s["stages"].get(MODEL_KEY, 0.0) for s in steps)
    note = (f"<p class=note>{len(steps)} steps, {total:.1f} s in all; model compute (sampling forward passes and "
            f"forward/backward) {model / total:.0%} of it" if total > 0 else "<p class=note>") + \
        ". Stages add up to the step time; <i>reward</i> is the recipe's own work between the shared stages " \
        "(votes, filters, reward formulas), <i>state</i> the step's state file, <i>ledger</i> the step's rows.</p>"
    fig = figure_html(plot_stages(steps), "Seconds per step by stage")
    return head + note + phase_table(steps) + fig
