"""The real CLI in subprocesses with tiny budgets: run, errors, kill -9 and resume."""
import json
import os
import subprocess

import duckdb

from conftest import REPO, coevo_cmd, kill_after_step, run_coevo, tiny_run_args


def _summary(d):
    s = json.loads((d / "summary.json").read_text())
    s.pop("wall_seconds")
    return s


def _ledger_counts(d):
    con = duckdb.connect(str(d / "ledger.duckdb"), read_only=True)
    out = {}
    for t in ("steps", "tasks", "rollouts", "verdicts", "rewards", "updates", "evals"):
        out[t] = con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
    dup = con.execute("SELECT count(*) FROM (SELECT rollout_id, target FROM verdicts GROUP BY 1, 2 HAVING count(*) > 1)").fetchone()[0]
    con.close()
    return out, dup


def test_run_writes_run_directory(tiny_ckpts, tmp_path):
    out = tmp_path / "run"
    run_coevo("run", "--out", str(out), *tiny_run_args(tiny_ckpts))
    for f in ("config.yaml", "ledger.duckdb", "summary.json", "report.html", "checkpoints/round-1/solver.pt"):
        assert (out / f).exists(), f
    s = json.loads((out / "summary.json").read_text())
    assert set(s) >= {"rounds", "initial_solver_eval_accuracy", "eval_n_by_difficulty", "wall_seconds"}
    r = s["rounds"][0]
    assert set(r) >= {"round", "solver_eval_accuracy", "pseudo_label_accuracy", "kept_fraction",
                      "challenger_reward_mean", "format_failure_rate", "n_rollouts"}
    assert set(r["solver_eval_accuracy"]["by_difficulty"]) == set(s["eval_n_by_difficulty"]) \
        == set(s["initial_solver_eval_accuracy"]["by_difficulty"])
    # a barely trained Challenger writes garbage: recorded as format failures, with reasons, not lost
    con = duckdb.connect(str(out / "ledger.duckdb"), read_only=True)
    n_ch, n_bad, reasons = con.execute("SELECT count(*), sum(CASE WHEN parse_ok THEN 0 ELSE 1 END), "
                                       "list(DISTINCT parse_reason) FROM tasks WHERE source = 'challenger'").fetchone()
    n_rew = con.execute("SELECT count(*) FROM rewards WHERE role = 'challenger'").fetchone()[0]
    con.close()
    assert n_ch == 2 * 8 * 4 == n_rew
    assert n_bad > 0 and r["format_failure_rate"] > 0
    assert all(x for x in reasons if x is not None)


def test_kill_and_resume_equals_uninterrupted(tiny_ckpts, tmp_path):
    args = tiny_run_args(tiny_ckpts, "--set", "verify.workers=1", "--set", "rzero.solver_steps=3")
    ref = tmp_path / "ref"
    run_coevo("run", "--out", str(ref), *args)
    killed = tmp_path / "killed"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    p = subprocess.Popen(coevo_cmd("run", "--out", str(killed), *args), cwd=REPO, env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    kill_after_step(p, killed)
    assert not (killed / "summary.json").exists(), "run finished before it could be killed"
    run_coevo("run", "--resume", str(killed), "-q")
    assert _summary(killed) == _summary(ref)
    assert _ledger_counts(killed) == _ledger_counts(ref)
    assert _ledger_counts(killed)[1] == 0


def test_one_line_errors(tiny_ckpts, tmp_path):
    p = run_coevo("run", "--set", "rzero.delta=0.9", check=False)
    assert p.returncode == 2 and "rzero.delta" in p.stderr and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    p = run_coevo("run", "--resume", str(tmp_path / "nope"), check=False)
    assert p.returncode == 2 and "not found" in p.stderr and "Traceback" not in p.stderr
    p = run_coevo("run", "--preset", "nope", check=False)
    assert p.returncode == 2 and "unknown preset" in p.stderr
    p = run_coevo("report", str(tmp_path / "nope"), check=False)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    out = tmp_path / "exists"
    out.mkdir()
    (out / "x").write_text("x")
    p = run_coevo("run", "--out", str(out), *tiny_run_args(tiny_ckpts), check=False)
    assert p.returncode == 2 and "--resume" in p.stderr


def test_single_ablation_shares_one_policy(tiny_ckpts, tmp_path):
    """R-Zero's "Single": one set of parameters plays both roles (backend.roles=shared)."""
    out = tmp_path / "single"
    shipped = REPO / "coevo" / "assets" / "shared.pt"  # trained enough that Solver steps have data
    run_coevo("run", "--out", str(out), *tiny_run_args(tiny_ckpts, "--set", "backend.roles=shared",
                                                        "--set", f"backend.solver_checkpoint={shipped}"))
    con = duckdb.connect(str(out / "ledger.duckdb"), read_only=True)
    rows = con.execute("SELECT role, version_before, version_after FROM updates ORDER BY step").fetchall()
    con.close()
    assert {r[0] for r in rows} == {"challenger", "solver"}
    # every update, whichever role it serves, advances the same policy's version counter
    assert all(r[1].startswith("shared:") for r in rows)
    assert [int(r[2].rsplit("+", 1)[1]) for r in rows] == list(range(1, len(rows) + 1))
