"""coevo eval: greedy accuracy, mean@k and Cover-EM on local JSONL files."""
import json

import pytest

from conftest import need_module

from coevo.core.policy import Completion
from coevo.evaluate import EvalError, evaluate_jsonl
from coevo.worlds.math import SAMPLE_EVAL, MathWorld, load_jsonl_tasks


class ScriptedPolicy:
    """Answers from a script: {question: [texts for the k samples]} (greedy = first)."""

    name = "scripted"
    version = "scripted:0"

    def __init__(self, script):
        self.script = script

    def sample(self, prompts, n, sampling):
        out = []
        for p in prompts:
            q = p.split("\n\n")[0]
            texts = self.script[q]
            texts = texts[:1] if sampling.greedy else texts[:n]
            out.append([Completion(prompt=p, text=t, prompt_ids=[], token_ids=[1], logprobs=[0.0]) for t in texts])
        return out


@pytest.fixture(scope="module")
def pool():
    from coevo.verify.pool import VerifierPool

    p = VerifierPool(workers=1, timeout_s=10)
    yield p
    p.close()


@pytest.fixture(scope="module")
def world(pool):
    return MathWorld(pool=pool)


def test_sample_file_is_valid():
    tasks = load_jsonl_tasks(SAMPLE_EVAL)
    assert len(tasks) == 20
    assert {t.meta["difficulty"] for t in tasks} == {"easy", "medium"}


def test_metrics_hand_computed(tmp_path, world, pool):
    f = tmp_path / "mini.jsonl"
    rows = [{"question": "Q1", "answer": "\\frac{1}{2}"}, {"question": "Q2", "answers": ["Paris", "paris france"]},
            {"question": "Q3", "answer": "7", "level": "hard"}, {"question": "Q4", "answer": "10"}]
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    script = {
        "Q1": ["so \\boxed{0.5}", "\\boxed{1/2}", "\\boxed{3}", "no answer"],       # greedy 1, mean@4 2/4
        "Q2": ["\\boxed{Paris}", "\\boxed{the city of Paris}", "\\boxed{Rome}", "\\boxed{paris}"],  # 1; 2/4 (Cover 3/4)
        "Q3": ["\\boxed{8}", "\\boxed{7}", "\\boxed{7.0}", "\\boxed{7}"],           # 0; 3/4
        "Q4": ["the answer is 10", "\\boxed{10}", "\\boxed{1}", "\\boxed{100}"],   # greedy: no box -> 0, cover 1
    }
    r = evaluate_jsonl(ScriptedPolicy(script), world, f, k=4, greedy=True, pool=pool)
    assert r["n"] == 4 and r["verifier_kind"] == "math" and r["verifier_version"].startswith("math-2")
    assert r["accuracy_greedy"] == pytest.approx(2 / 4)
    assert r["mean@4"] == pytest.approx((2 / 4 + 2 / 4 + 3 / 4 + 1 / 4) / 4)
    # Cover-EM greedy: Q1 "0.5" vs "frac12" no; Q2 yes; Q3 no; Q4 whole text covers "10" -> 2/4
    assert r["cover_em_greedy"] == pytest.approx(2 / 4)
    q1 = 0 / 4
    q2 = 3 / 4
    q3 = 3 / 4  # "7", "70" (7.0 -> "70" contains "7"), "7"
    q4 = 3 / 4  # "the answer is 10" (no box: whole text), "10", "100" contains "10"; "1" does not
    assert r["cover_em@4"] == pytest.approx((q1 + q2 + q3 + q4) / 4)
    assert r["no_answer_greedy"] == pytest.approx(1 / 4)
    assert r["by_level"]["hard"]["n"] == 1 and r["by_level"]["hard"]["mean@4"] == pytest.approx(3 / 4)


def test_arithmetic_scored_by_the_integer_kind_in_the_pool(tmp_path, pool):
    from coevo.worlds.arithmetic import ArithmeticWorld

    f = tmp_path / "arith.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in [{"question": "2+3", "answer": "5"},
                                                          {"question": "9-4", "answers": ["5", "five"]},
                                                          {"question": "1+1", "answer": "two"}]))
    w = ArithmeticWorld()

    class Arith(ScriptedPolicy):
        def sample(self, prompts, n, sampling):
            return [[Completion(prompt=p, text=t, prompt_ids=[], token_ids=[1], logprobs=[0.0])
                     for t in self.script[p][:1]] for p in prompts]

    script = {w.solver_prompt(t): [a] for t, a in zip(load_jsonl_tasks(f), ["05", "5", "2"])}
    items = pool.stats["items"]
    r = evaluate_jsonl(Arith(script), w, f, greedy=True, pool=pool)
    assert r["verifier_kind"] == "integer" and pool.stats["items"] == items + 4  # every check in the pool
    assert r["accuracy_greedy"] == pytest.approx(2 / 3)
    assert r["abstained_greedy"] == 1  # "two" is no integer reference: abstains, counted as wrong


def test_errors(tmp_path, world):
    with pytest.raises(EvalError, match="not found"):
        evaluate_jsonl(ScriptedPolicy({}), world, tmp_path / "nope.jsonl", k=1)
    f = tmp_path / "bad.jsonl"
    f.write_text('{"question": "q"}\n')
    with pytest.raises(EvalError, match="answer"):
        evaluate_jsonl(ScriptedPolicy({}), world, f, k=1)


def test_cli_eval_on_shipped_sample():
    need_module("transformers")
    need_module("peft")
    from typer.testing import CliRunner

    from coevo.cli import app

    res = CliRunner().invoke(app, ["eval", "--model", "tiny-llama", "--max-new-tokens", "4", "--k", "2", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout[res.stdout.index("{"):])
    assert out["n"] == 20
    for key in ("accuracy_greedy", "cover_em_greedy", "mean@2", "cover_em@2"):
        assert 0.0 <= out[key] <= 1.0
    bad = CliRunner().invoke(app, ["eval", "--file", "/nonexistent.jsonl"])
    assert bad.exit_code == 2 and "not found" in bad.output
