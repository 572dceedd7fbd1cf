"""RGBC semantics as options (issue 23 item 2) on the scripted policies of tests/test_rgbc.py:
the doubt bucket decided on the screen group before the Reasoner update (``rgbc.doubt_screen``), the
no-truth split of all-wrong tasks, and arm full's two rewards (T(mu~) over screen + post, T(mu_post))."""
from __future__ import annotations

import json

import pytest

from coevo.recipes.rgbc.report import no_truth_split, teachable_numbers
from coevo.recipes.rgbc.rewards import quality_gate, teachability
from test_rgbc import run_recipe

ARGS = ["recipe=rgbc", "rgbc.arm=full", "synco.consensus=false"]


def _screen_doubt(led):
    """Tasks whose K screen answers put them in the bucket (task meta), with their screen answers."""
    rows = led.query("SELECT task_id, meta_json FROM tasks WHERE source = 'synthesizer'")
    return {r["task_id"] for r in rows if json.loads(r["meta_json"] or "{}").get("doubt_screen")}


@pytest.mark.parametrize("policy", ["drop", "anchor"])
def test_doubt_screen_acts_on_the_reasoner_before_the_update(tmp_path, policy):
    led, _ = run_recipe(tmp_path, policy, ARGS + ["rgbc.doubt_screen=true", f"rgbc.doubt_policy={policy}"], steps=4)
    doubt = _screen_doubt(led)
    assert doubt  # the fake Reasoner's fixed wrong answer makes 3-of-4 wrong modes
    scr = led.query("SELECT r.task_id, r.answer, v.value FROM rollouts r JOIN verdicts v ON v.rollout_id = r.rollout_id "
                    "AND v.target = 'reference' WHERE r.purpose = 'screen'")
    by_task = {}
    for r in scr:
        by_task.setdefault(r["task_id"], []).append(r)
    for t in doubt:  # by hand: 3 of the 4 screen answers share one wrong answer, 1 matches the reference
        vals = sorted(x["value"] for x in by_task[t])
        assert vals == [0, 0, 0, 1]
    solver = led.query("SELECT task_id, reward, components_json FROM rewards WHERE role = 'solver'")
    if policy == "drop":  # the task leaves the Reasoner batch; the Synthesizer gets doubt_reward
        assert not doubt & {r["task_id"] for r in solver}
        syn = {r["item_id"]: r["reward"] for r in led.query("SELECT item_id, reward FROM rewards WHERE role = 'synthesizer'")}
        assert all(syn[t] == 0.0 for t in doubt)
    else:  # the Reasoner's correctness reward is re-anchored on the screen mode: 3 answers rewarded, 1 not
        for t in doubt:
            rs = [r for r in solver if r["task_id"] == t]
            assert len(rs) == 4 and all(json.loads(r["components_json"])["anchor"] == "mode" for r in rs)
            assert sorted(r["reward"] > 0 for r in rs) == [False, True, True, True]


def test_doubt_screen_off_is_todays_behaviour(tmp_path):
    """Default: arm full's bucket comes from the 2K answers after the update and never reaches the Reasoner."""
    led, _ = run_recipe(tmp_path, "off", ARGS + ["rgbc.doubt_policy=anchor"], steps=4)
    assert not _screen_doubt(led)
    solver = led.query("SELECT components_json FROM rewards WHERE role = 'solver'")
    assert solver and all(json.loads(r["components_json"])["anchor"] == "reference" for r in solver)


def test_no_truth_split_by_hand():
    rows = [{"mu_screen": 0.0, "reference_correct": False}, {"mu_screen": 0.0, "reference_correct": True},
            {"mu_screen": 0.0, "reference_correct": False}, {"mu_screen": 0.5, "reference_correct": True},
            {"mu_screen": 1.0, "reference_correct": False}, {"mu_screen": None, "reference_correct": False}]
    nt = no_truth_split(rows)
    assert (nt["n_accepted"], nt["n"], nt["n_wrong_ref"]) == (5, 3, 2)
    assert nt["share"] == pytest.approx(3 / 5) and nt["wrong_ref_rate"] == pytest.approx(2 / 3)
    assert nt["wrong_ref_rate_rest"] == pytest.approx(1 / 2)


def test_no_truth_split_in_a_run(tmp_path):
    led, _ = run_recipe(tmp_path, "nt", ARGS, steps=2)
    rows = led.query("SELECT mu_screen, reference_correct FROM task_stats WHERE mu_screen IS NOT NULL")
    zero = [r for r in rows if r["mu_screen"] == 0.0]
    nt = teachable_numbers(led, "nt")["no_truth"]
    assert nt["n"] == len(zero) > 0 and nt["n_accepted"] == len(rows)
    assert nt["n_wrong_ref"] == sum(1 for r in zero if r["reference_correct"] is False)


def test_full_arm_rewards_mixed_and_post(tmp_path):
    """Arm full: T(mu~) omega(kappa) with mu~ = (mu_screen + mu_post) / 2 by default; under reward_mu=post
    T(mu_post) omega(kappa), where omega never bites: kappa = 0 means mu_post in {0, 1} and T = 0."""
    for name, extra in (("mix", []), ("post", ["rgbc.reward_mu=post"])):
        led, _ = run_recipe(tmp_path, name, ARGS + extra, steps=3)
        rows = led.query("SELECT s.kappa, s.mu_screen, s.mu_post, s.in_doubt, r.reward, r.components_json FROM "
                         "task_stats s JOIN rewards r ON r.item_id = s.task_id AND r.role = 'synthesizer' "
                         "WHERE s.kappa IS NOT NULL")
        assert any(r["kappa"] == 0 for r in rows) and any(r["kappa"] == 1 for r in rows)
        checked = [r for r in rows if not r["in_doubt"]]
        # rows of both kappas are checked below (an empty or one-sided selection is a failure, not a pass)
        assert {r["kappa"] for r in checked} == {0, 1}, (name, len(rows), len(checked))
        for r in checked:
            c = json.loads(r["components_json"])
            g = quality_gate(c["quality"]) * quality_gate(c["reliability"])
            mu = r["mu_post"] if name == "post" else (r["mu_screen"] + r["mu_post"]) / 2
            w = 1.0 if r["kappa"] == 1 else 0.2
            assert r["reward"] == pytest.approx(g * teachability(mu) * w)
            if name == "post" and r["kappa"] == 0:
                assert r["reward"] == 0.0  # omega(0) multiplies T(0) or T(1) = 0


def test_budget_carry_and_scale(tmp_path):
    """Matched arm synco with rgbc.budget_scale / budget_carry: extra groups = round(scale b groups + owed),
    the remainder owed to the next step (by hand from each step's bearing share)."""
    led, rec = run_recipe(tmp_path, "bc", ["recipe=rgbc", "rgbc.arm=synco", "rgbc.budget_prior=0.3",
                                           "rgbc.budget_scale=1.1", "rgbc.budget_carry=true"], steps=4)
    ms = [json.loads(r["metrics_json"]) for r in led.query("SELECT metrics_json FROM steps WHERE phase = 'train' "
                                                            "ORDER BY step")]
    groups, owed, b = 16 // 4, 0.0, 0.3
    for m in ms:
        want = 1.1 * b * groups + owed
        assert m["n_extra_tasks"] == round(want) * 4
        owed, b = want - round(want), m["bearing_rate"]["value"]
    assert rec.state_dict()["budget_owed"] == pytest.approx(owed)
