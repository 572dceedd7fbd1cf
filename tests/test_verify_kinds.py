"""Verdict contract, every verifier kind with hand-checked values, SQuAD metrics, cache."""
import json

import pytest

from coevo.verify import (CoverEMVerifier, ExactMatchVerifier, MemoryCacheStore, NumericUnitVerifier, RuleVerifier,
                          SympyEquivVerifier, Verdict, VerdictCache, VerifierPool, cache_key, cover_em, exact_match,
                          make_verifier, normalize_answer)
from coevo.verify.checks import check_math, check_numeric_unit, check_sympy_equiv, safe_sympify


def test_verdict_contract():
    with pytest.raises(ValueError):
        Verdict(None)          # abstention without a reason
    with pytest.raises(ValueError):
        Verdict(2)
    v = Verdict(True, kind="rule", version="1", elapsed_s=0.5, detail={"a": 1})
    assert v.value == 1
    row = v.to_row()
    assert row["value"] == 1 and row["abstained"] is False and json.loads(row["detail"]) == {"a": 1}
    a = Verdict(None, "timeout", "math", "v", 1.0)
    assert a.to_row()["abstained"] is True and Verdict.from_row(a.to_row()) == a
    c = Verdict(0, kind="rule", criterion_id="c7")
    assert c.to_row()["criterion_id"] == "c7" and Verdict.from_row(c.to_row()) == c
    assert v.criterion_id is None and v.to_row()["criterion_id"] is None


def test_squad_metrics():
    assert normalize_answer("The  Eiffel-Tower!") == "eiffeltower"
    assert normalize_answer("An apple, a day") == "apple day"
    assert exact_match("the Paris.", ["paris", "london"]) == 1
    assert exact_match("Paris France", "paris") == 0
    assert cover_em("It is Paris, France", ["paris"]) == 1
    assert cover_em("London", ["paris", ""]) == 0
    assert ExactMatchVerifier().verify("Paris", ["paris"]).value == 1
    assert CoverEMVerifier().verify("in paris", ["Paris"]).kind == "cover_em"


def test_rule_modes():
    assert RuleVerifier(mode="regex", pattern=r"\b42\b").verify("the answer is 42.").value == 1
    assert RuleVerifier(mode="contains").verify("Answer: BLUE", "blue").value == 1
    assert RuleVerifier(mode="exact", normalize=True).verify("The Blue", "blue").value == 1
    assert RuleVerifier(mode="contains", negate=True).verify("I am sure", "sorry").value == 1
    assert RuleVerifier(mode="contains").verify(None, "x").reason == "unparsable"
    assert RuleVerifier(mode="contains", max_chars=10).verify("x" * 11, "x").reason == "resource-limit"
    # catastrophic backtracking abstains after the regex timeout instead of hanging
    v = RuleVerifier(mode="regex", pattern=r"(a|aa)+$", timeout_s=0.2).verify("a" * 60 + "b")
    assert v.value is None and v.reason == "timeout"
    v = RuleVerifier(mode="regex", pattern=r"(unclosed").verify("x")
    assert v.value is None and v.reason == "unparsable" and v.detail["side"] == "pattern"
    with pytest.raises(ValueError):
        RuleVerifier(mode="fuzzy")


def test_numeric_unit():
    assert check_numeric_unit("3.0 m/s", "3 m/s").value == 1
    assert check_numeric_unit("1 km", "1000 m").value == 1
    assert check_numeric_unit("$3\\times 10^{8}\\,\\text{m/s}$", "300000 km/s").value == 1
    wrong = check_numeric_unit("3 s", "3 m")
    assert wrong.value == 0 and wrong.detail["note"] == "wrong-unit"   # right number, wrong unit
    assert check_numeric_unit("3", "3 m").detail["note"] == "missing-unit"
    assert check_numeric_unit("3.0001 m", "3 m").value == 0
    assert check_numeric_unit("3.0001 m", "3 m", rel_tol=1e-3).value == 1
    assert check_numeric_unit("about three", "3 m").reason == "unparsable"
    assert check_numeric_unit("3 flurbs", "3 m").value == 0


def test_sympy_equiv_and_safe_parser():
    assert check_sympy_equiv("2*x + x", "3x").value == 1
    assert check_sympy_equiv("sin(x)^2 + cos(x)^2", "1").value == 1
    assert check_sympy_equiv("(x+1)^2", "x^2+2x+1").value == 1
    assert check_sympy_equiv("x+2", "x+1").value == 0
    for evil in ("__import__('os').system('true')", "().__class__", "exec('1')", "open('/etc/passwd')", "a.b"):
        assert safe_sympify(evil) is None
    assert check_sympy_equiv("__import__('os')", "1").reason == "unparsable"


def test_math_checker_in_process_on_trusted_input():
    assert check_math("$\\frac{1}{2}$", "0.5").value == 1
    assert check_math("\\boxed{3}", "4").value == 0
    assert check_math("$28\\sqrt{66}$", "\\sqrt{51744}").value == 1   # via the sympy fallback
    assert check_math("", "1").reason == "unparsable"
    assert check_math("1" * 30000, "1").reason == "resource-limit"


def test_integer_kind():
    v = make_verifier("integer")
    assert [v.verify(a, r).value for a, r in [("42", "042"), ("-7", "-07"), ("4", "5"), ("4.0", "4")]] == [1, 1, 0, 0]
    assert v.verify("x", "4").detail["note"] == "not-an-integer"
    assert v.verify("4", "four").reason == "unparsable" and v.verify(None, "4").reason == "unparsable"
    assert v.verify("1", "1").kind == "integer" and v.verify("1", "1").version == "integer-1"


def test_math_kind_on_extracted_answers():
    from coevo.verify.checks import check_math_answer

    assert check_math_answer("(1,2)", "(1, 2)").value == 1            # bare LaTeX: boxed for math-verify
    assert check_math_answer("(1,2)", "(1, 2)").detail["via"] == "normalized-equal"
    assert check_math_answer(r"\frac{1}{2}", "0.5").value == 1
    assert check_math_answer(r"\boxed{3}", "3").value == 1
    assert check_math_answer("(1,2)", "(2,1)").value == 0
    assert check_math_answer("", "1").reason == "unparsable"
    assert check_math_answer("1", None).reason == "unparsable"
    assert check_math("(1,2)", "(1, 2)").reason == "unparsable"     # the raw checker does not box


def test_factory_and_pooled_kinds():
    with VerifierPool(workers=1, timeout_s=5) as pool:
        nv = make_verifier("numeric_unit", rel_tol=1e-3, pool=pool)
        assert isinstance(nv, NumericUnitVerifier)
        assert [v.value for v in nv.verify_many([("1.0005 m", "1 m"), ("1 s", "1 m")])] == [1, 0]
        sv = SympyEquivVerifier(pool=pool)
        assert sv.verify("x*x", "x^2").value == 1 and sv.verify("x*x", "x^2").kind == "sympy_equiv"
    for kind in ("math", "integer", "numeric_unit", "sympy_equiv", "sandbox_py", "rule", "exact_match", "cover_em"):
        assert make_verifier(kind).kind == kind
    assert make_verifier("llm_judge", base_url="http://127.0.0.1:9/v1", model="m").kind == "llm_judge"
    with pytest.raises(ValueError):
        make_verifier("oracle")


def test_cache_keys_and_batch():
    k = cache_key("llm_judge", "v1", "judge-v1", "c1", "answer")
    assert len(k) == 64 and k == cache_key("llm_judge", "v1", "judge-v1", "c1", "answer")
    assert k != cache_key("llm_judge", "v2", "judge-v1", "c1", "answer")
    assert k != cache_key("llm_judge", "v1", "judge-v2", "c1", "answer")
    assert k != cache_key("llm_judge", "v1", "judge-v1", "c2", "answer")
    store = MemoryCacheStore()
    cache = VerdictCache(store)
    calls = []

    def compute(items):
        calls.append(list(items))
        return [Verdict(int(a == "yes")) if a != "t/o" else Verdict(None, "timeout") for _, a in items]

    items = [("c", "yes"), ("c", "no"), ("c", "yes"), ("c", "t/o")]
    out = cache.get_or_compute_many("rule", "1", None, items, compute)
    assert [v.value for v in out] == [1, 0, 1, None] and len(calls[0]) == 3 and len(store) == 2
    out2 = cache.get_or_compute_many("rule", "1", None, items, compute)
    assert [v.value for v in out2] == [1, 0, 1, None] and calls[1] == [("c", "t/o")]
    row = next(iter(store.rows.values()))
    assert {"key", "kind", "version", "prompt_version", "criterion_id", "answer_hash", "value", "reason"} <= set(row)
