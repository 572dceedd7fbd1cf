"""Reward formulas against hand-computed values (RGBC proposal, CASA proposal, R-Zero, False Frontiers)."""
import math

import numpy as np
import pytest

from coevo.recipes.rzero.rewards import challenger_reward, keep_for_solver, uncertainty_reward
from coevo.recipes.rgbc.rewards import advantage_magnitude, quality_gate, teachability
from coevo.recipes.vgopd.rewards import criteria_scores

MU4 = np.array([0, 0.25, 0.5, 0.75, 1.0])


def test_teachability_three_levels_at_k4():
    assert teachability(MU4).tolist() == [0.0, 0.5, 1.0, 0.5, 0.0]
    assert teachability(0.3) == pytest.approx(0.6)
    assert teachability(0.8) == pytest.approx(0.4)
    assert isinstance(teachability(0.5), float)
    with pytest.raises(ValueError):
        teachability(1.2)


def test_quality_gate():
    assert quality_gate([0.4, 0.5, 0.75, 1.0, 1.2]).tolist() == [0.0, 0.0, 0.5, 1.0, 1.0]
    assert quality_gate(0.9) == pytest.approx(0.8)


def test_advantage_magnitude():
    assert advantage_magnitude(0.5, 8) == pytest.approx(8 / 7 * 0.25)          # 0.285714
    assert advantage_magnitude(0.25, 8) == pytest.approx(0.2142857142857)
    assert advantage_magnitude(np.array([0.0, 1.0]), 8).tolist() == [0.0, 0.0]
    with pytest.raises(ValueError):
        advantage_magnitude(0.5, 1)


def test_uncertainty_reward_variants():
    assert uncertainty_reward(0.5) == 1.0
    assert uncertainty_reward(0.3) == pytest.approx(0.6)
    assert uncertainty_reward(0.9) == pytest.approx(0.2)
    assert uncertainty_reward(0.3, "reference") == pytest.approx(0.3)
    assert uncertainty_reward(0.9, "reference") == pytest.approx(0.1)
    p = np.linspace(0, 1, 11)
    np.testing.assert_allclose(uncertainty_reward(p, "paper"), 2 * uncertainty_reward(p, "reference"))
    with pytest.raises(ValueError):
        uncertainty_reward(0.5, "code")


def test_challenger_reward():
    assert challenger_reward(0.3, 0.2) == pytest.approx(0.4)
    assert challenger_reward(0.9, 0.5) == 0.0
    assert challenger_reward(0.3, 0.2, variant="reference") == pytest.approx(0.1)
    np.testing.assert_allclose(challenger_reward(np.array([0.5, 0.1]), np.array([0.25, 0.0])), [0.75, 0.2])


def test_keep_for_solver_keeps_3_to_7_of_10():
    p = np.arange(11) / 10
    assert np.nonzero(keep_for_solver(p))[0].tolist() == [3, 4, 5, 6, 7]
    assert keep_for_solver(0.75) is True
    assert keep_for_solver(0.8) is False


def test_criteria_scores_hand_example():
    # weights 2, 1, 1, -1; verdicts pass, unknown, fail, penalty triggered
    s = criteria_scores([2, 1, 1, -1], [1, None, 0, 1])
    assert s["numerator"] == 1.0           # 2 - 1
    assert s["W"] == 4.0 and s["W_A"] == 1.0 and s["phi"] == 0.25
    assert s["r"] == pytest.approx(1 / 3)  # 1 / (4 - 1)
    assert s["r_tilde"] == pytest.approx(0.25)
    assert s["r_raw"] == pytest.approx(s["r_tilde_raw"] / (1 - s["phi"]))


def test_criteria_scores_clipping_and_edge_cases():
    s = criteria_scores([1, 1, 1], [1, float("nan"), "unknown"])
    assert s["phi"] == pytest.approx(2 / 3)
    assert s["r"] == 1.0 and s["r_tilde"] == pytest.approx(1 / 3)
    s = criteria_scores([1, -2], [0, 1])
    assert s["r_raw"] == -2.0 and s["r"] == 0.0 and s["r_tilde"] == 0.0
    s = criteria_scores([1], [None])
    assert math.isnan(s["r"]) and s["r_tilde"] == 0.0 and s["phi"] == 1.0
    with pytest.raises(ValueError):
        criteria_scores([1, 1], [1])
    with pytest.raises(ValueError):
        criteria_scores([-1], [1])


def test_keep_in_band_is_rzero_code_filter_3_to_7_of_9():
    """R-Zero's code: 9 answers, keep 0.3 <= score <= 0.8 -> 3..7 of 9 (question_evaluate/upload.py)."""
    from coevo.recipes.rzero.rewards import keep_in_band

    p = np.arange(10) / 9
    assert np.nonzero(keep_in_band(p))[0].tolist() == [3, 4, 5, 6, 7]
    assert keep_in_band(0.3) is True and keep_in_band(0.8) is True and keep_in_band(0.81) is False
    with pytest.raises(ValueError):
        keep_in_band(0.5, 0.8, 0.3)
