"""Criteria bank format (errors name file, line/path and field) and derive-then-verify with a
scripted annotator (coevo/criteria, docs/criteria.md)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from coevo.criteria.bank import BankError, bank_summary, load_bank
from coevo.commands.criteria_derive import derive_bank
from coevo.worlds.criteria import CriteriaWorld
from coevo.worlds.criteria_gen import perturbed_solution

SHIPPED = Path(__file__).resolve().parents[1] / "coevo" / "data" / "criteria" / "bank.jsonl"


def good_entry(**over) -> dict:
    e = {"id": "p1", "prompt": "2 m per s for 3 s plus 1 m in cm", "reference": "2*3=6 m;6+1=7 m;7*100=700 cm",
         "criteria": [
             {"id": "dist", "text": "6 m", "weight": 1, "axis": "arithmetic", "kind": "numeric_unit",
              "locate": "step:1", "spec": {"value": 6, "unit": "m"}},
             {"id": "pen", "text": "time unit", "weight": -1, "axis": "units", "kind": "rule",
              "spec": {"mode": "regex", "pattern": "[0-9] ?s(;|$)"}}]}
    e.update(over)
    return e


def write_lines(tmp_path: Path, objs, name="bank.jsonl") -> Path:
    p = tmp_path / name
    p.write_text("\n".join(o if isinstance(o, str) else json.dumps(o) for o in objs) + "\n")
    return p


def bad_crit(i: int = 0, **over) -> dict:
    e = good_entry()
    e["criteria"][i].update(over)
    return e


@pytest.mark.parametrize("entry, where", [
    (bad_crit(weight=0), "criteria.0.weight: must be > 0"),
    (bad_crit(kind="vibes"), "criteria.0.kind: unknown kind 'vibes'"),
    (bad_crit(spec={"value": 6}), "criteria.0.spec.unit: required for kind numeric_unit"),
    (bad_crit(spec={"value": "six", "unit": "m"}), "criteria.0.spec.value: must be a number"),
    (bad_crit(1, spec={"pattern": "(", "mode": "regex"}), "criteria.1.spec.pattern: invalid regex"),
    (bad_crit(1, spec={"pattern": "x", "colour": 1}), "criteria.1.spec.colour: not a field of kind rule"),
    (bad_crit(locate="step:0"), "criteria.0.locate: 'step:0' is not"),
    (bad_crit(axis=""), "criteria.0.axis:"),
    (good_entry(criteria=[]), "criteria: List should have at least 1 item"),
    (bad_crit(0, weight=-1), "criteria: at least one criterion needs a positive weight"),
    (good_entry(extra_field=1), "extra_field: Extra inputs are not permitted"),
    ({"prompt": "x", "reference": "y", "criteria": good_entry()["criteria"]}, "id: Field required"),
])
def test_errors_name_file_line_and_field(tmp_path, entry, where):
    p = write_lines(tmp_path, [good_entry(id="p0"), entry])
    with pytest.raises(BankError) as e:
        load_bank(p)
    msg = str(e.value)
    assert msg.startswith(f"{p}:2: "), msg
    assert where in msg, msg
    assert "\n" not in msg


def test_json_duplicate_and_empty_errors(tmp_path):
    p = write_lines(tmp_path, [good_entry(), "{not json"])
    with pytest.raises(BankError, match=r"bank\.jsonl:2: entry: not valid JSON"):
        load_bank(p)
    p = write_lines(tmp_path, [good_entry(), "", good_entry()])
    with pytest.raises(BankError, match=r"bank\.jsonl:3: id: duplicate entry id 'p1' \(first at .*:1\)"):
        load_bank(p)
    dup = good_entry()
    dup["criteria"][1]["id"] = "dist"
    with pytest.raises(BankError, match=r":1: criteria: duplicate criterion id 'dist'"):
        load_bank(write_lines(tmp_path, [dup]))
    with pytest.raises(BankError, match="no such bank file"):
        load_bank(tmp_path / "missing.jsonl")


def test_yaml_bank_errors_name_the_path(tmp_path):
    import yaml

    bad = bad_crit(1, spec={"mode": "sometimes", "pattern": "x"})
    p = tmp_path / "bank.yaml"
    p.write_text(yaml.safe_dump({"entries": [good_entry(id="a"), bad]}))
    with pytest.raises(BankError) as e:
        load_bank(p)
    assert str(e.value) == f"{p}: entries[1]: criteria.1.spec.mode: must be regex | contains | exact, got 'sometimes'"
    p.write_text(yaml.safe_dump([good_entry(id="a")]))
    assert [x.id for x in load_bank(p)] == ["a"]


def test_shipped_bank_validates_and_shows_every_kind():
    entries = load_bank(SHIPPED)
    s = bank_summary(entries)
    assert set(s["by_kind"]) >= {"numeric_unit", "sympy_equiv", "sandbox_py", "rule", "integer", "llm_judge", "sim_judge"}
    assert s["penalties"] > 0 and {"arithmetic", "units", "final", "method"} <= set(s["by_axis"])
    assert any(e.meta.get("source") == "derive" for e in entries)


def test_validate_cli_one_line_error(tmp_path):
    from typer.testing import CliRunner

    from coevo.cli import app

    r = CliRunner().invoke(app, ["criteria", "validate", str(SHIPPED), "--json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["ok"] is True
    p = write_lines(tmp_path, [bad_crit(weight=0)])
    r = CliRunner().invoke(app, ["criteria", "validate", str(p)])
    assert r.exit_code == 2
    assert "bank.jsonl:1: criteria.0.weight: must be > 0" in " ".join(r.output.split())


def test_derive_then_verify_with_a_scripted_annotator():
    """Right final -> its steps become criteria; wrong final -> every step rejected
    (endpoint-failed); a malformed step -> that candidate rejected, the others kept; no
    answer -> no-answer; a compensating mistake passes the endpoint but its derived
    checkpoint is marked untrue."""
    w = CriteriaWorld(eval_n=5)
    tasks = list(w.eval_set())
    ps = [w.problem(t) for t in tasks]
    comp = ps[4].steps()
    comp[0] = comp[0].replace(f"={ps[4].dist} ", f"={ps[4].dist + 1} ")  # step 1 wrong, rest right
    answers = [ps[0].solution, perturbed_solution(ps[1], ("factor",)), perturbed_solution(ps[2], ("malformed",)),
               None, ";".join(comp)]
    entries, rej = derive_bank(w, tasks, answers, annotator="scripted")
    by_id = {e.id: e for e in entries}
    assert sorted(by_id) == sorted([tasks[0].task_id, tasks[2].task_id, tasks[4].task_id])
    e0 = by_id[tasks[0].task_id]
    assert [c.id for c in e0.criteria] == ["step1", "expr1", "step2", "expr2", "final_value", "final_unit",
                                           "wrong_unit"]
    assert e0.criterion("step1").spec == {"value": ps[0].dist, "unit": ps[0].src}
    assert e0.criterion("step2").axis == "arithmetic" and e0.meta["truth"] == {"step1": True, "step2": True}
    assert [c.id for c in by_id[tasks[2].task_id].criteria][:2] == ["step2", "expr2"]
    assert by_id[tasks[4].task_id].meta["truth"] == {"step1": False, "step2": True}
    reasons = [(r["prompt_id"], r["reason"]) for r in rej]
    assert reasons == [(tasks[1].task_id, "endpoint-failed")] * 2 + [(tasks[2].task_id, "unparsable-step"),
                                                                      (tasks[3].task_id, "no-answer")]
    assert rej[2]["candidate"] == f"{ps[2].rate}*{ps[2].time}= {ps[2].src}"


def test_derive_cli_oracle(tmp_path):
    from typer.testing import CliRunner

    from coevo.cli import app

    out = tmp_path / "b.jsonl"
    r = CliRunner().invoke(app, ["criteria", "derive", "--annotator", "oracle", "--n", "3", "--out", str(out), "--json"])
    assert r.exit_code == 0, r.output
    d = json.loads(r.stdout)
    assert (d["accepted"], d["rejected_candidates"], d["derived_checkpoints_true"]) == (3, 0, 1.0)
    assert len(load_bank(out)) == 3 and (tmp_path / "b.rejections.jsonl").read_text() == ""
    r = CliRunner().invoke(app, ["criteria", "derive", "--annotator", "nobody", "--n", "2", "--out", str(out)])
    assert r.exit_code == 2 and "annotator 'nobody'" in r.output


def test_every_kind_scores_and_a_hung_check_is_a_real_pool_timeout():
    from coevo.criteria.bank import BankEntry
    from coevo.criteria.scoring import CriteriaScorer
    from coevo.verify.pool import VerifierPool

    hand = load_bank(SHIPPED.with_name("handwritten.jsonl"))
    rows = CriteriaScorer().score([(e, e.reference) for e in hand])
    got = {(v.criterion_id, v.kind): (v.value, v.reason) for row in rows for v in row}
    assert got[("final_recomputed", "sandbox_py")] == (1, "") and got[("check", "sandbox_py")] == (1, "")
    assert got[("product", "integer")] == (1, "") and got[("negative", "rule")] == (0, "")
    assert got[("judged_order", "sim_judge")] == (1, "") and got[("value", "numeric_unit")] == (1, "")
    assert got[("explained", "llm_judge")] == (None, "judge-not-configured")   # no endpoint configured
    slow = BankEntry.model_validate(good_entry(criteria=[
        {"id": "slow", "text": "recompute", "weight": 1, "axis": "final", "kind": "sandbox_py", "locate": "final",
         "spec": {"code": "import time\ntime.sleep(30)\nprint(7)", "timeout_s": 60}}]))
    pool = VerifierPool(workers=1, timeout_s=1.0)
    try:
        v = CriteriaScorer(pool=pool, timeout_s=1.0).score([(slow, "2*3=6 m;6+1=7")])[0][0]
    finally:
        pool.close()
    assert (v.value, v.reason, v.criterion_id) == (None, "timeout", "slow")
