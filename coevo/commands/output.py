"""One CLI convention for results: every command that can print JSON takes ``--json/--no-json``,
off by default.  With ``--json`` stdout holds exactly one JSON object (progress and notes go to
the stderr console); without it the command prints a readable summary: its own table where it
has one, else the result's scalar fields as ``key: value`` lines (``print_summary``)."""
from __future__ import annotations

from typing import Callable, Optional

import typer

from coevo.cli_common import emit_json

JSON_HELP = "Print the result as one JSON object on stdout (default: a readable summary)."


def json_option():
    """The ``--json/--no-json`` option, off by default (``--no-json`` kept for old scripts)."""
    return typer.Option(False, "--json/--no-json", help=JSON_HELP)


def _lines(obj, prefix: str = "", depth: int = 0) -> list[str]:
    out = []
    for k, v in obj.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            if depth < 1 and v:
                out.extend(_lines(v, f"{key}.", depth + 1))
            else:
                out.append(f"{key}: {{{len(v)} keys}}")
        elif isinstance(v, (list, tuple)):
            small = len(v) <= 6 and all(isinstance(x, (str, int, float, bool)) or x is None for x in v)
            out.append(f"{key}: {', '.join(map(str, v)) if small else f'[{len(v)} items]'}")
        elif isinstance(v, float):
            out.append(f"{key}: {v:.4g}")
        else:
            out.append(f"{key}: {v}")
    return out


def print_summary(obj) -> None:
    """A result as ``key: value`` lines (nested dicts one level deep, long lists counted)."""
    if not isinstance(obj, dict):
        print(obj)
        return
    print("\n".join(_lines(obj)))


def emit(result, as_json: bool, render: Optional[Callable] = None) -> None:
    """JSON with ``--json``; else ``render(result)``, or ``print_summary``."""
    if as_json:
        emit_json(result)
    elif render is not None:
        render(result)
    else:
        print_summary(result)
