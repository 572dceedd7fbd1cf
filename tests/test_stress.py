"""`coevo stress BANK` (coevo/recipes/vgopd/casa/stress.py): adversarial answers, labels, the sandboxed recomputation,
break rates per verifier kind with Wilson intervals, and the JSON CASA-P4 reads."""
import json
import sys
from pathlib import Path

import pytest

from coevo.audit.stats import wilson_interval
from coevo.criteria.bank import Criterion, load_bank
from coevo.recipes.vgopd.casa.stress import adversarial_answers, recompute_truths, should_fail, stress_bank
from coevo.recipes.vgopd.predictions import stress_break_rates

sys.path.insert(0, str(Path(__file__).parent))
from conftest import REPO, run_coevo  # noqa: E402

REF = "7*8=56 km;56+30=86 km;86*1000=86000 m"
ENTRY = {"id": "fx-1", "prompt": "7 km per h for 8 h plus 30 km in m", "reference": REF, "criteria": [
    {"id": "dist", "text": "56 km", "weight": 1, "axis": "arithmetic", "kind": "numeric_unit", "locate": "step:1",
     "spec": {"value": 56, "unit": "km"}},
    {"id": "setup", "text": "set up as 7*8", "weight": 0.5, "axis": "method", "kind": "sympy_equiv",
     "locate": "expr:1", "spec": {"expr": "7*8"}},
    {"id": "final_unit", "text": "stated in m", "weight": 1, "axis": "units", "kind": "rule", "locate": "final",
     "spec": {"mode": "regex", "pattern": "^[0-9]+ ?m$"}},
    {"id": "time_unit", "text": "a time unit (penalty)", "weight": -1, "axis": "units", "kind": "rule",
     "locate": "all", "spec": {"mode": "regex", "pattern": "[0-9] ?(s|min|h)(;|$)"}}]}


@pytest.fixture
def bank(tmp_path) -> Path:
    p = tmp_path / "bank.jsonl"
    p.write_text(json.dumps(ENTRY) + "\n")
    return p


def test_adversarial_answers_by_hand():
    a = adversarial_answers(REF, "step:2")
    assert a["jump_to_end"] == "86000 m"
    assert a["wrong_unit"] == "7*8=56 km;56+30=86 m;86*1000=86000 m"
    assert a["wrong_sign"] == "7*8=56 km;56+30=-86 km;86*1000=86000 m"
    assert a["off_by_factor"] == "7*8=56 km;56+30=860 km;86*1000=86000 m"
    assert a["unitless"] == "7*8=56 km;56+30=86;86*1000=86000 m"
    assert a["hedge"] == "7*8=56 km;56+30=86 km or 860 km;86*1000=86000 m"
    assert a["wrong_sci"] == "7*8=56 km;56+30=8.6e2 km;86*1000=86000 m"
    assert a["sci_notation"] == "7*8=56 km;56+30=8.6e1 km;86*1000=86000 m"
    assert a["no_space"] == "7*8=56 km;56+30=86km;86*1000=86000 m"
    e = adversarial_answers(REF, "expr:1")
    assert set(e) == {"vacuous", "jump_to_end", "wrong_sign", "off_by_factor", "value_as_expr"}
    assert e["value_as_expr"] == "56=56 km;56+30=86 km;86*1000=86000 m"
    assert e["wrong_sign"].startswith("-(7*8)=56 km;")


def test_construction_labels():
    num = Criterion(id="d", text="t", weight=1, axis="arithmetic", kind="numeric_unit", locate="step:1",
                    spec={"value": 56, "unit": "km"})
    unit_rule = Criterion(id="u", text="t", weight=1, axis="units", kind="rule", locate="final",
                          spec={"pattern": "m$"})
    assert [should_fail(num, f) for f in ("jump_to_end", "wrong_unit", "hedge", "sci_notation")] == \
        [True, True, True, False]
    # a unit rule on the final value: value corruptions and the end value alone should still pass it
    assert [should_fail(unit_rule, f) for f in ("jump_to_end", "wrong_unit", "unitless", "wrong_sign", "vacuous")] == \
        [False, True, True, False, True]


def test_recompute_in_sandbox():
    items = [{"kind": "numeric_unit", "spec": {"value": 1060, "unit": "mm"}, "part": "1.06e3 mm"},
             {"kind": "numeric_unit", "spec": {"value": 1060, "unit": "mm"}, "part": "106 cm"},
             {"kind": "numeric_unit", "spec": {"value": 1060, "unit": "mm"}, "part": "1060 cm"},
             {"kind": "numeric_unit", "spec": {"value": 1060, "unit": "mm"}, "part": "1060"},
             {"kind": "integer", "spec": {"value": 391}, "part": "391"},
             {"kind": "sympy_equiv", "spec": {"expr": "17*23"}, "part": "23*17"},
             {"kind": "sympy_equiv", "spec": {"expr": "17*23"}, "part": "-(17*23)"},
             {"kind": "sandbox_py", "spec": {"code": "print(17*23+5)"}, "part": "396"},
             {"kind": "rule", "spec": {"pattern": "x"}, "part": "x"},
             {"kind": "numeric_unit", "spec": {"value": 1, "unit": "mm"}, "part": None}]
    truths, info = recompute_truths(items)
    assert info["reason"] == "ok"
    assert truths == [1, 1, 0, 0, 1, 1, 0, 1, None, 0]


def test_stress_bank_numbers(bank):
    res = stress_bank(load_bank(bank))
    k = res["by_kind"]
    assert res["skipped_penalties"] == 1 and res["sandbox"]["reason"] == "ok"
    # dist: 10 families apply, the 2 controls should pass (sandbox agrees), 8 should fail, none passes
    assert (k["numeric_unit"]["n"], k["numeric_unit"]["broken"], k["numeric_unit"]["n_should_pass"]) == (8, 0, 2)
    assert k["numeric_unit"]["n_recomputed"] == 10 and k["numeric_unit"]["label_disagreements"] == 0
    # setup: 5 should fail; "56=56 km" (value written as the set-up) is accepted by sympy_equiv: a break
    assert (k["sympy_equiv"]["n"], k["sympy_equiv"]["broken"]) == (5, 1)
    assert k["sympy_equiv"]["by_family"]["value_as_expr"] == {"n": 1, "broken": 1}
    assert k["sympy_equiv"]["rate"] == pytest.approx(0.2)
    lo, hi = wilson_interval(0.2, 5)
    assert (k["sympy_equiv"]["ci_low"], k["sympy_equiv"]["ci_high"]) == (pytest.approx(lo), pytest.approx(hi))
    # final_unit (rule, units axis): vacuous, wrong_unit, unitless should fail; 7 should pass, of which the
    # regex rejects -86000 m, the hedge and both scientific notations
    assert (k["rule"]["n"], k["rule"]["broken"], k["rule"]["n_should_pass"], k["rule"]["false_rejects"]) == (3, 0, 7, 4)
    assert res["deterministic"]["n"] == 16 and res["deterministic"]["broken"] == 1
    assert res["judge"] is None
    assert res["break_examples"][0]["answer"] == "56=56 km;56+30=86 km;86*1000=86000 m"


def test_cli_json_is_what_p4_reads(bank, tmp_path):
    out = tmp_path / "stress.json"
    p = run_coevo("stress", str(bank), "--json", "--out", str(out))
    printed = json.loads(p.stdout)
    assert json.loads(out.read_text())["by_kind"] == printed["by_kind"]
    rates = stress_break_rates(out)
    assert rates["sympy_equiv"]["n"] == 5 and rates["sympy_equiv"]["broken"] == 1
    assert rates["numeric_unit"]["rate"] == 0.0


def test_cli_errors(bank, tmp_path):
    for args, msg in (([str(tmp_path / "none.jsonl")], "bank not found"),
                      ([str(bank), "--family", "nope"], "unknown adversarial family 'nope'")):
        p = run_coevo("stress", *args, check=False)
        assert p.returncode == 2 and msg in p.stderr and len(p.stderr.strip().splitlines()) == 1


def test_shipped_bank():
    """The shipped bank (package data: a missing file is the failure this test is for) under stress: cases per
    verifier kind and the deterministic break count pinned (measured 2026-12-06 on the bank of b208267)."""
    shipped = REPO / "coevo" / "data" / "criteria" / "bank.jsonl"
    assert shipped.is_file(), f"the shipped criteria bank is missing: {shipped}"
    bank = load_bank(shipped)
    assert len(bank) == 19
    res = stress_bank(bank)
    assert res["sandbox"]["reason"] == "ok"
    assert {k: v["n"] for k, v in res["by_kind"].items()} == {
        "integer": 7, "llm_judge": 2, "numeric_unit": 374, "rule": 56, "sandbox_py": 11, "sim_judge": 2,
        "sympy_equiv": 165}
    assert (res["deterministic"]["n"], res["deterministic"]["broken"]) == (613, 27)
    for kind, v in res["by_kind"].items():
        assert 0 <= v["broken"] <= v["n"] and v["n_abstained"] <= v["n"] - v["broken"]
    assert res["deterministic"]["n"] == sum(v["n"] for v in res["by_kind"].values() if v["deterministic"])
    # every recomputable case of numeric_unit was recomputed in the sandbox
    assert res["by_kind"]["numeric_unit"]["n_recomputed"] > 0
