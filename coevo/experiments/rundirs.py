"""One run directory of an experiment: its state (new / unfinished / finished), the ``coevo run``
command that moves it on, the child process that runs it (wall and CPU seconds), and what the
analysis reads back (summary.json without wall times; per-stage seconds from the ledger).

Used the same way by the local executor (a thread per running child) and by a Ray task on
another node (the task decides fresh vs resume from the directory itself, so a retried task
resumes what its predecessor left)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import List, Optional

__all__ = ["run_state", "run_command", "run_child", "WarmWorker", "read_summary", "stage_seconds", "steps_done",
           "WALL_KEYS", "LOG_NAME"]

WALL_KEYS = ("wall_seconds",)  # summary.json fields that differ from run to run of the same config
LOG_NAME = "experiment-run.log"  # the child's stdout+stderr, next to the run directory (not inside it)


def read_summary(run_dir: Path) -> Optional[dict]:
    """summary.json, or None when absent or unreadable (a kill mid-write)."""
    try:
        d = json.loads((Path(run_dir) / "summary.json").read_text())
    except (OSError, ValueError):
        return None
    return d if isinstance(d, dict) else None


def run_state(run_dir: Path) -> str:
    """``finished`` (summary.json readable: the runner writes it after the last step), ``unfinished``
    (config.yaml present: resume), or ``new``."""
    d = Path(run_dir)
    if read_summary(d) is not None:
        return "finished"
    if (d / "config.yaml").is_file():
        return "unfinished"
    return "new"


def run_command(run_dir: Path, run_args: List[str], python: Optional[str] = None) -> List[str]:
    """``python -m coevo run --out DIR -q --no-report ARGS`` for a new run, ``--resume DIR -q
    --no-report`` for an unfinished one, [] for a finished one (the experiment writes its own report;
    a run's report.html: ``coevo report RUN``)."""
    state = run_state(run_dir)
    py = [python or sys.executable, "-m", "coevo", "run"]
    if state == "finished":
        return []
    if state == "unfinished":
        return [*py, "--resume", str(run_dir), "-q", "--no-report"]
    return [*py, "--out", str(run_dir), "-q", "--no-report", *run_args]


def _cpu_of(ru) -> float:
    return float(ru.ru_utime + ru.ru_stime)


REUSED = {"rc": 0, "wall_s": 0.0, "cpu_s": 0.0, "error": None, "command": "reused"}  # a finished run: nothing ran


def run_child(run_dir: Path, run_args: List[str], log: Path, env: Optional[dict] = None) -> dict:
    """Run (or resume) one run to its end as a child process in this process group (a kill -9 of
    the group takes it along).  Returns ``{"rc", "wall_s", "cpu_s", "error", "command"}``;
    ``cpu_s`` is the child's and its waited-for children's user + system seconds (wait4)."""
    cmd = _start_log(run_dir, run_args, log, "")
    if not cmd:
        return dict(REUSED)
    e = dict(os.environ if env is None else env, PYTHONUNBUFFERED="1", COLUMNS="200")
    t0 = time.perf_counter()
    with open(log, "ab") as out:
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=e)
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)  # reaped here: tell Popen
    return _outcome(run_dir, cmd, log, p.returncode, time.perf_counter() - t0, _cpu_of(ru))


def _start_log(run_dir: Path, run_args: List[str], log: Path, how: str) -> List[str]:
    """The ``coevo run`` command that moves the run on ([] when finished), written at the head of its log."""
    cmd = run_command(run_dir, run_args)
    if cmd:
        Path(log).parent.mkdir(parents=True, exist_ok=True)
        with open(log, "ab") as out:
            out.write(f"$ {' '.join(cmd)}{how}\n".encode())
    return cmd


def _outcome(run_dir: Path, cmd: List[str], log: Path, rc: int, wall: float, cpu: float) -> dict:
    """What a finished child returns: its error (None only when it exited 0 and left the run finished)."""
    err = None if rc == 0 and run_state(run_dir) == "finished" else _last_error(log, rc)
    return {"rc": rc if err is None else (rc or 1), "wall_s": wall, "cpu_s": cpu, "error": err,
            "command": "resume" if "--resume" in cmd else "run"}


class WarmWorker:
    """One job's warm process (``coevo worker``): imports paid once, then each run is a forked child of it.
    ``run`` returns what ``run_child`` returns; a worker that cannot start or dies is replaced by a fresh one
    for the next run, and the run it was serving fails on one line (its directory resumes on a rerun)."""

    def __init__(self, python: Optional[str] = None):
        self.python, self.proc = python or sys.executable, None

    def _start(self) -> None:
        e = dict(os.environ, PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen([self.python, "-m", "coevo", "worker"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=e)

    def run(self, run_dir: Path, run_args: List[str], log: Path) -> dict:
        cmd = _start_log(run_dir, run_args, log, "  (forked from a warm worker)")
        if not cmd:
            return dict(REUSED)
        t0 = time.perf_counter()
        try:
            if self.proc is None or self.proc.poll() is not None:
                self._start()
            self.proc.stdin.write(json.dumps({"argv": cmd[3:], "log": str(log)}) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
            ans = json.loads(line) if line else None
        except (OSError, ValueError):
            ans = None
        wall = time.perf_counter() - t0
        if ans is None:
            self.close()
            return {"rc": 1, "wall_s": wall, "cpu_s": 0.0, "command": "run",
                    "error": "the warm worker died (run again to resume this run)"}
        return _outcome(run_dir, cmd, log, int(ans["rc"]), wall, float(ans["cpu_s"]))

    def close(self) -> None:
        if self.proc is not None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
            self.proc = None


def _last_error(log: Path, rc: int) -> str:
    """The child's one-line error (``error: ...``), else its last non-empty line, else the exit code."""
    try:
        lines = [ln.strip() for ln in Path(log).read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        lines = []
    for ln in reversed(lines):
        if ln.startswith("error:"):
            return ln[len("error:"):].strip()
    tail = lines[-1] if lines and not lines[-1].startswith("$ ") else ""
    return tail or (f"killed by signal {-rc}" if rc < 0 else f"exit status {rc}")


def steps_done(run_dir: Path) -> int:
    """Steps the run has committed, from its newest state file (the ledger is locked by its
    writer); -1 when none yet."""
    d = Path(run_dir) / "state"
    best = -1
    try:
        for f in d.iterdir():
            parts = f.name.split("-")
            if f.suffix == ".pt" and len(parts) == 2 and parts[1][:-3].isdigit():
                best = max(best, int(parts[1][:-3]))
    except OSError:
        pass
    return best


def stage_seconds(run_dir: Path) -> dict:
    """Per-stage seconds summed over the run's steps (ledger ``steps.stage_seconds_json``),
    with ``model_compute`` (overlapping) and ``total``; {} when the ledger cannot be read."""
    from coevo.ledger import views
    from coevo.ledger.store import Ledger

    try:
        led = Ledger(Path(run_dir) / "ledger.duckdb", read_only=True)
        try:
            return views.stage_seconds_totals(led)
        finally:
            led.close()
    except Exception:  # noqa: BLE001 - timings are informative only; never fail the experiment
        return {}


def clean_summary(summary: dict) -> dict:
    """summary.json without the fields that differ between two runs of one config."""
    return {k: v for k, v in summary.items() if k not in WALL_KEYS}
