"""The real CLI in subprocesses for the False Frontiers recipes on the facts world with the shipped
tiny search agents (coevo/assets/facts_*.pt): a minimal ``coevo run --recipe drzero`` (default
suite), the three recipes with tiny budgets and the two False Frontiers experiments at their CI budgets (slow)."""
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


def _experiment(name: str, out, *extra) -> dict:
    p = run_coevo("experiment", name, "--budget", "ci", "--jobs", "2", "--json", "-q", "--out", str(out), *extra,
                  timeout=900)
    return json.loads(p.stdout)


def _comparable(res: dict) -> dict:
    return {k: v for k, v in res.items() if k not in ("timing", "report", "report_error")}


@pytest.mark.slow
def test_crossfit_ablation_ci_grid_resume_verdicts(tmp_path):
    """The fold ablation at its CI budget (2 seeds x 6 arms of the replay): every claim evaluated and none with a
    verdict (a smoke budget), the null world at 0 in every strategy, then a finished run made unfinished resumes
    to the same JSON."""
    out = tmp_path / "abl"
    res = _experiment("crossfit-ablation", out)
    assert res["complete"] and not res["failed"] and res["seeds"] == [100, 101]  # held out: off seeds 0-2
    claims = {c["name"]: c for c in res["claims"]}
    head = [c for c in res["claims"] if c["headline"]]
    assert [c["name"] for c in head] == ["source-id-below-random-question"]
    assert res["smoke"] and {c["verdict"] for c in claims.values()} == {"smoke: no verdict"}
    for s in ("same-source", "random-question", "source-id"):
        assert claims[f"null-ff-{s}"]["estimate"] == 0.0 and claims[f"null-ff-{s}"]["ci_high"] == 0.0
    assert claims["ff-hop1-source-id"]["estimate"] == 0.0  # the scorer never retrieves a 1-hop question's source
    assert len(res["runs"]) == 20 and len(res["tables"]["Runs (one bank per seed)"]["rows"]) == 20
    (out / "runs" / "random-question-s101" / "summary.json").unlink()  # unfinished: resumed, not restarted
    again = _experiment("crossfit-ablation", out)
    assert again["timing"]["runs_reused"] == 19 and _comparable(again) == _comparable(res)


@pytest.mark.slow
def test_drzero_arms_ci_grid_and_costs(tmp_path):
    """The arms experiment at its CI budget: 4 arms x 2 seeds, 2 rounds and the post-hoc audit; the co-primary
    claims, per-arm FF / internal agreement / pseudo-label / EM / Cover-EM measurements, rollout ratios against
    Dr. Zero (training rollouts only), CPU per arm."""
    res = _experiment("drzero-arms", tmp_path / "arms")
    assert res["complete"] and not res["failed"] and res["seeds"] == [100, 101]
    claims = {c["name"]: c for c in res["claims"]}
    assert [c["name"] for c in res["claims"] if c["headline"]] == ["ff-msv+crossfit-vs-drzero",
                                                                    "pl-msv+crossfit-vs-drzero"]
    assert {c["verdict"] for c in res["claims"]} == {"smoke: no verdict"}
    for a in ("drzero", "msv", "crossfit", "msv+crossfit"):
        for k in ("ff", "internal-agreement", "pl", "audit-pl", "em", "cover-em"):
            assert claims[f"{k}-{a}"]["n"] == 2, (k, a)
    assert claims["rollouts-crossfit"]["estimate"] > 0 and claims["rollouts-msv+crossfit"]["estimate"] > 0
    assert set(res["timing"]["per_arm"]) == {"drzero", "msv", "crossfit", "msv+crossfit"}
    rows = res["tables"]["Runs"]["rows"]
    assert len(rows) == 8 and all(len(r[4].split(" / ")) == 2 for r in rows)  # internal agreement of both rounds
    assert all(int(r[2].split("/")[1]) <= 6 for r in rows)  # at most the 6 audit contexts


def test_experiment_unknown_budget_is_one_line_error(tmp_path):
    p = run_coevo("experiment", "crossfit-ablation", "--budget", "nope", "--out", str(tmp_path), check=False)
    assert p.returncode != 0 and "unknown budget" in p.stderr and "Traceback" not in p.stderr
