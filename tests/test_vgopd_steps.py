"""VG-OPD helpers: teacher log-probs (TinyPolicy.completion_logprobs) and the per-token advantages the recipe
hands to update_role (sequence advantage + gated-KL term on licensed rollouts only)."""
import math
from pathlib import Path

import pytest

from coevo.backends.tiny import TinyPolicy
from coevo.core.policy import Completion, SamplingParams
from coevo.recipes.vgopd import RECIPES, expert_roles
from coevo.recipes.vgopd.casa.gating import GateEntry
from coevo.recipes.vgopd.steps import token_advantages

ASSETS = Path(__file__).resolve().parents[1] / "coevo" / "assets"


def test_completion_logprobs_match_sampling_logprobs():
    pol = TinyPolicy.from_checkpoint("student", ASSETS / "criteria_student.pt", seed=3)
    outs = pol.sample(["<solve>7 km per h for 8 h plus 30 km in m;", "<solve>5 cm per s for 2 s plus 10 cm in mm;"],
                      2, SamplingParams(temperature=1.0, max_new_tokens=30))
    comps = [c for cs in outs for c in cs]
    got = pol.completion_logprobs(comps)
    for c, lp in zip(comps, got):
        assert len(lp) == len(c.token_ids)
        assert lp == pytest.approx(c.logprobs, abs=1e-4)  # sampled at T = 1: the same numbers
    assert pol.completion_logprobs([]) == []


class FakePolicy:
    """Fixed per-token log-probs (one list per completion, by prompt)."""

    def __init__(self, by_prompt):
        self.by_prompt = by_prompt
        self.calls = 0

    def completion_logprobs(self, batch):
        self.calls += 1
        return [list(self.by_prompt[c.prompt]) for c in batch]


def _comp(prompt: str, n: int) -> Completion:
    return Completion(prompt=prompt, text="x" * n, prompt_ids=[1], token_ids=[5] * n, logprobs=[0.0] * n)


def test_token_advantages_by_hand():
    comps = [_comp("a", 3), _comp("b", 3)]
    student = FakePolicy({"a": [-1.0, -0.1, -3.0], "b": [-1.0, -1.0, -1.0]})
    expert = FakePolicy({"a": [-0.1, -0.1, -0.5], "b": [0.0, 0.0, 0.0]})
    gates = [[GateEntry("dist", "arithmetic", "expert_x", "failure", 2.0, 2.0, "numeric_unit")], []]
    adv, taught = token_advantages(student, {"expert_x": expert}, comps, [0.5, -0.5], gates, kl_coef=0.1,
                                   tau=math.log(2), clip=10.0)
    # rollout 0: l = s - e = [-0.9, 0.0, -2.5]; |l| >= log 2 on tokens 0 and 2; a_t = 0.5 - 0.1 * 2 * l_t
    assert adv[0] == pytest.approx([0.5 + 0.18, 0.5, 0.5 + 0.5])
    assert adv[1] == -0.5 and taught == [2, 0]  # no licence: the sequence advantage, a float
    assert expert.calls == 1 and student.calls == 1
    adv0, taught0 = token_advantages(student, {"expert_x": expert}, comps, [0.5, -0.5], [[], []], 0.1, 0.7, 10.0)
    assert adv0 == [0.5, -0.5] and taught0 == [0, 0]


def test_recipe_roles():
    roles = RECIPES["vgopd"].roles
    assert roles[0].name == "student" and roles[0].trainable
    experts = expert_roles()
    assert experts and all(not r.trainable and r.asset.startswith("criteria_expert_") for r in experts)
    assert {r.name for r in roles[1:]} == {r.name for r in experts}
    assert all((ASSETS / f"{r.asset}.pt").exists() for r in roles)
