"""The zero-training certificate (`coevo certify`, issue #13 item 2): numbers against pools
with known pass rates, and the real CLI on the arithmetic world with the tiny solver."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from coevo.audit.certify import certificate_from_groups, kappa_truth
from coevo.stages.certify import draw_groups
from coevo.audit.simulate import draw_pool, simulate_pool


def bernoulli_groups(p: np.ndarray, k: int, seed: int) -> dict:
    """Screen/confirm groups of a scripted solver that is right with probability p[i] on task i."""
    rng = np.random.default_rng(seed)

    def sample(idx):
        return [["1" if rng.random() < p[i] else "0" for _ in range(k)] for i in idx]

    def judge_many(pairs):
        return [1 if a == r else 0 for a, r in pairs]

    return draw_groups(sample, judge_many, ["1"] * len(p), k)


def test_kappa_truth_hand_values():
    # p = 0.5, K = 4: m = 1 - 2/16 = 0.875; a pool of one p gives E[m | g1] = m
    assert kappa_truth([0.5], 4) == pytest.approx(0.875)
    # p in {0.5, 0.9}: m = 0.875, 1 - .9^4 - .1^4 = 0.3438; sum m^2 / sum m
    m2 = 1 - 0.9 ** 4 - 0.1 ** 4
    assert kappa_truth([0.5, 0.9], 4) == pytest.approx((0.875 ** 2 + m2 ** 2) / (0.875 + m2))


@pytest.mark.parametrize("pool", ["frontier", "bimodal", "uniform"])
def test_certificate_agrees_with_simulate(pool):
    """Known p: over 10 independent certificates of 1,000 tasks each, the 95 % interval covers the
    pool's truth E[m(p) | g1] at least 8 times, and their mean agrees with the truth `coevo simulate`
    reports for the same pool family within 3 standard errors of that mean."""
    k = 4
    sim = simulate_pool(pool, k=k, n_tasks=20000, seed=1, n_boot=50)
    covered, values = 0, []
    for s in range(10):
        p = draw_pool(pool, 1000, np.random.default_rng(100 + s))
        cert = certificate_from_groups(bernoulli_groups(p, k, seed=s), k, truth_p=p, n_boot=50)
        covered += cert["truth"]["kappa_in_interval"]
        values.append(cert["kappa_bar"]["value"])
        # the budget increment is the screen bearing share, by construction
        assert cert["budget"]["increment"] == pytest.approx(cert["screen_triple"]["bearing"])
    assert covered >= 8
    se_mean = np.std(values, ddof=1) / np.sqrt(len(values))
    assert abs(np.mean(values) - sim["truth"]["kappa_bar"]) < 3 * se_mean + 0.005


def test_bimodal_pool_is_reproduced_by_the_null_model_and_p1_holds():
    """The RGBC proposal's two-point pool (w = .524, p = .9001 / .0787): the null-model fit reproduces the
    screen triple within sampling error, and kappa-bar lands under P1's 0.45 line."""
    n, k = 4000, 4
    rng = np.random.default_rng(0)
    p = np.where(rng.random(n) < 0.524, 0.9001, 0.0787)
    cert = certificate_from_groups(bernoulli_groups(p, k, seed=1), k, truth_p=p, n_boot=200)
    assert cert["null_model"]["fit_error"] < 0.01
    assert cert["kappa_bar"]["value"] <= 0.45
    assert cert["p1"]["verdict"] == "supported"
    assert cert["truth"]["kappa_in_interval"]


def test_frontier_pool_crosses_the_termination_line():
    p = np.full(800, 0.5)
    cert = certificate_from_groups(bernoulli_groups(p, 4, seed=2), 4, truth_p=p, n_boot=200)
    assert cert["kappa_bar"]["value"] == pytest.approx(0.875, abs=0.04)
    assert cert["p1"]["verdict"] == "refuted"


def test_cli_arithmetic_tiny_solver(tmp_path):
    """The real CLI: a frozen tiny solver on generated L3 tasks, pass rates estimated from 32 extra
    samples per task; the truth lies in the interval; the HTML page is written."""
    html = tmp_path / "cert.html"
    out = subprocess.run([sys.executable, "-m", "coevo", "certify", "--arithmetic", "96", "--levels", "L3", "--model", "tiny", "--json",
                          "--truth-samples", "32", "--html", str(html)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    cert = json.loads(out.stdout)
    assert cert["n_tasks"] == 96 and cert["k"] == 4 and cert["world"] == "arithmetic"
    kb = cert["kappa_bar"]
    assert kb["n"] == cert["kappa_bar"]["n_screen_bearing"] == 49  # pinned: deterministic tiny sampling
    assert kb["value"] == pytest.approx(34 / 49)
    assert cert["truth"]["kappa_in_interval"]
    assert cert["null_model"]["fit_error"] < 0.01
    assert "nu_bar" in cert and len(cert["tasks"]) == 96
    assert "<img" in html.read_text()


def test_cli_bad_input_one_line(tmp_path):
    out = subprocess.run([sys.executable, "-m", "coevo", "certify"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "one of the two" in out.stderr
    out = subprocess.run([sys.executable, "-m", "coevo", "certify", str(tmp_path / "missing.jsonl")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "not found" in out.stderr


def test_headline_interval_stays_in_unit_range():
    """7 of 8 bearing tasks confirm: value + 1.96 SE > 1; every interval is clipped to [0, 1]
    (SmolLM2 on 24 easy word problems printed ci_high = 1.057 before the clip)."""
    groups = {"mu_screen": [0.5] * 8, "mu_confirm": [0.5] * 7 + [1.0]}
    cert = certificate_from_groups(groups, 4, batch=4, n_boot=50)
    kb = cert["kappa_bar"]
    assert kb["value"] == pytest.approx(7 / 8)
    assert 0.0 <= kb["ci_low"] <= kb["value"] <= kb["ci_high"] <= 1.0
    assert 0.0 <= kb["ci_wald"][0] and kb["ci_wald"][1] <= 1.0
