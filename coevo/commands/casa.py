"""`coevo casa predictions RUN... [--stress FILE]`: the CASA proposal's CASA-P1..P4 alone, with the stress JSON
of `coevo stress` for P4 (`coevo audit --predictions` evaluates the same rows next to the RGBC proposal's, reading
a run directory's stress.json for P4)."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from coevo.cli_common import fail
from coevo.commands.output import emit, json_option


def register(apps: dict) -> None:
    casa_app = typer.Typer(help="CASA (CASA proposal): criterion-set accounting of criteria runs.", no_args_is_help=True)
    apps["main"].add_typer(casa_app, name="casa")

    @casa_app.command("predictions")
    def predictions_cmd(
        run_dirs: List[Path] = typer.Argument(..., help="Run directories whose ledgers hold criterion_scores."),
        stress: Optional[Path] = typer.Option(None, "--stress", help="JSON written by `coevo stress` (CASA-P4)."),
        as_json: bool = json_option(),
    ):
        """Evaluate CASA-P1..P4 (docs/casa.md) on the runs given."""
        from coevo.recipes.vgopd.predictions import evaluate_casa_predictions
        from coevo.audit.data import AuditError
        from coevo.audit.predictions import print_predictions

        for d in run_dirs:
            if not d.is_dir():
                fail(f"run directory not found: {d}")
        if stress is not None and not stress.is_file():
            fail(f"stress results not found: {stress}")
        try:
            preds = evaluate_casa_predictions(run_dirs, stress)
        except AuditError as e:
            fail(str(e))
        if not preds:
            fail("no run given has criterion_scores rows (not a CASA run)")
        emit(preds, as_json, print_predictions)
