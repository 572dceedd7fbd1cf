"""VG-OPD recipe (coevo/recipes/vgopd/recipe.py): tiny end-to-end runs per CASA arm, the null check (abstention
rates 0 -> phi = 0 everywhere and the three arms' runs identical), r / r~ = 1 / (1 - phi) on ledger data,
and the zero-abstention self-check stopping a real run with one line."""
import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest import REPO  # noqa: E402
from fingerprint import fingerprint  # noqa: E402

TINY = ["-q", "--recipe", "vgopd", "--set", "vgopd.rounds=1", "--set", "vgopd.steps_per_round=1",
        "--set", "vgopd.prompts=3", "--set", "vgopd.group=3", "--set", "vgopd.probe_prompts=2",
        "--set", "world.options.eval_n=4", "--set", "verify.workers=0"]
NULL = ["--set", "world.options.timeout_rate=0", "--set", "world.options.unparsable_rate=0",
        "--set", "world.options.judge_unknown_rate=0"]
ARM = {"A": ["--set", "casa.arm=A"], "B": ["--set", "casa.arm=B"],
       "C": ["--set", "casa.arm=C", "--set", "casa.discount=one_minus_precision"]}


def rows(run_dir: Path, sql: str) -> list:
    con = duckdb.connect(str(run_dir / "ledger.duckdb"), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def run_inprocess(out: Path, *args: str) -> Path:
    """``coevo run`` in this process (the same config path and runner; no interpreter start-up)."""
    from coevo.config import load_config
    from coevo.runner import run_from_config

    sets = [a for i, a in enumerate(args) if i > 0 and args[i - 1] == "--set"]
    cfg = load_config("vgopd", None, ["recipe=vgopd", *sets])
    return run_from_config(cfg, out, quiet=True)


@pytest.fixture(scope="module")
def null_runs(tmp_path_factory) -> dict:
    d = tmp_path_factory.mktemp("vgopd-null")
    return {arm: run_inprocess(d / arm, *TINY, *NULL, *extra) for arm, extra in ARM.items()}


@pytest.mark.slow  # the module fixture makes three runs (~45 s CPU together)
@pytest.mark.parametrize("arm", list(ARM))
def test_tiny_run_per_arm(null_runs, arm):
    rd = null_runs[arm]
    # 3 prompts x 3 rollouts, 4 axes each; every criterion verdict is a row with its criterion id
    assert rows(rd, "SELECT count(*), min(arm), max(arm) FROM criterion_scores") == [(36, arm, arm)]
    n_crit = rows(rd, "SELECT count(DISTINCT criterion_id) FROM verdicts WHERE target = 'criterion'")[0][0]
    n_exp = rows(rd, "SELECT count(DISTINCT role) FROM rollouts WHERE purpose = 'expert-greedy'")[0][0]
    assert n_crit >= 7 and n_exp >= 1
    assert rows(rd, "SELECT count(*) FROM verdicts WHERE target = 'criterion' AND criterion_id IS NOT NULL")[0][0] \
        == (9 + n_exp * 3) * n_crit  # 9 student answers + each expert's answer per prompt, every criterion
    assert rows(rd, "SELECT count(DISTINCT kind) FROM probes") == [(3,)]
    assert rows(rd, "SELECT count(*) FROM updates WHERE role = 'student'") == [(1,)]
    assert rows(rd, "SELECT count(*) FROM updates WHERE role <> 'student'") == [(0,)]  # experts stay frozen
    assert (rd / "report.html").read_text().count("CASA: criterion-set accounting") == 1


@pytest.mark.slow
def test_null_check_phi_zero_and_arms_identical(null_runs):
    for rd in null_runs.values():
        assert rows(rd, "SELECT max(phi), max(W_A), max(n_abstained) FROM criterion_scores") == [(0.0, 0.0, 0)]
        assert rows(rd, "SELECT count(*) FROM verdicts WHERE value IS NULL") == [(0,)]
        m = rows(rd, "SELECT metrics_json FROM steps WHERE phase = 'train'")[0][0]
        assert '"self_checked_groups": 3' in m  # every group went through the three-arm comparison
    # every table equal across the arms; criterion_scores (whose fingerprint includes the arm's name) row for row
    fps = {arm: {t: h for t, h in fingerprint(rd).items() if t != "criterion_scores"} for arm, rd in null_runs.items()}
    assert fps["A"] == fps["B"] == fps["C"]
    scores = {arm: rows(rd, "SELECT rollout_id, axis, reward, r, r_tilde, phi, n_scored, w_licensed FROM criterion_scores "
                            "ORDER BY ALL") for arm, rd in null_runs.items()}
    assert scores["A"] == scores["B"] == scores["C"] and len(scores["A"]) > 0
    gates = {arm: rows(rd, "SELECT criterion_id, expert, channel, weight FROM casa_gates ORDER BY ALL")
             for arm, rd in null_runs.items()}
    assert gates["A"] == gates["B"] == gates["C"]


def test_inflation_identity_on_ledger(tmp_path):
    rd = tmp_path / "abst"
    run_inprocess(rd, *TINY, *ARM["C"], "--set", "world.options.judge_unknown_rate=0.5",
                  "--set", "world.options.timeout_rate=0.3")
    got = rows(rd, "SELECT r_raw, r_tilde_raw, phi, r, r_tilde FROM criterion_scores")
    assert any(p > 0 for _, _, p, _, _ in got)  # the channels produced abstentions
    n = 0
    for r_raw, rt_raw, phi, r, rt in got:
        if rt_raw > 0 and phi < 1 and 0 <= rt_raw <= 1 and r_raw <= 1:
            assert r / rt == pytest.approx(1 / (1 - phi), rel=1e-12)
            n += 1
    assert n > 0
    assert rows(rd, "SELECT count(*) FROM verdicts WHERE value IS NULL AND (reason IS NULL OR reason = '')") == [(0,)]


INJECT = ("import sys, coevo.recipes.vgopd.casa.scoring as s\n"
          "orig = s.arm_reward\n"
          "s.arm_reward = lambda score, arm: orig(score, arm) + (0.01 if arm == 'B' else 0.0)\n"
          "from coevo.cli import app\n"
          "sys.argv[0] = 'coevo'\n"
          "app()\n")


def test_self_check_stops_run_with_one_line(tmp_path):
    """An injected arm difference (arm B's reward + 0.01) on zero-abstention groups stops a real run."""
    cmd = [sys.executable, "-c", INJECT, "run", "--out", str(tmp_path / "bad"), *TINY, *NULL, *ARM["A"]]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=REPO,
                       env={**os.environ, "COLUMNS": "400"})
    assert p.returncode == 2, p.stderr[-2000:]
    err = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(err) == 1, p.stderr
    assert err[0].startswith("error: CASA self-check failed at step 1, group 0 (crit-")
    assert "arms A and B differ in rewards[0] although no rollout of the group abstained" in err[0]


def test_total_setup_layout_shows_rank_reversals_checked_by_the_oracle(tmp_path):
    """With the criteria world's ``total_setup`` criterion (three unequal criteria on the arithmetic
    axis) and abstention channels on, rank reversals occur (the default layout cannot have any); each
    is checked against the oracle's axis scores, and the counts add up."""
    out = run_inprocess(tmp_path / "ts", *TINY, "--set", "vgopd.steps_per_round=2", "--set", "vgopd.prompts=8",
                        "--set", "vgopd.group=4", "--set", "world.options.eval_n=20",
                        "--set", "world.options.total_setup=true", "--set", "world.options.timeout_rate=0.1",
                        "--set", "world.options.unparsable_rate=0.2", "--set", "world.options.judge_unknown_rate=0.3",
                        *ARM["A"])
    ms = [json.loads(m) for (m,) in rows(out, "select metrics_json from steps where phase = 'train' order by step")]
    assert sum(m["rank_reversals"] for m in ms) >= 1
    for m in ms:
        assert m["rank_reversals"] == (m["rank_reversals_oracle_r_tilde"] + m["rank_reversals_oracle_r"]
                                       + m["rank_reversals_oracle_tie"])
    axes = {a for (a,) in rows(out, "select distinct axis from criterion_scores")}
    assert axes == {"arithmetic", "units", "final", "method"}
    assert rows(out, "select count(*) from verdicts where criterion_id = 'total_setup'")[0][0] > 0
