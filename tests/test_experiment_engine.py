"""The experiment engine (coevo/experiments/engine.py) on a tiny grid: one arm x 2 seeds of a
minute-scale R-Zero run, declared here and loaded as ``tests/test_experiment_engine.py:TINY``.

- ``--jobs 1`` and ``--jobs 2`` give the same result.json (seconds aside);
- an experiment killed with -9 (its whole process group) in the middle of a run, then rerun,
  gives the same result.json; the killed run resumed through ``coevo run --resume``;
- a failing run is named on one line, the other runs are kept (reused), exit status 1.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from coevo.experiments.claims import Claim, Design, over_seeds  # noqa: E402
from coevo.experiments.spec import Arm, Experiment  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SPEC = f"{Path(__file__).resolve()}:TINY"
TINY_ARGS = ("rzero.rounds=1", "rzero.challenger_steps=1", "rzero.solver_steps=1", "rzero.challenger_prompts=8",
             "rzero.n_candidates=16", "rzero.solver_prompts=8", "world.eval_per_level=4", "sampling.max_new_tokens=24")


def _final_acc(s):
    return s["rounds"][-1]["solver_eval_accuracy"]["overall"]


def _pl(s):
    return s["rounds"][-1]["pseudo_label_accuracy"]


CLAIMS = [Claim("final-accuracy", "held-out accuracy after one round", "overall accuracy", over_seeds("a", _final_acc),
                role="measurement", source_value=0.5),
          Claim("pseudo-labels", "pseudo-labels better than chance", "pseudo-label accuracy - 0.5",
                over_seeds("a", lambda s: _pl(s) - 0.5), role="primary", direction=1, smallest_effect=0.05,
                smallest_effect_why="a test grid's line", source_value=0.3,
                design=Design("seeds", 0.3, "a test value", 0.1, "a guess for the test"))]
TINY = Experiment("tiny", "a tiny engine test grid", [Arm("a", "cpu", TINY_ARGS)], CLAIMS, seeds=2)
TINY_BROKEN = Experiment("tiny", "the tiny grid plus an arm whose runs fail",
                         [Arm("a", "cpu", TINY_ARGS), Arm("broken", "cpu", ("rzero.rounds=-1",))], CLAIMS, seeds=2)


def experiment(*args, spec=SPEC, timeout=900, check=True, env=None):
    cmd = [sys.executable, "-m", "coevo.cli", "experiment", "run", spec, *args]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=REPO,
                       env=dict(os.environ, PYTHONUNBUFFERED="1", COLUMNS="200", **(env or {})))
    if check and p.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p


def comparable(out: Path) -> dict:
    from coevo.experiments.engine import comparable as drop_seconds

    return drop_seconds(json.loads((out / "result.json").read_text()))


@pytest.fixture(scope="module")
def jobs1(tmp_path_factory):
    out = tmp_path_factory.mktemp("exp") / "jobs1"
    p = experiment("--jobs", "1", "--out", str(out), "--json")
    return out, p


def test_jobs1_result(jobs1):
    out, p = jobs1
    res = json.loads(p.stdout)
    assert res["complete"] and res["failed"] == [] and sorted(res["runs"]) == ["a-s0", "a-s1"]
    assert [c["name"] for c in res["claims"]] == ["final-accuracy", "pseudo-labels"]
    assert all(c["n"] == 2 for c in res["claims"]) and res["claims"][0]["verdict"] == "measured"
    assert res["claims"][1]["verdict"] in ("supported", "refuted", "inconclusive", "degenerate")
    assert p.stdout.lstrip().startswith("{") and res["smoke"] is False and res["missing"] == []
    assert "wall_seconds" not in res["runs"]["a-s0"]["summary"]  # seconds live under "timing" only
    tm = res["timing"]
    assert tm["runs_cpu_s"] > 0 and tm["stage_seconds"]["total"] > 0 and 0 < tm["model_compute_share_of_steps"] < 1
    assert (out / "report.html").read_text().count("<img") == 2
    runs = sorted(d for d in out.rglob("summary.json"))
    assert len(runs) == 2 and not any((d.parent / "report.html").exists() for d in runs)  # --no-report: the experiment's own
    assert "2/2 runs done" in p.stderr  # progress on the console
    man = json.loads((out / "experiment.json").read_text())
    assert man["runs"]["a-s1"][-2:] == ["--set", "seed=1"]


def _kill_mid_run(out: Path, timeout: float = 600) -> None:
    """Start the experiment with --jobs 2 in its own process group; SIGKILL the group once a run
    has committed its first step (and none has finished)."""
    from coevo.experiments.rundirs import steps_done

    cmd = [sys.executable, "-m", "coevo.cli", "experiment", "run", SPEC, "--jobs", "2", "--out", str(out), "-q"]
    p = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + timeout
    runs = [out / "runs" / "a-s0", out / "runs" / "a-s1"]
    while time.time() < deadline and p.poll() is None and max(steps_done(r) for r in runs) < 1:
        time.sleep(0.05)
    try:
        os.killpg(p.pid, signal.SIGKILL)  # the experiment and its children (the runs, their verifier pools)
    except ProcessLookupError:
        pass
    p.wait()


def test_kill9_then_rerun_with_jobs2_equals_jobs1(jobs1, tmp_path):
    """kill -9 mid-experiment, rerun with --jobs 2: the result is the uninterrupted --jobs 1 one."""
    out = tmp_path / "killed"
    _kill_mid_run(out)
    assert not (out / "result.json").exists(), "the experiment finished before it could be killed"
    assert not all((out / "runs" / n / "summary.json").exists() for n in ("a-s0", "a-s1"))
    p = experiment("--jobs", "2", "--out", str(out))
    logs = "".join((out / "runs" / f"{n}.log").read_text() for n in ("a-s0", "a-s1"))
    assert "--resume" in logs  # a half-finished run went on through `coevo run --resume`
    assert comparable(out) == comparable(jobs1[0])
    assert "2/2 runs done" in p.stderr


def test_jobs2_cold_equals_jobs1_warm(jobs1, tmp_path):
    """--jobs 2 with a fresh interpreter per run (COEVO_EXPERIMENT_WARM=0) gives the result of --jobs 1 with runs
    forked from a warm worker (the default): forking changes no number."""
    out = tmp_path / "jobs2"
    experiment("--jobs", "2", "--out", str(out), env={"COEVO_EXPERIMENT_WARM": "0"})
    assert comparable(out) == comparable(jobs1[0])
    tm = json.loads((out / "result.json").read_text())["timing"]
    assert tm["jobs"] == 2 and tm["runs_reused"] == 0
    assert "forked from a warm worker" in (jobs1[0] / "runs" / "a-s0.log").read_text()
    assert "forked" not in (out / "runs" / "a-s0.log").read_text()


def test_failing_run_named_on_one_line_others_kept(jobs1, tmp_path):
    """An arm whose runs fail: each failure is one line naming the run; the finished runs of the other
    arm are reused (not rerun), the claims still reported, exit status 1 with the list."""
    out = tmp_path / "broken"
    shutil.copytree(jobs1[0], out)
    p = experiment("--jobs", "2", "--out", str(out), spec=f"{Path(__file__).resolve()}:TINY_BROKEN", check=False)
    assert p.returncode == 1, p.stderr[-2000:]
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("error: run broken-s")]
    assert sorted(ln.split()[2] for ln in lines) == ["broken-s0", "broken-s1"]
    assert all("rzero.rounds" in ln for ln in lines), lines  # the child's own one-line config error
    assert "error: 2 run(s) failed: broken-s0, broken-s1" in p.stderr
    res = json.loads((out / "result.json").read_text())
    assert [f["run"] for f in res["failed"]] == ["broken-s0", "broken-s1"] and not res["complete"]
    assert res["runs"]["a-s0"]["status"] == "finished" and res["runs"]["broken-s0"]["status"] == "failed"
    assert res["timing"]["runs_reused"] == 2
    assert res["missing"] == ["broken-s0", "broken-s1"]
    # a grid with failed runs prints no verdict for a tested claim ...
    ok = comparable(jobs1[0])["claims"]
    assert res["claims"][1]["verdict"] == "incomplete" and "broken-s0" in res["claims"][1]["why"]
    assert res["claims"][0] == ok[0]  # ... a measurement stays one
    assert "INCOMPLETE (2 runs missing; no verdicts)" in p.stdout.splitlines()[0]
    assert "missing runs: broken-s0, broken-s1" in p.stdout
    # --allow-partial: the verdicts of the finished runs, and the first line says so
    p2 = experiment("--out", str(out), "--allow-partial", spec=f"{Path(__file__).resolve()}:TINY_BROKEN", check=False)
    res2 = json.loads((out / "result.json").read_text())
    assert res2["claims"] == ok and res2["allow_partial"] and "--allow-partial" in p2.stdout.splitlines()[0]


def test_cli_errors(tmp_path):
    p = experiment("--out", str(tmp_path / "x"), spec="no-such-experiment", check=False)
    assert p.returncode == 2 and "unknown experiment 'no-such-experiment'" in p.stderr
    p = experiment("--executor", "ray", "--out", str(tmp_path / "y"), check=False)
    assert p.returncode == 2 and "--address" in p.stderr
    p = subprocess.run([sys.executable, "-m", "coevo.cli", "experiment", "--list"], capture_output=True, text=True,
                       cwd=REPO, timeout=120)
    assert p.returncode == 0 and "rzero-seeds" in p.stdout and "crossfit-ablation" in p.stdout


def test_run_states(tmp_path):
    from coevo.experiments.rundirs import run_command, run_state

    d = tmp_path / "r"
    assert run_state(d) == "new" and run_command(d, ["--preset", "cpu"])[-6:] == ["--out", str(d), "-q", "--no-report", "--preset", "cpu"]
    d.mkdir()
    (d / "config.yaml").write_text("seed: 0\n")
    assert run_state(d) == "unfinished" and run_command(d, [])[-4:] == ["--resume", str(d), "-q", "--no-report"]
    (d / "summary.json").write_text('{"rounds": [')  # a kill mid-write: still unfinished
    assert run_state(d) == "unfinished"
    (d / "summary.json").write_text('{"rounds": []}')
    assert run_state(d) == "finished" and run_command(d, []) == []
