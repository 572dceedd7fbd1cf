"""``coevo serve-env``: the math or facts world as an OpenEnv environment server, with NeMo Gym's ``/verify`` on
the same server (coevo/integrations/openenv.py; docs/integrations.md, "OpenEnv")."""
from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Optional

import typer

from coevo.cli_common import console, fail


class WorldChoice(str, Enum):
    """``serve-env --world``: the worlds ``coevo.integrations.served.WORLDS`` serves."""
    math = "math"
    facts = "facts"


def serve_env(
    world: WorldChoice = typer.Option("math", "--world", help="math: the shipped reference set (or --tasks); facts: "
                                      "the facts world's oracle-answered chains (--seed)."),
    host: str = typer.Option("127.0.0.1", help="Bind address."),
    port: int = typer.Option(8000, min=0, max=65535, help="Port (0 = any free one)."),
    ledger: Optional[Path] = typer.Option(None, "--ledger", help="Ledger parts directory (coevo import parts DIR "
                                          "--out RUN); default: no ledger."),
    tasks: Optional[Path] = typer.Option(None, "--tasks", help="math: a JSONL of question/answer rows instead of "
                                         "the shipped sample."),
    seed: int = typer.Option(0, help="facts: the world's seed."),
    verifier: Optional[str] = typer.Option(None, help="A coevo verifier kind (default: the world's, math / em)."),
    raw: bool = typer.Option(False, "--raw", help="Judge the action's text as is (no \\boxed{} / <answer> extraction)."),
    abstain: Optional[float] = typer.Option(None, help="The reward of an abstention (default: none, reward null; "
                                            "/verify gives 0.0 with mask_sample true)."),
    timeout_s: Optional[float] = typer.Option(None, "--timeout-s", help="Seconds per verifier check (default: the pool's)."),
    verify_workers: Optional[int] = typer.Option(None, min=0, help="Verifier pool workers (default: the shared pool)."),
    max_sessions: int = typer.Option(64, min=1, help="Concurrent WebSocket sessions."),
    max_seconds: Optional[float] = typer.Option(None, help="Stop after this many seconds (default: until Ctrl-C)."),
):
    """Serve a world over OpenEnv's HTTP/WebSocket protocol (reset -> a question, step(answer) -> reward, done)
    and NeMo Gym's POST /verify; the oracle truth goes to the ledger, never to the agent."""
    try:
        import openenv.core.env_server  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as e:
        fail(f"`coevo serve-env` needs openenv-core (pip install 'coevo[openenv]'; bash .ci/openenv.sh --build): {e}")
    if tasks is not None and world != WorldChoice.math:
        fail("--tasks is for --world math only")
    if timeout_s is not None and timeout_s <= 0:
        fail(f"--timeout-s must be > 0, got {timeout_s}")
    from coevo.integrations.openenv import serve
    from coevo.integrations.served import ServedWorld
    from coevo.runlock import RunLockError
    from coevo.verify.verifiers import KINDS

    if verifier is not None and verifier not in KINDS:
        fail(f"--verifier must be one of {', '.join(sorted(KINDS))}, got {verifier!r}")
    try:
        served = ServedWorld(world.value, str(tasks) if tasks else None, seed, verifier, "raw" if raw else None,
                             abstain, str(ledger) if ledger else None, verify_workers, timeout_s)
        info = serve(served, host, port, max_seconds, max_sessions)
    except (ValueError, OSError, RunLockError) as e:
        fail(str(e))
    console.print(f"stopped after {info['served_s']} s, {info['scored']} answers scored")


def register(apps: dict) -> None:
    apps["main"].command("serve-env")(serve_env)
