"""``coevo worker`` (hidden): one warm process per experiment job.  It imports coevo, torch and the built-in
recipes once, then serves run requests from stdin (one JSON line each: ``{"argv": [...], "log": path}``) by
forking a child that runs ``coevo <argv>`` with its output in ``log``, and answers one JSON line
``{"rc", "cpu_s"}`` when the child ends.  What a fresh ``python -m coevo run`` pays per run (interpreter
start, imports: ~3-5 s on 2 cores) is paid once per job (``coevo.experiments.rundirs.WarmWorker``).

The children are forked in this process group (a kill -9 of the experiment's group takes them along); each
child is a normal ``coevo run``: it seeds everything from its config, so a forked run writes the same run
directory as a fresh process (tests/test_experiment_engine.py pins that)."""
from __future__ import annotations

import json
import os
import sys

import typer


def register(apps: dict) -> None:
    apps["main"].command("worker", hidden=True)(worker)


def worker(ctx: typer.Context) -> None:
    """Serve run requests on stdin (used by ``coevo experiment``; not for people)."""
    root = ctx.find_root().command
    die_with_parent()
    warm_up()
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        rc, cpu = fork_run(root, list(req["argv"]), req["log"])
        sys.stdout.write(json.dumps({"rc": rc, "cpu_s": cpu}) + "\n")
        sys.stdout.flush()


def die_with_parent() -> None:
    """Linux: SIGKILL this process when the thread that started it ends (the experiment's job thread, or the
    experiment itself killed), so no worker or run outlives its experiment; elsewhere a no-op."""
    import ctypes
    import signal

    parent = os.getppid()
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def warm_up() -> None:
    """Import what every run imports: torch, numpy, duckdb, the runner and each built-in recipe's modules.
    Starts no thread (torch's pools start on first use, in the child)."""
    import coevo.ledger.store  # noqa: F401 (duckdb, first as before)
    import numpy  # noqa: F401
    import torch  # noqa: F401

    import coevo.runner  # noqa: F401
    from coevo.core.registry import installed_recipes

    installed_recipes()


def fork_run(root, argv: list, log: str) -> tuple:
    """Fork; the child runs the CLI group ``root`` on ``argv`` with stdout / stderr appended to ``log``; returns
    the child's exit status and its user + system CPU seconds."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        code = 1
        try:
            die_with_parent()
            fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            os.environ.update(PYTHONUNBUFFERED="1", COLUMNS="200")
            sys.stdin = open(os.devnull)
            root.main(args=argv, prog_name="coevo", standalone_mode=True)
            code = 0
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except BaseException:  # noqa: BLE001 - the child reports and exits; the worker goes on
            import traceback

            traceback.print_exc()
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)
    _, status, ru = os.wait4(pid, 0)
    return os.waitstatus_to_exitcode(status), float(ru.ru_utime + ru.ru_stime)
