"""HTML page of `coevo compare --html OUT`: the runs table, the arms table and two plots (matplotlib
PNGs embedded as data URIs, as in report.html). The numbers come from ``coevo.audit.compare``;
nothing here computes an instrument."""
from __future__ import annotations

import html
from pathlib import Path

from coevo.audit.compare import TABLE_INSTRUMENTS, arm_rows, run_rows, run_value
from coevo.report.plots import figure_html, plt, png_data_uri, table_html

__all__ = ["write_compare_html", "plot_instruments", "plot_eval_rounds"]

_STYLE = """body{font-family:system-ui,sans-serif;max-width:1300px;margin:2em auto;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:0.85em}td,th{border:1px solid #ccc;padding:3px 6px;
text-align:right}figure{display:inline-block;margin:0.5em}figcaption{font-size:0.8em;color:#555}
.note{color:#555;font-size:0.9em}"""


def _value(run: dict, source: str, key: str) -> tuple[float | None, float | None, float | None]:
    """(value, ci_low, ci_high) of a summary number or an audit instrument of one run."""
    v = run_value(run, source, key)
    if v is None or source == "summary":
        return v, None, None
    ins = run["instruments"][key]
    return v, ins.get("ci_low"), ins.get("ci_high")


def plot_instruments(result: dict) -> str | None:
    """One panel per headline number: each run a point with its 95% interval, grouped by arm; the arm
    mean as a bar. None when no run has any of them."""
    keys = [(src, k) for src, k in [("summary", "final_eval"), ("summary", "frontier_gain"),
                                    *[("instruments", k) for k in TABLE_INSTRUMENTS]]
            if any(run_value(r, src, k) is not None for r in result["runs"])]
    if not keys:
        return None
    arms = [a["label"] for a in result["arms"]]
    ncol = 3
    nrow = (len(keys) + ncol - 1) // ncol
    fig, axes = plt.subplots(nrow, ncol, figsize=(4.2 * ncol, 2.9 * nrow), squeeze=False)
    for ax, (src, key) in zip(axes.flat, keys):
        for i, a in enumerate(result["arms"]):
            runs = [r for r in result["runs"] if r["arm_label"] == a["label"]]
            m = a[src].get(key, {})
            if m.get("n_runs"):
                ax.hlines(m["mean"], i - 0.3, i + 0.3, color="gray", lw=2)
            for j, r in enumerate(runs):
                v, lo, hi = _value(r, src, key)
                if v is None:
                    continue
                x = i + (j - (len(runs) - 1) / 2) * 0.12
                err = [[max(v - lo, 0)], [max(hi - v, 0)]] if lo is not None and hi is not None else None
                ax.errorbar([x], [v], yerr=err, fmt="o", capsize=3, color=f"C{i}")
        ax.set_xticks(range(len(arms)))
        ax.set_xticklabels(arms, fontsize=6, rotation=25, ha="right")
        ax.set_title(key.replace("_", " "), fontsize=9)
    for ax in list(axes.flat)[len(keys):]:
        ax.axis("off")
    fig.suptitle("Per run (points, 95% interval) and arm mean (bar)", fontsize=10)
    fig.tight_layout()
    return png_data_uri(fig)


def plot_eval_rounds(result: dict) -> str | None:
    """Eval accuracy per round, one line per run, one colour per arm; None without rounds."""
    runs = [r for r in result["runs"] if any(x["eval"] is not None for x in r["rounds"])]
    if not runs:
        return None
    labels = [a["label"] for a in result["arms"]]
    fig, ax = plt.subplots(figsize=(6, 3.6))
    seen = set()
    for r in runs:
        pts = [(x["round"], x["eval"]) for x in r["rounds"] if x["eval"] is not None]
        i = labels.index(r["arm_label"])
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", color=f"C{i}", alpha=0.8,
                label=None if r["arm_label"] in seen else r["arm_label"])
        seen.add(r["arm_label"])
    ax.set_xlabel("round (0 = before training)")
    ax.set_ylabel("solver eval accuracy (greedy, oracle)")
    ax.legend(fontsize=7)
    ax.set_title("Eval accuracy per round")
    return png_data_uri(fig)


def write_compare_html(result: dict, out: Path) -> Path:
    """Write the comparison page to ``out`` (OSError when it cannot be written)."""
    out = Path(out)
    head, rows = run_rows(result)
    ahead, arows = arm_rows(result)
    figs = [(plot_instruments(result), "Headline numbers per run and arm"),
            (plot_eval_rounds(result), "Eval accuracy per round")]
    runs = "".join(f"<li>{html.escape(r['arm_label'])}, seed {html.escape(str(r['seed']))}: "
                   f"{html.escape(r['run_dir'])}</li>" for r in result["runs"])
    differs = ", ".join(result["differs"]) or "nothing but the seed"
    body = (f'<!doctype html><html><head><meta charset="utf-8"><title>coevo compare</title><style>{_STYLE}</style>'
            f"</head><body><h1>coevo compare · {len(result['runs'])} runs · {len(result['arms'])} arms</h1>"
            f"<p class=note>Arms differ in: {html.escape(differs)}. Instrument cells: value [95% interval] as "
            "`coevo audit` computes them (docs/audit.md); - = unavailable for that run.</p>"
            f"<h2>Runs</h2>{table_html(rows, head)}<h2>Arms: mean over seeds (seed-to-seed range)</h2>"
            f"{table_html(arows, ahead)}<h2>Plots</h2>"
            + "".join(figure_html(uri, cap) for uri, cap in figs if uri)
            + f"<h2>Run directories</h2><ul>{runs}</ul></body></html>")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(body)
    return out
