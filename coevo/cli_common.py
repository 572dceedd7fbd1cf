"""What every command module shares: the one-line error, JSON output, the stderr console.

Kept apart from ``coevo.cli`` so command modules (``coevo/commands/*.py``) can use it without
importing the CLI that imports them."""
from __future__ import annotations

import json
import sys

import typer
from rich.console import Console

console = Console(stderr=True)


class UserError(Exception):
    """An error the user can fix; printed as one line, exit status 2."""


def fail(msg: str) -> None:
    from rich.markup import escape

    console.print(f"[bold red]error:[/] {escape(str(msg))}", highlight=False)  # msg is plain text, never markup
    raise typer.Exit(2)


def emit_json(obj) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, default=float) + "\n")
