"""Audit statistics, null model and instruments against hand-computed values (RGBC proposal §background, §core idea, §limitation 2)."""
import math

import numpy as np
import pytest

from coevo.audit import (
    abstention_inflation, abstention_share, answer_mode, batch_bootstrap_ci, bearing_probability,
    bearing_rate, binomial_se, clustered_se, difference_se, enrichment_se, expected_kappa,
    false_agreement_mass, invert_null_model, kappa_bar, lag_bar, null_model_shares, nu_bar,
    pseudo_label_accuracy, seed_range, top_quartile_enrichment,
)
from coevo.audit.instruments import NOT_PROPOSER, solver_majority


def pct(x):
    return [round(100 * v, 1) for v in x]


# --- null model -----------------------------------------------------------------------------

def test_bearing_probability():
    assert bearing_probability(0.5) == 0.875
    assert bearing_probability(0.95) == pytest.approx(0.1854875)
    assert bearing_probability(0.05) == pytest.approx(0.1854875)
    assert bearing_probability(0.75) == pytest.approx(0.6796875)     # frontier line 0.68
    assert bearing_probability(0.9) == pytest.approx(0.3438)         # noise line 0.35
    assert bearing_probability(0.5, k=2) == 0.5
    assert bearing_probability(np.array([0.0, 1.0])).tolist() == [0.0, 0.0]


def test_null_model_shares_seed_examples():
    assert pct(null_model_shares(0.6494, 0.98, 0.0334)) == [59.9, 9.5, 30.6]
    assert pct(null_model_shares(0.524, 0.9001, 0.0787)) == [34.4, 31.3, 34.3]
    # the RGBC proposal's pre-correction parameters: 0.033 -> all-wrong 30.7 (as it says);
    # 0.079 -> bearing 31.3, not the 31.4 it says (31.4 needs p_hi = 0.90 as well)
    assert pct(null_model_shares(0.6494, 0.98, 0.033))[2] == 30.7
    assert pct(null_model_shares(0.524, 0.9001, 0.079))[1] == 31.3
    assert pct(null_model_shares(0.524, 0.90, 0.079))[1] == 31.4


def test_invert_null_model_fixed_point():
    sol = invert_null_model(0.599, 0.095, 0.306, p_hi=0.98)["solutions"]
    assert len(sol) == 1
    assert sol[0]["w"] == pytest.approx(0.6494, abs=5e-4)
    assert sol[0]["p_lo"] == pytest.approx(0.0334, abs=2e-4)
    assert sol[0]["max_abs_error"] < 1e-9
    sol = invert_null_model(0.344, 0.313, 0.343, p_lo=0.0787)["solutions"]
    assert sol[0]["p_hi"] == pytest.approx(0.9001, abs=5e-4)
    assert sol[0]["w"] == pytest.approx(0.524, abs=1e-3)
    with pytest.raises(ValueError):
        invert_null_model(0.3, 0.3, 0.4, p_hi=0.9, p_lo=0.1)


def test_invert_null_model_family():
    fam = invert_null_model(0.599, 0.095, 0.306)
    assert fam["n_members"] > 50
    for m in fam["family"]:
        assert m["max_abs_error"] < 1e-6 and 0 <= m["w"] <= 1 and m["p_lo"] < m["p_hi"]
    # every two-point pool that reproduces the last bucket is far below the frontier line
    assert 0.09 < fam["kappa_bar_min"] < fam["kappa_bar_max"] < 0.35


def test_expected_kappa():
    assert expected_kappa([1.0], [0.5]) == 0.875
    # (.5 * .875^2 + .5 * .1854875^2) / (.5 * .875 + .5 * .1854875)
    assert expected_kappa([0.5, 0.5], [0.5, 0.95]) == pytest.approx(0.754400, abs=1e-5)
    assert expected_kappa([0.6494, 0.3506], [0.98, 0.0334]) == pytest.approx(0.1008, abs=1e-4)
    assert expected_kappa([0.524, 0.476], [0.9001, 0.0787]) == pytest.approx(0.3163, abs=1e-4)


# --- statistics -----------------------------------------------------------------------------

def test_binomial_and_difference_se_table3():
    assert binomial_se(0.137, 1856) == pytest.approx(0.007981, abs=1e-6)
    assert binomial_se(0.145, 1856) == pytest.approx(0.008173, abs=1e-6)
    d = difference_se(0.137, 1856, 0.145, 1856)
    assert d == pytest.approx(0.011424, abs=1e-6)
    assert 0.008 / d == pytest.approx(0.70, abs=0.005)
    assert binomial_se(0.623, 735) == pytest.approx(0.01788, abs=1e-5)
    assert binomial_se(0.5, 475) == pytest.approx(0.02294, abs=1e-5)
    with pytest.raises(ValueError):
        binomial_se(0.5, 0)


def test_abstention_inflation():
    assert abstention_inflation(0.05) == pytest.approx(1.0526, abs=1e-4)
    assert abstention_inflation(0.2) == pytest.approx(1.25)
    assert abstention_inflation(np.array([0.5, 0.0])).tolist() == [2.0, 1.0]
    with pytest.raises(ValueError):
        abstention_inflation(1.0)


def test_clustered_se():
    # two clusters of identical outcomes: G/(G-1) * (1 + 1) / 4^2 = 0.25
    assert clustered_se([1, 1, 0, 0], ["a", "a", "b", "b"]) == pytest.approx(0.5)
    # singleton clusters: 4/3 * 4 * 0.25 / 16 = 1/12
    assert clustered_se([1, 1, 0, 0], [0, 1, 2, 3]) == pytest.approx(math.sqrt(1 / 12))
    assert math.isnan(clustered_se([1, 0], [0, 0]))


def test_batch_bootstrap_deterministic():
    rng = np.random.default_rng(1)
    y = rng.random(640) < 0.3
    b = np.arange(640) // 32
    r1 = batch_bootstrap_ci(y, b, n_boot=300, seed=7)
    r2 = batch_bootstrap_ci(y, b, n_boot=300, seed=7)
    assert r1 == r2 and r1["n_batches"] == 20
    assert r1["ci_low"] < y.mean() < r1["ci_high"]


# --- instruments ----------------------------------------------------------------------------

def test_bearing_rate():
    e = bearing_rate([0, 0.25, 0.5, 1])
    assert e.value == 0.5 and e.se == 0.25 and e.n == 4
    assert e.to_dict()["se_binomial"] == 0.25


def test_kappa_bar_from_pairs():
    e = kappa_bar([0.5, 0.25, 0.0, 1.0, 0.75, 0.5], [0.5, 0.0, np.nan, 0.5, 1.0, np.nan])
    # defined on rows 0, 1, 4 -> kappa 1, 0, 0; row 3's confirm is ignored (screen not mixed)
    assert e.value == pytest.approx(1 / 3) and e.n == 3
    assert e.extra["n_screen_bearing"] == 4
    rng = np.random.default_rng(0)
    s = rng.binomial(4, 0.5, 640) / 4
    c = rng.binomial(4, 0.5, 640) / 4
    e = kappa_bar(s, c, tasks=np.arange(640) % 100, batches=np.arange(640) // 32, n_boot=200)
    assert abs(e.value - 0.875) < 0.06
    assert e.ci_low < e.value < e.ci_high
    assert "batch_bootstrap" in e.extra and np.isfinite(e.extra["se_clustered"])


def test_answer_mode_and_nu_bar():
    assert answer_mode(["4", "4", "5", None]) == ("4", 0.5)
    assert answer_mode(["a", "b"]) == ("a", 0.5)
    r = nu_bar([True, False, False, True, False], [1, 0.75, 0.5, 0.5, 0.875], [0.5, 0.25, 0.5, 0, 0.125])
    # defined on rows 0, 1, 2, 4: misses 0, 1, 1, 1; doubt = miss and share >= 3/4: rows 1, 4
    assert r["nu_bar"].value == 0.75 and r["nu_bar"].n == 4
    assert r["doubt_share"].value == 0.5


def test_lag_bar():
    e = lag_bar([0.5, 0.75, 0.25], [0.25, 0.5, 0.5])
    assert e.value == pytest.approx(1 / 12)
    assert e.se == pytest.approx(1 / 6)
    assert e.extra["median_abs"] == 0.25


def test_pseudo_label_accuracy_and_ff():
    # oracle verdicts on four labels: right, wrong, abstained (left out, counted), right
    e = pseudo_label_accuracy([1, 0, None, True])
    assert e.value == pytest.approx(2 / 3) and e.n == 3 and e.extra["n_unjudged"] == 1
    assert e.se == pytest.approx((2 / 9 / 3) ** 0.5)                       # binomial sqrt(p(1-p)/n)
    e = pseudo_label_accuracy([1, 0, None, 1, float("nan")], batches=[1, 1, 1, 2, 2])
    assert e.value == pytest.approx(2 / 3) and e.n == 3 and e.extra["n_unjudged"] == 2
    assert "2 batches < 5" in e.extra["interval_method"]                  # the audit's interval rule
    ff = false_agreement_mass(["1", "2", "3", "4"], ["1", "2", "5", "4"], ["1", "9", "3", "7"])
    assert ff.value == 0.5 and ff.extra["agreement_rate"] == 0.75
    # the solver majority from the ledger: recorded mode; else mu_screen > 1/2 -> the proposer's answer,
    # 0 -> not it, 0 < mu <= 1/2 or never solved -> unknown (not audited)
    maj = [solver_majority(m, mu, "5") for m, mu in (("6", 1.0), (None, 1.0), (None, 0.0), (None, 0.5), (None, None))]
    assert maj == ["6", "5", NOT_PROPOSER, None, None]
    ff = false_agreement_mass(["5"] * 5, maj, ["7"] * 5)                 # only the second agrees, wrongly
    assert ff.value == pytest.approx(1 / 3) and ff.n == 3 and ff.extra["n_unaudited"] == 2


def test_abstention_share_strata():
    e = abstention_share([0, 1, 2], [4, 4, 4], [0.9, 0.5, 0.1], r=[0.9, 0.6667, 0.2])
    assert e.value == pytest.approx(0.25) and e.n == 3
    st = e.extra["strata"]
    assert [s["n"] for s in st] == [1, 0, 1, 1]
    assert st[2]["inflation_mean"] == pytest.approx(4 / 3)
    assert st[0]["r_over_r_tilde"] == pytest.approx(2.0)
    with pytest.raises(ValueError):
        abstention_share([5], [4], [0.5])


def test_top_quartile_enrichment():
    e = top_quartile_enrichment([8, 7, 6, 5, 4, 3, 2, 1], [1, 1, 0, 0, 1, 0, 0, 0])
    assert e.extra["n_top"] == 2 and e.extra["p_top"] == 1.0
    assert e.value == pytest.approx(8 / 3) and e.extra["ceiling"] == pytest.approx(8 / 3)
    assert e.extra["recall"] == pytest.approx(2 / 3)


def test_enrichment_se_hand():
    # q = .25, pool = .2; d_top = 1.875, d_rest = -9.375 -> var = .0087890625 + .0263671875
    assert enrichment_se(0.5, 100, 0.1, 300) == pytest.approx(0.1875)


def test_seed_range():
    e = seed_range([0.137, 0.145, 0.12])
    assert e.extra["range"] == pytest.approx(0.025)
    assert e.value == pytest.approx(0.134) and e.n == 3
    assert seed_range([[0, 1], [1, 1]]).extra["per_run"] == [0.5, 1.0]
