"""What every command module shares: the one-line error, JSON output, the stderr console.

Kept apart from ``coevo.cli`` so command modules (``coevo/commands/*.py``) can use it without
importing the CLI that imports them."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Callable, Optional

import typer
from rich.console import Console

console = Console(stderr=True)
_IMPORTED_AT = time.time()


class UserError(Exception):
    """An error the user can fix; printed as one line, exit status 2."""


def say_error(msg: str) -> None:
    """``error: msg`` on stderr, one line however long (a log, a pipe: no wrap at 80 columns)."""
    from rich.markup import escape

    text = " ".join(str(msg).split())  # one line: a message with newlines (a parser's, a library's) is joined
    console.print(f"[bold red]error:[/] {escape(text)}", highlight=False, soft_wrap=True)  # plain text, never markup


def fail(msg: str) -> None:
    say_error(msg)
    raise typer.Exit(2)


_said_interrupted = False


def run_app(call, *args, **kwargs):
    """Run the ``coevo`` app (``call``: Typer's own ``__call__``) and exit with its status, as click's standalone
    mode does, except that a usage error (unknown option, bad value, missing argument) is one line and exit 2, and
    a Ctrl-C is one line and exit 130."""
    try:
        from typer._click import exceptions as cx  # typer 0.2x carries its own click
    except ImportError:  # pragma: no cover - older typer: click itself
        from click import exceptions as cx

    from coevo import interrupt

    interrupt.default_signals()  # the start-up's handler ends here (``coevo run`` installs its own)
    kwargs["standalone_mode"] = False
    try:
        rc = call(*args, **kwargs)
    except getattr(cx, "NoArgsIsHelpError", ()) as e:  # `coevo`, `coevo bench`: the help, already printed
        rc = e.exit_code
    except cx.ClickException as e:
        ctx = getattr(e, "ctx", None)
        say_error(e.format_message() + (f" (`{ctx.command_path} -h` for help)" if ctx is not None else ""))
        rc = 2 if isinstance(e, cx.UsageError) else e.exit_code
    except (typer.Abort, getattr(cx, "Abort", typer.Abort)):  # end of input at a prompt
        say_error("aborted")
        rc = 1
    if rc == 130 and not _said_interrupted:  # typer's exit for a KeyboardInterrupt: nothing said yet
        sys.stderr.write("interrupted\n")
    sys.exit(rc if isinstance(rc, int) else 0)


def interrupted(e, resume=None) -> None:
    """``coevo run`` stopped by SIGINT / SIGTERM (``coevo.interrupt.Interrupted``): one line on stderr, exit 130 / 143."""
    run_dir = e.run_dir or resume
    if run_dir is None:
        msg = "interrupted before the run started; nothing was written"
    else:
        at = "" if e.run_dir is None or e.step is None else f" at step {e.step}"
        msg = f"interrupted{at}; resume: coevo run --resume {run_dir}"
    global _said_interrupted
    _said_interrupted = True
    sys.stderr.write(msg + "\n")
    sys.stderr.flush()
    raise typer.Exit(e.exit_code)


def check_out_file(path, what: str = "--out") -> None:
    """A file a command will write, checked before any work: not a directory, not under a file."""
    if path is None:
        return
    p = Path(path)
    if p.is_dir():
        raise UserError(f"{what} {p} is a directory; give a file name")
    _check_parents(p, what)


def check_out_dir(path, what: str = "--out") -> None:
    """A directory a command will create or fill, checked before any work: not a file, not under a file."""
    if path is None:
        return
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise UserError(f"{what} {p} is a file; give a directory")
    _check_parents(p, what)


def _check_parents(p: Path, what: str) -> None:
    for parent in p.parents:
        if parent.exists():
            if not parent.is_dir():
                raise UserError(f"{what} {p}: {parent} is a file, not a directory")
            return


def emit_json(obj) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, default=float) + "\n")


def process_wall() -> float:
    """Seconds since this process started (imports included: what a user waits); Linux /proc, else since import."""
    import os

    try:
        with open("/proc/self/stat") as f:
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as f:
            return float(f.read().split()[0]) - ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return time.time() - _IMPORTED_AT


API_KEY_ENV_HELP = "With --server: the environment variable holding the servers' bearer token (never the key)."


def solver_policy(model: str, device: str, server, checkpoint=None, command: str = "coevo eval",
                  api_key_env: str = "OPENAI_API_KEY", timeout_s: float = 300.0):
    """The solver policy the evaluation commands use (`eval`, `eval-qa`, `certify`): an HF model with a
    LoRA role, or OpenAI-compatible ``server``s (bearer token from the variable ``api_key_env``);
    ``checkpoint``: a role checkpoint to load; ``timeout_s``: per server request. Bad input -> ``UserError``."""
    from pathlib import Path

    try:
        from coevo.backends.roles import make_role_policies
    except ImportError as e:
        raise UserError(f"the hf extra is needed for `{command}` (pip install -e '.[hf]'): {e}") from None
    cfg = {"model": model, "roles": ["solver"], "mode": "lora", "device": device, "lora": {"r": 16, "alpha": 32}}
    if server:
        import atexit
        import shutil
        import tempfile

        # the frozen solver's LoRA adapter for the server: a temp dir removed at exit, not the user's cwd
        adapters = tempfile.mkdtemp(prefix="coevo-eval-adapters-")
        atexit.register(shutil.rmtree, adapters, True)
        cfg.update(backend="openai", servers=list(server), api_key_env=api_key_env, adapter_dir=adapters,
                   timeout_s=float(timeout_s))
    try:
        pol = make_role_policies(cfg)["solver"]
    except ValueError as e:  # RoleConfigError included: a literal key, an unknown model
        raise UserError(str(e)) from None
    if checkpoint is not None:
        if not Path(checkpoint).exists():
            raise UserError(f"checkpoint not found: {checkpoint}")
        pol.load(str(checkpoint))
    return pol


# ---------------------------------------------------------------------- one convention for results
# Every command that can print JSON takes ``--json/--no-json``, off by default.  With ``--json`` stdout
# holds exactly one JSON object (progress and notes go to the stderr console); without it the command
# prints a readable summary: its own table where it has one, else ``key: value`` lines (``print_summary``).
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


# `coevo import <source> SRC --out RUN`: the options every importer shares (coevo/commands/import_runs.py
# and the importers the recipe folders register) and the one way they print their result
IMPORT_OUT_HELP = "New (or empty) run directory to create."
IMPORT_VERIFIER_HELP = "coevo.verify kind judging the answers."
IMPORT_WORKERS_HELP = "Verifier pool workers (default: the process pool, min(4, cpus); 0 = in-process, no timeouts)."


def import_out_option():
    return typer.Option(..., "--out", help=IMPORT_OUT_HELP)


def import_verifier_option():
    return typer.Option("math", "--verifier", help=IMPORT_VERIFIER_HELP)


def import_workers_option():
    return typer.Option(None, "--workers", min=0, help=IMPORT_WORKERS_HELP)


def run_import(fn, *args, as_json: bool = False, **kwargs) -> None:
    """Run an importer: its result line, and with ``--json`` its JSON; a bad input is one line, exit 2."""
    from coevo.ledger.imported import Bad, result_line

    try:
        res = fn(*args, **kwargs)
    except (Bad, ValueError) as e:
        fail(str(e).splitlines()[0] if str(e) else type(e).__name__)
    console.print(result_line(res), highlight=False)
    if as_json:
        emit(res, as_json)


# ---------------------------------------------------------------------- failed endpoint calls (coevo.core.verdict)
# the error count every command that reaches an endpoint prints the same way (coevo/commands/*.py and the
# recipe folders' commands): ``--max-error-rate``, a warning for some failed calls, one line and exit 2 above it
MAX_ERROR_RATE_HELP = ("Exit 2 when more than this share of the calls to a model server, judge or retriever "
                       "failed after retries (default 0: any failed call). Failed calls are errors, never "
                       "wrong or abstained answers.")


def max_error_rate_option():
    return typer.Option(0.0, "--max-error-rate", min=0.0, max=1.0, help=MAX_ERROR_RATE_HELP)


def check_errors(n_errors: int, n_calls: int, what: str, max_rate: float, cause: str = "") -> None:
    """After the result is printed: nothing when no call failed; a warning on stderr with the count when
    the share is within ``max_rate``; else one line naming the count and the first cause, exit 2."""
    from coevo.core.verdict import partial_warning, rate_exceeded

    if n_errors <= 0:
        return
    over = rate_exceeded(n_errors, n_calls, max_rate)
    if over:
        fail(f"{what}: {over}" + (f"; first: {cause}" if cause else ""))
    console.print(partial_warning(n_errors, n_calls, what, cause), highlight=False, soft_wrap=True, markup=False)
