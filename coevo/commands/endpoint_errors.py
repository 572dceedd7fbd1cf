"""The error count every command that reaches an endpoint prints the same way (coevo.core.endpoints):
``--max-error-rate``, a warning for some failed calls, one line and exit 2 above the threshold."""
from __future__ import annotations

import typer

from coevo.cli_common import console, fail
from coevo.core.endpoints import partial_warning, rate_exceeded

MAX_ERROR_RATE_HELP = ("Exit 2 when more than this share of the calls to a model server, judge or retriever "
                       "failed after retries (default 0: any failed call). Failed calls are errors, never "
                       "wrong or abstained answers.")


def max_error_rate_option():
    return typer.Option(0.0, "--max-error-rate", min=0.0, max=1.0, help=MAX_ERROR_RATE_HELP)


def check_errors(n_errors: int, n_calls: int, what: str, max_rate: float, cause: str = "") -> None:
    """After the result is printed: nothing when no call failed; a warning on stderr with the count when
    the share is within ``max_rate``; else one line naming the count and the first cause, exit 2."""
    if n_errors <= 0:
        return
    over = rate_exceeded(n_errors, n_calls, max_rate)
    if over:
        fail(f"{what}: {over}" + (f"; first: {cause}" if cause else ""))
    console.print(partial_warning(n_errors, n_calls, what, cause), highlight=False, soft_wrap=True, markup=False)
