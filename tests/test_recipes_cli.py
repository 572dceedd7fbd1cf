"""The real CLI in subprocesses for the screen/confirm recipes (``--recipe synco`` and
``--recipe rgbc --set rgbc.arm=full``), with tiny budgets and barely trained checkpoints.

Checks the run directory, the ledger's task_stats rows, and, for arm full, the budget identity
of docs/rgbc.md: the training confirm group is drawn exactly for the screen-bearing tasks
(0 < mu_screen < 1), K rollouts each.
"""
import json

import duckdb
import pytest

from conftest import REPO, run_coevo, tiny_run_args

K = 4
N = 8  # tasks per step


def tiny_synco(n: int = N, k: int = K) -> list[str]:
    """One round of two joint steps, n tasks per step, K rollouts, two consensus solves, 4 audit samples."""
    return ["--set", "synco.rounds=1", "--set", "synco.steps_per_round=2", "--set", f"synco.tasks_per_step={n}",
            "--set", "synco.synth_group=4", "--set", f"synco.k={k}", "--set", "synco.synth_max_tokens=48",
            "--set", "synco.consensus_n=2", "--set", "synco.audit_samples=4", "--set", "sampling.max_new_tokens=40"]
# A Synthesizer pretrained for 15 steps writes no valid task (every output is rejected by rho, with
# reasons), so the screen/confirm test swaps in the shipped tiny Synthesizer and solver (coevo/assets):
# with them tasks pass rho and consensus and some are screen-bearing, so the budget identity is not 0 == 0.
ASSETS = REPO / "coevo" / "assets"
SHIPPED = ["--set", f"backend.synthesizer_checkpoint={ASSETS / 'synthesizer.pt'}",
           "--set", f"backend.solver_checkpoint={ASSETS / 'solver.pt'}"]


def _run(tiny_ckpts, out, *recipe):
    run_coevo("run", "--out", str(out), *tiny_run_args(tiny_ckpts, *recipe, *tiny_synco()), timeout=300)
    for f in ("summary.json", "report.html", "teachable.json", "ledger.duckdb"):
        assert (out / f).exists(), f
    json.loads((out / "summary.json").read_text())
    return json.loads((out / "teachable.json").read_text())


def _con(out):
    return duckdb.connect(str(out / "ledger.duckdb"), read_only=True)


@pytest.mark.parametrize("recipe", [("--recipe", "synco")], ids=["synco"])
def test_synco_run(tiny_ckpts, tmp_path, recipe):
    out = tmp_path / "synco"
    _run(tiny_ckpts, out, *recipe)
    con = _con(out)
    n_stats, arms = con.execute("SELECT count(*), list(DISTINCT arm) FROM task_stats").fetchone()
    n_train_confirm = con.execute("SELECT count(*) FROM rollouts WHERE purpose = 'confirm'").fetchone()[0]
    n_val = con.execute("SELECT count(*) FROM verdicts WHERE target LIKE 'validator:%'").fetchone()[0]
    n_syn_rew = con.execute("SELECT count(*) FROM rewards WHERE role = 'synthesizer'").fetchone()[0]
    con.close()
    assert n_stats == 2 * N  # one row per Synthesizer output per step (no budget matching in --recipe synco)
    assert arms == ["synco"]
    assert n_val == 5 * 2 * N  # five validator checks per output, each with a verdict
    assert n_syn_rew == 2 * N
    assert n_train_confirm == 0  # SynCo draws no training confirm group
    assert "Teachable-quality report" in (out / "report.html").read_text()


def test_rgbc_full_run_confirm_budget(tiny_ckpts, tmp_path):
    out = tmp_path / "full"
    _run(tiny_ckpts, out, "--recipe", "rgbc", "--set", "rgbc.arm=full", *SHIPPED)
    con = _con(out)
    n_stats, arms = con.execute("SELECT count(*), list(DISTINCT arm) FROM task_stats").fetchone()
    n_accepted = con.execute("SELECT count(*) FROM task_stats WHERE mu_screen IS NOT NULL").fetchone()[0]
    n_bearing = con.execute("SELECT count(*) FROM task_stats WHERE mu_screen > 0 AND mu_screen < 1").fetchone()[0]
    n_confirm = con.execute("SELECT count(*) FROM rollouts WHERE purpose = 'confirm'").fetchone()[0]
    n_screen = con.execute("SELECT count(*) FROM rollouts WHERE purpose = 'screen'").fetchone()[0]
    per_task = con.execute("SELECT DISTINCT count(*) FROM rollouts WHERE purpose = 'confirm' GROUP BY task_id").fetchall()
    n_instr = con.execute("SELECT count(*) FROM rollouts WHERE purpose = 'confirm-instrument'").fetchone()[0]
    con.close()
    assert n_stats == 2 * N and arms == ["full"]
    assert n_accepted > 0 and n_bearing > 0, "no screen-bearing task: the identity below would be vacuous"
    assert n_screen == K * n_accepted
    # the confirm group is drawn exactly for the screen-bearing tasks, K rollouts each
    assert n_confirm % K == 0 and n_confirm // K == n_bearing
    assert per_task in ([], [(K,)])
    assert n_instr == 0  # arm full's confirm group is a training group, not an instrument
    html = (out / "report.html").read_text()
    assert "Teachable-quality report" in html and "arm full" in html
