"""``coevo experiment ...``: experiments that span several runs, each a grid of ``coevo run`` directories
on the experiment engine (``coevo.experiments``), registered by the recipes (``RecipeInfo.experiments``:
e.g. ``rzero-seeds``, ``crossfit-ablation``, ``drzero-arms``).
"""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from coevo.cli_common import UserError, check_out_dir, console, emit_json, fail

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
        jobs: Optional[int] = typer.Option(None, "--jobs", "-j", min=1, help="Runs at a time (local: default 1; ray: all)."),
        executor: str = typer.Option("local", "--executor", help="local | ray"),
        address: Optional[str] = typer.Option(None, "--address", help="Ray cluster address HOST:PORT."),
        budget: str = typer.Option("default", "--budget", help="default | ci | ... (the experiment's budgets)."),
        out: Optional[Path] = typer.Option(None, "--out", help="Experiment directory (default runs/experiments/NAME[-BUDGET])."),
        as_json: bool = typer.Option(False, "--json/--no-json", help=JSON_HELP),
        quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress lines."),
        preset: Optional[str] = typer.Option(None, "--preset", "-p", help="Replace every arm's preset (e.g. qwen-1gpu)."),
        set_: List[str] = typer.Option([], "--set", "-s", help="Override added to every run, key=value, repeatable."),
        design_only: bool = typer.Option(False, "--design", help="Run nothing: print each claim's pre-registration and "
                                         "planned power, and the familywise false-supported rate."),
        allow_partial: bool = typer.Option(False, "--allow-partial", help="Verdicts from a grid with failed or missing "
                                           "runs (default: 'incomplete')."),
    ):
        if design_only:
            refuse_with_design(jobs=jobs, executor=executor != "local", address=address, out=out, preset=preset,
                               set_=set_, allow_partial=allow_partial)
            show_design(name, seeds, budget, as_json)
            return
        run_grid(name, seeds, jobs, executor, address, budget, out, as_json, quiet, preset, set_, allow_partial)
    command.__doc__ = f"Experiment {name}: arms x seeds, claims with verdicts (docs/experiments.md)."
    return command


def _run_any(
    name: str = typer.Argument(..., help="Registered name, MODULE:ATTR or FILE.py:ATTR."),
    seeds: Optional[int] = typer.Option(None, "--seeds"),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", min=1),
    executor: str = typer.Option("local", "--executor"),
    address: Optional[str] = typer.Option(None, "--address"),
    budget: str = typer.Option("default", "--budget"),
    out: Optional[Path] = typer.Option(None, "--out"),
    as_json: bool = typer.Option(False, "--json/--no-json"),
    quiet: bool = typer.Option(False, "--quiet", "-q"),
    preset: Optional[str] = typer.Option(None, "--preset", "-p"),
    set_: List[str] = typer.Option([], "--set", "-s"),
    design_only: bool = typer.Option(False, "--design"),
    allow_partial: bool = typer.Option(False, "--allow-partial"),
):
    if design_only:
        refuse_with_design(jobs=jobs, executor=executor != "local", address=address, out=out, preset=preset,
                           set_=set_, allow_partial=allow_partial)
        show_design(name, seeds, budget, as_json)
        return
    run_grid(name, seeds, jobs, executor, address, budget, out, as_json, quiet, preset, set_, allow_partial)


def refuse_with_design(**given) -> None:
    """``--design`` runs nothing: an option that only shapes runs (``--set``, ``--preset``, ``--jobs``, ...) would be
    ignored silently, so it is refused on one line (exit 2)."""
    used = [k.rstrip("_").replace("_", "-") for k, v in given.items() if v]
    if used:
        fail(f"--{used[0]} has no effect with --design (it runs nothing; the design is the experiment's own "
             f"grid at --seeds and --budget)")


def _load(name: str):
    from coevo.experiments import ExperimentNotFound, load_experiment

    try:
        exp = load_experiment(name)
        exp.check()
    except ExperimentNotFound as e:
        fail(str(e))
    except ValueError as e:
        fail(str(e))
    return exp


def show_design(name: str, seeds: Optional[int], budget: str, as_json: bool) -> None:
    """``--design``: the pre-registration of every claim, its planned power, the familywise rate; runs nothing."""
    from coevo.experiments.montecarlo import design

    exp = _load(name)
    try:
        exp.grid(budget, seeds)  # the grid's own checks: a known budget, seeds >= 1
    except ValueError as e:
        fail(str(e))
    d = design(exp, seeds, budget=budget)
    if as_json:
        emit_json(d)
        return
    print_design(d)


def print_design(d: dict) -> None:
    import os

    from rich.console import Console
    from rich.table import Table

    from coevo.experiments.report import calibration_lines, fmt, lines_text

    c = Console(width=int(os.environ.get("COLUMNS") or 160), highlight=False)
    c.print(f"{d['experiment']} · design for budget {d['budget']} · {d['seeds']} seeds · familywise false-supported "
            f"rate under the global null (claims at their failure lines): {100 * d['familywise_false_supported']:.1f} % "
            f"+- {100 * d['familywise_mc_se']:.1f} (Monte Carlo, {d['n_sims']} experiments)", soft_wrap=True)
    t = Table(title="pre-registered claims")
    for col in ("claim", "role", "lines", "seeds", "powered for", "pilot SD", "power"):
        t.add_column(col, overflow="fold")
    for r in d["claims"]:
        k, u = r.get("scale") or 1.0, r.get("unit") or ""
        if r.get("power") is None:
            t.add_row(r["name"], r["role"], "-", "-", "-", "-", "-")
            continue
        t.add_row(r["name"], r["role"], lines_text(r), str(r["seeds"]), fmt(r["powered_for"], k, u),
                  fmt(r["pilot_sd"], k, u).lstrip("+"), f"{100 * r['power']:.0f} % (alpha {r['power_alpha']:.3g})")
    c.print(t)
    for line in calibration_lines(d.get("calibration")):
        c.print(line, soft_wrap=True, markup=False)
    for r in d["claims"]:
        c.print(f"- {r['name']} ({r['role']}): {r['statement']}", soft_wrap=True)
        if r.get("smallest_effect_why"):
            c.print(f"    smallest effect of interest: {r['smallest_effect_why']}", soft_wrap=True)
        if r.get("power") is not None:
            c.print(f"    units: {r['units']}; powered for {r['powered_for_what']}; pilot SD from {r['pilot_origin']}",
                    soft_wrap=True)
        if r["role"] == "primary" and r.get("power") is not None:
            n80 = r.get("seeds_for_80")
            c.print(f"    seeds for 80 % power: {n80 if n80 else 'more than 60 (not reachable at this design)'}",
                    soft_wrap=True)
        if r.get("construction"):
            c.print(f"    by construction: {r['construction']}", soft_wrap=True)


def run_grid(name, seeds, jobs, executor, address, budget, out, as_json, quiet, preset=None, set_=(),
             allow_partial: bool = False) -> None:
    """Load, run (or continue) and print an engine experiment; exit 1 when a run failed."""
    import sys

    from coevo.experiments.engine import ExperimentError, run_experiment

    if jobs is not None and jobs < 1:
        fail("--jobs must be >= 1")
    try:
        check_out_dir(out)
    except UserError as e:
        fail(str(e))
    exp = _load(name)
    if out is None:
        out = Path("runs/experiments") / (exp.name if budget == "default" else f"{exp.name}-{budget}")
    try:
        res = run_experiment(exp, out, budget=budget, seeds=seeds, jobs=jobs, executor=executor, address=address,
                             stream=None if quiet else sys.stderr, preset=preset, extra=list(set_),
                             allow_partial=allow_partial)
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


def print_result(res: dict, file=None) -> None:
    """The first line (budget, grid complete or not), the claims table, the experiment's tables, the timing
    (on stdout, or ``file``)."""
    import os

    from rich.console import Console
    from rich.table import Table

    from coevo.experiments.claims import TESTED
    from coevo.experiments.report import calibration_lines, claim_cells, headline

    console = Console(width=int(os.environ.get("COLUMNS") or 160), highlight=False, file=file)
    console.print(headline(res), soft_wrap=True)
    if res.get("missing") and not res.get("complete"):
        console.print(f"missing runs: {', '.join(res['missing'])}", soft_wrap=True)
    t = Table(title=f"{res['experiment']} · budget {res['budget']} · seeds {res['seeds']}")
    for col in ("claim", "role", "estimate", "95% CI", "lines", "p (adj.)", "power", "verdict", "n"):
        t.add_column(col)
    for c in res["claims"]:
        t.add_row(*claim_cells(c))
    console.print(t)
    whys = [c for c in res["claims"] if c.get("why") and c.get("role") in TESTED]
    for c in whys:
        console.print(f"{c['name']}: {c['verdict']} — {c['why']}", soft_wrap=True)
    if not res.get("smoke"):
        console.print(f"familywise false-supported rate of this design under the global null (claims at their "
                      f"failure lines): {100 * (res.get('familywise_false_supported') or 0):.1f} % +- "
                      f"{100 * (res.get('familywise_mc_se') or 0):.1f} (Monte Carlo)", soft_wrap=True)
    for line in calibration_lines(res.get("calibration")):
        console.print(line, soft_wrap=True, markup=False)
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
