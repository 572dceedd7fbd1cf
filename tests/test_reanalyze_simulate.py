"""`coevo reanalyze synco` and `coevo simulate`: pinned numbers and the real CLI entry point."""
import json
import subprocess
import sys

import pytest

from coevo.recipes.rgbc.reanalyze import reanalyze_synco
from coevo.audit.simulate import SimulateError, simulate_pool, simulation_plot


@pytest.fixture(scope="module")
def re():
    return reanalyze_synco()


def test_reanalysis_null_model(re):
    nm = re["null_model"]
    assert nm["first"]["seed_fit"]["predicted_pct"] == [34.4, 31.3, 34.3]
    assert nm["last"]["seed_fit"]["predicted_pct"] == [59.9, 9.5, 30.6]
    assert nm["last"]["original_rounded_fit"]["predicted_pct"] == [59.9, 9.4, 30.7]
    assert nm["first"]["seed_fit"]["kappa_bar"] == pytest.approx(0.3163, abs=1e-4)
    assert nm["last"]["seed_fit"]["kappa_bar"] == pytest.approx(0.1008, abs=1e-4)
    lo, hi = nm["last"]["family"]["kappa_bar_range"]
    assert hi < 0.35 and lo < 0.1008 < hi
    assert nm["first"]["family"]["frontier_possible"] is False


def test_reanalysis_table3_and_resolution(re):
    t = re["table3"]
    assert t["se_baseline_pp"] == pytest.approx(0.80, abs=0.005)
    assert t["se_synco_pp"] == pytest.approx(0.82, abs=0.005)
    assert t["se_diff_pp"] == pytest.approx(1.14, abs=0.005)
    assert t["diff_in_se_units"] == pytest.approx(0.70, abs=0.005)
    assert t["n_check"]["steps_x_32"] == 1856
    assert re["p1_resolution"]["se_pp_at_0.5"] == pytest.approx(2.29, abs=0.005)


def test_reanalysis_enrichment_and_table7(re):
    en = re["enrichment"]
    assert en["n_top"] == 735
    assert en["scores"]["gated_reward"]["se_rate_pp"] == pytest.approx(1.79, abs=0.005)
    assert en["scores"]["teachability_only"]["bearing_tasks_in_top"] == pytest.approx(475, abs=0.5)
    assert en["teachability_at_ceiling"] is True
    assert en["scores"]["quality_only"]["below_prevalence"] is True
    t7 = re["table7"]
    assert t7["learnable_as_predictor"]["recall"] == pytest.approx(0.223, abs=5e-4)
    assert t7["learnable_as_predictor"]["phi_r"] == pytest.approx(0.009, abs=5e-4)
    assert t7["weighted_bearing"] == pytest.approx(0.162, abs=5e-4)


def test_reanalysis_discrepancies(re):
    text = " ".join(re["discrepancies"])
    assert "31.4" in text and "Figure 5" in text
    assert re["ratios"]["fig5_folds"]["metamathqa"] == pytest.approx(5.561, abs=1e-3)
    json.dumps(re)  # JSON-able


def test_simulate_decision_lines():
    f = simulate_pool("frontier", k=4, n_tasks=4000, seed=0, n_boot=200)
    assert f["kappa_bar"]["value"] >= 0.68 and f["truth"]["kappa_bar"] >= 0.68
    assert f["verdict"] == "frontier" and f["truth"]["mid_band_share"] == 1.0
    assert f["budget"]["increment_equals_bearing_rate"]
    b = simulate_pool("bimodal", k=4, n_tasks=4000, seed=0, n_boot=200)
    assert b["kappa_bar"]["value"] <= 0.35 and b["truth"]["kappa_bar"] <= 0.35
    assert b["verdict"] == "extreme-p noise" and b["truth"]["mid_band_share"] == 0.0
    n = simulate_pool("nullmodel", k=4, n_tasks=4000, seed=0, n_boot=200)
    # the RGBC proposal's first-bucket fit: single-shot bearing ~31.3%, kappa-bar ~0.316
    assert abs(n["bearing_rate"]["value"] - 0.313) < 4 * n["bearing_rate"]["se"]
    assert abs(n["kappa_bar"]["value"] - 0.3163) < 4 * n["kappa_bar"]["se"]
    assert n["truth"]["kappa_bar"] == pytest.approx(0.3163, abs=0.01)


def test_simulate_deterministic_and_errors(tmp_path):
    a = simulate_pool("beta", k=4, n_tasks=1000, a=0.5, b=0.5, seed=3, n_boot=100)
    assert a == simulate_pool("beta", k=4, n_tasks=1000, a=0.5, b=0.5, seed=3, n_boot=100)
    assert a != simulate_pool("beta", k=4, n_tasks=1000, a=0.5, b=0.5, seed=4, n_boot=100)
    for kw in ({"pool": "nope"}, {"pool": "beta", "a": 0.0}, {"pool": "uniform", "k": 1},
               {"pool": "uniform", "n_tasks": 10}):
        with pytest.raises(SimulateError):
            simulate_pool(**{"k": 4, "n_tasks": 1000, "seed": 0, **kw})
    out = simulation_plot([a], tmp_path / "sim.png")
    assert out.exists() and out.stat().st_size > 1000


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "coevo.cli", *args], capture_output=True, text=True, timeout=120)


def test_cli_reanalyze_and_simulate_json():
    r = _cli("reanalyze", "synco", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["table3"]["diff_in_se_units"] == pytest.approx(0.70, abs=0.005)
    r = _cli("simulate", "--pool", "bimodal", "--n-tasks", "2000", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["verdict"] == "extreme-p noise"
    r = _cli("simulate", "--pool", "nope")
    assert r.returncode == 2 and "unknown pool" in r.stderr and "Traceback" not in r.stderr
