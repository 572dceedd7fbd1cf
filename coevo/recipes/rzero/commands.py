"""R-Zero's command (registered through ``RecipeInfo.commands``): ``coevo import rzero SRC --out RUN``,
R-Zero's question-evaluation results into a run directory (``coevo.recipes.rzero.importer``)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from coevo.cli_common import import_out_option, import_verifier_option, import_workers_option, json_option, run_import


def register(apps: dict) -> None:
    apps["import"].command("rzero")(import_rzero_cmd)


def import_rzero_cmd(src: Path = typer.Argument(..., help="an R-Zero *_results.json file or a directory of them."),
                     out: Path = import_out_option(), references: Optional[Path] = typer.Option(
                         None, "--references", help="JSON/JSONL of {question, reference|ground_truth|answer}: "
                                                    "oracle answers for the audit's bearing rate and label accuracy"),
                     delta: float = typer.Option(0.2, "--delta", min=0, max=0.5, help="kept iff |score - 1/2| <= delta "
                                                 "(0.2 = upload.py's 0.3..0.7)"),
                     verifier: str = import_verifier_option(), workers: Optional[int] = import_workers_option(),
                     as_json: bool = json_option()):
    """R-Zero question-evaluation results: one round per save_name, one candidate task per question."""
    from coevo.recipes.rzero.importer import import_rzero

    run_import(import_rzero, src, out, references=references, delta=delta, verifier=verifier, workers=workers,
               as_json=as_json)
