"""Math world: R-Zero prompt, <question> parsing, last balanced \\boxed{}, equivalence."""
import pickle

import pytest

from coevo.core.world import ANSWER, QUESTION
from coevo.recipes.rzero.prompts import CHALLENGER_SYSTEM, DIFFICULTY_LINE
from coevo.worlds.math import MathWorld, last_boxed, load_jsonl_tasks, normalize_math


def test_challenger_prompt_is_rzero_and_configurable():
    w = MathWorld()
    p = w.proposer_prompts(3, seed=0)
    assert len(p) == 3 and p[0] == p[1]
    assert "fewer than 30 % of advanced high-school students could solve it" in p[0]
    assert p[0].startswith("You are an expert competition-math problem setter.")
    assert "<question>\n{The full problem statement on one or more lines}\n</question>" in p[0]
    assert "\\boxed{final_answer}" in p[0]
    assert CHALLENGER_SYSTEM in p[0]
    w2 = MathWorld(difficulty_line="")
    assert "fewer than 30" not in w2.proposer_prompts(1)[0] and w2.prompt_version != w.prompt_version
    assert not w.has_oracle and w.oracle(w.parse_task("<question>x</question>", "t").task) is None


def test_from_config_phrase():
    from types import SimpleNamespace

    from coevo.config import VerifyConfig, WorldConfig

    cfg = SimpleNamespace(world=WorldConfig(challenger_prompt_line="fewer than 30% of advanced high-school students could solve it"),
                          verify=VerifyConfig(timeout_s=3.0))
    assert MathWorld.from_config(cfg).difficulty_line == DIFFICULTY_LINE
    cfg.world.challenger_prompt_line = "fewer than 10% of olympiad medalists could solve it"
    w = MathWorld.from_config(cfg)
    assert "Aim for a difficulty such that fewer than 10% of olympiad medalists could solve it. " in w.proposer_prompts(1)[0]


@pytest.mark.parametrize("text,expected", [
    (r"so \boxed{\frac{1}{2}} then \boxed{x^{2}+1}", "x^{2}+1"),
    (r"\boxed{ {a}{b} }", "{a}{b}"),
    (r"first \boxed{3} then \boxed{4", "3"),  # last one unclosed: fall back to the previous
    (r"\fbox{7}", "7"),
    ("no box here", None),
    ("", None),
])
def test_last_boxed(text, expected):
    assert last_boxed(text) == expected


def test_parse_task():
    w = MathWorld()
    r = w.parse_task("think...<question>A</question> junk <question>\nWhat is 1+1?\n</question>\n\n\\boxed{2}", "t1")
    assert r.ok and r.task.question == "What is 1+1?" and r.task.reference == "2" and r.task.task_id == "t1"
    assert w.parse_task("no tags \\boxed{2}", "t").reason == "no-question-tag"
    assert w.parse_task("<question>  </question>", "t").reason == "empty-question"
    assert w.parse_task("<question>Q</question>", "t").task.reference is None


def test_solver_prompt_and_extract():
    w = MathWorld()
    from coevo.core.world import Task

    p = w.solver_prompt(Task("t", "What is 2+2?"))
    assert p.startswith("What is 2+2?") and "\\boxed{}" in p
    assert w.extract_answer("so the answer is \\boxed{4}.") == "4"


def test_equivalent_inline_and_pickle():
    w = MathWorld()
    assert w.equivalent("0.5", r"\frac{1}{2}")
    assert w.equivalent(r"\dfrac{1}{2}", r"\frac{1}{2}")  # fast path
    assert not w.equivalent("3", "4")
    assert not w.equivalent(None, "4")
    assert w.equivalent("(1,2)", "(1, 3-1)") and not w.equivalent("(1,2)", "(2,1)")  # bare LaTeX tuples
    assert w.verifier_kind == "math"
    assert normalize_math(r"$\left( 1, 2 \right)$.") == "(1,2)"
    w2 = pickle.loads(pickle.dumps(w))  # the run loop pickles the world into pool workers
    assert w2.equivalent("2", "2.0")


def test_verdicts_through_pool_and_grouping():
    from coevo.verify.pool import VerifierPool

    with VerifierPool(workers=1, timeout_s=10) as pool:
        w = MathWorld(pool=pool)
        vs = w.verdicts([("0.5", "1/2"), ("3", "1/2"), (None, "1"), (r"5\sqrt{2}", r"\sqrt{50}")])
        assert [v.value for v in vs] == [1, 0, None, 1]
        assert vs[2].reason == "unparsable"
        assert w.group_answers(["1/2", "0.5", "3", None, r"\frac12", None]) == [0, 0, 1, 2, 0, 2]


def test_eval_set_is_the_shipped_sample():
    tasks = MathWorld().eval_set()
    assert len(tasks) == 20 and len({t.task_id for t in tasks}) == 20
    assert all(t.reference for t in tasks)
    multi = [t for t in tasks if len(t.meta["answers"]) > 1]
    assert multi and multi[0].reference == multi[0].meta["answers"][0]


def test_load_jsonl_errors(tmp_path):
    p = tmp_path / "bad.jsonl"
    p.write_text('{"question": "q"}\n')
    with pytest.raises(ValueError, match="answer"):
        load_jsonl_tasks(p)
    p.write_text('not json\n')
    with pytest.raises(ValueError, match="not JSON"):
        load_jsonl_tasks(p)
    p.write_text('{"problem": "q", "golden_answers": ["a", "b"]}\n\n')
    t = load_jsonl_tasks(p)
    assert t[0].question == "q" and t[0].meta["answers"] == ["a", "b"]


# ---------------------------------------------------------------- small-model options
def test_fewshot_prompts_prefill_and_parse():
    from coevo.core.policy import Completion, SamplingParams, full_text
    from coevo.core.world import role_sampling
    from coevo.worlds.math import FEWSHOT_EXAMPLES

    w = MathWorld(prompt_style="fewshot")
    p = w.proposer_prompts(3, seed=1)
    assert len(set(p)) == 3 and FEWSHOT_EXAMPLES[1][0] in p[0] and "\\boxed{180}" in p[0]
    assert w.prompt_version == "math-fewshot-v1" and MathWorld().prompt_version == "math-rzero-v1"
    sp = role_sampling(w, QUESTION, SamplingParams(stop=["X"]))
    assert sp.response_prefix == "<question>\n" and sp.stop[0] == "X" and "</question>" in sp.stop and "\n\n" in sp.stop
    assert role_sampling(MathWorld(), QUESTION, SamplingParams()) == SamplingParams()  # rzero: untouched
    assert role_sampling(w, ANSWER, SamplingParams()).response_prefix == "Solution:"
    assert w.solver_prompt(w.parse_task("<question>\nHow many?\n</question>", "t").task).endswith("Problem: How many?")

    def parse(gen, stop):
        c = Completion("p", gen, [], [], [], meta={"response_prefix": "<question>\n", "stop": stop})
        return w.parse_task(full_text(c), "t")

    assert parse("Tom has 3 pens. How many pens?\n", "</question>").task.question == "Tom has 3 pens. How many pens?"
    assert parse("Tom has 3 pens. How many?", "Answer:").task.question == "Tom has 3 pens. How many?"
    assert parse("Tom has 3 pens. How many?", "\n\n").ok
    assert parse("Tom has 3 pens. How many?", None).reason == "no-question-end"  # cut by length
    assert parse("Tom has 3 pens.", "\n\n").reason == "no-question-mark"
    assert parse("  ", "</question>").reason == "empty-question"
    assert w.parse_task("How many?\n\n", "t").reason == "no-question-tag"
    # the R-Zero style keeps the strict parse
    assert MathWorld().parse_task("<question>\nHow many?\n\n", "t").reason == "no-question-tag"


@pytest.mark.parametrize("text,boxed_only,lenient", [
    ("3 x 8 = 24. The answer is \\boxed{24}.", "24", "24"),
    ("25 - 15 = 10. The answer is 10.", None, "10"),
    ("so the answer is 1,024 pages", None, "1024"),
    ("The answer: $-3.5", None, "-3.5"),
    ("Answer = 7 and then the answer is 9", None, "9"),
    ("x \\boxed{7}; the answer is 3", "7", "7"),  # a box wins
    ("no final answer here, 42", None, None),
])
def test_answer_extraction(text, boxed_only, lenient):
    assert MathWorld().extract_answer(text) == boxed_only
    w = MathWorld(answer_extraction="lenient")
    assert w.extract_answer(text) == lenient and w.prompt_version.endswith("+lenient")


def test_bad_options_are_rejected():
    with pytest.raises(ValueError, match="prompt_style"):
        MathWorld(prompt_style="chatty")
    with pytest.raises(ValueError, match="answer_extraction"):
        MathWorld(answer_extraction="any")
    assert MathWorld().repetition_text("a b  c") == "a b  c"
