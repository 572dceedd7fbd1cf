"""The experiment engine on a two-node local Ray cluster (head + worker as separate processes on
127.0.0.1, coevo.executors.cluster.LocalCluster, as tests/test_ray_executor.py): each run is a Ray
task asking for its declared CPUs; the result equals the local ``--jobs 1`` result (seconds aside).

Marker ``slow``: ``pytest -m slow tests/test_experiment_ray.py``.
"""
import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from coevo.executors.cluster import RAY_ENV  # noqa: E402

os.environ.update({**RAY_ENV, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(32)})
from conftest import need_module  # noqa: E402

need_module("ray")

from test_experiment_engine import REPO, SPEC, comparable, experiment  # noqa: E402

pytestmark = pytest.mark.slow


@pytest.mark.timeout(2400)
def test_ray_cluster_experiment_equals_local(tmp_path):
    from coevo.executors.cluster import LocalCluster

    p = experiment("--executor", "ray", "--address", "127.0.0.1:1", "--out", str(tmp_path / "u"), check=False)
    assert p.returncode == 2 and "cannot reach the Ray cluster" in p.stderr  # one line, no hang
    local, remote = tmp_path / "local", tmp_path / "ray"
    experiment("--jobs", "1", "--out", str(local))
    with LocalCluster(workers=1, head_cpus=1, worker_cpus=1) as c:
        cmd = [sys.executable, "-m", "coevo.cli", "experiment", "run", SPEC, "--executor", "ray", "--address",
               c.address, "--out", str(remote)]
        r = subprocess.run([*c.prefix, *cmd], capture_output=True, text=True, env=dict(c.env, COLUMNS="200"),
                           cwd=REPO, timeout=1800)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    assert comparable(remote) == comparable(local)
    res = json.loads((remote / "result.json").read_text())
    assert res["timing"]["executor"] == "ray" and res["complete"]
    # a rerun on the finished directory reuses every run (no cluster needed for that)
    again = experiment("--out", str(remote))
    assert "2/2 runs done" in again.stderr and comparable(remote) == comparable(local)
