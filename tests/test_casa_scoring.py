"""CASA pure functions (CASA proposal): scoring, arms, gating, gated-KL, rank-reversal conditions. Hand-computed."""
from __future__ import annotations

import math

import numpy as np
import pytest

from coevo.recipes.vgopd.casa.gating import (
    combine_advantages, counterfactual_gain, discount_factor, expert_gate_totals, failure_set, gate_weights,
    gated_kl_advantages, licensed_experts,
)
from coevo.recipes.vgopd.casa.scoring import Check, answer_reward, arm_reward, score_answer, score_axis
from coevo.recipes.vgopd.instruments import inflation_ratios, licensing_rates, rank_reversals, reversal_approx, reversal_exact

MECH = [Check("c1", "mech", 2.0, 1), Check("c2", "mech", 1.0, 0), Check("c3", "mech", 1.0, None, "timeout", "sim_judge"),
        Check("p1", "mech", -1.0, 1), Check("p2", "mech", -0.5, None, "unparsable")]
PREC = {"mech": 0.877, "evid": 0.782}


def test_score_axis_hand_computed():
    s = score_axis(MECH)
    # W = 2 + 1 + 1 = 4; W_A = 1 (c3); phi = 0.25; numerator = 2 - 1 = 1 (p2 abstained: its subtrahend drops)
    assert (s.W, s.W_A, s.phi, s.numerator) == (4.0, 1.0, 0.25, 1.0)
    assert s.r == pytest.approx(1 / 3) and s.r_tilde == pytest.approx(0.25)
    assert s.r_raw / s.r_tilde_raw == pytest.approx(1 / (1 - 0.25), rel=1e-15)
    assert s.scored == ["c1", "c2", "p1"] and s.abstained == {"c3": "timeout", "p2": "unparsable"}
    assert s.failed == ["c2"] and (s.n_scored, s.n_abstained) == (3, 2) and not s.clipped


def test_penalty_abstention_inflates_at_least_one_over_one_minus_phi():
    scored = score_axis([c if c.criterion_id != "p2" else Check("p2", "mech", -0.5, 1) for c in MECH])
    s = score_axis(MECH)
    # p2 scored as firing: numerator 0.5 -> r = 0.5 / 3; abstained: 1 / 3 -> inflation vs r~ >= 1/(1-phi)
    assert scored.r == pytest.approx(0.5 / 3)
    assert s.r / scored.r_tilde >= 1 / (1 - s.phi)


def test_arms_rewards_and_all_abstained():
    s = score_axis(MECH)
    assert arm_reward(s, "A") == pytest.approx(1 / 3)
    assert arm_reward(s, "B") == arm_reward(s, "C") == pytest.approx(0.25)
    allabs = score_axis([Check("c", "x", 1.0, None, "timeout")])
    assert math.isnan(allabs.r) and arm_reward(allabs, "A") == 0.0 and allabs.phi == 1.0
    with pytest.raises(ValueError):
        arm_reward(s, "D")
    two = score_answer(MECH + [Check("e1", "evid", 1.0, 1), Check("e2", "evid", 1.0, 0)])
    assert list(two) == ["mech", "evid"]
    assert answer_reward(two, "B") == pytest.approx((0.25 + 0.5) / 2)
    assert answer_reward(two, "A", {"mech": 3.0, "evid": 1.0}) == pytest.approx((3 / 3 + 0.5) / 4)


def test_bottom_clip_only():
    s = score_axis([Check("c", "x", 1.0, 0), Check("p", "x", -1.0, 1)])
    assert s.numerator == -1.0 and s.r == 0.0 and s.r_tilde == 0.0 and s.clipped


def test_failure_set_and_licensing():
    assert failure_set(MECH) == ["c2"]  # abstentions and penalties never gate
    assert counterfactual_gain(1, None) == 1.0 and counterfactual_gain(None, 0) is None
    ev = {"e1": {"c2": 1, "c3": 1}, "e2": {"c2": 0, "c3": None}, "e3": {"c2": 1}}
    assert licensed_experts(["c2"], ev, 0.5) == {"c2": ["e1", "e3"]}
    assert licensed_experts(["c2"], ev, 0.5, {"c2": 1}) == {"c2": []}


def test_gate_weights_arms_and_discount():
    ev = {"e1": {"c2": 1, "c3": 1}, "e2": {"c2": 0, "c3": None}}
    a = gate_weights("A", MECH, ev, 0.5)
    assert a == gate_weights("B", MECH, ev, 0.5)
    assert [(e.criterion_id, e.expert, e.channel, e.weight) for e in a] == [("c2", "e1", "failure", 1.0)]
    c1 = gate_weights("C", MECH, ev, 0.5, 0.75, "one_minus_precision", PREC.get)
    c2 = gate_weights("C", MECH, ev, 0.5, 0.75, "precision", PREC.get)
    new1 = [e for e in c1 if e.channel == "abstention"]
    new2 = [e for e in c2 if e.channel == "abstention"]
    assert [(e.criterion_id, e.expert) for e in new1] == [("c3", "e1")]
    assert new1[0].weight == pytest.approx(0.123) and new2[0].weight == pytest.approx(0.877)
    assert new1[0].raw_weight == 1.0
    assert new2[0].weight / new1[0].weight == pytest.approx(7.130, abs=1e-3)  # mechanism axis
    assert discount_factor("precision", 0.782) / discount_factor("one_minus_precision", 0.782) == pytest.approx(3.587, abs=1e-3)
    assert expert_gate_totals(c1) == {"e1": pytest.approx(1.123)}
    with pytest.raises(ValueError, match="casa.discount"):
        gate_weights("C", MECH, ev, 0.5, 0.75, None, PREC.get)
    with pytest.raises(ValueError, match="delta_abstain"):
        gate_weights("C", MECH, ev, 0.5, 0.5, "precision", PREC.get)
    # delta_A = 0.99 > 1? no: Delta' = 1 > 0.99 still licenses; an expert verdict 0 never does
    assert len(gate_weights("C", MECH, {"e1": {"c3": 0}}, 0.5, 0.75, "precision", PREC.get)) == 0


def test_gated_kl_localisation_hand_computed():
    s = [-0.1, -2.0, -1.0, -0.5]
    e = {"e1": [-0.1, -0.5, -1.2, -3.0]}
    # l = s - e = [0, -1.5, 0.2, 2.5]; |l| >= log 2 on tokens 1 and 3; a = -0.5 * 1 * l there
    a = gated_kl_advantages(s, e, {"e1": 1.0}, kl_coef=0.5)
    assert a == pytest.approx([0.0, 0.75, 0.0, -1.25])
    assert gated_kl_advantages(s, e, {"e1": 1.0}, 0.5, mask=[1, 1, 1, 0]) == pytest.approx([0, 0.75, 0, 0])
    assert gated_kl_advantages(s, e, {"e1": 1.0}, 0.5, tau=0.0) == pytest.approx([0, 0.75, -0.1, -1.25])
    assert gated_kl_advantages(s, e, {"e1": 2.0}, 0.5, clip=1.0) == pytest.approx([0, 1.0, 0, -1.0])
    assert np.all(gated_kl_advantages(s, {}, {"e1": 0.0}, 0.5) == 0)
    with pytest.raises(ValueError):
        gated_kl_advantages(s, {}, {"e1": 1.0}, 0.5)
    assert combine_advantages(0.5, [0.0, 0.75]) == [0.5, 1.25]


def test_rank_reversal_exact_vs_approximation():
    # r~1 = 0.5, phi1 = 0.2 -> r1 = 0.625; r~2 = 0.3, phi2 = 0.6 -> r2 = 0.75: reversed.
    # exact: 0.5 * 0.6 - 0.3 * 0.2 = 0.24 > Delta = 0.2; approx: phi2 - phi1 = 0.4 < Delta / r-bar = 0.5
    assert reversal_exact(0.5, 0.2, 0.3, 0.6) and not reversal_approx(0.5, 0.2, 0.3, 0.6)
    assert 0.5 / 0.8 < 0.3 / 0.4
    assert not reversal_exact(0.5, 0.0, 0.3, 0.0)
    rr = rank_reversals(["g", "g", "g", "h"], [0.5, 0.3, 0.3, 0.9], [0.2, 0.6, 0.6, 0.0])
    # pairs with Delta > 0 in g: (0,1), (0,2): both reversed exactly, neither by the approximation
    assert (rr["n_pairs"], rr["n_exact"], rr["n_approx"]) == (2, 2, 0) and rr["per_group"] == {"g": 2, "h": 0}
    assert rank_reversals(["g", "g"], [0.5, 0.3], [0.2, 0.6], min_gap=0.25)["n_pairs"] == 0
    # with the oracle's axis scores: pair (0,1) the oracle orders as r~ (0.6 > 0.4), pair (0,2) as r (0.6 < 0.8)
    rr = rank_reversals(["g", "g", "g", "h"], [0.5, 0.3, 0.3, 0.9], [0.2, 0.6, 0.6, 0.0], truth=[0.6, 0.4, 0.8, 1.0])
    assert rr["oracle"] == {"r_tilde": 1, "r": 1, "tie": 0}
    assert "oracle" not in rank_reversals(["g"], [0.5], [0.0])


def test_two_equal_criteria_cannot_reverse_but_three_unequal_can():
    """Why the criteria world's default layout shows no rank reversal, and what its ``total_setup``
    option changes: with two equally weighted criteria r~ is in {0, 1/2, 1} and r~1 > r~2 forces r1 >= r2;
    with weights (1, 1, 0.5) an answer with 1.5 of 2.5 passed (r = 0.6) loses, under r, to one with
    1 passed and 1.5 abstained (r~ = 0.4, phi = 0.6, r = 1)."""
    import itertools

    from coevo.recipes.vgopd.casa.scoring import Check, score_axis

    def states(weights):
        out = []
        for vals in itertools.product((1, 0, None), repeat=len(weights)):
            s = score_axis([Check(f"c{i}", "a", w, v) for i, (w, v) in enumerate(zip(weights, vals))])
            if s.phi < 1:
                out.append((s.r_tilde_raw, s.phi))
        return out

    def any_reversal(weights):
        st = states(weights)
        return any(reversal_exact(a[0], a[1], b[0], b[1]) for a in st for b in st if a[0] > b[0])

    assert not any_reversal((1.0, 1.0)) and not any_reversal((0.5, 0.5))
    assert any_reversal((1.0, 1.0, 0.5))


def test_inflation_ratios_and_licensing_rates():
    inf = inflation_ratios([1 / 3, 0.5, np.nan], [0.25, 0.5, 0.0], [0.25, 0.0, 1.0])
    assert inf["n"] == 2 and inf["max_abs_error"] < 1e-15 and inf["n_zero"] == 1
    lr = licensing_rates(["m", "m", "e"], [2, 1, 1], [1, 1, 0], [1, 0, 2], [1, 0, 0])
    assert lr["m"]["failure"]["rate"] == pytest.approx(2 / 3) and lr["e"]["failure"]["rate"] == 0.0
    assert lr["m"]["abstention"]["rate"] == 1.0 and lr["e"]["abstention"]["candidates"] == 2
    assert 0 < lr["m"]["failure"]["ci_low"] < 2 / 3 < lr["m"]["failure"]["ci_high"] <= 1


def test_unknown_spellings_match_criteria_scores():
    from coevo.recipes.vgopd.casa.scoring import is_abstention

    for v in (None, float("nan"), "unknown", "Abstain", "none", ""):
        assert is_abstention(v)
    assert not is_abstention(0) and not is_abstention(1)
    s = score_axis([Check("a", "x", 1.0, "abstain", "judge-unknown"), Check("b", "x", 1.0, 1)])
    assert s.abstained == {"a": "judge-unknown"} and s.phi == 0.5 and s.r == 1.0 and s.r_tilde == 0.5
