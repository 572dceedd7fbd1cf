"""``coevo experiment ...``: experiments that span several runs.

``coevo experiment crossfit-ablation`` — False Frontiers §2.4, the fixed question-bank replay of the
CrossFit fold strategies (``coevo.recipes.crossfit_ablation``), with the arms' cost.
"""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from coevo.cli_common import console, emit_json, fail


def register(apps: dict) -> None:
    exp = typer.Typer(add_completion=False, no_args_is_help=True, help="Experiments over several runs.")
    exp.command("crossfit-ablation")(crossfit_ablation)
    apps["main"].add_typer(exp, name="experiment")


def crossfit_ablation(
    preset: str = typer.Option("crossfit", "--preset", "-p", help="Preset (name or YAML) of the facts world and policies."),
    set_: List[str] = typer.Option([], "--set", "-s", help="Override, key=value (dotted keys), repeatable."),
    seeds: int = typer.Option(3, "--seeds", help="Seeds first..first+N-1 (>= 3 for an interval worth reading)."),
    first_seed: int = typer.Option(0, "--first-seed", help="The first seed."),
    bank: int = typer.Option(64, "--bank", help="Proposer prompts of the question bank (one question each)."),
    aux_steps: int = typer.Option(2, "--aux-steps", help="Auxiliary-solver GRPO steps per strategy."),
    strategies: str = typer.Option("same-source,random-question,source-id", "--strategies",
                                   help="Fold strategies, comma-separated."),
    costs: bool = typer.Option(True, "--costs/--no-costs", help="Also run Dr. Zero, CrossFit, MSV+CrossFit per seed "
                                                                 "(rollouts, wall time, held-out Cover-EM)."),
    out: Path = typer.Option(Path("runs/crossfit-ablation"), "--out", help="Where the plot, JSON and cost runs go."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
):
    """FF and proposer reward per CrossFit fold strategy over seeds (95 % intervals), a table, a plot."""
    from coevo.config import ConfigError
    from coevo.recipes.crossfit import FOLD_STRATEGIES
    from coevo.runner import RunError

    names = [s.strip() for s in strategies.split(",") if s.strip()]
    bad = [s for s in names if s not in FOLD_STRATEGIES]
    if bad or not names:
        fail(f"--strategies: unknown {', '.join(bad) or '(none given)'}; known: {', '.join(FOLD_STRATEGIES)}")
    if seeds < 1 or bank < 1 or aux_steps < 0:
        fail("--seeds and --bank must be >= 1, --aux-steps >= 0")
    if out.exists() and costs and any((out / "runs").glob("*")):
        fail(f"{out / 'runs'} already holds runs: pass another --out")
    from coevo.recipes.crossfit_ablation import ablation_plot, run_ablation

    try:
        res = run_ablation(preset, set_, seeds, bank, aux_steps, names, costs, out / "runs", first_seed)
    except (ConfigError, RunError) as e:
        fail(str(e))
    out.mkdir(parents=True, exist_ok=True)
    res["plot"] = str(ablation_plot(res, out / "crossfit_ablation.png"))
    (out / "crossfit_ablation.json").write_text(__import__("json").dumps(res, indent=2, default=float))
    if as_json:
        emit_json(res)
    else:
        print_ablation(res)


def _ci(d: dict, pct: bool = True) -> str:
    if d["mean"] is None:
        return "-"
    f = (lambda x: f"{100 * x:.1f}%") if pct else (lambda x: f"{x:.3f}")
    if d["ci_low"] is None:
        return f(d["mean"])
    return f"{f(d['mean'])} [{f(d['ci_low'])}, {f(d['ci_high'])}]"


def print_ablation(res: dict, c: Optional[object] = None) -> None:
    from rich.table import Table

    t = Table(title=f"CrossFit fold ablation · {res['seeds']} seeds · bank of {res['bank_prompts']} prompts")
    for col in ("strategy", "FF (95% CI)", "proposer reward f(k) (95% CI)", "audited / seed"):
        t.add_column(col)
    for name, row in res["strategies"].items():
        t.add_row(name, _ci(row["ff"]), _ci(row["proposer_reward"], pct=False), str(row["n_audited"]))
    console.print(t)
    if "arms" in res:
        a = Table(title="cost of the arms (same budget, per run)")
        for col in ("recipe", "rollouts", "x Dr. Zero", "wall s", "x Dr. Zero", "held-out Cover-EM", "EM"):
            a.add_column(col)
        for arm, r in res["arms"].items():
            a.add_row(arm, _ci(r["rollouts"], False), f"{r.get('rollouts_ratio', float('nan')):.2f}",
                      _ci(r["wall_seconds"], False), f"{r.get('wall_ratio', float('nan')):.2f}",
                      _ci(r["cover_em"], False), _ci(r["em"], False))
        console.print(a)
    if "ordering_holds" in res:
        console.print(f"FF(source-id) < FF(random-question) <= FF(same-source): {res['ordering_holds']}")
    console.print(f"plot: {res.get('plot')}")
