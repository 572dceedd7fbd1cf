"""`coevo bench step` with the tiniest budget: the promised JSON keys, stage shares that add up to
one, the model-compute share = model seconds / step seconds (by hand: test_summarize_by_hand), and
the reference measurements (no timing thresholds)."""
import json

import pytest

from conftest import run_coevo

STAGE_NAMES = {"sample", "verify", "reward", "update", "ledger", "eval", "state", "other"}


def test_bench_step_tiny(tmp_path):
    keep = tmp_path / "run"
    p = run_coevo("bench", "step", "--budget", "tiny", "--repeats", "1", "--keep", str(keep), "--json")
    res = json.loads(p.stdout)
    assert {"preset", "budget", "threads", "n_steps", "step_seconds", "stages", "model_compute", "per_step",
            "reference", "seconds_by_phase"} <= set(res)
    assert res["preset"] == "cpu" and res["budget"] == "tiny"
    # the tiny budget: eval, challenger, dataset, solver, eval
    assert [s["phase"] for s in res["per_step"]] == ["eval", "challenger", "dataset", "solver", "eval"]
    assert res["n_steps"] == 5
    assert set(res["stages"]) <= STAGE_NAMES and {"sample", "update", "eval", "ledger"} <= set(res["stages"])
    assert sum(v["share"] for v in res["stages"].values()) == pytest.approx(1.0, abs=2e-3)
    assert sum(v["seconds"] for v in res["stages"].values()) == pytest.approx(res["step_seconds"], abs=2e-3)
    # the run-level numbers are the per-step ones summed (not one number and its complement)
    assert res["step_seconds"] == pytest.approx(sum(s["stages"]["total"] for s in res["per_step"]), abs=1e-3)
    mc = res["model_compute"]
    assert mc["seconds"] == pytest.approx(sum(s["stages"]["model_compute"] for s in res["per_step"]), abs=1e-3)
    assert 0 < mc["share"] <= 1 and mc["share"] == pytest.approx(mc["seconds"] / res["step_seconds"], abs=1e-3)
    for s in res["per_step"]:  # each step's stages add up to its total
        st = s["stages"]
        named = sum(v for k, v in st.items() if k not in ("total", "model_compute"))
        assert named == pytest.approx(st["total"], abs=1e-4)
        assert 0 <= st["model_compute"] <= st["total"]
    ref = res["reference"]
    assert ref["sampling"]["rows"] == 4 * 2 and ref["sampling"]["tokens"] > 0 and ref["sampling"]["tokens_per_s"] > 0
    fb = ref["fwd_bwd"]
    assert fb["batch"][0] == 8 and fb["ours_s"] > 0 and fb["bare_s"] > 0 and fb["ours_over_bare"] > 0
    # the kept run's report shows the section; --run reads the same numbers back
    assert "Loop speed" in (keep / "report.html").read_text()
    again = json.loads(run_coevo("bench", "step", "--run", str(keep), "--json").stdout)
    assert again["per_step"] == res["per_step"] and again["stages"] == res["stages"]


def test_summarize_by_hand():
    """Two steps of 2 s (model 1.5 s and 0 s; sample 1 + other 1, update 2): hand-computed totals and shares."""
    from coevo.commands.bench_step import summarize

    steps = [{"phase": "challenger", "stages": {"sample": 1.0, "other": 1.0, "total": 2.0, "model_compute": 1.5}},
             {"phase": "solver", "stages": {"update": 2.0, "total": 2.0, "model_compute": 0.0}}]
    res = summarize(steps)
    assert res["n_steps"] == 2 and res["step_seconds"] == 4.0
    assert res["stages"] == {"other": {"seconds": 1.0, "share": 0.25}, "sample": {"seconds": 1.0, "share": 0.25},
                             "update": {"seconds": 2.0, "share": 0.5}}
    assert res["model_compute"] == {"seconds": 1.5, "share": 0.375, "rest_share": 0.625}
    assert res["seconds_by_phase"] == {"challenger": 2.0, "solver": 2.0}
    assert summarize([])["model_compute"] == {"seconds": 0.0, "share": 0.0, "rest_share": 0.0}


def test_bench_step_errors_are_one_line(tmp_path):
    p = run_coevo("bench", "step", "--budget", "huge", check=False)
    assert p.returncode == 2 and "unknown budget 'huge'" in p.stderr + p.stdout
    p = run_coevo("bench", "step", "--run", str(tmp_path / "nope"), check=False)
    assert p.returncode == 2 and "run directory not found" in p.stderr + p.stdout


def test_budgets_come_from_the_recipe():
    """The budgets are the preset's recipe's (RecipeInfo.bench_budgets), asked of the registry; an unknown
    one is a one-line error naming those the recipe has."""
    from coevo.cli_common import UserError
    from coevo.commands.bench_step import budget_overrides
    from coevo.core.registry import get_recipe

    tiny = get_recipe("rzero").bench_budgets["tiny"]
    assert budget_overrides("cpu", "tiny", ["seed=3"]) == [*tiny, "seed=3"]
    assert "rzero.solver_group=2" in tiny and "rzero.solver_prompts=4" in tiny  # the reference's 4 x 2 batch
    with pytest.raises(UserError, match="unknown budget 'nope' for recipe 'rzero'; available: tiny, small, round"):
        budget_overrides("cpu", "nope", [])
