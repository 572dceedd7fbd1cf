import random

import pytest

from coevo.worlds.arithmetic import LEVELS, ArithmeticWorld, evaluate, generate, level_of


def test_evaluate_precedence_hand_values():
    assert evaluate("2+3*4") == 14
    assert evaluate("7*8-5") == 51
    assert evaluate("12-30+4") == -14
    assert evaluate("3*4*5") == 60
    assert evaluate("10-2-3") == 5


@pytest.mark.parametrize("level", LEVELS)
def test_generated_levels_roundtrip(level):
    rng = random.Random(1)
    for _ in range(50):
        e = generate(level, rng)
        assert level_of(e) == level


def test_parse_task_uses_last_question_block_and_rejects_garbage():
    w = ArithmeticWorld()
    ok = w.parse_task("<question>1+2</question><question>12+30</question>", "t")
    assert ok.ok and ok.task.question == "12+30" and ok.task.meta["difficulty"] == "L3"
    assert w.parse_task("12+30", "t").reason == "no-question-tag"
    assert w.parse_task("<question></question>", "t").reason == "empty-question"
    assert w.parse_task("<question>1++2</question>", "t").reason == "not-an-expression"
    assert w.parse_task("<question>()()</question>", "t").reason == "not-an-expression"
    assert w.oracle(ok.task) == "42"


def test_extract_and_equivalent():
    w = ArithmeticWorld()
    assert w.extract_answer(" 42 ") == "42"
    assert w.extract_answer("-07") == "-7"
    assert w.extract_answer("4 2") is None
    assert w.extract_answer("") is None
    assert w.equivalent("42", "042") and not w.equivalent("42", "41") and not w.equivalent(None, "1")
    assert not w.equivalent("x", "1") and not w.equivalent("1", "x")
    assert w.verifier_kind == "integer"  # the kind whose check ``equivalent`` is


def test_eval_set_is_fixed_and_stratified():
    a, b = ArithmeticWorld(eval_per_level=30).eval_set(), ArithmeticWorld(eval_per_level=30).eval_set()
    assert [t.question for t in a] == [t.question for t in b]
    assert len(a) == 150
    assert {t.meta["difficulty"] for t in a} == set(LEVELS)
    assert len({t.question for t in a}) == 150
    assert all(t.reference == str(evaluate(t.question)) for t in a)


def test_repetition_text_tokens():
    assert ArithmeticWorld().repetition_text("12+7*3") == "12 + 7 * 3"
