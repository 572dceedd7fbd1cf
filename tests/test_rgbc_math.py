"""SynCo / RGBC on the free-form math world (issue 13 item 1): the Synthesizer format, the free-form
validator (consistency through the run verifier), the 1.0 / 0.9 / 0 Reasoner rewards with \\boxed{}
format recovery, and a whole joint step on scripted policies (no model)."""
from __future__ import annotations

import json
import random
import re

import pytest

from coevo.runner.loop import Loop
from coevo.core.errors import CannotRun

from coevo.core.policy import Completion
from coevo.config import load_config
from coevo.ledger.store import Ledger
from coevo.recipes.rgbc.recipe import RGBCRecipe
from coevo.verify.run import make_run_verifier
from coevo.recipes.rgbc.validate import reasoner_answer, reasoner_rewards, validate_outputs
from coevo.worlds.arithmetic import SYNTH_PROMPT, ArithmeticWorld
from coevo.worlds.math import MathWorld
from coevo.core.world import SYNTHESIS


def _c(text: str, finish: str = "stop", meta: dict | None = None) -> Completion:
    return Completion("p", text, [1], [5], [0.0], finish, "v", meta=meta or {})


def good(n: int = 12) -> str:
    return (f"<question>\nA farmer has {n} cows and buys 7 more. How many cows does he have?\n</question>\n"
            f"<solution>\n{n} + 7 = {n + 7}. The answer is \\boxed{{{n + 7}}}.\n</solution>\n<answer>{n + 7}</answer>")


GOOD = good(12)


def _validate(world, texts, finish="stop", recent=()):
    comps = [_c(t, finish) for t in texts]
    return validate_outputs(world, comps, [f"t{i}" for i in range(len(texts))], list(recent),
                            ["schema", "well_posed", "consistency", "legality", "redundancy"],
                            {"schema": 1, "well_posed": 1, "legality": 1, "novelty": 1},
                            {"steps_parse": 1, "chain": 1, "operands": 1, "final": 1},
                            verifier=make_run_verifier(None, None, world))


def test_world_prompts_and_parse():
    w = MathWorld(prompt_style="fewshot")
    ps = w.synthesizer_prompts(3, seed=0)
    assert len(set(ps)) == 3 and all("Solution:" in p and "\\boxed{" in p for p in ps)
    assert w.response_format(SYNTHESIS).prefix == "Problem:"
    assert w.response_format(SYNTHESIS).stop == ("\nProblem:", "\nExample")
    assert "<solution>" in MathWorld().synthesizer_prompts(1)[0] and MathWorld().response_format(SYNTHESIS) is None
    assert ArithmeticWorld().synthesizer_prompts(2, 5) == [SYNTH_PROMPT] * 2
    s = MathWorld().parse_synthesis(GOOD, "x")
    assert s.task.question.startswith("A farmer") and s.task.reference == "19" and s.solution_answer == "19"
    assert all(ok for ok, _ in s.checks.values())


def test_fewshot_synthesis_parse():
    """Small models: Problem / Solution / "The answer is \\boxed{}" (SmolLM2-135M writes this, not tags)."""
    w = MathWorld(prompt_style="fewshot")
    ok = w.parse_synthesis("Problem: Tom has 3 bags of 8 pens. How many pens?\nSolution: 3 * 8 = 24. "
                           "The answer is \\boxed{24}.\nProblem:", "a", "stop")
    assert (ok.question, ok.solution, ok.answer, ok.solution_answer) == (
        "Tom has 3 bags of 8 pens. How many pens?", "3 * 8 = 24.", "24", "24")
    assert all(v[0] for v in ok.checks.values())
    bad = w.parse_synthesis("Problem: Tom has 4 bags. How many bags?\nSolution: 4 + 1 = 5. The answer is 6.", "b", "length")
    assert (bad.answer, bad.solution_answer) == ("6", "5")  # the validator's verifier call rejects it
    assert w.parse_synthesis("Problem: A snail climbs a well. How many days", "c", "length").checks["schema"] == (
        False, "missing-solution")
    vals = _validate(w, ["Problem: Tom has 4 bags. How many bags?\nSolution: 4 + 1 = 5. The answer is 6."])
    assert vals[0].checks["consistency"] == (False, "final-value-mismatch")


def test_freeform_validator_verdicts():
    w = MathWorld()
    bad_final = good(13).replace("<answer>20</answer>", "<answer>21</answer>")
    equiv = good(14).replace("\\boxed{21}", "\\boxed{\\frac{42}{2}}")  # same value, other form: the verifier decides
    no_ask = good(15).replace("How many cows does he have?", "He is happy.")
    no_sol_answer = good(16).replace("The answer is \\boxed{23}.", "Add them.")
    boxed_ans = good(17).replace("<answer>24</answer>", "<answer>$\\boxed{24}$</answer>")
    outside = "Sure! " + good(18)
    vals = _validate(w, [GOOD, bad_final, equiv, no_ask, no_sol_answer, boxed_ans, outside, GOOD])
    r = [{k: reason for k, (ok, reason) in v.checks.items() if not ok} for v in vals]
    assert vals[0].ok and r[0] == {}
    assert r[1] == {"consistency": "final-value-mismatch"}
    assert vals[2].checks["consistency"] == (True, "")
    assert r[3]["well_posed"] == "no-question-asked"
    assert r[4] == {"consistency": "solution-states-no-answer"}
    assert vals[5].checks["legality"][0] and vals[5].task.reference == "24"
    assert r[6] == {"legality": "text-outside-tags"}
    assert r[7] == {"redundancy": "duplicate-of-recent"}  # verbatim repeat of the first, in-batch
    assert "step-unparsable" not in json.dumps(r)
    cut = _validate(w, [GOOD], finish="length")[0]
    assert cut.checks["legality"] == (False, "no-eos")
    assert vals[0].reliability == 1.0 and vals[1].reliability == 0.0


def test_reasoner_answer_format_recovery():
    w = MathWorld(prompt_style="fewshot", answer_extraction="lenient")
    pre = {"response_prefix": "Solution:"}
    cases = [(_c(" 3 + 4 = 7. The answer is \\boxed{7}.", meta=pre), ("7", True)),
             (_c(" 3 + 4 = 7. The answer is \\boxed{7}", "length", pre), ("7", False)),  # cut: recovered
             (_c(" 3 + 4 = 7. The answer is 7.", meta=pre), ("7", False)),  # no \boxed{}: recovered
             (_c(" I do not know.", meta=pre), (None, False))]
    for comp, want in cases:
        assert reasoner_answer(w, comp) == want
    rew = reasoner_rewards([1, 1, 1, 0], [True, False, False, False])
    assert list(rew) == [1.0, 0.9, 0.9, 0.0]


class _Fake:
    def __init__(self, name: str, seed: int) -> None:
        self.name, self.updates, self.rng = name, 0, random.Random(seed)

    @property
    def version(self) -> str:
        return f"{self.name}+{self.updates}"

    def forward_backward(self, batch, advantages, loss) -> dict:
        return {"loss": 0.0}

    def optim_step(self) -> dict:
        self.updates += 1
        return {"grad_norm": 0.0}

    def set_reference(self):
        pass


class MathSynth(_Fake):
    def sample(self, prompts, n, sampling):
        out = []
        for p in prompts:
            group = []
            for _ in range(n):
                a, b = self.rng.randint(2, 99), self.rng.randint(2, 99)
                ans = a + b if self.rng.random() < 0.8 else a + b + 1  # 20 % inconsistent final answers
                t = (f"<question>\nWhat is {a} plus {b}?\n</question>\n<solution>\n{a} + {b} = {a + b}. "
                     f"The answer is \\boxed{{{a + b}}}.\n</solution>\n<answer>{ans}</answer>")
                group.append(Completion(p, t, [1], [5] * 8, [0.0] * 8, "stop", self.version))
            out.append(group)
        return out


class MathSolver(_Fake):
    def sample(self, prompts, n, sampling):
        out = []
        for p in prompts:
            a, b = map(int, re.findall(r"What is (\d+) plus (\d+)", p)[0])
            pc = ((a * 7 + b) % 5) / 4  # per-task pass rate in {0, .25, .5, .75, 1}
            group = []
            for _ in range(n):
                u = self.rng.random()
                v = a + b if u < pc else a + b + 2
                text = f"{a} + {b} = {v}. " + (f"The answer is \\boxed{{{v}}}." if self.rng.random() < 0.7
                                                else f"The answer is {v}.")
                group.append(Completion(p, text, [1], [5] * 8, [0.0] * 8, "stop", self.version))
            out.append(group)
        return out


def test_rgbc_full_on_math_world_scripted(tmp_path):
    cfg = load_config("smollm2-cpu", None, ["recipe=rgbc", "rgbc.arm=full", "world.prompt_style=rzero",
                                            "synco.tasks_per_step=16", "synco.steps_per_round=2"])
    world = MathWorld.from_config(cfg)
    pols = {"synthesizer": MathSynth("synth", 1), "solver": MathSolver("solver", 2)}
    rec = RGBCRecipe(cfg, world, pols, "m", make_run_verifier(None, None, world))
    led = Ledger(tmp_path / "m.duckdb")
    led.append("runs", [{"run_id": "m", "recipe": "rgbc", "config_yaml": "{}"}])
    loop = Loop(led, "m", rec, pols)
    loop.run([s for s in loop.plan if s.phase == "train"])
    bad = led.query("SELECT reason, count(*) AS n FROM verdicts WHERE target = 'validator:consistency' AND value = 0 "
                    "GROUP BY reason")
    assert {r["reason"] for r in bad} == {"final-value-mismatch"}
    ms = [json.loads(r["metrics_json"]) for r in led.query("SELECT metrics_json FROM steps ORDER BY step")]
    assert all(m["n_validated"] > 0 and m["n_accepted"] > 0 for m in ms)
    purposes = {r["purpose"] for r in led.query("SELECT DISTINCT purpose FROM rollouts")}
    assert {"consensus", "screen", "confirm"} <= purposes
    rew = [r["reward"] for r in led.query("SELECT reward FROM rewards WHERE role = 'solver'")]
    assert set(rew) <= {0.0, 0.9, 1.0} and 0.9 in rew and 1.0 in rew
    ups = led.query("SELECT step, role, n_sequences FROM updates ORDER BY step, role")
    steps = sorted({u["step"] for u in ups})
    assert len(steps) == 2 and [(u["step"], u["role"]) for u in ups] == [(s, r) for s in steps
                                                                          for r in ("solver", "synthesizer")]
    ts = led.columns("SELECT mu_screen, kappa, nu FROM task_stats WHERE mu_screen IS NOT NULL")
    assert ts["mu_screen"] and any(k is not None for k in ts["kappa"])


def test_tiny_backend_on_math_world_is_refused():
    cfg = load_config("cpu", None, ["recipe=rgbc", "world.name=math"])
    with pytest.raises(CannotRun, match="needs a real model"):
        RGBCRecipe(cfg, MathWorld(), {"synthesizer": MathSynth("s", 0), "solver": MathSolver("r", 0)}, "x",
                   make_run_verifier(None, None, MathWorld()))


def test_world_without_synthesizer_format_is_refused():
    class NoSynth:
        name = "nosynth"

    cfg = load_config("smollm2-cpu", None, ["recipe=rgbc"])
    with pytest.raises(CannotRun, match="Synthesizer format"):
        RGBCRecipe(cfg, NoSynth(), {"synthesizer": MathSynth("s", 0), "solver": MathSolver("r", 0)}, "x", None)
