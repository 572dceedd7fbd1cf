"""The control worlds of ``coevo experiment casa-arms`` by hand: the criteria world's ``phi_patterns`` (abstention
patterns drawn whatever the answer says) and ``verdict_rates`` (abstention given the check's own verdict), the
calibration that sets them from the consequential world's counts, and the instrument that counts an undefined r
instead of imputing it."""
import collections
import math

import numpy as np
import pytest

from coevo.criteria.verifier import Channels
from coevo.recipes.vgopd.casa.calibrate import phi_matched_patterns, reversed_rates
from coevo.recipes.vgopd.casa.consequences import phi_shares, reward_bias
from coevo.worlds.criteria import CriteriaWorld

N = 1200


def _abstained(world, answers) -> list:
    """Per (task, answer): the set of criterion ids that abstained."""
    items = [(world.entry(t), a) for t, a in answers]
    return [frozenset(c.id for c, v in zip(e.criteria, vs) if v.value is None)
            for (e, _), vs in zip(items, world.scorer().score(items))]


def _binomial_ok(k: int, n: int, p: float) -> bool:
    return abs(k - n * p) <= 4 * math.sqrt(n * p * (1 - p)) + 1


def test_phi_patterns_draw_each_pattern_at_its_rate_whatever_the_answer():
    pats = {"method": {"setup": 0.1, "order": 0.2, "order+setup": 0.05}, "final": {"final_value": 0.3}}
    w = CriteriaWorld(total_setup=True, phi_patterns=pats)
    tasks = w.sample_tasks(N, seed=3)
    for answers in ([(t, t.solution) for t in tasks], [(t, "7*8=56 km;56+3=59 km;59*1000=59000 m") for t in tasks]):
        got = _abstained(w, answers)  # right answers, then (mostly) wrong ones: the same rates
        method = collections.Counter(ab & {"setup", "order"} for ab in got)
        for ids, p in (({"setup"}, 0.1), ({"order"}, 0.2), ({"setup", "order"}, 0.05), (set(), 0.65)):
            assert _binomial_ok(method[frozenset(ids)], N, p), (ids, method)
        assert _binomial_ok(sum("final_value" in ab for ab in got), N, 0.3)
        assert not any(ab - {"setup", "order", "final_value"} for ab in got)  # other criteria: never drawn


def test_verdict_rates_abstain_given_the_checks_own_verdict():
    w = CriteriaWorld(total_setup=True, verdict_rates={"dist": [0.5, 0.0], "order": [0.0, 0.4]})
    tasks = w.sample_tasks(N, seed=4)
    right = _abstained(w, [(t, t.solution) for t in tasks])  # every criterion passes
    assert _binomial_ok(sum("dist" in ab for ab in right), N, 0.5) and not any("order" in ab for ab in right)
    wrong = _abstained(w, [(t, "7*8") for t in tasks])  # dist and order fail
    assert not any("dist" in ab for ab in wrong) and _binomial_ok(sum("order" in ab for ab in wrong), N, 0.4)


def test_control_channels_change_the_cache_key_only_when_set_and_are_validated():
    assert Channels().tag == "t0-u0-j0-LNone-s0"  # the pinned runs' verifier versions stay as they were
    a, b = Channels(phi_patterns={"m": {"a": 0.1}}), Channels(phi_patterns={"m": {"a": 0.2}})
    assert a.tag != b.tag and "-pp:" in a.tag and "-vr:" in Channels(verdict_rates={"a": [0.1, 0.2]}).tag
    assert Channels(phi_patterns={"m": {"b+a": 0.1}}).phi_patterns == (("m", ((("a", "b"), 0.1),)),)
    with pytest.raises(ValueError, match="one group"):
        Channels(phi_patterns={"m": {"a": 0.1}, "n": {"a+b": 0.1}})
    with pytest.raises(ValueError, match="summing to <= 1"):
        Channels(phi_patterns={"m": {"a": 0.6, "b": 0.6}})
    with pytest.raises(ValueError, match="verdict_rates"):
        Channels(verdict_rates={"a": [1.5, 0.0]})


def test_calibration_of_the_control_worlds_by_hand():
    counts = {"axes": {"method": {"rows": 200, "patterns": {"order": 30, "order+setup": 10}},
                       "units": {"rows": 200, "patterns": {}}},
              "criteria": {"order": {"n": [40, 160], "abstained": [24, 16], "weight": 0.5},
                           "total": {"n": [50, 50], "abstained": [5, 10], "weight": 1.0},
                           "wrong_unit": {"n": [150, 50], "abstained": [15, 1], "weight": -1.0}}}
    assert phi_matched_patterns(counts) == {"method": {"order": 0.15, "order+setup": 0.05}}
    rates = reversed_rates(counts)
    # order: P(abstain | 0) = 0.6, P(| 1) = 0.1, 40 abstentions in all; swapped: 0.6 c on 160 right + 0.1 c on 40
    # wrong = 100 c = 40 -> c = 0.4: 0.24 given 1, 0.04 given 0 (the same 40 abstentions, now on right answers)
    assert rates["order"] == [0.24, 0.04]
    assert rates["total"] == [0.2, 0.1] and rates["wrong_unit"] == [0.02, 0.1]  # already more on the right verdict


def test_an_undefined_r_is_counted_never_imputed():
    # four rows: r defined 0.5 / 1.0 (oracle 0.5 / 0.5), r undefined twice (oracle 1.0 and 0.0), one row without oracle
    r = [0.5, 1.0, np.nan, np.nan, 0.3]
    rt = [0.5, 0.5, 0.0, 0.0, 0.3]
    oracle = [0.5, 0.5, 1.0, 0.0, np.nan]
    b = reward_bias(r, rt, oracle, abstained=[False, True, True, True, False])
    assert (b["rows"], b["r_defined"], b["r_undefined"]) == (4, 2, 2)
    assert b["bias_r"] == pytest.approx(0.25) and b["abs_err_r"] == pytest.approx(0.25)  # (0 + 0.5) / 2
    assert b["oracle_r_undefined"] == pytest.approx(0.5) and b["bias_r_abstained"] == pytest.approx(0.5)
    assert b["bias_r_tilde"] == pytest.approx((0 + 0 - 1 + 0) / 4)
    assert b["bias_r_trained"] == pytest.approx((0 + 0.5 - 1.0 + 0) / 4)  # the training rule: undefined -> 0
    s = phi_shares(["m", "m", "m", "f"], [0.0, 0.5, 1.0, 1.0])
    assert s["m"] == {"rows": 3, "phi_mean": pytest.approx(0.5), "phi_any": pytest.approx(2 / 3),
                      "phi_all": pytest.approx(1 / 3), "phi_p95": pytest.approx(0.95)}
    assert s["f"]["phi_all"] == 1.0
