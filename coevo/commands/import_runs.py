"""``coevo import verl|rzero|parts SRC --out RUN``: other frameworks' rollouts into a coevo run
directory that ``coevo audit`` and ``coevo report`` read (logic: coevo/integrations/importers.py;
formats and mapping: docs/verl.md). Prints one result line and, with ``--json``, the import's JSON (counts, every malformed line with
its file and line number); the same list is stored in RUN/import.json."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from coevo.cli_common import console, fail
from coevo.commands.output import emit, json_option

import_app = typer.Typer(help="Import other frameworks' rollouts (verl dumps, R-Zero results) into a coevo run "
                              "directory for `coevo audit` / `coevo report`.", no_args_is_help=True)

_OUT = typer.Option(..., "--out", help="New (or empty) run directory to create.")
_VERIFIER = typer.Option("math", "--verifier", help="coevo.verify kind judging the answers.")
_WORKERS = typer.Option(None, "--workers", min=0, help="Verifier pool workers (default: the process pool, "
                                                      "min(4, cpus); 0 = in-process, no timeouts).")
_JSON = json_option()


def _run(fn, *args, as_json: bool = False, **kwargs) -> None:
    from coevo.integrations.importers import Bad, result_line

    try:
        res = fn(*args, **kwargs)
    except (Bad, ValueError) as e:
        fail(str(e).splitlines()[0] if str(e) else type(e).__name__)
    console.print(result_line(res), highlight=False)
    if as_json:
        emit(res, as_json)


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


@import_app.command("rzero")
def import_rzero_cmd(src: Path = typer.Argument(..., help="an R-Zero *_results.json file or a directory of them."),
                     out: Path = _OUT, references: Optional[Path] = typer.Option(
                         None, "--references", help="JSON/JSONL of {question, reference|ground_truth|answer}: "
                                                    "oracle answers for the audit's bearing rate and label accuracy"),
                     delta: float = typer.Option(0.2, "--delta", min=0, max=0.5, help="kept iff |score - 1/2| <= delta "
                                                 "(0.2 = upload.py's 0.3..0.7)"),
                     verifier: str = _VERIFIER, workers: Optional[int] = _WORKERS, as_json: bool = _JSON):
    """R-Zero question-evaluation results: one round per save_name, one candidate task per question."""
    from coevo.integrations.importers import import_rzero

    _run(import_rzero, src, out, references=references, delta=delta, verifier=verifier, workers=workers,
         as_json=as_json)


@import_app.command("parts")
def import_parts_cmd(src: Path = typer.Argument(..., help="the verl adapter's ledger root ($COEVO_LEDGER)."),
                     out: Path = _OUT, as_json: bool = _JSON):
    """Merge the verl adapter's per-process ledger parts into one run directory."""
    from coevo.integrations.importers import import_parts

    _run(import_parts, src, out, as_json=as_json)


def register(apps: dict) -> None:
    apps["main"].add_typer(import_app, name="import")
