"""The lag's zero-learning null (issue 13 item 4): the selection bias of l = mu_pre - mu_post by hand,
l - l_null on runs without learning, and P4 judged against the null."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from coevo.audit.instruments import lag_excess, lag_null_abs_median, lag_selection_bias

sys.path.insert(0, str(Path(__file__).parent))
from test_rgbc import run_recipe  # noqa: E402


def test_selection_bias_hand_computed():
    # K = 4, p = 0.75: p^4 = 0.31640625, (1-p)^4 = 0.00390625, m = 0.6796875;
    # E[mu_1 | bearing] = (0.75 - 0.31640625) / 0.6796875 = 0.637931..., minus p = -0.112069
    assert lag_selection_bias(0.75, 4) == pytest.approx((0.75 - 0.31640625) / 0.6796875 - 0.75)
    assert lag_selection_bias(0.75, 4) == pytest.approx(-0.112069, abs=1e-6)
    # p = 0.95: p^4 = 0.81450625, (0.05)^4 = 0.00000625, m = 0.1854875; (0.95 - 0.81450625) / m - 0.95 = -0.219526
    assert lag_selection_bias(0.95, 4) == pytest.approx((0.95 - 0.81450625) / 0.1854875 - 0.95)
    assert lag_selection_bias(0.95, 4) == pytest.approx(-0.219526, abs=1e-6)
    assert lag_selection_bias(0.5, 4) == pytest.approx(0.0)  # symmetric
    assert lag_selection_bias(0.25, 4) == pytest.approx(0.112069, abs=1e-6)  # mirror of 0.75
    assert np.isnan(lag_selection_bias(1.0, 4))
    # the bias by enumeration of the 16 outcomes of 4 Bernoulli(0.75) draws
    from itertools import product

    num = den = 0.0
    for xs in product((0, 1), repeat=4):
        pr = np.prod([0.75 if x else 0.25 for x in xs])
        if 0 < sum(xs) < 4:
            num, den = num + pr * sum(xs) / 4, den + pr
    assert lag_selection_bias(0.75, 4) == pytest.approx(num / den - 0.75)


def test_median_abs_lag_under_zero_learning_is_a_quarter():
    for p in (0.5, 0.6, 0.75, 0.9, 0.95):
        assert lag_null_abs_median(p, 4) == 0.25


def test_lag_excess_hand_computed():
    e = lag_excess([0.5, 0.25, 0.75], [0.75, 0.5, 0.5], [0.5, 0.5, 0.75])
    # l = -.25 -.25 .25; l_null = 0 -.25 0; excess = mu_null - mu_post = -.25 0 .25
    assert e.value == pytest.approx(0.0) and e.n == 3
    assert e.extra["lag_mean"] == pytest.approx(-0.25 / 3) and e.extra["lag_null_mean"] == pytest.approx(-0.25 / 3)
    assert e.se == pytest.approx(np.std([-0.25, 0, 0.25], ddof=1) / np.sqrt(3))
    assert lag_excess([0.5], [float("nan")], [0.5]).n == 0


@pytest.mark.parametrize("arm,extra", [("mu_tilde", []), ("full", ["rgbc.lag_null=draw"])])
def test_zero_learning_excess_is_zero_within_its_interval(tmp_path, arm, extra):
    """Scripted Reasoner with fixed per-task pass rates (no learning) and the Reasoner update skipped
    (synco.reasoner_updates=false): l - l_null is 0 within its interval while l itself is biased."""
    led, _ = run_recipe(tmp_path, arm, ["recipe=rgbc", f"rgbc.arm={arm}", "synco.reasoner_updates=false",
                                        "synco.tasks_per_step=32", *extra], steps=4)
    rows = led.columns("SELECT mu_pre, mu_post, mu_null, lag, lag_null, null_source, lag_null_analytic FROM task_stats "
                       "WHERE mu_post IS NOT NULL")
    assert rows["mu_pre"] and all(m is not None for m in rows["mu_null"])
    want = {"mu_tilde": {"confirm"}, "full": {"lag-null"}}[arm]
    assert set(rows["null_source"]) == want
    for mp, mn, ln in zip(rows["mu_pre"], rows["mu_null"], rows["lag_null"]):
        assert ln == pytest.approx(mp - mn)
    e = lag_excess(rows["mu_pre"], rows["mu_post"], rows["mu_null"])
    assert e.n >= 20 and e.ci_low <= 0.0 <= e.ci_high
    ups = led.query("SELECT n_sequences, metrics_json FROM updates WHERE role = 'solver'")
    assert ups and all(u["n_sequences"] == 0 for u in ups)  # frozen: no GRPO step
    ms = [json.loads(r["metrics_json"]) for r in led.query("SELECT metrics_json FROM steps WHERE phase = 'train'")]
    assert all("lag_excess" in m for m in ms)
    from coevo.recipes.rgbc.report import section

    html = section(led, arm, tmp_path)
    assert "Lag against its zero-learning null" in html and "Teachable-quality report" in html


def test_p4_is_judged_against_the_null(tmp_path):
    from coevo.recipes.rgbc.predictions import _p4, _p4_null

    # no learning: mu_post and mu_null are both independent pre-weight groups; |l| alone looks large
    ts = {"task_id": [f"t{i}" for i in range(8)], "step": [0, 0, 0, 0, 1, 1, 1, 1],
          "mu_pre": [0.25, 0.75, 0.5, 0.75, 0.25, 0.5, 0.75, 0.5],
          "mu_post": [0.5, 1.0, 0.25, 0.5, 0.0, 0.75, 1.0, 0.25],
          "mu_null": [0.25, 1.0, 0.5, 0.5, 0.25, 0.5, 1.0, 0.25],
          "lag_null_analytic": [None] * 8}
    res = _p4_null([{"task_stats": ts}], [{"run_dir": "r"}])
    assert res["status"] == "evaluated" and res["extra"]["basis"] == "|mean(l - l_null)|"
    diff = np.array(ts["mu_null"]) - np.array(ts["mu_post"])
    assert res["value"] == pytest.approx(abs(diff.mean()))
    assert res["extra"]["median_abs_lag"] == pytest.approx(0.25)
    # the proposal's statistic beside it (row P4): median |l|, with or without the null column
    res1 = _p4([{"task_stats": ts}], [{"run_dir": "r"}])
    assert res1["value"] == pytest.approx(0.25) and res1["extra"]["basis"] == "median |l|"
    old = {k: v for k, v in ts.items() if k not in ("mu_null", "lag_null_analytic")}
    res2 = _p4([{"task_stats": old}], [{"run_dir": "r"}])
    assert res2["value"] == pytest.approx(0.25) and res2["extra"]["basis"] == "median |l|"
    assert _p4_null([{"task_stats": old}], [{"run_dir": "r"}])["status"] == "not evaluable"
