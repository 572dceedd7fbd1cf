"""Reading a run while it writes (coevo/ledger/live.py): audit and report read the last committed step.

The real CLI in subprocesses: a smoke run is stopped (SIGSTOP, between two commits) after its first
steps, `coevo audit` and `coevo report` read it, then it goes on; its final ledger equals that of an
uninterrupted run with the same seed.
"""
import fcntl
import json
import os
import signal
import subprocess
import sys
import textwrap
import time

from conftest import REPO, coevo_cmd, run_coevo
from fingerprint import fingerprint

from coevo.ledger.store import open_run_ledger

SMOKE = ["--budget", "smoke", "-q", "--no-report"]

WRITER = textwrap.dedent("""
    import sys, time
    from coevo.ledger.store import Ledger
    led = Ledger(sys.argv[1] + "/ledger.duckdb")
    print("ready", flush=True)
    for s in range(int(sys.argv[2])):
        time.sleep(0.005)  # the step's own work
        with led.step("r", s, 0, "solver", s) as w:
            w.add("updates", [{"run_id": "r", "step": s, "role": "solver", "n_sequences": k,
                               "metrics_json": "x" * 200} for k in range(100)])
    led.close()
""")


def test_a_reader_sees_whole_steps_while_the_writer_commits(tmp_path):
    """Every copy a reader takes holds whole steps (100 rows each) and the steps only go forward."""
    p = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), "120"], stdout=subprocess.PIPE, text=True,
                         cwd=REPO)
    assert p.stdout.readline().strip() == "ready"
    seen = []
    while p.poll() is None:
        led = open_run_ledger(tmp_path)  # no run.lock here: DuckDB's own lock tells that it is live
        try:
            n_steps, n_rows, last = led.count("steps"), led.count("updates"), led.last_committed()
            seen.append((last, led.live))
        finally:
            led.close()
        assert n_rows == 100 * n_steps and n_steps == last + 1
    assert p.wait() == 0
    lives = [(k, live) for k, live in seen if live is not None]
    assert lives, "the writer finished before any read"
    assert all(live["pid"] == p.pid and live["step"] == k for k, live in lives)
    steps = [k for k, _ in seen]
    assert steps == sorted(steps)
    assert not list(tmp_path.glob("*.tmp*")) and sorted(f.name for f in tmp_path.iterdir()) == ["ledger.duckdb"]


def _stop_between_commits(p: subprocess.Popen, run_dir) -> None:
    """SIGSTOP the run's process group at a moment it does not hold the ledger's write flock."""
    fd = os.open(run_dir, os.O_RDONLY)
    try:
        while True:
            os.killpg(p.pid, signal.SIGSTOP)
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                fcntl.flock(fd, fcntl.LOCK_UN)
                return
            except BlockingIOError:  # stopped inside a commit: let it finish
                os.killpg(p.pid, signal.SIGCONT)
                time.sleep(0.01)
    finally:
        os.close(fd)


def _wait_for_state(p: subprocess.Popen, run_dir, step: int, timeout: float = 300) -> None:
    """Until the state file of ``step`` exists: step - 1 has committed (the state comes before the commit)."""
    deadline = time.time() + timeout  # a guard against a hung run only: the assertions name reasons
    while not (run_dir / "state" / f"step-{step}.pt").exists() and time.time() < deadline:
        assert p.poll() is None, f"the run ended before its state file for step {step}"
        time.sleep(0.02)
    assert (run_dir / "state" / f"step-{step}.pt").exists(), f"no state file for step {step}: the run did not get there"


def _per_step(audit_json: dict) -> dict:
    inst = audit_json["runs"][0]["instruments"]["bearing_rate"]
    return {r["step"]: (r["value"], r["n"]) for r in inst["extra"]["per_step"]}


def test_audit_and_report_on_a_live_run(tmp_path):
    ref, live = tmp_path / "ref" / "run", tmp_path / "live" / "run"  # one name: the run ids are the same
    run_coevo("run", "--out", str(ref), *SMOKE)
    p = subprocess.Popen(coevo_cmd("run", "--out", str(live), *SMOKE), cwd=REPO, start_new_session=True,
                         env=dict(os.environ, PYTHONUNBUFFERED="1"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        _wait_for_state(p, live, 2)
        _stop_between_commits(p, live)
        a = run_coevo("audit", str(live), "--json")
        r = run_coevo("report", str(live))
    finally:
        os.killpg(p.pid, signal.SIGCONT)
    out, err = p.communicate(timeout=600)
    assert p.returncode == 0, err[-2000:]
    line = a.stderr.strip().splitlines()
    assert len(line) == 1 and line[0].startswith(f"live run (pid {p.pid}): read at step "), a.stderr
    k = int(line[0].split("read at step ")[1].split(",")[0])
    assert k >= 1 and line[0].endswith(f"read at step {k}, the last committed")
    assert r.stderr.splitlines()[0] == line[0] and (live / "report.html").is_file()
    # numbers: the steps committed when it was read, as the finished run has them
    done = run_coevo("audit", str(live), "--json")
    assert "live run" not in done.stderr  # a finished run reads as before
    seen, final = _per_step(json.loads(a.stdout)), _per_step(json.loads(done.stdout))
    assert seen and max(seen) <= k and seen == {s: final[s] for s in seen}
    # the writer went on unharmed: its ledger is that of a run nobody read
    assert fingerprint(live) == fingerprint(ref)
    led = open_run_ledger(live)
    assert led.live is None and led.last_committed() == open_run_ledger(ref).last_committed()
    led.close()
