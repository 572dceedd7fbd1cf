"""`coevo compare RUN... [--json] [--html OUT]`: runs side by side, grouped into arms (coevo.audit.compare)."""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from coevo.cli_common import console, fail
from coevo.commands.output import emit, json_option


def compare(
    run_dirs: List[Path] = typer.Argument(..., help="Run directories (arms and seeds)."),
    as_json: bool = json_option(),
    html: Optional[Path] = typer.Option(None, "--html", help="Also write an HTML page with plots to this file."),
):
    """Runs side by side: summary numbers and audit instruments with intervals; per arm (configs that differ
    only in seed) the mean and the seed-to-seed range."""
    from coevo.audit.compare import compare_runs, print_compare
    from coevo.audit.run_audit import AuditError
    from coevo.ledger.store import LedgerError

    try:
        result = compare_runs(run_dirs)
    except (AuditError, LedgerError) as e:
        fail(str(e).splitlines()[0] if str(e) else repr(e))
    if html is not None:
        from coevo.report.compare import write_compare_html

        try:
            write_compare_html(result, html)
        except OSError as e:
            fail(f"cannot write {html}: {e.strerror or e}")
    emit(result, as_json, print_compare)
    if html is not None:
        console.print(f"wrote {html}")


def register(apps: dict) -> None:
    apps["main"].command("compare")(compare)
