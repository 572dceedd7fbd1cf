"""report.html for a run directory: the common sections, then the sections of the run's recipe.

Common to every run: run info (recipe, world, seed, preset, wall time), solver eval accuracy by
round (table and plot, from the ledger's ``evals``), the frontier gain when summary.json has one,
and the audit (``coevo.report.audit``). The recipe's own sections come from the recipe registry:
``get_recipe(<recipe of the runs table>).report_sections``, each ``"module:function"`` called as
``function(led, run_id, run_dir) -> HTML fragment`` ("" = nothing to show). A recipe that cannot
be resolved gets the common sections and a one-line note.
"""
from __future__ import annotations

import html
import json
from pathlib import Path

from coevo.ledger import views
from coevo.ledger.store import Ledger, open_run_ledger
from coevo.report.audit import audit_section_html
from coevo.report.plots import figure_html, plt, png_data_uri, table_html
from coevo.report.speed import speed_section

__all__ = ["write_report", "plot_eval", "recipe_sections"]

_STYLE = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;color:#222}
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
figure{display:inline-block;margin:0.5em}figcaption{font-size:0.8em;color:#555}.big{font-size:1.1em}
.note{color:#555;font-size:0.9em}"""


def plot_eval(evals: list[tuple[int, dict | None]], counts: dict) -> str:
    """Oracle accuracy per difficulty and round, ±2 binomial SE (data URI)."""
    fig, ax = plt.subplots(figsize=(6, 3.6))
    xs = [r for r, _ in evals]
    for d, n in counts.items():
        ys = [a["by_difficulty"].get(d) if a else None for _, a in evals]
        se = [((y * (1 - y) / n) ** 0.5 if y is not None else 0) for y in ys]
        ax.errorbar(xs, ys, yerr=[2 * s for s in se], marker="o", capsize=3, label=f"{d} (n={n})")
    ax.set_xlabel("round (0 = pretrained)")
    ax.set_ylabel("oracle accuracy (greedy)")
    ax.set_ylim(-0.02, 1.02)
    ax.set_xticks(xs)
    ax.legend(fontsize=7, ncol=2)
    ax.set_title("Solver accuracy on the held-out set (±2 SE)")
    return png_data_uri(fig)


def _f(x) -> str:
    if isinstance(x, dict):  # a step-metric estimate {value, se, ...}
        x = x.get("value")
    return "-" if x is None else (f"{x:.3f}" if isinstance(x, float) else str(x))


def _read_summary(run_dir: Path) -> dict:
    try:
        return json.loads((run_dir / "summary.json").read_text())
    except (OSError, ValueError):
        return {}


def _eval_section(led: Ledger, run_id: str, summary: dict, columns: tuple[str, ...]) -> str:
    """Eval accuracy by round (table with the recipe's summary columns, and a plot)."""
    counts = views.eval_counts(led, run_id, 0)
    evals = [(r, views.eval_accuracy(led, run_id, r)) for r in [0, *views.rounds_completed(led, run_id)]]
    if not counts or all(a is None for _, a in evals):
        return "<h2>Per round</h2><p class=note>no evaluation in this ledger</p>"
    diffs = list(counts)
    by_round = {r.get("round"): r for r in summary.get("rounds", [])}
    rows = []
    for r, a in evals:
        a = a or {"overall": None, "by_difficulty": {}}
        extra = [_f(by_round.get(r, {}).get(c)) if r else "-" for c in columns]
        rows.append(["0 (init)" if r == 0 else r, _f(a["overall"]), *[_f(a["by_difficulty"].get(d)) for d in diffs],
                     *extra])
    table = table_html(rows, ["round", "eval acc", *[f"acc {d}" for d in diffs], *[c.replace("_", " ") for c in columns]])
    fig = figure_html(plot_eval(evals, counts), "Solver oracle accuracy per difficulty and round")
    return f"<h2>Per round</h2>{table}<h2>Plots</h2>{fig}"


def _run_info(info: dict, summary: dict, run_dir: Path) -> str:
    wall = summary.get("wall_seconds")
    fr = summary.get("frontier")
    fr_html = ""
    if fr:
        fr_html = (f"<p class=big>Frontier band <b>{html.escape(', '.join(fr['band']))}</b> (n={fr['n']}): "
                   f"{fr['initial']:.3f} → <b>{fr['final']:.3f}</b>, gain {fr['gain']:+.3f} = "
                   f"<b>{(fr['gain_in_se'] or 0):.1f}×</b> the binomial SE of the initial accuracy "
                   f"({fr['initial_se']:.3f}).</p>")
    return (f"<h1>coevo · {html.escape(str(info.get('recipe')))} · {html.escape(run_dir.name)}</h1>"
            f"<p class=note>run {html.escape(str(info.get('run_id')))}, world {html.escape(str(info.get('world')))}, "
            f"preset <b>{html.escape(str(summary.get('preset')))}</b>, seed {html.escape(str(info.get('seed')))}"
            + (f", wall time {wall:.0f} s" if isinstance(wall, (int, float)) else "")
            + ". Accuracies are against the world's oracle.</p>" + fr_html + _errors_html(summary))


def _errors_html(summary: dict) -> str:
    """Failed calls to a model server or judge (summary.json ``errors``): errors, not wrong or abstained."""
    return "".join(f"<p class=big><b>errors: {e['failed']} of {e['calls']} {html.escape(part.replace('_', ' '))} "
                   f"calls failed after retries</b> (first: {html.escape(str(e['first']))}); they are left out of "
                   "the accuracies and instruments, never counted as wrong or abstained.</p>"
                   for part, e in (summary.get("errors") or {}).items() if e.get("failed"))


def recipe_sections(recipe: str, led: Ledger, run_id: str, run_dir: Path) -> tuple[list[str], tuple[str, ...]]:
    """The HTML fragments of the recipe's report sections and its summary columns. A recipe that cannot
    be resolved gives one note; a section that fails gives one note (the report never fails for it)."""
    from coevo.core.registry import RecipeNotFound, get_recipe, load

    try:
        info = get_recipe(recipe)
    except RecipeNotFound as e:
        return [f"<p class=note>recipe {html.escape(repr(recipe))} could not be resolved ({html.escape(str(e))}): "
                "only the common sections are shown.</p>"], ()
    out = []
    for ref in info.report_sections:
        try:
            frag = load(ref)(led, run_id, run_dir)
        except Exception as e:  # noqa: BLE001 (one failing section must not cost the whole report)
            frag = f"<p class=note>report section {html.escape(str(getattr(ref, '__qualname__', ref)))} failed: {html.escape(repr(e))}</p>"
        if frag:
            out.append(frag)
    return out, tuple(info.summary_columns)


def write_report(run_dir: Path, extra_sections: list[str] | None = None) -> Path:
    """Write ``run_dir/report.html`` from the run's ledger (and summary.json when present).
    Raises ``coevo.ledger.store.LedgerError`` when the directory holds no ledger."""
    run_dir = Path(run_dir)
    summary = _read_summary(run_dir)
    led = open_run_ledger(run_dir)  # LedgerError with a one-line reason when there is none
    try:
        info = views.run_info(led)
        run_id = info["run_id"]
        recipe = info.get("recipe") or summary.get("recipe") or "?"
        own, columns = recipe_sections(recipe, led, run_id, run_dir)
        columns = columns or tuple(summary.get("summary_columns") or ())  # unresolvable recipe: as the run wrote them
        head = _run_info(info, summary, run_dir)
        evals = _eval_section(led, run_id, summary, columns)
        audit = audit_section_html(run_dir, led, run_id)
        speed = speed_section(led, run_id)  # per-stage seconds of each step (coevo.timing)
    finally:
        led.close()
    body = (f'<!doctype html><html><head><meta charset="utf-8"><title>coevo report - {html.escape(run_dir.name)}'
            f"</title><style>{_STYLE}</style></head><body>\n{head}\n{evals}\n{''.join(own)}\n{audit}"
            f"{''.join(extra_sections or [])}\n{speed}\n</body></html>")
    out = run_dir / "report.html"
    out.write_text(body)
    return out
