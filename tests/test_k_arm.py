"""K as an arm (issue 13 item 3, RGBC proposal §limitation 6): adv_hat as the Synthesizer's teachability term,
budget matching against K = 4 (hand-computed values), and the recipe on scripted policies."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from coevo.config import ConfigError, load_config
from coevo.recipes.rgbc.rewards import quality_gate
from coevo.recipes.rgbc.k_arm import adv_hat_reward, budget_matched_tasks

sys.path.insert(0, str(Path(__file__).parent))
from test_rgbc import run_recipe  # noqa: E402


def test_adv_hat_reward_hand_computed():
    # adv_hat(0.5, 8) = 8/7 * 0.25 = 0.285714...; gates 1; kappa 1 -> no discount
    assert adv_hat_reward(1.0, 1.0, 0.5, 8, 1) == pytest.approx(2 / 7)
    # kappa 0 -> omega0 = 0.2: 0.0571428...
    assert adv_hat_reward(1.0, 1.0, 0.5, 8, 0, 0.2) == pytest.approx(0.4 / 7)
    # no confirm (kappa None): no discount; K = 4, mu = 0.25: 4/3 * 0.25 * 0.75 = 0.25
    assert adv_hat_reward(1.0, 1.0, 0.25, 4, None) == pytest.approx(0.25)
    # quality 0.75 -> G = 0.5; reliability 1; n = 16, mu = 0.375: 16/15 * 0.375 * 0.625 = 0.25 -> 0.125
    assert adv_hat_reward(0.75, 1.0, 0.375, 16, 1) == pytest.approx(0.125)
    assert adv_hat_reward(1.0, 1.0, 1.0, 8, 1) == 0.0 and adv_hat_reward(1.0, 1.0, 0.0, 8, None) == 0.0
    with pytest.raises(ValueError):
        adv_hat_reward(1.0, 1.0, 0.5, 8, 0, omega0=1.5)


def test_budget_matched_tasks_keeps_screen_rollouts():
    # paper: 32 tasks x K = 4 = 128 screen rollouts per step
    assert budget_matched_tasks(32, 4, 4, 4) == 32
    assert budget_matched_tasks(32, 8, 4, 4) == 16 and 16 * 8 == 128
    assert budget_matched_tasks(32, 16, 4, 4) == 8 and 8 * 16 == 128
    assert budget_matched_tasks(16, 16, 4, 4) == 4  # 4 x 16 = 64 = 16 x 4
    assert budget_matched_tasks(12, 8, 4, 4) == 4  # 6 tasks -> down to one group of 4
    assert budget_matched_tasks(4, 16, 4, 4) == 4  # never below one Synthesizer group
    with pytest.raises(ValueError):
        budget_matched_tasks(32, 0, 4, 4)


def test_config_options():
    cfg = load_config("cpu", None, ["recipe=rgbc", "synco.k=8", "rgbc.reward_shape=adv_hat", "rgbc.k_budget_ref=4"])
    assert cfg.synco.k == 8 and cfg.rgbc.reward_shape == "adv_hat" and cfg.rgbc.k_budget_ref == 4
    with pytest.raises(ConfigError):
        load_config("cpu", None, ["recipe=rgbc", "rgbc.reward_shape=bogus"])


@pytest.mark.parametrize("k", [8, 16])
def test_recipe_k_arm_budget_and_rewards(tmp_path, k):
    led, _ = run_recipe(tmp_path, f"k{k}", ["recipe=rgbc", "rgbc.arm=full", f"synco.k={k}",
                                            "rgbc.reward_shape=adv_hat", "rgbc.k_budget_ref=4"], steps=2)
    ms = [json.loads(r["metrics_json"]) for r in led.query("SELECT metrics_json FROM steps WHERE phase = 'train'")]
    for m in ms:  # 16 tasks at K = 4 -> 64 screen rollouts; at K the proposals are cut to 64 / K
        assert m["n_proposed"] == 64 // k
        assert m["rollouts"]["screen"] == m["n_accepted"] * k and m["rollouts"]["screen"] <= 64
    rows = led.query("SELECT s.kappa, s.mu_tilde, s.mu_screen, s.in_doubt, r.reward, r.components_json FROM task_stats s "
                     "JOIN rewards r ON r.item_id = s.task_id AND r.role = 'synthesizer' WHERE s.mu_screen IS NOT NULL")
    assert rows
    n_bearing = 0
    for r in rows:
        c = json.loads(r["components_json"])
        if r["in_doubt"] or "rejected" in c:
            continue
        g = quality_gate(c["quality"]) * quality_gate(c["reliability"])
        if r["kappa"] is None:  # mu_1 in {0, 1}: adv_hat = 0
            assert r["reward"] == 0.0 and c["n_used"] == k
            continue
        n_bearing += 1
        w = 1.0 if r["kappa"] == 1 else 0.2
        mu, n = r["mu_tilde"], 2 * k  # full arm: mu~ over the 2K screen + confirm answers
        assert c["reward_shape"] == "adv_hat" and c["n_used"] == n
        assert r["reward"] == pytest.approx(g * n / (n - 1) * mu * (1 - mu) * w)
    assert n_bearing > 0
