"""The experiment's HTML report: the first line (budget, grid complete or not), the claims table
(role, estimate, 95 % interval, the pre-registered lines, adjusted p, planned power, verdict), one plot
per claim (estimate with its interval, the per-seed values, the failure and success lines, the source's
value), the extra tables and the timing.  Self-contained: plots are base64 PNGs."""
from __future__ import annotations

import base64
import html
import io
import math
from pathlib import Path
from typing import Optional

from coevo.experiments.claims import TESTED

__all__ = ["write_report", "render_html", "claim_plot", "fmt", "lines_text", "claim_cells", "headline", "calibration_lines"]

CSS = ("body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}"
       "table{border-collapse:collapse;margin:1em 0;font-size:14px}td,th{border:1px solid #ccc;padding:4px 8px;"
       "text-align:left}th{background:#f4f4f4}figure{display:inline-block;margin:1em}"
       ".refuted{color:#b42318}.inconclusive{color:#9a6700}.supported{color:#1a7f37}")


def fmt(v: Optional[float], scale: float = 1.0, unit: str = "") -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    return f"{v * scale:+.3g}{unit}" if unit in ("", " pt") else f"{v * scale:.3g}{unit}"


def headline(result: dict) -> str:
    """The first line of the text output: the budget and whether the grid is complete."""
    b = result.get("budget")
    state = "complete" if result.get("complete") else (
        f"INCOMPLETE ({len(result.get('missing') or [])} runs missing" +
        ("; verdicts from the partial grid, --allow-partial)" if result.get("allow_partial") else "; no verdicts)"))
    kind = "smoke budget: no verdicts" if result.get("smoke") else "verdicts under the pre-registered rule"
    return f"{result.get('experiment')} · budget {b} ({kind}) · grid {state} · seeds {result.get('seeds')}"


def lines_text(c: dict) -> str:
    """The pre-registered lines in the statistic's display units: ``fail < +1 pt, success >= +3 pt``."""
    k, u = c.get("scale") or 1.0, c.get("unit") or ""
    f, s_, d = c.get("failure_line"), c.get("success_line"), c.get("direction") or 1
    if f is None:
        return "-"
    lt, ge = ("<", ">=") if d > 0 else (">", "<=")
    out = f"fail {lt} {fmt(f, k, u)}" + (" (SESOI)" if c.get("smallest_effect") is not None else "")
    return out + (f", success {ge} {fmt(s_, k, u)}" if s_ is not None else "")


def _p(x) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    return f"{x:.2g}" if x >= 0.001 else f"{x:.1e}"


def claim_cells(c: dict) -> list:
    """One claims-table row as strings: claim, role, estimate, 95% CI, lines, p (adjusted), power, verdict, n."""
    k, u = c.get("scale") or 1.0, c.get("unit") or ""
    ci = f"[{fmt(c.get('ci_low'), k, u)}, {fmt(c.get('ci_high'), k, u)}]" if c.get("ci_low") is not None else "-"
    tested = c.get("role") in TESTED
    adjusted = c.get("role") == "secondary" or c.get("p_adjusted") not in (None, c.get("p"))  # co-primaries: Holm
    p = f"{_p(c.get('p'))} ({_p(c.get('p_adjusted'))})" if adjusted else _p(c.get("p"))
    power = c.get("power")
    return [c["name"], c.get("role", ""), fmt(c.get("estimate"), k, u), ci, lines_text(c) if tested else "-",
            p if tested else "-", f"{100 * power:.0f} %" if tested and power is not None else "-",
            c.get("verdict", ""), str(c.get("n", ""))]


def _png(fig) -> str:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def claim_plot(row: dict) -> str:
    """One claim: the estimate with its 95 % interval, the per-seed values, zero and the paper's value."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    k = row.get("scale") or 1.0
    fig, ax = plt.subplots(figsize=(5.2, 1.9))
    est, lo, hi = (row.get(x) for x in ("estimate", "ci_low", "ci_high"))
    if est is not None:
        if lo is not None and hi is not None:
            ax.errorbar([est * k], [0], xerr=[[est * k - lo * k], [hi * k - est * k]], fmt="o", color="#1f4e79",
                        capsize=6, label="estimate, 95 % CI")
        else:
            ax.plot([est * k], [0], "o", color="#1f4e79", label="estimate (no interval)")
    seeds = [v * k for v in (row.get("per_seed") or {}).values() if v is not None]
    if seeds:
        ax.plot(seeds, [0.25] * len(seeds), "x", color="#777", label="per seed")
    ax.axvline(0.0, color="black", lw=0.6, label="zero")
    if row.get("failure_line") is not None and row.get("role") in TESTED:
        ax.axvline(row["failure_line"] * k, color="#b42318", lw=1.2, label="failure line")
    if row.get("success_line") is not None and row.get("role") in TESTED:
        ax.axvline(row["success_line"] * k, color="#1a7f37", lw=1.2, label="success line")
    if row.get("source_value") is not None:
        ax.axvline(row["source_value"] * k, color="#7a4fb4", ls="--", lw=1.2, label="source")
    ax.set_yticks([])
    ax.set_ylim(-0.6, 0.6)
    ax.set_xlabel(f"{row.get('statistic', '')}{' (' + row['unit'].strip() + ')' if row.get('unit') else ''}"[:90])
    ax.set_title(f"{row['name']}: {row.get('verdict', '')}", fontsize=10)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return _png(fig)


def _table(head, rows) -> str:
    h = "".join(f"<th>{html.escape(str(x))}</th>" for x in head)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(x))}</td>" for x in r) + "</tr>" for r in rows)
    return f"<table><tr>{h}</tr>{body}</table>"


def _claims_table(claims) -> str:
    head = ["claim", "role", "estimate", "95% CI", "lines", "p (Holm-adjusted)", "planned power", "verdict", "n",
            "statistic", "method"]
    rows = [claim_cells(c) + [c.get("statistic", ""), c.get("method", "")] for c in claims]
    return _table(head, rows)


def render_html(result: dict) -> str:
    """The whole page as a string."""
    e = html.escape
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{e(result['experiment'])}</title>"
             f"<style>{CSS}</style></head><body>",
             f"<h1>Experiment {e(result['experiment'])}</h1><p>{e(result.get('description', ''))}</p>",
             f"<p><b>{e(headline(result))}</b></p>",
             f"<p>budget <b>{e(result.get('budget', ''))}</b> {e(result.get('budget_note', ''))}; "
             f"seeds {e(str(result.get('seeds')))}; complete: {result.get('complete')}" + (
                 "" if result.get("smoke") else f"; familywise false-supported rate of the design under the global "
                 f"null: {100 * (result.get('familywise_false_supported') or 0):.1f} %") + "</p>"]
    if result.get("missing") and not result.get("complete"):
        parts.append(f"<p class='refuted'>missing runs: {e(', '.join(result['missing']))}</p>")
    if result.get("failed"):
        parts.append("<h2>Failed runs</h2>" + _table(["run", "error"], [[f["run"], f["error"]] for f in result["failed"]]))
    parts.append("<h2>Claims</h2>" + _claims_table(result.get("claims", [])))
    parts.append("<ul>" + "".join(f"<li><b>{e(c['name'])}</b> ({e(c.get('role', ''))}): {e(c.get('statement', ''))}"
                                  f"{' — ' + e(c['source_note']) if c.get('source_note') else ''}"
                                  f"{' — smallest effect of interest: ' + e(c['smallest_effect_why']) if c.get('smallest_effect_why') else ''}"
                                  f"{' — by construction: ' + e(c['construction']) if c.get('construction') else ''}"
                                  f"{' — ' + e(c['why']) if c.get('why') else ''}"
                                  f" <span class='{e(c.get('verdict', '').split(':')[0])}'>{e(c.get('verdict', ''))}</span></li>"
                                  for c in result.get("claims", [])) + "</ul>")
    parts.append("<h2>Plots</h2>")
    for c in result.get("claims", []):
        if c.get("estimate") is not None:
            cap = f"{c['name']}: estimate, 95 % interval, the failure / success lines and the source's value"
            parts.append(f"<figure><img alt='{e(cap)}' src='{claim_plot(c)}'/><figcaption>{e(cap)}</figcaption></figure>")
    for title, t in (result.get("tables") or {}).items():
        parts.append(f"<h2>{e(title)}</h2>" + _table(t["head"], t["rows"]))
    tm = result.get("timing")
    if tm:
        share = tm.get("model_compute_share_of_run_wall")
        parts.append("<h2>Timing</h2>" + _table(["wall s", "runs wall s", "runs CPU s", "model compute / run wall"],
                                                [[f"{tm['wall_s']:.1f}", f"{tm['runs_wall_s']:.1f}",
                                                  f"{tm['runs_cpu_s']:.1f}",
                                                  "-" if share is None else f"{100 * share:.1f}%"]]))
    parts.append("</body></html>")
    return "\n".join(parts)


def write_report(result: dict, path: Path) -> Path:
    path = Path(path)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(render_html(result))
    tmp.replace(path)
    return path


def calibration_lines(cals) -> list:
    """One line per calibration: what was chosen, to reach what, on which seeds (evaluation runs use none of them)."""
    out = []
    for cal in cals or []:
        on = "; ".join(f"{k} {', '.join(map(str, v)) if len(v) < 6 else f'{v[0]}-{v[-1]}'}"
                       for k, v in cal["seeds"].items() if v) or "no seed (nothing an evaluation run could reuse)"
        out.append(f"calibrated: {cal['setting']} (to reach {cal['target']}) on {on}; evaluation runs use none of these"
                   + (f" [{cal['record']}]" if cal.get("record") else ""))
    return out

