"""The RGBC folder's commands (registered through ``RecipeInfo.commands``): ``coevo reanalyze
synco`` (the RGBC proposal's analysis of SynCo's published numbers) and ``coevo doubt export |
import`` (the human check of the reference-in-doubt bucket)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from coevo.cli_common import emit, fail, json_option

reanalyze_app = typer.Typer(add_completion=False, no_args_is_help=True,
                            help="Re-derive a design proposal's analysis of published numbers (see docs/references.md).")
doubt_app = typer.Typer(add_completion=False, no_args_is_help=True, help="Human check of the reference-in-doubt bucket.")


def register(apps: dict) -> None:
    apps["main"].add_typer(reanalyze_app, name="reanalyze")
    apps["main"].add_typer(doubt_app, name="doubt")


@reanalyze_app.command("synco")
def reanalyze_synco(as_json: bool = json_option()):
    """Re-derive the RGBC proposal's analysis of SynCo's published numbers."""
    from coevo.recipes.rgbc.reanalyze import print_reanalysis, reanalyze_synco as _re

    result = _re()
    emit(result, as_json, print_reanalysis)



@doubt_app.command("export")
def doubt_export(
    run_dir: Path = typer.Argument(..., help="Run directory of a synco/rgbc run."),
    n: int = typer.Option(200, "--n", help="Tasks to export (bucket plus blind controls)."),
    seed: int = typer.Option(0),
    as_json: bool = json_option(),
):
    """Write the reference-in-doubt bucket (mixed with controls, blind to nu) for human labelling."""
    from coevo.recipes.rgbc.doubt import DoubtError, export_doubt

    if not run_dir.is_dir():
        fail(f"run directory not found: {run_dir}")
    try:
        res = export_doubt(run_dir, n=n, seed=seed)
    except DoubtError as e:
        fail(str(e))
    emit(res, as_json)


@doubt_app.command("import")
def doubt_import(
    run_dir: Path = typer.Argument(..., help="Run directory with a doubt export."),
    labels: Path = typer.Argument(..., help="CSV with columns id, correct_answer."),
    min_precision: Optional[float] = typer.Option(None, help="Gate: precision (default rgbc.doubt_gate_precision)."),
    min_recall: Optional[float] = typer.Option(None, help="Gate: recall (default rgbc.doubt_gate_recall)."),
    as_json: bool = json_option(),
):
    """Precision/recall of the mode anchor against human labels, and the gate for the bucket."""
    from coevo.recipes.rgbc.doubt import DoubtError, import_labels

    if not run_dir.is_dir():
        fail(f"run directory not found: {run_dir}")
    try:
        res = import_labels(run_dir, labels, min_precision, min_recall)
    except DoubtError as e:
        fail(str(e))
    emit(res, as_json)
