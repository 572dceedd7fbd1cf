"""report.html for a run directory: plots (PNG, embedded) and tables from the ledger."""
from __future__ import annotations

import base64
import html
import io
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from coevo.ledger import views  # noqa: E402
from coevo.ledger.store import Ledger  # noqa: E402


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode()


def _img(b64: str, alt: str) -> str:
    return f'<figure><img alt="{html.escape(alt)}" src="data:image/png;base64,{b64}"/><figcaption>{html.escape(alt)}</figcaption></figure>'


def plot_eval(summary: dict) -> str:
    fig, ax = plt.subplots(figsize=(6, 3.6))
    init = summary["initial_solver_eval_accuracy"]
    diffs = list(summary["eval_n_by_difficulty"])
    series = [init] + [r["solver_eval_accuracy"] for r in summary["rounds"]]
    xs = list(range(len(series)))
    for d in diffs:
        ys = [s["by_difficulty"].get(d) if s else None for s in series]
        n = summary["eval_n_by_difficulty"][d]
        se = [((y * (1 - y) / n) ** 0.5 if y is not None else 0) for y in ys]
        ax.errorbar(xs, ys, yerr=[2 * s for s in se], marker="o", capsize=3, label=f"{d} (n={n})")
    ax.set_xlabel("round (0 = pretrained)")
    ax.set_ylabel("oracle accuracy (greedy)")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xticks(xs)
    ax.legend(fontsize=7, ncol=2)
    ax.set_title("Solver accuracy on the held-out set (±2 SE)")
    return _png(fig)


def plot_steps(steps: list[dict]) -> str:
    fig, ax = plt.subplots(figsize=(6, 3.6))
    ch = [(s["step"], s["metrics"]) for s in steps if s["phase"] == "challenger"]
    sv = [(s["step"], s["metrics"]) for s in steps if s["phase"] == "solver" and "solver_reward_mean" in s["metrics"]]
    if ch:
        ax.plot([x for x, _ in ch], [m["challenger_reward_mean"] for _, m in ch], "o-", label="Challenger reward")
        ax.plot([x for x, _ in ch], [m["format_failure_rate"] for _, m in ch], "x--", label="format failure rate")
    if sv:
        ax.plot([x for x, _ in sv], [m["solver_reward_mean"] for _, m in sv], ".-", label="Solver reward (pseudo-label match)")
    ax.set_xlabel("step")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7)
    ax.set_title("Rewards per step")
    return _png(fig)


def plot_mix(mix: dict) -> str:
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
    if labels:
        ax.legend(fontsize=7, ncol=3)
    ax.set_title("What the proposer asks: difficulty mix per round")
    return _png(fig)


def plot_phat(ph: dict) -> str:
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for r in sorted(ph):
        ax.hist(ph[r], bins=[i / 10 - 0.05 for i in range(12)], histtype="step", label=f"round {r}")
    ax.axvspan(0.25, 0.75, alpha=0.1, color="green", label="kept band |p-1/2|<=0.25")
    ax.set_xlabel("p_hat (majority share of m answers)")
    ax.legend(fontsize=7)
    ax.set_title("Candidate questions: self-consistency")
    return _png(fig)


def _table(rows: list[list], head: list[str]) -> str:
    h = "".join(f"<th>{html.escape(str(x))}</th>" for x in head)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(x))}</td>" for x in r) + "</tr>" for r in rows)
    return f"<table><tr>{h}</tr>{body}</table>"


def _f(x) -> str:
    return "-" if x is None else (f"{x:.3f}" if isinstance(x, float) else str(x))


def write_report(run_dir: Path, extra_sections: list[str] | None = None) -> Path:
    run_dir = Path(run_dir)
    summary = json.loads((run_dir / "summary.json").read_text())
    led = Ledger(run_dir / "ledger.duckdb", read_only=True)
    try:
        run_id = views.run_info(led)["run_id"]
        steps = views.step_metrics(led, run_id)
        mix = views.challenger_difficulty_mix(led, run_id)
        ph = views.p_hat_values(led, run_id)
        sections = []
        try:
            from coevo.audit.render import audit_section_html

            sections.append(audit_section_html(run_dir, led, run_id))
        except ImportError:
            pass
        if summary.get("recipe") in ("synco", "rgbc"):
            try:
                from coevo.report.teachable import teachable_section_html
            except ImportError:
                teachable_section_html = None
            if teachable_section_html is not None:
                sections.append(teachable_section_html(run_dir, led, run_id))
    finally:
        led.close()
    diffs = list(summary["eval_n_by_difficulty"])
    rows = []
    init = summary["initial_solver_eval_accuracy"]
    rows.append(["0 (init)", _f(init["overall"]), *[_f(init["by_difficulty"].get(d)) for d in diffs], "-", "-", "-", "-", "-"])
    for r in summary["rounds"]:
        a = r["solver_eval_accuracy"]
        rows.append([r["round"], _f(a["overall"]), *[_f(a["by_difficulty"].get(d)) for d in diffs],
                     _f(r["pseudo_label_accuracy"]), _f(r["kept_fraction"]), _f(r["challenger_reward_mean"]),
                     _f(r["format_failure_rate"]), r["n_rollouts"]])
    table = _table(rows, ["round", "eval acc", *[f"acc {d}" for d in diffs], "pseudo-label acc", "kept",
                          "challenger reward", "format fail", "solver rollouts"])
    fr = summary.get("frontier")
    fr_html = ""
    if fr:
        fr_html = (f"<p class=big>Frontier band <b>{', '.join(fr['band'])}</b> (n={fr['n']}): "
                   f"{fr['initial']:.3f} → <b>{fr['final']:.3f}</b>, gain {fr['gain']:+.3f} = "
                   f"<b>{(fr['gain_in_se'] or 0):.1f}×</b> the binomial SE of the initial accuracy ({fr['initial_se']:.3f}).</p>")
    figs = [_img(plot_eval(summary), "Solver oracle accuracy per difficulty and round"),
            _img(plot_steps(steps), "Rewards per step"),
            _img(plot_mix(mix), "Difficulty mix of proposed questions"),
            _img(plot_phat(ph), "p_hat of candidate questions")]
    body = f"""<!doctype html><html><head><meta charset="utf-8"><title>coevo report - {html.escape(run_dir.name)}</title>
<style>body{{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;color:#222}}
table{{border-collapse:collapse;margin:1em 0}}td,th{{border:1px solid #ccc;padding:3px 8px;text-align:right}}
figure{{display:inline-block;margin:0.5em}}figcaption{{font-size:0.8em;color:#555}}.big{{font-size:1.1em}}
.note{{color:#555;font-size:0.9em}}</style></head><body>
<h1>coevo · {html.escape(summary['recipe'])} · {html.escape(run_dir.name)}</h1>
<p class=note>preset <b>{html.escape(str(summary.get('preset')))}</b>, seed {summary.get('seed')}, wall time {summary['wall_seconds']:.0f} s.
Accuracies are against the world's oracle; pseudo-label accuracy is the share of kept majority-vote labels that the oracle confirms.</p>
{fr_html}
<h2>Per round</h2>{table}
<h2>Plots</h2>{''.join(figs)}
{''.join(sections)}{''.join(extra_sections or [])}
</body></html>"""
    out = run_dir / "report.html"
    out.write_text(body)
    return out
