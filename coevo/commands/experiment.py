"""``coevo experiment ...``: experiments that span several runs, each a grid of ``coevo run`` directories
on the experiment engine (``coevo.experiments``), registered by the recipes (``RecipeInfo.experiments``:
e.g. ``rzero-seeds``, ``crossfit-ablation``, ``drzero-arms``).
"""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from coevo.cli_common import console, emit_json, fail

JSON_HELP = "Print the result as one JSON object on stdout (default: a readable summary)."


def register(apps: dict) -> None:
    from coevo.experiments import REGISTRY

    exp = typer.Typer(add_completion=False, no_args_is_help=True, help="Experiments over several runs.")
    exp.callback(invoke_without_command=True)(_group)
    for name in REGISTRY:
        exp.command(name, help=f"Experiment {name}: arms x seeds, claims with verdicts (docs/experiments.md).")(
            _grid_command(name))
    exp.command("run", help="An experiment by registered name or MODULE:ATTR / FILE.py:ATTR path.")(_run_any)
    apps["main"].add_typer(exp, name="experiment")


def _group(ctx: typer.Context, list_: bool = typer.Option(False, "--list", help="List the experiments.")):
    """Experiments over several runs (``coevo experiment --list``)."""
    if list_:
        from coevo.experiments import REGISTRY

        for name, ref in sorted(REGISTRY.items()):
            typer.echo(f"{name}  ({ref})")
        raise typer.Exit(0)
    if ctx.invoked_subcommand is None:
        console.print(ctx.get_help())
        raise typer.Exit(0)


def _grid_command(name: str):
    def command(
        seeds: Optional[int] = typer.Option(None, "--seeds", help="Seeds first..first+N-1 (default: the experiment's)."),
        jobs: Optional[int] = typer.Option(None, "--jobs", "-j", help="Runs at a time (local: default 1; ray: all)."),
        executor: str = typer.Option("local", "--executor", help="local | ray"),
        address: Optional[str] = typer.Option(None, "--address", help="Ray cluster address HOST:PORT."),
        budget: str = typer.Option("default", "--budget", help="default | ci | ... (the experiment's budgets)."),
        out: Optional[Path] = typer.Option(None, "--out", help="Experiment directory (default runs/experiments/NAME[-BUDGET])."),
        as_json: bool = typer.Option(False, "--json/--no-json", help=JSON_HELP),
        quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress lines."),
        preset: Optional[str] = typer.Option(None, "--preset", "-p", help="Replace every arm's preset (e.g. qwen-1gpu)."),
        set_: List[str] = typer.Option([], "--set", "-s", help="Override added to every run, key=value, repeatable."),
    ):
        run_grid(name, seeds, jobs, executor, address, budget, out, as_json, quiet, preset, set_)
    command.__doc__ = f"Experiment {name}: arms x seeds, claims with verdicts (docs/experiments.md)."
    return command


def _run_any(
    name: str = typer.Argument(..., help="Registered name, MODULE:ATTR or FILE.py:ATTR."),
    seeds: Optional[int] = typer.Option(None, "--seeds"),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j"),
    executor: str = typer.Option("local", "--executor"),
    address: Optional[str] = typer.Option(None, "--address"),
    budget: str = typer.Option("default", "--budget"),
    out: Optional[Path] = typer.Option(None, "--out"),
    as_json: bool = typer.Option(False, "--json/--no-json"),
    quiet: bool = typer.Option(False, "--quiet", "-q"),
    preset: Optional[str] = typer.Option(None, "--preset", "-p"),
    set_: List[str] = typer.Option([], "--set", "-s"),
):
    run_grid(name, seeds, jobs, executor, address, budget, out, as_json, quiet, preset, set_)


def run_grid(name, seeds, jobs, executor, address, budget, out, as_json, quiet, preset=None, set_=()) -> None:
    """Load, run (or continue) and print an engine experiment; exit 1 when a run failed."""
    import sys

    from coevo.experiments import ExperimentNotFound, load_experiment
    from coevo.experiments.engine import ExperimentError, run_experiment

    if jobs is not None and jobs < 1:
        fail("--jobs must be >= 1")
    try:
        exp = load_experiment(name)
    except ExperimentNotFound as e:
        fail(str(e))
    if out is None:
        out = Path("runs/experiments") / (exp.name if budget == "default" else f"{exp.name}-{budget}")
    try:
        res = run_experiment(exp, out, budget=budget, seeds=seeds, jobs=jobs, executor=executor, address=address,
                             stream=None if quiet else sys.stderr, preset=preset, extra=list(set_))
    except ExperimentError as e:
        fail(str(e))
    if as_json:
        emit_json(res)
    else:
        print_result(res)
    if res["failed"]:
        console.print(f"[bold red]error:[/] {len(res['failed'])} run(s) failed: "
                      f"{', '.join(f['run'] for f in res['failed'])} (the others are kept; rerun to retry them)",
                      highlight=False, soft_wrap=True)
        raise typer.Exit(1)


def print_result(res: dict) -> None:
    """The claims table, the experiment's tables and the timing line, on stdout."""
    import os

    from rich.console import Console
    from rich.table import Table

    from coevo.experiments.report import fmt

    console = Console(width=int(os.environ.get("COLUMNS") or 160), highlight=False)

    t = Table(title=f"{res['experiment']} · budget {res['budget']} · seeds {res['seeds']}")
    for col in ("claim", "estimate", "95% CI", "MDE", "paper", "verdict", "n"):
        t.add_column(col)
    for c in res["claims"]:
        k, u = c.get("scale") or 1.0, c.get("unit") or ""
        ci = f"[{fmt(c.get('ci_low'), k, u)}, {fmt(c.get('ci_high'), k, u)}]" if c.get("ci_low") is not None else "-"
        t.add_row(c["name"], fmt(c.get("estimate"), k, u), ci, fmt(c.get("mde"), k, u).lstrip("+"),
                  fmt(c.get("paper_value"), k, u), c["verdict"], str(c.get("n", "")))
    console.print(t)
    for title, tab in (res.get("tables") or {}).items():
        tt = Table(title=title)
        for h in tab["head"]:
            tt.add_column(str(h))
        for r in tab["rows"]:
            tt.add_row(*[str(x) for x in r])
        console.print(tt)
    tm = res.get("timing", {})
    share = tm.get("model_compute_share_of_run_wall")
    console.print(f"wall {tm.get('wall_s', 0):.1f} s (runs: {tm.get('runs_wall_s', 0):.1f} s wall, "
                  f"{tm.get('runs_cpu_s', 0):.1f} s CPU; model compute {'-' if share is None else f'{100 * share:.1f}%'}"
                  f" of run wall); report: {res.get('report')}", soft_wrap=True)
    arms = tm.get("per_arm") or {}
    if arms:
        first = next(iter(arms.values()))
        console.print("CPU s per run by arm (x the first arm): " + "; ".join(
            f"{a} {v['cpu_s']:.1f} (x{v['cpu_s'] / first['cpu_s']:.2f})" if first.get("cpu_s") else f"{a} {v['cpu_s']:.1f}"
            for a, v in arms.items()), soft_wrap=True)
