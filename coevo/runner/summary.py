"""summary.json and the round table: the core round row plus the columns the recipe declares."""
from __future__ import annotations

from pathlib import Path

from coevo.audit.stats import binomial_se
from coevo.config import RunConfig
from coevo.core.registry import RecipeNotFound, get_recipe, load
from coevo.ledger import views
from coevo.ledger.store import Ledger


def frontier_levels(cfg: RunConfig, init: dict | None, counts: dict) -> list[str]:
    """The frontier band: given levels, or (``auto``) those whose initial accuracy lies in
    [frontier_low, frontier_high] — fixed by the round-0 evaluation, before any training."""
    fb = cfg.world.frontier_band
    if fb != "auto":
        return [b for b in fb if b in counts]
    if not init:
        return []
    lo, hi = cfg.world.frontier_low, cfg.world.frontier_high
    return [d for d, a in init["by_difficulty"].items() if lo <= a <= hi]


def metric_value(v):
    if isinstance(v, dict):
        v = v.get("value")
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def recipe_columns(steps: list[dict], round_: int, columns, whole_only: bool = False) -> dict:
    """Per-round means of the recipe's summary columns over its steps' metrics (None if absent).
    An estimate measured once per round (a metric dict with ``"scope": "round"``, e.g. the Dr. Zero
    recipes' ``false_agreement``) is kept whole: ``{value, se, n, ...}``."""
    out = {}
    for col in columns:
        whole = [s["metrics"][col] for s in steps if s["round"] == round_ and s["phase"] != "eval"
                 and isinstance(s["metrics"].get(col), dict) and s["metrics"][col].get("scope") == "round"]
        if len(whole) == 1:
            out[col] = {k: v for k, v in whole[0].items() if k != "scope"}
            continue
        if whole_only:
            continue
        vals = [metric_value(s["metrics"].get(col)) for s in steps if s["round"] == round_ and s["phase"] != "eval"]
        vals = [v for v in vals if v is not None]
        out[col] = sum(vals) / len(vals) if vals else None
    return out


def round_summary(led: Ledger, run_id: str, info, steps: list[dict], r: int) -> dict:
    """One entry of summary.json's ``rounds``: the core row (held-out accuracy, rollouts), the
    recipe's ledger columns (``info.round_columns``) and its summary columns' per-round means."""
    row = views.round_row(led, run_id, r, info.solver_role)
    if info.round_columns:
        row.update(load(info.round_columns)(led, run_id, r))
    columns = info.summary_columns
    for col, v in recipe_columns(steps, r, [c for c in columns if c not in row]).items():
        row[col] = v
    for col, v in recipe_columns(steps, r, [c for c in columns if c in row and row[c] is None],
                                 whole_only=True).items():  # a round estimate where the ledger view has none
        row[col] = v
    for col, v in recipe_columns(steps, r, info.optional_summary_columns).items():
        if v is not None:  # e.g. a pseudo-label accuracy by a judge, only when one is configured
            row[col] = v
    return row


def build_summary(led: Ledger, run_id: str, cfg: RunConfig) -> dict:
    info = get_recipe(cfg.recipe)
    columns = info.summary_columns
    steps = views.step_metrics(led, run_id)
    rounds = [round_summary(led, run_id, info, steps, r) for r in views.rounds_completed(led, run_id)]
    init = views.eval_accuracy(led, run_id, 0)
    counts = views.eval_counts(led, run_id, 0)
    wall = views.run_seconds(led, run_id)
    summary = {"rounds": rounds, "initial_solver_eval_accuracy": init, "eval_n_by_difficulty": counts,
               "wall_seconds": float(wall), "recipe": cfg.recipe, "preset": cfg.preset, "seed": cfg.seed,
               "summary_columns": list(columns)}
    errors = views.endpoint_errors(led, run_id)
    if errors:  # failed calls to a model server or judge: errors, apart from wrong and abstained (issue #31)
        summary["errors"] = errors
    band = frontier_levels(cfg, init, counts)
    if init and rounds and rounds[-1]["solver_eval_accuracy"] and band:
        n = sum(counts[b] for b in band)
        a0 = sum(init["by_difficulty"][b] * counts[b] for b in band) / n
        fin = rounds[-1]["solver_eval_accuracy"]["by_difficulty"]
        a1 = sum(fin[b] * counts[b] for b in band) / n
        se = float(binomial_se(a0, n))
        summary["frontier"] = {"band": band, "n": n, "initial": a0, "final": a1, "gain": a1 - a0,
                               "initial_se": se, "gain_in_se": (a1 - a0) / se if se > 0 else None}
    return summary


def errors_over(summary: dict, max_rate: float) -> str | None:
    """The one line refusing a run whose failed endpoint calls are a share above ``max_rate``; else None."""
    from coevo.core.verdict import rate_exceeded

    for part, e in (summary.get("errors") or {}).items():
        over = rate_exceeded(e["failed"], e["calls"], max_rate)
        if over:
            return f"{part.replace('_', ' ')}: {over.replace('--max-error-rate', 'max_error_rate')}; first: {e['first']}"
    return None


def column_names(recipe: str | None) -> dict[str, tuple[str, str]]:
    """{column: (short header, long caption)} of a recipe's round-table columns (its
    ``RecipeInfo.column_names``); empty for an unknown recipe (an imported run)."""
    try:
        return dict(get_recipe(recipe).column_names) if recipe else {}
    except RecipeNotFound:
        return {}


def _round_rows(summary: dict, cols: list) -> list[list[str]]:
    fmt = lambda x: "-" if metric_value(x) is None else f"{metric_value(x):.3f}"  # noqa: E731 (a dict: its value)
    diffs = list(summary["eval_n_by_difficulty"])
    init = summary["initial_solver_eval_accuracy"] or {"overall": None, "by_difficulty": {}}
    rows = [["0", fmt(init["overall"]), *[fmt(init["by_difficulty"].get(d)) for d in diffs], *["-"] * len(cols), "-"]]
    for r in summary["rounds"]:
        acc = r["solver_eval_accuracy"] or {"overall": None, "by_difficulty": {}}
        rows.append([str(r["round"]), fmt(acc["overall"]), *[fmt(acc["by_difficulty"].get(d)) for d in diffs],
                     *[fmt(r.get(c)) for c in cols], str(r["n_rollouts"])])
    return rows


def print_round_table(summary: dict, run_dir: Path) -> None:
    """The per-round table on stdout, as wide as the terminal (coevo.termwidth): one table, or, where it would
    not fit, accuracy by level and the recipe's columns as two tables."""
    from rich.table import Table

    from coevo.termwidth import fits, out_console

    names = column_names(summary.get("recipe"))
    cols = summary.get("summary_columns") or list(names)
    caption = "accuracy = oracle, greedy, held-out set" + "".join(
        f"; {names[c][0]} = {names[c][1]}" for c in cols if c in names)
    heads = ["round", "acc", *summary["eval_n_by_difficulty"], *[names.get(c, (c,))[0] for c in cols], "rollouts"]
    rows = _round_rows(summary, cols)

    def table(title, keep, cap=None):
        t = Table(title=title, caption=cap)
        for i in keep:
            t.add_column(heads[i], justify="right", no_wrap=True)
        for r in rows:
            t.add_row(*[r[i] for i in keep])
        return t

    c = out_console()
    title = f"coevo {summary['recipe']} · {run_dir}"
    whole = table(title, range(len(heads)), caption)
    if fits(c, whole):
        c.print(whole)
    else:
        n_acc = 2 + len(summary["eval_n_by_difficulty"])
        c.print(table(f"{title} · accuracy", range(n_acc)))
        c.print(table(f"{title} · training", [0, *range(n_acc, len(heads))], caption))
    f = summary.get("frontier")
    if f:
        c.print(f"frontier band {','.join(f['band'])} (n={f['n']}): {f['initial']:.3f} -> {f['final']:.3f} "
                f"(gain {f['gain']:+.3f} = {f['gain_in_se'] or 0:.1f} x binomial SE {f['initial_se']:.3f})")
