"""coevo command line: run, resume, pretrain, audit, report, reanalyze, simulate, bench, doubt, export
(more commands, eval included, in coevo/commands/*.py).

Every command turns bad input into a one-line error (exit 2), never a traceback.
Heavy modules are imported inside commands so ``coevo --help`` stays instant.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import List, Optional

from coevo import interrupt

if Path(sys.argv[0]).name in ("coevo", "__main__.py", "cli.py"):  # the program, not an import (tests, scripts)
    interrupt.quiet_start()  # Ctrl-C while the imports below run: one line, never a traceback

import typer  # noqa: E402

from coevo.cli_common import API_KEY_ENV_HELP, UserError, check_out_dir, console, emit_json, fail, solver_policy  # noqa: F401,E402
from coevo.commands.output import emit, json_option  # noqa: E402
from coevo.core.registry import recipe_names  # noqa: E402

HELP = {"help_option_names": ["-h", "--help"]}


class CoevoApp(typer.Typer):
    """The ``coevo`` program: a usage error (an unknown option, a bad value, a missing argument) is one line on
    stderr, exit 2, as every other user error (``cli_common.run_app``)."""

    def __call__(self, *args, **kwargs):
        from coevo.cli_common import run_app

        return run_app(super().__call__, *args, **kwargs)


app = CoevoApp(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False, context_settings=HELP,
                  help="Self-evolving proposer-solver training with honest reward accounting.")
bench_app = typer.Typer(add_completion=False, no_args_is_help=True, context_settings=HELP,
                        help="Benchmarks (ratios; --json for JSON).")
app.add_typer(bench_app, name="bench")


def _version(value: bool) -> None:
    if value:
        from coevo import __version__

        typer.echo(f"coevo {__version__}")
        raise typer.Exit(0)


@app.callback()
def _main(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print coevo's version and exit.")) -> None:
    """Self-evolving proposer-solver training with honest reward accounting."""


@app.command()
def run(
    preset: Optional[str] = typer.Option(None, "--preset", "-p", help="Preset name (cpu, paper, smollm2-cpu, drzero, "
                                         "...) or a YAML file; default: the preset named after --recipe, else cpu."),
    config: Optional[Path] = typer.Option(None, "--config", "-c", help="YAML config merged over the preset."),
    set_: List[str] = typer.Option([], "--set", "-s", help="Override, key=value (dotted keys), repeatable; "
                                   "`coevo config keys` lists them. With --resume only the keys that may change."),
    recipe: Optional[str] = typer.Option(None, "--recipe", help=f"{' | '.join(recipe_names())} | a module path defining "
                                                                "RECIPES (shortcut for --set recipe=...)."),
    seed: Optional[int] = typer.Option(None, "--seed", help="Run seed (shortcut for --set seed=N)."),
    max_error_rate: Optional[float] = typer.Option(None, "--max-error-rate", min=0.0, max=1.0, help="Exit 2 when "
                                                   "more than this share of model-server / judge calls failed "
                                                   "(default 0: any; shortcut for --set max_error_rate=X)."),
    budget: Optional[str] = typer.Option(None, "--budget", help="Run budget, a named set of overrides "
                                         "(coevo/presets/budgets/NAME.yaml) applied before --set: smoke = every "
                                         "phase in seconds, for trying things."),
    out: Optional[Path] = typer.Option(None, "--out", help="Run directory (default runs/<recipe>-<timestamp>)."),
    resume: Optional[Path] = typer.Option(None, "--resume", help="Continue a run directory from its last completed "
                                          "step; --set may change only its rounds, tracking.* and note (recorded)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar and no table; still the run directory."),
    force: bool = typer.Option(False, "--force", help="Run a preset on a backend it is not meant for."),
    executor: Optional[str] = typer.Option(None, "--executor", help="local | ray (shortcut for --set executor.kind=...)."),
    address: Optional[str] = typer.Option(None, "--address", help="Ray cluster address, host:port (executor.address)."),
    no_report: bool = typer.Option(False, "--no-report", help="Skip report.html (`coevo report RUN` writes it later); "
                                   "experiments' runs use it."),
):
    """Co-evolve a proposer and a solver; writes a run directory with ledger, checkpoints, summary and report.

    Progress goes to stderr; the round table and the run directory's line to stdout.  Ctrl-C or SIGTERM stops it
    cleanly (coevo/interrupt.py): one line naming the step to resume from, exit 130 / 143."""
    from coevo import interrupt

    interrupt.install()  # first: a signal during the imports below is one line too
    from coevo.cli_common import interrupted, process_wall
    from coevo.config import ConfigError, check_intended_backend
    from coevo.core.errors import CannotRun
    from coevo.knobs import KnobError, prepare_resume, resolve_run_config, shortcut_overrides

    try:  # every refusal before the runner (and torch) is imported
        if resume is not None:
            given = [f for f, v in (("--preset", preset), ("--config", config), ("--recipe", recipe),
                                    ("--budget", budget), ("--out", out), ("--executor", executor),
                                    ("--address", address)) if v is not None]
            if given:
                raise UserError(f"{given[0]} cannot change a run being resumed (--resume continues it with its own "
                                f"config; --set may change its rounds, tracking.* and note)")
            if not resume.is_dir():
                raise UserError(f"run directory not found: {resume}")
            overrides = shortcut_overrides(set_, seed=seed, max_error_rate=max_error_rate)
            prepare_resume(resume, overrides)
            from coevo.runner import resume_run

            run_dir = resume_run(resume, quiet=quiet, report=not no_report, overrides=overrides)
        else:
            if out is not None:  # before the imports below: a taken --out is refused in a second
                from coevo.runlock import occupied

                check_out_dir(out)
                if occupied(out):
                    raise UserError(f"run directory {out} exists and is not empty (use --resume {out} to continue it)")
            overrides = shortcut_overrides(set_, recipe=recipe, executor=executor, address=address, seed=seed,
                                           max_error_rate=max_error_rate)
            cfg = resolve_run_config(preset, config, overrides, recipe, budget)
            if not force:
                check_intended_backend(cfg)
            from coevo.runner import run_from_config

            run_dir = run_from_config(cfg, out, quiet=quiet, report=not no_report)
    except (UserError, ConfigError, CannotRun, KnobError) as e:  # RunError is a CannotRun
        fail(str(e))
    except interrupt.Interrupted as e:
        interrupted(e, resume)
    except Exception as e:  # noqa: BLE001 - raised by a signal inside a C extension or an import: the interruption
        stop = interrupt.interruption(e)
        if stop is None:
            raise
        interrupted(stop, resume)
    files = [n for n in ("report.html", "summary.json", "ledger.duckdb") if (run_dir / n).exists()]
    typer.echo(f"run directory: {run_dir}  ({process_wall():.1f} s wall; {', '.join(files)})")


@app.command()
def pretrain(
    role: str = typer.Option("all", help="solver | challenger | synthesizer | shared | facts_solver | facts_proposer | "
                                         "all (arithmetic + facts) | criteria_student | criteria_experts | criteria"),
    out: Path = typer.Option(Path("coevo/assets"), help="Where to write the checkpoints."),
    steps: Optional[int] = typer.Option(None, min=1, help="Override the number of training steps (for tests)."),
    seed: int = typer.Option(0),
    quiet: bool = typer.Option(False, "--quiet", "-q"),
    as_json: bool = json_option(),
):
    """Deterministically pretrain the tiny CPU policies shipped in coevo/assets."""
    try:
        check_out_dir(out)  # before the import below (torch): refused in a second
    except UserError as e:
        fail(str(e))
    from coevo.pretrain import PretrainError, pretrain_roles

    try:
        info = pretrain_roles(role, out, steps=steps, seed=seed, quiet=quiet)
    except (PretrainError, UserError) as e:
        fail(str(e))
    emit(info, as_json)


@app.command()
def report(run_dir: Path = typer.Argument(..., help="Run directory.")):
    """(Re)build report.html for a run directory."""
    from coevo.ledger.store import LedgerError
    from coevo.report.html import write_report

    if not run_dir.is_dir():
        fail(f"run directory not found: {run_dir}")
    try:
        path = write_report(run_dir)
    except LedgerError as e:
        fail(str(e))
    console.print(f"wrote {path}")


@app.command()
def audit(
    run_dirs: List[Path] = typer.Argument(..., help="One or more run directories."),
    as_json: bool = json_option(),
    predictions: bool = typer.Option(False, "--predictions", help="Evaluate the design proposals' predictions (RGBC: P1-P6; CASA: P1-P4)."),
    stress: Optional[Path] = typer.Option(None, "--stress", help="`coevo stress` JSON for CASA's P4 (break rates)."),
):
    """Instruments over a run's ledger: bearing rate, kappa, nu, lag, pseudo-label accuracy, FF, phi, ..."""
    from coevo.audit.render import print_audit
    from coevo.audit.run_audit import AuditError, audit_runs

    for d in run_dirs:
        if not d.is_dir():
            fail(f"run directory not found: {d}")
    try:
        if stress is not None and not stress.is_file():
            fail(f"stress file not found: {stress}")
        result = audit_runs(run_dirs, predictions=predictions, stress=stress)
    except AuditError as e:
        fail(str(e))
    emit(result, as_json, print_audit)


@app.command()
def simulate(
    pool: str = typer.Option("frontier", help="frontier | bimodal | uniform | beta | nullmodel"),
    k: int = typer.Option(4, help="Rollouts per group."),
    n_tasks: int = typer.Option(20000, help="Tasks in the simulated pool."),
    a: float = typer.Option(2.0, help="Beta(a, b) pool: a."),
    b: float = typer.Option(2.0, help="Beta(a, b) pool: b."),
    seed: int = typer.Option(0),
    as_json: bool = json_option(),
):
    """Screen/confirm on a pool with known pass rates: instrument vs truth."""
    from coevo.audit.simulate import SimulateError, print_simulation, simulate_pool

    try:
        result = simulate_pool(pool, k=k, n_tasks=n_tasks, a=a, b=b, seed=seed)
    except SimulateError as e:
        fail(str(e))
    emit(result, as_json, print_simulation)


@bench_app.command("bleu")
def bench_bleu(n: int = typer.Option(2048, min=2), sample_pairs: int = typer.Option(3000, min=1), seed: int = typer.Option(0),
               as_json: bool = json_option()):
    """Repetition penalty: our cached/vectorised pairwise BLEU vs NLTK sentence_bleu."""
    from coevo.rewards.repetition import bench_bleu as _bench

    emit(_bench(n=n, sample_pairs=sample_pairs, seed=seed), as_json)


@bench_app.command("verify")
def bench_verify(n: int = typer.Option(2000, min=1), workers: Optional[int] = typer.Option(None, min=1), seed: int = typer.Option(0),
                 as_json: bool = json_option()):
    """Verifier pool throughput vs in-process math-verify on the same answer pairs."""
    from coevo.verify.bench import bench_verify as _bench

    emit(_bench(n=n, workers=workers, seed=seed), as_json)


@app.command("export")
def export_cmd(
    run_dir: Path = typer.Argument(..., help="Run directory."),
    out_dir: Path = typer.Argument(..., help="Where to write the model or adapter (new or empty directory)."),
    round_: int = typer.Option(..., "--round", help="Round whose checkpoint to export."),
    role: str = typer.Option(..., "--role", help="Role (solver, challenger, synthesizer, ...)."),
):
    """Write a ready-to-serve model or adapter from a run's round checkpoint: tiny -> safetensors +
    JSON config; hf LoRA role -> PEFT adapter (PeftModel.from_pretrained); hf full -> save_pretrained."""
    from coevo.checkpoint import CheckpointError, export_checkpoint

    try:
        out, kind = export_checkpoint(run_dir, round_, role, out_dir)
    except CheckpointError as e:
        fail(str(e))
    console.print(f"wrote {out} ({kind})")


def _register_commands() -> None:
    from coevo.commands import register_all

    register_all({"main": app, "bench": bench_app})


_register_commands()


def main() -> None:  # pragma: no cover
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
