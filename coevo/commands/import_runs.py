"""``coevo import verl|parts SRC --out RUN``, and the importers the recipe folders register
(``RecipeInfo.commands``: R-Zero's ``coevo import rzero``): other frameworks' rollouts into a coevo
run directory that ``coevo audit`` and ``coevo report`` read (logic: coevo/integrations/importers.py;
formats and mapping: docs/verl.md). Prints one result line and, with ``--json``, the import's JSON (counts, every malformed line with
its file and line number); the same list is stored in RUN/import.json."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from coevo.cli_common import import_out_option, import_verifier_option, import_workers_option, run_import
from coevo.commands.output import json_option

import_app = typer.Typer(help="Import other frameworks' rollouts (verl dumps, R-Zero results) into a coevo run "
                              "directory for `coevo audit` / `coevo report`.", no_args_is_help=True)

_OUT = import_out_option()
_VERIFIER = import_verifier_option()
_WORKERS = import_workers_option()
_JSON = json_option()
_run = run_import


@import_app.command("verl")
def import_verl_cmd(src: Path = typer.Argument(..., help="verl's trainer.rollout_data_dir ({step}.jsonl files)."),
                    out: Path = _OUT, verifier: str = _VERIFIER, workers: Optional[int] = _WORKERS,
                    extract: str = typer.Option("auto", "--extract", help="answer extraction: auto | boxed | gsm8k | raw"),
                    gts: str = typer.Option("oracle", "--gts", help="what `gts` is: oracle (a dataset reference) or "
                                                                     "pseudo_label (e.g. R-Zero's majority labels)"),
                    as_json: bool = _JSON):
    """A verl rollout dump: one task per prompt and step, one Solver rollout per line, judged against gts."""
    from coevo.integrations.importers import import_verl

    _run(import_verl, src, out, verifier=verifier, workers=workers, extract=extract, gts=gts, as_json=as_json)


@import_app.command("parts")
def import_parts_cmd(src: Path = typer.Argument(..., help="the verl adapter's ledger root ($COEVO_LEDGER)."),
                     out: Path = _OUT, as_json: bool = _JSON):
    """Merge the verl adapter's per-process ledger parts into one run directory."""
    from coevo.integrations.importers import import_parts

    _run(import_parts, src, out, as_json=as_json)


def register(apps: dict) -> None:
    apps["main"].add_typer(import_app, name="import")
    apps["import"] = import_app  # a recipe folder adds its own importer (R-Zero: coevo/recipes/rzero/commands.py)
