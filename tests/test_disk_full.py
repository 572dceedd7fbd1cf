"""A run directory on a filesystem that fills up mid-run, or turns read-only: one line, exit 2,
the path and the free space named; `--resume` after freeing space ends as an uninterrupted run.

Needs a tmpfs mount (root or CAP_SYS_ADMIN). Without one the tests skip with the reason, or fail
when COEVO_REQUIRE_MOUNT=1 or COEVO_REQUIRE_ALL=1 (CI runs as root).
"""
import errno
import os
import signal
import subprocess
import threading
import time

import pytest

from conftest import REPO, coevo_cmd, run_coevo, skip_or_fail, tiny_run_args
from fingerprint import fingerprint, summary_numbers

TABLES = ("steps", "tasks", "rollouts", "verdicts", "rewards", "updates", "evals", "task_stats")

ARGS = ("--set", "verify.workers=1", "--set", "rzero.solver_steps=3")


@pytest.fixture
def tmpfs(tmp_path):
    d = tmp_path / "mnt"
    d.mkdir()
    try:
        p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=200m", "tmpfs", str(d)], capture_output=True, text=True)
        said = (p.stderr or p.stdout).strip()
    except FileNotFoundError:
        p, said = None, "no mount command"
    if p is None or p.returncode != 0:
        why = f"cannot mount a tmpfs (needs root or CAP_SYS_ADMIN): {said}"
        skip_or_fail(why, "COEVO_REQUIRE_MOUNT")
    try:
        yield d
    finally:
        if subprocess.run(["umount", str(d)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(d)], capture_output=True)


def _mount(d, opts: str) -> None:
    subprocess.run(["mount", "-o", f"remount,{opts}", str(d)], check=True, capture_output=True)


class Filler(threading.Thread):
    """Keeps the filesystem full: appends to one file whenever there is room, until stopped."""

    def __init__(self, path):
        super().__init__(daemon=True)
        self.path, self.stop, self.full = path, threading.Event(), threading.Event()

    def run(self):
        chunk = b"\0" * 65536
        with open(self.path, "wb", buffering=0) as f:
            while not self.stop.is_set():
                try:
                    f.write(chunk)
                except OSError as e:
                    assert e.errno == errno.ENOSPC
                    self.full.set()
                    time.sleep(0.005)
                    chunk = b"\0" * 4096  # smaller bites take what the run frees


def ledger_counts(d) -> dict:
    import duckdb

    con = duckdb.connect(str(d / "ledger.duckdb"), read_only=True)
    try:
        return {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}
    finally:
        con.close()


def _completed_steps(d) -> int:
    sd = d / "state"
    names = [f.name for f in sd.iterdir()] if sd.exists() else []
    return max((int(n.split("-")[1].split(".")[0]) for n in names if n.startswith("step-") and n.endswith(".pt")),
               default=-1)


def test_disk_full_mid_run_then_resume(tmpfs, tiny_ckpts, tmp_path):
    args = tiny_run_args(tiny_ckpts, *ARGS)
    ref = tmp_path / "ref"
    run_coevo("run", "--out", str(ref), *args)
    run_dir = tmpfs / "run"
    env = dict(os.environ, PYTHONUNBUFFERED="1", COLUMNS="400")
    p = subprocess.Popen(coevo_cmd("run", "--out", str(run_dir), *args), cwd=REPO, env=env, text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    filler = Filler(tmpfs / "filler")
    deadline = time.monotonic() + 300
    while p.poll() is None and _completed_steps(run_dir) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    # pause the run, fill the disk, then let it go on: from here on every write finds the disk full
    # (without the pause a fast run can finish before the filler has taken the space)
    os.kill(p.pid, signal.SIGSTOP)
    filler.start()
    try:
        assert filler.full.wait(120), "the filler could not fill the tmpfs"
    finally:
        os.kill(p.pid, signal.SIGCONT)
    try:
        _, err = p.communicate(timeout=300)
    finally:
        filler.stop.set()
        filler.join()
    assert filler.full.is_set()
    assert p.returncode == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert "no space left on device: cannot write to " in lines[0] and str(run_dir) in lines[0]
    assert "(free now: " in lines[0] and "--resume" in lines[0]
    assert not (run_dir / "summary.json").exists()
    assert not (run_dir / "run.lock").exists()  # released on the error too
    (tmpfs / "filler").unlink()  # space freed
    run_coevo("run", "--resume", str(run_dir), "-q")
    assert summary_numbers(run_dir) == summary_numbers(ref)
    assert ledger_counts(run_dir) == ledger_counts(ref)
    assert fingerprint(run_dir) == fingerprint(ref)


def test_tiny_filesystem_then_grown(tmpfs, tiny_ckpts, tmp_path):
    """The issue's case: a 3 MB filesystem, grown to 200 MB, then --resume."""
    args = tiny_run_args(tiny_ckpts, *ARGS)
    ref = tmp_path / "ref"
    run_coevo("run", "--out", str(ref), *args)
    _mount(tmpfs, "size=3m")
    run_dir = tmpfs / "run"
    p = run_coevo("run", "--out", str(run_dir), *args, check=False, env={"COLUMNS": "400"})
    assert p.returncode == 2, p.stderr
    assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr
    assert f"no space left on device: cannot write to {run_dir}" in p.stderr and "MiB" in p.stderr
    _mount(tmpfs, "size=200m")
    run_coevo("run", "--resume", str(run_dir), "-q")
    assert summary_numbers(run_dir) == summary_numbers(ref)
    assert ledger_counts(run_dir) == ledger_counts(ref)
    assert fingerprint(run_dir) == fingerprint(ref)


def test_read_only_filesystem(tmpfs, tiny_ckpts):
    run_dir = tmpfs / "run"
    (run_dir).mkdir()
    (run_dir / "config.yaml").write_text("recipe: rzero\n")
    _mount(tmpfs, "ro")
    try:
        p = run_coevo("run", "--resume", str(run_dir), "-q", check=False, env={"COLUMNS": "400"})
        assert p.returncode == 2 and "Traceback" not in p.stderr
        assert len(p.stderr.strip().splitlines()) == 1
        assert f"read-only file system: cannot write to {run_dir}" in p.stderr
        p = run_coevo("run", "--out", str(tmpfs / "new"), *tiny_run_args(tiny_ckpts), check=False,
                      env={"COLUMNS": "400"})
        assert p.returncode == 2 and f"read-only file system: cannot write to {tmpfs / 'new'}" in p.stderr
    finally:
        _mount(tmpfs, "rw")


def test_ledger_commit_on_full_disk(tmpfs):
    """The step transaction on a full disk: a real DuckDB error, recognised as disk trouble; the
    failed step leaves nothing, the committed one stays (after space is freed)."""
    from coevo.ledger.store import Ledger
    from coevo.runlock import disk_trouble

    _mount(tmpfs, "size=3m")
    led = Ledger(tmpfs / "ledger.duckdb")
    with led.step("r", 0, 0, "eval", 0) as w:
        w.add("rollouts", [{"run_id": "r", "rollout_id": "a", "text": "x"}])
    big = [{"run_id": "r", "rollout_id": f"b{i}", "text": os.urandom(2000).hex()} for i in range(4000)]
    with pytest.raises(Exception) as e:
        with led.step("r", 1, 1, "solver", 0) as w:
            w.add("rollouts", big)
    msg = disk_trouble(e.value, tmpfs)
    assert msg is not None and msg.startswith(f"no space left on device: cannot write to {tmpfs} (free now: "), \
        repr(e.value)
    led.close()
    _mount(tmpfs, "size=200m")
    led = Ledger(tmpfs / "ledger.duckdb", read_only=True)
    try:
        assert led.last_completed_step("r") == 0
        assert led.count("rollouts") == 1
    finally:
        led.close()
