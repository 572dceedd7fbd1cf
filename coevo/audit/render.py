"""Output of `coevo audit`: the rich table on the terminal and the report.html section.

The numbers come from coevo.audit.run_audit; nothing here computes an instrument.
"""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import List, Optional

from coevo.audit.stats import Z95
from coevo.ledger.store import Ledger

__all__ = ["print_audit", "audit_section_html", "rows_for"]


def _fmt(x, pct: bool = False) -> str:
    if x is None:
        return "-"
    return f"{100 * x:.1f}%" if pct else f"{x:.3f}"


_PCT = {"bearing_rate", "productive_rate_replicated", "kappa_bar", "nu_bar", "doubt_share", "pseudo_label_accuracy",
        "false_agreement_mass", "abstention_share", "eval_accuracy"}


def rows_for(run: dict) -> tuple[List[List[str]], List[str]]:
    """Table rows (instrument, value, SE, 95% interval, n, interval method) of the computable
    instruments, and one line per reason for those that cannot be computed."""
    rows, why = [], defaultdict(list)
    for key, ins in run["instruments"].items():
        if ins["status"] != "ok":
            why[ins["reason"]].append(ins["label"])
            continue
        pct = key in _PCT
        val = _fmt(ins["value"], pct)
        if key == "null_model":
            val = f"{100 * ins['value']:.2f} pt"
        if key == "lag":
            mci = ins["extra"].get("median_abs_ci", [None, None])
            val += f"; median |l| {_fmt(ins['extra'].get('median_abs'))} [{_fmt(mci[0])}, {_fmt(mci[1])}]"
        if key == "kappa_bar":
            t = ins["extra"].get("ci_task_clustered", [None, None])
            val += f"; task-clustered [{_fmt(t[0], True)}, {_fmt(t[1], True)}]"
        ci = f"[{_fmt(ins['ci_low'], pct)}, {_fmt(ins['ci_high'], pct)}]" if ins["ci_low"] is not None else "-"
        rows.append([ins["label"], val, _fmt(ins["se"], pct), ci, str(ins["n"]), ins["interval"]])
    return rows, [f"{', '.join(labels)}: {reason}" for reason, labels in why.items()]


def print_audit(result: dict) -> None:
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    c = Console()
    if not c.is_terminal:
        c = Console(width=160)
    for run in result["runs"]:
        t = Table(title=f"audit · {run['recipe']} · arm {run['arm']} · seed {run['seed']} · {run['run_dir']}")
        for col, j in (("instrument", "left"), ("value", "right"), ("SE", "right"), ("95% interval", "right"),
                       ("n", "right"), ("interval", "left")):
            t.add_column(col, justify=j, overflow="fold")
        rows, why = rows_for(run)
        for r in rows:
            t.add_row(*[escape(x) for x in r])
        c.print(t)
        for line in why:
            c.print(f"  [bold]cannot compute[/] {escape(line)}", highlight=False)
        nm = run["instruments"].get("null_model")
        if nm and nm["status"] == "ok":
            for name, b in nm["extra"]["buckets"].items():
                o, p = b["observed"], b["predicted"]
                c.print(f"  null model, {name} bucket (steps {b['steps']}, n={b['n']}, K={nm['extra']['k']}): observed "
                        f"{'/'.join(f'{100 * x:.1f}' for x in o)}% (all-correct/bearing/all-wrong); best two-point pool "
                        f"w={b['fit']['w']:.3f} p={b['fit']['p_hi']:.4f}/{b['fit']['p_lo']:.4f} predicts "
                        f"{'/'.join(f'{100 * x:.1f}' for x in p)}% (max error {100 * b['fit']['error']:.2f} pt)",
                        highlight=False)
    for sr in result["seed_range"]:
        if sr["status"] != "ok":
            c.print(escape(f"seed-to-seed range, {sr['recipe']}/{sr['arm']}: cannot compute: {sr['reason']}"),
                    highlight=False)
            continue
        t = Table(title=f"seed-to-seed range · {sr['recipe']} · arm {sr['arm']} · seeds {sr['seeds']}")
        for col in ("metric", "range", "min", "max", "mean", "per seed"):
            t.add_column(col)
        for k, m in sr["metrics"].items():
            t.add_row(k, _fmt(m["range"]), _fmt(m["min"]), _fmt(m["max"]), _fmt(m["mean"]),
                      ", ".join(f"{s}: {_fmt(v)}" for s, v in m["per_seed"].items()))
        c.print(t)
    if "predictions" in result:
        from coevo.audit.predictions import print_predictions

        print_predictions(result["predictions"], c)


# ---------------------------------------------------------------------- report section
def _plot_series(run: dict) -> Optional[str]:
    """The per-step series as a PNG data URI (None when there is none)."""
    from coevo.report.plots import plt, png_data_uri

    series = [(k, run["instruments"][k]) for k in ("bearing_rate", "kappa_bar", "productive_rate_replicated",
                                                     "nu_bar", "lag", "pseudo_label_accuracy")
              if run["instruments"].get(k, {}).get("status") == "ok" and run["instruments"][k]["extra"].get("per_step")]
    if not series:
        return None
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    for k, ins in series:
        ps = ins["extra"]["per_step"]
        xs = [p["step"] for p in ps]
        ys = [p["value"] for p in ps]
        es = [Z95 * (p["se"] or 0.0) for p in ps]
        ax.errorbar(xs, ys, yerr=es, marker="o", capsize=3, label=f"{ins['label']} (pooled {ins['value']:.3f})")
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("step (batch)")
    ax.legend(fontsize=6)
    ax.set_title("Audit instruments per step (±1.96 binomial SE)")
    return png_data_uri(fig)


def audit_section_html(run_dir: Path, led: Ledger, run_id: str) -> str:
    """HTML section for report.html: the audit table and per-step plot (never raises)."""
    import html as H

    try:
        from coevo.audit.run_audit import assemble_run

        run = assemble_run(Path(run_dir), led, run_id)
        head = "".join(f"<th>{H.escape(h)}</th>" for h in ("instrument", "value", "SE", "95% interval", "n", "interval"))
        rows, why = rows_for(run)
        body = "".join("<tr>" + "".join(f"<td style='text-align:left'>{H.escape(x)}</td>" for x in r) + "</tr>"
                       for r in rows)
        ul = "<ul>" + "".join(f"<li>cannot compute {H.escape(w)}</li>" for w in why) + "</ul>"
        from coevo.report.plots import figure_html

        uri = _plot_series(run)
        fig = (figure_html(uri, "Audit instruments per step", alt="audit per step") if uri
               else "<p class=note>no per-step series to plot</p>")
        return (f"<h2>Audit</h2><p class=note>`coevo audit {H.escape(str(run_dir))}` — definitions in docs/audit.md. "
                f"The interval column says how each interval was computed.</p><table><tr>{head}</tr>{body}</table>{ul}{fig}")
    except Exception as e:  # the report must not fail because of the audit
        return f"<h2>Audit</h2><p class=note>audit failed: {H.escape(repr(e))}</p>"
