"""RGBC survives kill -9: a run killed mid-way and resumed equals the uninterrupted run, table
for table (audit draws included: the audit RNG stream is part of each policy's saved state)."""
import os
import subprocess

from conftest import REPO, coevo_cmd, kill_after_step, run_coevo
from fingerprint import fingerprint, summary_numbers

ARGS = ["-q", "--recipe", "rgbc", "--set", "rgbc.arm=full", "--set", "synco.rounds=1",
        "--set", "synco.steps_per_round=3", "--set", "synco.tasks_per_step=16", "--set", "synco.audit_samples=8",
        "--set", "world.eval_per_level=10", "--set", "verify.workers=1"]


def test_rgbc_kill_and_resume_equals_uninterrupted(tmp_path):
    ref = tmp_path / "ref"
    run_coevo("run", "--out", str(ref), *ARGS)
    killed = tmp_path / "killed"
    p = subprocess.Popen(coevo_cmd("run", "--out", str(killed), *ARGS), cwd=REPO,
                         env=dict(os.environ, PYTHONUNBUFFERED="1"), stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    kill_after_step(p, killed)
    assert not (killed / "summary.json").exists(), "run finished before it could be killed"
    run_coevo("run", "--resume", str(killed), "-q")
    assert summary_numbers(killed) == summary_numbers(ref)
    assert fingerprint(killed) == fingerprint(ref)
