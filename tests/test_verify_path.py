"""The one verifier path of a run: kinds named by the world, RunVerifier (pool, cache,
criterion ids), majority votes, evaluation through the verifier."""
import random

import pytest

from coevo.core.policy import Completion
from coevo.ledger.store import StepWriter
from coevo.verify.vote import majority_vote
from coevo.verify.run import (RunVerifier, WorldEquivalence, make_run_verifier, pair_key,
                                      run_verifier_from_config)
from coevo.stages.evaluate import evaluate_solver
from coevo.verify import IntegerVerifier, MemoryCacheStore, Verdict, VerifierPool, make_verifier
from coevo.verify.checks import check_math, check_math_answer
from coevo.verify.latex import boxed, normalize_math
from coevo.worlds.arithmetic import ArithmeticWorld
from coevo.worlds.math import MathWorld


@pytest.fixture(scope="module")
def pool():
    with VerifierPool(workers=2, timeout_s=20) as p:
        yield p


def old_int_equivalent(a, b):  # ArithmeticWorld.equivalent before it delegated to the integer kind
    if a is None or b is None:
        return False
    try:
        return int(a) == int(b)
    except ValueError:
        return False


def old_math_equivalent(a, b):  # MathWorld.equivalent before it delegated to the math kind
    if a is None or b is None:
        return False
    if normalize_math(a) == normalize_math(b):
        return True
    return check_math(boxed(a), boxed(b)).value == 1


# the math world's test cases (tests/test_math_world.py, tests/test_eval.py) and a few more
MATH_CASES = [("0.5", r"\frac{1}{2}"), (r"\dfrac{1}{2}", r"\frac{1}{2}"), ("3", "4"), ("2", "2.0"), ("0.5", "1/2"),
              ("3", "1/2"), (r"5\sqrt{2}", r"\sqrt{50}"), ("1/2", "0.5"), (r"\frac12", "1/2"), ("0.5", r"\frac12"),
              ("7.0", "7"), ("8", "7"), ("10", "10"), ("1", "10"), ("100", "10"), ("Paris", "paris"),
              ("(1,2)", "(1, 2)"), (r"\left( 1, 2 \right)", "(1,2)"), (r"2\sqrt{3}", r"\sqrt{12}"), ("", "1"),
              (r"x^{2}+1", r"1+x^2"), (r"\boxed{3}", "3"), ("$\\frac{1}{2}$", "0.5"), (r"\{1,2\}", r"\{2,1\}"),
              (r"90^\circ", "90"), (r"\text{(A)}", "A")]


# ---------------------------------------------------------------- kinds named by the world
def test_worlds_name_their_kind():
    assert ArithmeticWorld().verifier_kind == "integer" and MathWorld().verifier_kind == "math"
    assert WorldEquivalence(ArithmeticWorld()).kind == "integer"
    v = WorldEquivalence(MathWorld())
    assert v.kind == "math" and v.version.startswith("math-2+mv")


def test_math_kind_accepts_bare_latex(pool):
    v = make_verifier("math", pool=pool)
    got = v.verify_many([("(1,2)", "(1, 2)"), (r"\frac{1}{2}", "0.5"), (r"\boxed{3}", "3"), ("(1,2)", "(2, 1)"),
                         (r"\frac{1}{3}", "0.5")])
    assert [x.value for x in got] == [1, 1, 1, 0, 0]
    assert all(x.kind == "math" and x.version.startswith("math-2") for x in got)
    assert make_verifier("math", pool=pool).verify("(1,2)", "(1, 2)").value == 1  # was: abstain unparsable
    assert check_math_answer(None, "1").reason == "unparsable"


@pytest.mark.parametrize("a,b", MATH_CASES)
def test_math_kind_reproduces_old_world_equivalent(a, b):
    assert (check_math_answer(a, b).value == 1) == old_math_equivalent(a, b)
    assert MathWorld().equivalent(a, b) == old_math_equivalent(a, b)


def test_integer_kind_reproduces_old_arithmetic_equivalent():
    rng = random.Random(0)
    pool_ = ["42", "042", "-7", "-07", "+3", " 12 ", "1_0", "10", "4.0", "abc", "", "٣", "3", "0", "-0", None,
             "9" * 5000]
    pairs = [(rng.choice(pool_), rng.choice(pool_)) for _ in range(300)]
    pairs += [(str(rng.randint(-50, 50)), str(rng.randint(-50, 50))) for _ in range(300)]
    w, iv = ArithmeticWorld(), IntegerVerifier()
    for a, b in pairs:
        want = old_int_equivalent(a, b)
        assert w.equivalent(a, b) == want, (a, b)
        assert (iv.verify(a, b).value == 1) == want, (a, b)
    assert iv.verify("abc", "3").value == 0 and iv.verify("3", "abc").reason == "unparsable"
    assert make_verifier("integer").kind == "integer"


# ---------------------------------------------------------------- the run verifier
def test_match_many_none_rules_and_criterion_ids():
    v = make_run_verifier(None, None, ArithmeticWorld())
    out = v.match_many([("42", "042"), (None, "3"), ("3", None), ("4", "5")], criterion_ids=["c1", None, "c3", "c4"])
    assert [x.value for x in out] == [1, 0, None, 0]
    assert [x.reason for x in out] == ["", "no-answer", "no-target", ""]
    assert [x.criterion_id for x in out] == ["c1", None, "c3", "c4"]
    assert all(x.kind == "integer" and x.version == "integer-1" for x in out)
    assert out[0].to_row()["criterion_id"] == "c1" and Verdict.from_row(out[0].to_row()).criterion_id == "c1"
    with pytest.raises(ValueError):
        v.match_many([("1", "1")], criterion_ids=[])


def test_pool_path_equals_in_process(pool):
    rng = random.Random(1)
    ints = [(str(rng.randint(0, 9)), str(rng.randint(0, 9))) for _ in range(200)] + [(None, "1"), ("1", None)]
    for world, pairs in ((ArithmeticWorld(), ints), (MathWorld(), MATH_CASES + [(None, "1"), ("1", None)])):
        a = make_run_verifier(None, None, world).match_many(pairs)
        b = make_run_verifier(None, None, world, pool=pool).match_many(pairs)
        assert [(x.value, x.reason, x.kind, x.version) for x in a] == [(x.value, x.reason, x.kind, x.version) for x in b]


def test_majority_votes_equal_majority_vote_with_world_equivalent(pool):
    rng = random.Random(2)
    w = ArithmeticWorld()
    lists = [[rng.choice(["1", "01", "2", "3", "x", None]) for _ in range(rng.randint(1, 9))] for _ in range(120)]
    lists += [[], [None, None], ["x", "x"]]
    for none_votes in (False, True):
        want = [majority_vote(ans, w.equivalent, none_votes=none_votes) for ans in lists]
        for p in (None, pool):
            got = make_run_verifier(None, None, w, pool=p, none_votes=none_votes).majority_votes(lists)
            assert got == want
    mw = MathWorld()
    mlists = [["1/2", "0.5", "3", None, r"\frac12", None], ["(1,2)", "(1, 2)", "(2,1)"], ["7", "7.0", "8", "8"]]
    got = make_run_verifier(None, None, mw, pool=pool).majority_votes(mlists)
    assert got == [majority_vote(ans, mw.equivalent) for ans in mlists]
    assert [g.label for g in got] == ["1/2", "(1,2)", "7"] and got[0].p_hat == pytest.approx(3 / 6)


class CountingStore(MemoryCacheStore):
    def __init__(self):
        super().__init__()
        self.puts = 0
        self.gets = 0

    def get_many(self, keys):
        self.gets += len(keys)
        return super().get_many(keys)

    def put_many(self, rows):
        self.puts += len(rows)
        super().put_many(rows)


def test_cache_second_call_does_not_recompute(pool):
    store = CountingStore()
    v = make_run_verifier(None, None, MathWorld(), pool=pool, cache_store=store)
    pairs = [("0.5", "1/2"), ("3", "4"), ("0.5", "1/2"), (None, "1"), ("2", "2")]
    first = v.match_many(pairs, criterion_ids=["c", "c", "c", "c", "c"])
    assert [x.value for x in first] == [1, 0, 1, 0, 1] and store.puts == 3  # duplicate and None not stored
    items_before = pool.stats["items"]
    second = v.match_many(pairs, criterion_ids=["c", "c", "c", "c", "c"])
    assert [x.value for x in second] == [1, 0, 1, 0, 1]
    assert store.puts == 3 and pool.stats["items"] == items_before  # nothing recomputed, no pool call
    assert v.cache.hits == 4 and all(x.detail.get("cached") for x in second if x.reason != "no-answer")
    assert [x.criterion_id for x in second] == ["c"] * 5
    v.match_many([("0.5", "1/2")], criterion_ids=["other"])  # another criterion: another key
    assert store.puts == 4
    votes = v.majority_votes([["0.5", "1/2", "3"]])
    assert votes[0].label == "0.5" and votes[0].p_hat == pytest.approx(2 / 3)
    # the comparisons a vote can make (later vs earlier answer): (1/2, 0.5), (3, 0.5), (3, 1/2)
    assert store.puts == 4 + 3
    v.majority_votes([["0.5", "1/2", "3"]])
    assert store.puts == 7


def test_cache_keys_and_ledger_store(tmp_path):
    from coevo.ledger.store import Ledger

    led = Ledger(tmp_path / "l.duckdb")
    try:
        v = make_run_verifier(None, None, ArithmeticWorld(), cache_store=led)
        assert [x.value for x in v.match_many([("1", "01"), ("2", "3")])] == [1, 0]
        assert led.count("verdict_cache") == 2
        v2 = make_run_verifier(None, None, ArithmeticWorld(), cache_store=led)
        out = v2.match_many([("1", "01"), ("2", "3")])
        assert [x.value for x in out] == [1, 0] and v2.cache.hits == 2 and led.count("verdict_cache") == 2
        # other options -> other keys
        v3 = make_run_verifier("numeric_unit", {"rel_tol": 1e-3}, ArithmeticWorld(), cache_store=led)
        v4 = make_run_verifier("numeric_unit", {"rel_tol": 1e-6}, ArithmeticWorld(), cache_store=led)
        assert v3.options_key != v4.options_key and v3.kind == "numeric_unit"
        assert pair_key("1", "01") != pair_key("01", "1")
    finally:
        led.close()


def test_factory_from_config_and_fallback_world():
    from coevo.config import VerifyConfig

    cfg = VerifyConfig(workers=0, kind=None, cache=False)
    v = run_verifier_from_config(cfg, ArithmeticWorld())
    assert isinstance(v, RunVerifier) and v.kind == "integer" and v.cache is None and v.timeout_s == cfg.timeout_s
    v = run_verifier_from_config(VerifyConfig(kind="rule", options={"mode": "exact"}), ArithmeticWorld(),
                                 ledger=MemoryCacheStore())
    assert v.kind == "rule" and v.cache is not None and v.match_many([("a", "A")])[0].value == 1

    class Plain:  # a world without verifier_kind: its own equivalent
        name, prompt_version = "plain", "p1"

        def equivalent(self, a, b):
            return a.lower() == b.lower()

    v = WorldEquivalence(Plain())
    assert v.kind == "world-equivalent" and v.version == "plain:p1"
    assert [x.value for x in v.match_many([("A", "a"), ("b", "a")])] == [1, 0]


# ---------------------------------------------------------------- evaluation
class Scripted:
    """Completions from a table {prompt: [texts]} (greedy: the first)."""

    def __init__(self, table):
        self.table = table

    def sample(self, prompts, n, sampling):
        return [[Completion(p, t, [], [1], [0.0], policy_version="s:1")
                 for t in (self.table[p][:1] if sampling.greedy else self.table[p][:n])] for p in prompts]


def test_evaluate_solver_through_the_verifier(pool):
    from coevo.core.policy import SamplingParams

    w = ArithmeticWorld(eval_per_level=2)
    tasks = list(w.eval_set())
    rng = random.Random(3)
    table = {}
    for t in tasks:
        right = t.reference
        padded = f"0{right}" if not right.startswith("-") else f"-0{right[1:]}"
        table[w.solver_prompt(t)] = [rng.choice([right, str(int(right) + 1), "x", padded]) for _ in range(4)]
    sp = SamplingParams(temperature=1.0, max_new_tokens=8)
    wr = StepWriter()
    from coevo.stages.step import StepContext

    ctx = StepContext(run_id="r", round=1, step=5, world=w, verifier=make_run_verifier(None, None, w, pool=pool),
                      sampling=sp)
    acc = evaluate_solver(ctx, Scripted(table), tasks, wr, greedy=True, samples=4)
    # expected by hand: an answer is right when it is the reference (also with a leading 0)
    def score(texts):
        return sum(1 for x in texts if x != "x" and int(x) == int(ref)) / len(texts)

    assert any(x.startswith(("0", "-0")) for texts in table.values() for x in texts)
    exp = {}
    for t in tasks:
        ref = t.reference
        texts = table[w.solver_prompt(t)]
        exp.setdefault("greedy", []).append(score(texts[:1]))
        exp.setdefault("mean@4", []).append(score(texts))
    for mode in ("greedy", "mean@4"):
        assert acc[mode]["overall"] == pytest.approx(sum(exp[mode]) / len(exp[mode]))
        assert set(acc[mode]["by_difficulty"]) == {t.meta["difficulty"] for t in tasks}
    rows = wr.rows["evals"]
    assert len(rows) == 2 * len(tasks) and rows[0]["policy_version"] == "s:1" and rows[0]["mode"] == "greedy"


def test_per_criterion_verifiers_route_by_criterion_id():
    """verify.criteria: a criterion with a verifier of its own is checked by it; others by the run's kind."""
    from coevo.verify.run import make_run_verifier
    from coevo.worlds.arithmetic import ArithmeticWorld

    rv = make_run_verifier(None, None, ArithmeticWorld(eval_per_level=1), criteria={"half": {"kind": "math"}})
    out = rv.match_many([("0.5", "\\frac{1}{2}"), ("0.5", "\\frac{1}{2}"), ("7", "7"), (None, "3")],
                        ["half", None, "other", "half"])
    assert [v.kind for v in out] == ["math", "integer", "integer", "math"]
    assert [v.value for v in out] == [1, None, 1, 0]  # the integer kind cannot read the reference: abstains
    assert [v.criterion_id for v in out] == ["half", None, "other", "half"]
    assert out[3].reason == "no-answer"
