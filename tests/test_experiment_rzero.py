"""``coevo experiment rzero-seeds --budget ci`` (2 arms x 2 seeds of a minute-scale R-Zero run): the
registered command end to end, killed with -9 in the middle and rerun; every claim evaluated on
both seeds, the verdict logic reached, the report written.

Marker ``slow`` (~3 min on 2 cores): ``pytest -m slow tests/test_experiment_rzero.py``.
"""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[1]


@pytest.mark.timeout(1800)
def test_rzero_seeds_ci_budget_killed_and_resumed(tmp_path):
    from coevo.experiments.rundirs import steps_done

    out = tmp_path / "rz"
    cmd = [sys.executable, "-m", "coevo.cli", "experiment", "rzero-seeds", "--budget", "ci", "--jobs", "2",
           "--out", str(out)]
    p = subprocess.Popen([*cmd, "-q"], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    deadline = time.time() + 900
    while time.time() < deadline and p.poll() is None and steps_done(out / "runs" / "two-s0") < 2:
        time.sleep(0.05)
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    assert not (out / "result.json").exists()
    r = subprocess.run([*cmd, "--json"], capture_output=True, text=True, cwd=REPO, timeout=1500,
                       env=dict(os.environ, COLUMNS="200"))
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads(r.stdout)
    assert res["complete"] and sorted(res["runs"]) == ["single-s0", "single-s1", "two-s0", "two-s1"]
    names = [c["name"] for c in res["claims"]]
    assert names == ["frontier-gain", "pseudo-label-r1", "pseudo-label-r2", "pseudo-label-r3",
                     "pseudo-label-decline", "two-vs-single"]
    assert all(c["n"] == 2 for c in res["claims"]), [(c["name"], c["n"]) for c in res["claims"]]
    assert {c["verdict"] for c in res["claims"]} <= {"reproduced", "refuted", "inconclusive", "measured"}
    assert [c["headline"] for c in res["claims"]].count(True) == 1
    assert res["tables"]["Runs"]["rows"] and (out / "report.html").read_text().count("<img") == 6
    assert "--resume" in (out / "runs" / "two-s0.log").read_text()
