"""The real CLI in subprocesses for the False Frontiers recipes on the facts world with the shipped
tiny search agents (coevo/assets/facts_*.pt): a minimal ``coevo run --recipe drzero`` (default
suite), the three recipes and the fold ablation with tiny budgets (slow)."""
import json

import duckdb
import pytest

from conftest import run_coevo

TINY = ["-q", "--set", "drzero.rounds=1", "--set", "drzero.proposer_steps=1", "--set", "drzero.solver_steps=1",
        "--set", "drzero.prompts=6", "--set", "drzero.solver_prompts=3", "--set", "drzero.solver_group=2",
        "--set", "drzero.max_turns=2", "--set", "world.options.eval_per_hop=1", "--set", "crossfit.aux_steps=1",
        "--set", "crossfit.aux_prompts=2", "--set", "crossfit.aux_group=2", "--set", "verify.workers=0"]


def _run(tmp_path, recipe: str) -> tuple[dict, duckdb.DuckDBPyConnection]:
    out = tmp_path / recipe.replace("+", "_")
    run_coevo("run", "--recipe", recipe, "--out", str(out), *TINY, timeout=600)
    for f in ("summary.json", "report.html", "ledger.duckdb"):
        assert (out / f).exists(), f
    assert "Co-cheating audit" in (out / "report.html").read_text()
    return json.loads((out / "summary.json").read_text()), duckdb.connect(str(out / "ledger.duckdb"), read_only=True)


def _check(summary: dict, con, recipe: str) -> None:
    assert summary["recipe"] == recipe and summary["preset"] == recipe  # --recipe X picks preset X
    (r1,) = summary["rounds"]
    for key in ("false_agreement", "pseudo_label_accuracy"):
        assert set(r1[key]) == {"value", "se", "n"}, r1[key]
    n_prop = con.execute("SELECT count(*) FROM tasks WHERE source = 'proposer'").fetchone()[0]
    n_rew = con.execute("SELECT count(*) FROM rewards WHERE role = 'proposer'").fetchone()[0]
    assert n_prop == n_rew == 6  # every proposal has a task row and a reward row, rejected or not
    # a rejection carries its reason (parse reason, or MSV's reject_reason in meta_json)
    bad = con.execute("SELECT count(*) FROM tasks WHERE source = 'proposer' AND NOT parse_ok "
                      "AND coalesce(parse_reason, '') = ''").fetchone()[0]
    assert bad == 0
    n_audit = con.execute("SELECT count(*) FROM tasks WHERE source = 'proposer' AND kept").fetchone()[0]
    assert r1["false_agreement"]["n"] <= n_audit


def test_drzero_run_minimal(tmp_path):
    summary, con = _run(tmp_path, "drzero")
    _check(summary, con, "drzero")
    roles = {r[0] for r in con.execute("SELECT DISTINCT role FROM rollouts").fetchall()}
    assert roles <= {"solver"} and not con.execute("SELECT count(*) FROM rollouts WHERE role LIKE 'aux%'").fetchone()[0]


@pytest.mark.slow
@pytest.mark.parametrize("recipe", ["crossfit", "msv+crossfit"])
def test_crossfit_runs(tmp_path, recipe):
    summary, con = _run(tmp_path, recipe)
    _check(summary, con, recipe)
    scorers = {r[0] for r in con.execute("SELECT DISTINCT role FROM rollouts WHERE purpose = 'score'").fetchall()}
    assert scorers <= {"aux_a", "aux_b"}


@pytest.mark.slow
def test_crossfit_ablation_json_shape(tmp_path):
    p = run_coevo("experiment", "crossfit-ablation", "--json", "--seeds", "2", "--bank", "6", "--aux-steps", "1",
                  "--no-costs", "--out", str(tmp_path / "abl"), "--set", "crossfit.aux_prompts=2",
                  "--set", "crossfit.aux_group=2", "--set", "drzero.max_turns=2", timeout=900)
    res = json.loads(p.stdout)
    assert set(res["strategies"]) == {"same-source", "random-question", "source-id"}
    for row in res["strategies"].values():
        for key in ("ff", "proposer_reward"):
            assert set(row[key]) == {"mean", "ci_low", "ci_high", "n_seeds", "per_seed"}
            assert row[key]["n_seeds"] == 2
    assert len(res["per_seed"]) == 2 and (tmp_path / "abl" / "crossfit_ablation.png").exists()


def test_experiment_bad_strategy_is_one_line_error(tmp_path):
    p = run_coevo("experiment", "crossfit-ablation", "--strategies", "nope", "--out", str(tmp_path), check=False)
    assert p.returncode == 2 and "unknown nope" in p.stderr and "Traceback" not in p.stderr
