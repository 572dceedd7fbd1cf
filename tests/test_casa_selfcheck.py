"""CASA config (no silent discount default) and the zero-abstention self-check (CASA proposal §method)."""
from __future__ import annotations

import pytest

from coevo.recipes.vgopd.casa.config import CasaConfig, CasaConfigError, casa_config
from coevo.recipes.vgopd.casa.scoring import Check
from coevo.recipes.vgopd.casa.selfcheck import CasaSelfCheckError, arm_outputs, check_zero_abstention, self_check_group


def test_arm_c_without_discount_fails_in_one_line():
    with pytest.raises(CasaConfigError) as e:
        casa_config({"arm": "C"})
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("casa.discount: required when casa.arm = C")
    assert casa_config({"arm": "C", "discount": "precision"}).discount == "precision"
    assert casa_config({"arm": "A"}).discount is None and CasaConfig().arm == "A"
    with pytest.raises(CasaConfigError, match=r"^casa.delta_abstain: must exceed casa.delta"):
        casa_config({"delta": 0.5, "delta_abstain": 0.4})
    with pytest.raises(CasaConfigError, match=r"^casa.discount: "):
        casa_config({"arm": "C", "discount": "half"})
    with pytest.raises(CasaConfigError, match=r"^casa.bogus: unknown field"):
        casa_config({"bogus": 1})


def _group(abstain: bool):
    rows = []
    for k, (v1, v2, v3) in enumerate([(1, 0, 1), (0, 0, 1), (1, 1, 0)]):
        rows.append([Check("a", "mech", 1.0, v1), Check("b", "mech", 2.0, v2), Check("p", "mech", -1.0, 1 - v3),
                     Check("e", "evid", 1.0, None if (abstain and k == 1) else v3, "timeout"),
                     Check("f", "evid", 1.0, 1)])
    return rows


EXPERTS = {"x": {"a": 1, "b": 1, "e": 1}, "y": {"a": 0, "b": 1, "e": None}}
CFG = CasaConfig(arm="C", discount="one_minus_precision", precision={"mech": 0.877, "evid": 0.782})


def test_zero_abstention_arms_identical():
    out = self_check_group(3, "task-1/g0", _group(False), EXPERTS, CFG)
    assert set(out) == {"A", "B", "C"}
    assert out["A"]["rewards"] == out["B"]["rewards"] == out["C"]["rewards"]
    assert out["A"]["advantages"] == out["C"]["advantages"]
    assert [len(g) for g in out["C"]["gates"]] == [2, 3, 1]  # b by x,y; a by x + b by x,y; e by x
    assert check_zero_abstention(3, "g", out, abstained=False) is True


def test_abstaining_group_differs_but_is_not_checked():
    out = arm_outputs(_group(True), EXPERTS, CFG)
    assert out["A"]["rewards"] != out["B"]["rewards"]  # r vs r~ on the abstaining rollout
    assert any(e.channel == "abstention" for e in out["C"]["gates"][1])
    assert check_zero_abstention(5, "g", out, abstained=True) is False
    a_only = self_check_group(5, "g", _group(True), EXPERTS, CasaConfig(arm="A"))  # no discount needed in A
    assert set(a_only) == {"A"}


def test_injected_difference_raises_one_line():
    out = arm_outputs(_group(False), EXPERTS, CFG)
    out["B"]["rewards"][2] += 1e-9
    with pytest.raises(CasaSelfCheckError) as e:
        check_zero_abstention(7, "task-9/g2", out, abstained=False)
    msg = str(e.value)
    assert "\n" not in msg
    assert msg == ("CASA self-check failed at step 7, group task-9/g2: arms A and B differ in rewards[2] although "
                   "no rollout of the group abstained")
    out = arm_outputs(_group(False), EXPERTS, CFG)
    out["C"]["gates"][0] = out["C"]["gates"][0][:1]
    with pytest.raises(CasaSelfCheckError, match=r"step 7, group g: arms A and C differ in gates\[0\]"):
        check_zero_abstention(7, "g", out, abstained=False)
