"""The report's *Audit* section (common to every run): the `coevo audit` table and a per-step plot.

The numbers come from coevo.audit.run_audit (``assemble_run``) and are laid out by
coevo.audit.render.rows_for, as on the terminal; nothing here computes an instrument.
"""
from __future__ import annotations

import html as H
from pathlib import Path
from typing import Optional

from matplotlib.ticker import MaxNLocator

from coevo.audit.render import rows_for
from coevo.audit.run_audit import assemble_run
from coevo.audit.stats import Z95
from coevo.ledger.store import Ledger
from coevo.report.plots import figure_html, plt, png_data_uri

__all__ = ["audit_section_html", "section"]

_SERIES = ("bearing_rate", "kappa_bar", "productive_rate_replicated", "nu_bar", "lag", "pseudo_label_accuracy")


def _plot_series(run: dict) -> Optional[str]:
    """The per-step series as a PNG data URI (None when there is none)."""
    series = [(k, run["instruments"][k]) for k in _SERIES
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
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("step (batch)")
    ax.legend(fontsize=6)
    ax.set_title("Audit instruments per step (±1.96 binomial SE)")
    return png_data_uri(fig)


def audit_section_html(run_dir: Path, led: Ledger, run_id: str) -> str:
    """HTML section for report.html: the audit table and per-step plot (never raises)."""
    try:
        run = assemble_run(Path(run_dir), led, run_id)
        head = "".join(f"<th>{H.escape(h)}</th>" for h in ("instrument", "value", "SE", "95% interval", "n", "interval"))
        rows, why = rows_for(run)
        body = "".join("<tr>" + "".join(f"<td style='text-align:left'>{H.escape(x)}</td>" for x in r) + "</tr>"
                       for r in rows)
        ul = "<ul>" + "".join(f"<li>cannot compute {H.escape(w)}</li>" for w in why) + "</ul>"
        uri = _plot_series(run)
        fig = (figure_html(uri, "Audit instruments per step", alt="audit per step") if uri
               else "<p class=note>no per-step series to plot</p>")
        return (f"<h2>Audit</h2><p class=note>`coevo audit {H.escape(str(run_dir))}` — definitions in docs/audit.md. "
                f"The interval column says how each interval was computed.</p><table><tr>{head}</tr>{body}</table>{ul}{fig}")
    except Exception as e:  # noqa: BLE001 (the report must not fail because of the audit)
        return f"<h2>Audit</h2><p class=note>audit failed: {H.escape(repr(e))}</p>"


def section(led: Ledger, run_id: str, run_dir: Path) -> str:
    """The same section with the signature of a recipe's report section."""
    return audit_section_html(run_dir, led, run_id)
