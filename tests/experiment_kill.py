"""Kill an experiment with -9 once one of its runs has committed some steps, then rerun it to the
end: the kill-and-resume check the experiments' CI-budget tests share."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def kill_then_finish(name: str, out: Path, watch: str, steps: int, budget: str = "ci", jobs: int = 2) -> dict:
    """``coevo experiment NAME --budget BUDGET --jobs JOBS --out OUT`` killed with -9 when run ``watch``
    has ``steps`` committed steps (no result.json yet), then rerun with ``--json``; returns its result."""
    from coevo.experiments.rundirs import steps_done

    cmd = [sys.executable, "-m", "coevo.cli", "experiment", name, "--budget", budget, "--jobs", str(jobs),
           "--out", str(out)]
    p = subprocess.Popen([*cmd, "-q"], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    deadline = time.time() + 900
    while time.time() < deadline and p.poll() is None and steps_done(out / "runs" / watch) < steps:
        time.sleep(0.05)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    assert not (out / "result.json").exists()
    r = subprocess.run([*cmd, "--json"], capture_output=True, text=True, cwd=REPO, timeout=1500,
                       env=dict(os.environ, COLUMNS="200"))
    assert r.returncode == 0, r.stderr[-3000:]
    assert "--resume" in (out / "runs" / f"{watch}.log").read_text()
    return json.loads(r.stdout)
