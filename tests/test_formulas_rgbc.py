"""SynCo's and RGBC's Synthesizer rewards (coevo.recipes.rgbc.rewards) against hand-computed values
(RGBC proposal §background, SynCo appendix B.2 eq. 23; RGBC proposal §core idea)."""
import numpy as np
import pytest

from coevo.recipes.rgbc.rewards import rgbc_reward, synco_reward, teachability

MU4 = np.array([0, 0.25, 0.5, 0.75, 1.0])


def test_synco_reward():
    # G(.9) G(.75) T(.25) = .8 * .5 * .5
    assert synco_reward(0.9, 0.75, 0.25) == pytest.approx(0.2)
    assert synco_reward(0.49, 1.0, 0.5) == 0.0


def test_rgbc_reward_and_reduction_to_synco():
    assert rgbc_reward(0.375, 1) == pytest.approx(0.75)
    assert rgbc_reward(0.375, 0) == pytest.approx(0.15)       # omega0 = 0.2
    assert rgbc_reward(0.375, 0, omega0=0.5) == pytest.approx(0.375)
    np.testing.assert_array_equal(rgbc_reward(MU4, np.zeros(5), omega0=1.0), teachability(MU4))
    np.testing.assert_array_equal(rgbc_reward(MU4, None), teachability(MU4))
    with pytest.raises(ValueError):
        rgbc_reward(0.5, 1, omega0=1.5)
