"""Ctrl-C and SIGTERM on `coevo run` (issue 31 item 4), with real signals to the run's process group as a terminal
and `timeout` send them: one line naming the step to resume from, exit 130 / 143, no traceback (the verifier pool's
fork server and workers included), no run.lock left, and `coevo run --resume` then ends where an uninterrupted run
ends (same ledger fingerprint and summary)."""
import inspect
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO, coevo_cmd, run_coevo
from fingerprint import fingerprint, summary_numbers

SMOKE = ["--budget", "smoke", "-q"]


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    ref = tmp_path_factory.mktemp("ref") / "run"
    run_coevo("run", "--out", str(ref), *SMOKE)
    return ref


def _start(run_dir: Path) -> subprocess.Popen:
    env = dict(os.environ, PYTHONUNBUFFERED="1", COLUMNS="200")
    return subprocess.Popen(coevo_cmd("run", "--out", str(run_dir), *SMOKE), cwd=REPO, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)


def _newest_state(run_dir: Path) -> int:
    d = run_dir / "state"
    return max((int(f.stem.split("-")[1]) for f in d.glob("step-*.pt")), default=-1) if d.exists() else -1


def _signal_when(p: subprocess.Popen, ready, sig: int, timeout: float = 300) -> tuple[int, str, str]:
    deadline = time.time() + timeout
    while time.time() < deadline and p.poll() is None and not ready():
        time.sleep(0.02)
    assert p.poll() is None, "the run ended before the signal"
    os.killpg(p.pid, sig)  # the whole group, as a terminal's Ctrl-C: the run, its fork server and workers
    out, err = p.communicate(timeout=120)
    return p.returncode, out, err


def _committed(run_dir: Path) -> int:
    import duckdb

    con = duckdb.connect(str(run_dir / "ledger.duckdb"), read_only=True)
    try:
        return con.execute("SELECT count(*) FROM steps").fetchone()[0]
    finally:
        con.close()


@pytest.mark.parametrize("sig,rc", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_mid_run_then_resume_equals_uninterrupted(reference, tmp_path, sig, rc):
    run_dir = tmp_path / "run"
    got, out, err = _signal_when(_start(run_dir), lambda: _newest_state(run_dir) >= 2, sig)  # steps 0, 1 committed
    assert got == rc, err
    n = _committed(run_dir)
    assert n >= 2
    assert err == f"interrupted at step {n}; resume: coevo run --resume {run_dir}\n"  # the one line, nothing else
    assert not (run_dir / "run.lock").exists() and not (run_dir / "summary.json").exists()
    p = run_coevo("run", "--resume", str(run_dir), "-q")
    assert "Traceback" not in p.stderr
    assert fingerprint(run_dir) == fingerprint(reference)
    assert summary_numbers(run_dir) == summary_numbers(reference)


@pytest.mark.parametrize("sig,rc", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_during_start_up(tmp_path, sig, rc):
    """After the run directory's config.yaml, before the first step: policies, ledger, verifier pool start."""
    run_dir = tmp_path / "run"
    got, out, err = _signal_when(_start(run_dir), lambda: (run_dir / "config.yaml").exists(), sig)
    assert got == rc, err
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    m = re.fullmatch(rf"interrupted at step (\d+); resume: coevo run --resume {re.escape(str(run_dir))}\n", err)
    assert m, err
    assert int(m.group(1)) == (_committed(run_dir) if (run_dir / "ledger.duckdb").exists() else 0)
    assert not (run_dir / "run.lock").exists()


def test_signal_while_coevo_imports(tmp_path):
    """Before any run directory: one line, nothing written."""
    p = subprocess.Popen(coevo_cmd("run", "--out", str(tmp_path / "run"), *SMOKE), cwd=REPO, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                         env=dict(os.environ, PYTHONUNBUFFERED="1"))
    time.sleep(0.6)  # the interpreter is up and importing (coevo, typer, torch)
    os.killpg(p.pid, signal.SIGTERM)
    out, err = p.communicate(timeout=60)
    assert p.returncode == 143, err
    if err.startswith("interrupted at step"):  # a loaded machine was past its imports: then a resumable run
        assert re.fullmatch(rf"interrupted at step \d+; resume: coevo run --resume {re.escape(str(tmp_path / 'run'))}\n",
                            err), err
        assert (tmp_path / "run" / "config.yaml").exists() and not (tmp_path / "run" / "run.lock").exists()
        return
    assert err in ("interrupted before the command started; nothing was written\n",
                   "interrupted before the run started; nothing was written\n"), err
    assert not (tmp_path / "run").exists()


def test_an_error_a_signal_causes_is_the_interruption(monkeypatch):
    """Raised inside a C extension or an import, Interrupted can come out as another error (safetensors' ValueError,
    a half-imported module's RecursionError, both seen under load): after a signal, that error is the interruption;
    a swallowed Interrupted stops the run at the next step boundary (``check``)."""
    from coevo import interrupt

    monkeypatch.setitem(interrupt._state, "signalled", None)
    assert interrupt.interruption(ValueError("x")) is None
    interrupt.check()  # no signal: nothing
    monkeypatch.setitem(interrupt._state, "signalled", signal.SIGTERM)
    got = interrupt.interruption(ValueError("could not determine the shape"))
    assert isinstance(got, interrupt.Interrupted) and got.exit_code == 143
    with pytest.raises(interrupt.Interrupted):
        interrupt.check()


def deaf_to(pid: int) -> set:
    """The signals of SIGINT / SIGTERM that never reach process ``pid``: ignored (SigIgn) or blocked (SigBlk)."""
    masks = {k: int(v.split()[0], 16) for k, v in (x.split(":", 1) for x in Path(f"/proc/{pid}/status").read_text()
                                                  .splitlines() if x.startswith(("SigIgn:", "SigBlk:")))}
    mask = masks["SigIgn"] | masks["SigBlk"]
    return {s for s in (signal.SIGINT, signal.SIGTERM) if mask >> (s - 1) & 1}


def test_verifier_pool_children_ignore_the_signals():
    """The fork server (it imports sympy / math-verify for seconds) and its workers ignore SIGINT and SIGTERM: a
    Ctrl-C to the group prints no traceback from them; the pool's owner stops them."""
    from multiprocessing import forkserver

    from coevo.verify.pool import VerifierPool

    with VerifierPool(workers=1, timeout_s=30) as pool:
        assert pool.map(abs, [-1, 2]) == [1, 2]
        assert deaf_to(pool._workers[0].proc.pid) == {signal.SIGINT, signal.SIGTERM}
        assert deaf_to(forkserver._forkserver._forkserver_pid) == {signal.SIGINT, signal.SIGTERM}
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # this process: unchanged


POOL_FROM_A_THREAD = """
import json, signal, threading
from multiprocessing import forkserver
from pathlib import Path
from coevo.verify.pool import VerifierPool
out = {}
def run():
    with VerifierPool(workers=1, timeout_s=30) as pool:
        out["map"] = pool.map(abs, [-1, 2])
        out["worker"] = sorted(int(s) for s in deaf_to(pool._workers[0].proc.pid))
        out["server"] = sorted(int(s) for s in deaf_to(forkserver._forkserver._forkserver_pid))
t = threading.Thread(target=run)
t.start()
t.join()
print(json.dumps({**out, "handler": signal.getsignal(signal.SIGINT) is signal.default_int_handler}))
"""


def test_pool_started_from_a_thread_children_still_deaf(tmp_path):
    """A fresh process whose first pool starts in a thread (a served verifier, a framework's reward thread), where
    the owner cannot change a disposition: the fork server ignores the two signals itself, in its first preload
    module (coevo.verify.forkserver_quiet), and so its worker. CI failure at 627bda2: started from a thread, the fork
    server kept SIGTERM, and every later pool of that process with it."""
    script = inspect.getsource(deaf_to) + POOL_FROM_A_THREAD
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-2000:]
    got = json.loads(p.stdout.strip().splitlines()[-1])
    both = sorted([int(signal.SIGINT), int(signal.SIGTERM)])
    assert got["map"] == [1, 2] and got["worker"] == both and got["server"] == both and got["handler"]

