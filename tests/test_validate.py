import pytest

from coevo.core.policy import Completion
from coevo.verify.run import WorldEquivalence
from coevo.recipes.rgbc.validate import (consensus_check, reasoner_answer, reasoner_rewards,
                                   reliability_parts, validate_outputs)
from coevo.worlds.arithmetic import ArithmeticWorld
from coevo.worlds.synthesis import schema_check

W = ArithmeticWorld(eval_per_level=1)
HARD = ["schema", "well_posed", "consistency", "legality", "redundancy"]
QW = {"schema": 1.0, "well_posed": 1.0, "legality": 1.0, "novelty": 1.0}
RW = {"steps_parse": 1.0, "chain": 1.0, "operands": 1.0, "final": 1.0}


def comp(text, finish="stop"):
    return Completion("<synth>", text, [1], [1], [0.0], finish)


def run(texts, recent=(), finish="stop"):
    return validate_outputs(W, [comp(t, finish) for t in texts], [f"t{i}" for i in range(len(texts))], list(recent),
                            HARD, QW, RW)


def test_schema_reasons():
    assert schema_check("<question>1+2</question><solution>1+2=3</solution><answer>3</answer>") == (True, "")
    assert schema_check("<question>1+2</question><answer>3</answer>") == (False, "missing-solution")
    assert schema_check("<question></question><solution>1+2=3</solution><answer>3</answer>") == (False, "empty-question")
    assert schema_check("<answer>3</answer><question>1+2</question><solution>x</solution>") == (False, "tags-out-of-order")


def test_reliability_parts():
    assert reliability_parts("12+34-5", "12+34=46;46-5=41", "41") == {"steps_parse": 1.0, "chain": 1.0,
                                                                       "operands": 1.0, "final": 1.0}
    # a wrong but self-consistent reference passes every rule (nothing recomputes arithmetic)
    assert reliability_parts("12+34", "12+34=56", "56")["final"] == 1.0
    assert reliability_parts("12+34", "12+34=46", "47")["final"] == 0.0
    assert reliability_parts("12+34-5", "12+34=46;99-5=94", "94")["chain"] == 0.0
    assert reliability_parts("12+34", "12+35=47", "47")["operands"] == 0.0
    assert reliability_parts("12+34", "twelve", "46")["steps_parse"] == 0.0


def test_validator_verdicts_and_reasons():
    good = "<question>12+34</question><solution>12+34=46</solution><answer>46</answer>"
    wrong = "<question>22+34</question><solution>22+34=66</solution><answer>66</answer>"
    mismatch = "<question>13+34</question><solution>13+34=47</solution><answer>48</answer>"
    junk = "<question>14+34</question><solution>14+34=48</solution><answer>48</answer>7"
    badq = "<question>12+</question><solution>12+0=12</solution><answer>12</answer>"
    vals = run([good, wrong, mismatch, junk, badq, good])
    assert [v.ok for v in vals] == [True, True, False, False, False, False]
    assert vals[1].task.reference == "66"  # wrong reference gets through rho (consensus / nu must catch it)
    assert vals[2].checks["consistency"] == (False, "final-value-mismatch")
    assert vals[3].checks["legality"] == (False, "text-outside-tags")
    assert vals[4].checks["well_posed"] == (False, "not-an-expression")
    assert vals[5].checks["redundancy"] == (False, "duplicate-of-recent")
    assert vals[0].reliability == 1.0 and 0.75 <= vals[0].quality <= 1.0
    assert run([good], recent=["12+34"])[0].checks["redundancy"] == (False, "duplicate-of-recent")
    assert run([good], finish="length")[0].checks["legality"] == (False, "no-eos")
    # novelty: 1 - max BLEU to the window; a verbatim repeat has novelty 0
    assert run([good], recent=["12+34"])[0].novelty == pytest.approx(0.0)
    assert run([good])[0].novelty == 1.0


def test_format_recovery_rule():
    assert reasoner_answer(W, Completion("p", "42", [], [], [], "stop")) == ("42", True)
    assert reasoner_answer(W, Completion("p", "42", [], [], [], "length")) == ("42", False)
    assert reasoner_answer(W, Completion("p", "42 7+", [], [], [], "stop")) == ("42", False)
    assert reasoner_answer(W, Completion("p", "<answer>-3</answer>", [], [], [], "stop")) == ("-3", False)
    assert reasoner_answer(W, Completion("p", "72-40=32;32-8=24", [], [], [], "stop")) == ("24", True)
    assert reasoner_answer(W, Completion("p", "72-40=32;32-8=24 7+", [], [], [], "stop")) == ("24", False)
    assert reasoner_answer(W, Completion("p", "72-40=32;32-8=24<answer>", [], [], [], "stop")) == ("24", False)
    assert reasoner_answer(W, Completion("p", "+-", [], [], [], "stop")) == (None, False)
    assert reasoner_rewards([1, 1, 0, None], [True, False, True, False]).tolist() == [1.0, 0.9, 0.0, 0.0]


def test_consensus_check():
    v = WorldEquivalence(W, None)
    res = consensus_check(v, [["5", "5", "6", None], ["7", "8", "8", "8"]], ["5", "9"], min_agree=1)
    assert [r.ok for r in res] == [True, False]
    assert [r.support for r in res] == [2, 0] and res[0].agreement == 0.5
    assert res[1].reason.startswith("unsupported-reference") and len(res[1].verdicts) == 4
    assert [r.ok for r in consensus_check(v, [["5", "5", "6", "6"]], ["5"], min_agree=3)] == [False]
