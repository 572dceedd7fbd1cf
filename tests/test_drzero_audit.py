"""The post-hoc FF audit (coevo.recipes.drzero.posthoc, issue #30): one instrument for every arm of the Dr. Zero
family, on scripted policies and the stub facts world (tests/drzero_stub.py), checked by hand; and the controls'
options (crossfit.retrieve_own_source, the by-hop counts of the round audit).  Seconds each."""
from __future__ import annotations

import json

import pytest

from test_drzero import run_recipe, stub_world  # noqa: F401 (the fixture)

AUDIT = ["drzero.audit_prompts=10"]


def test_audit_is_one_step_before_the_last_evaluation(tmp_path):
    _, rec, m, _, _ = run_recipe(tmp_path, "drzero", AUDIT)
    phases = [s.phase for s in rec.plan()]
    assert phases[-2:] == ["posthoc", "eval"] and phases.count("posthoc") == 1
    _, rec0, _, _, _ = run_recipe(tmp_path, "crossfit")
    assert "posthoc" not in [s.phase for s in rec0.plan()]  # off by default


@pytest.mark.parametrize("recipe", ["drzero", "crossfit", "msv+crossfit"])
def test_audit_counts_by_hand(tmp_path, recipe):
    led, rec, m, world, _ = run_recipe(tmp_path, recipe, AUDIT)
    a = m["posthoc"][0]["post_hoc_audit"]
    rows = led.query("SELECT task_id, question, parse_ok, kept, reference, pseudo_label, oracle_answer, meta_json "
                     "FROM tasks WHERE source = 'audit' ORDER BY task_id")
    assert len(rows) == a["contexts"] == 10
    valid = [r for r in rows if r["parse_ok"]]
    assert a["valid"] == len(valid) == 8 and a["accepted"] == sum(bool(r["kept"]) for r in rows) == 8
    # the main solver reads the question's own source: it agrees with every label, so every wrong label
    # (a misread source's question) is a false agreement, whatever the arm
    wrong = [r for r in valid if r["pseudo_label"] != r["oracle_answer"]]
    assert wrong and all(json.loads(r["meta_json"])["source_id"] in world.misread for r in wrong)
    assert (a["false_agreements"], a["audited"]) == (len(wrong), 8) and a["value"] == pytest.approx(len(wrong) / 8)
    assert (a["labels_right"], a["labels_judged"]) == (8 - len(wrong), 8)
    n = led.query("SELECT count(*) AS n FROM rollouts WHERE purpose = 'audit_score' AND role = 'solver'")[0]["n"]
    assert n == 8 * 5 == m["posthoc"][0]["rollouts"]["audit_score"]
    msv = led.query("SELECT count(*) AS n FROM rollouts WHERE purpose LIKE 'audit_msv%'")[0]["n"]
    assert msv == (8 * 6 if recipe == "msv+crossfit" else 0)


def test_crossfit_labels_as_wrong_as_drzero_give_equal_ff(tmp_path):
    """The issue's test: the same proposer labels (the scripted proposer writes what its source states) give the
    same post-hoc FF in Dr. Zero and CrossFit, although CrossFit's scoring group (the other fold's auxiliary
    solver, which never retrieves the question's source) agreed with none of the wrong labels."""
    out = {}
    for recipe in ("drzero", "crossfit", "msv+crossfit"):
        (tmp_path / recipe.replace("+", "_")).mkdir()
        _, _, m, _, _ = run_recipe(tmp_path / recipe.replace("+", "_"), recipe, AUDIT)
        out[recipe] = (m["posthoc"][0]["post_hoc_audit"], m["audit"][0]["false_agreement"])
    ff = {r: (a["false_agreements"], a["audited"]) for r, (a, _) in out.items()}
    assert ff["drzero"] == ff["crossfit"] == ff["msv+crossfit"] and ff["drzero"][0] > 0
    internal = {r: i["value"] for r, (_, i) in out.items()}
    assert internal["crossfit"] == internal["msv+crossfit"] == 0.0 < internal["drzero"]


def test_audit_leaves_the_training_stream_alone(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    led, _, m, _, _ = run_recipe(tmp_path / "a", "drzero", AUDIT)
    led0, _, m0, _, _ = run_recipe(tmp_path / "b", "drzero")
    q = "SELECT rollout_id, text FROM rollouts WHERE purpose NOT LIKE 'audit%' ORDER BY rollout_id"
    assert led.query(q) == led0.query(q) and m["audit"] == m0["audit"]


def test_retrieve_own_source_lets_source_id_agree_again(tmp_path):
    """The control: source-id folds whose scorer may retrieve the question's own source agree with its misreading
    again (FF as with same-source folds); the by-hop counts hold the same totals."""
    _, _, m, _, _ = run_recipe(tmp_path, "crossfit", ["crossfit.retrieve_own_source=true"])
    _, _, m0, _, _ = run_recipe(tmp_path, "drzero")
    a, a0 = m["audit"][0], m0["audit"][0]
    assert a["false_agreement"]["value"] == a0["false_agreement"]["value"] > 0
    by = a["false_agreement_by_hop"]
    assert sum(v["false_agreements"] for k, v in by.items() if k != "scope") == a["n_false_agreement"]
    assert sum(v["n"] for k, v in by.items() if k != "scope") == a["false_agreement"]["n"]


def test_replay_controls_own_source_and_by_hop(tmp_path):
    """The replay keeps each bank question's meta (source, hops): with its own source retrievable a source-id
    scorer agrees with the misread drafts as a same-source scorer does (2 of 8 in the stub), and the by-hop
    counts add up to the round's (a replay that dropped the meta gave 0 and no hops)."""
    res = {}
    for name, extra in (("own", ["crossfit.fold_strategy=source-id", "crossfit.retrieve_own_source=true"]),
                        ("same", ["crossfit.fold_strategy=same-source"]), ("sid", ["crossfit.fold_strategy=source-id"])):
        (tmp_path / name).mkdir()
        _, _, m, _, _ = run_recipe(tmp_path / name, "crossfit", ["crossfit.replay=true", *extra])
        res[name] = m["audit"][0]
    assert res["own"]["false_agreement"]["value"] == res["same"]["false_agreement"]["value"] == 2 / 8
    assert res["sid"]["false_agreement"]["value"] == 0.0
    # the stub's source-id scorer reads a clean source: it agrees with every right label and no wrong one
    assert res["sid"]["agreement_by_truth"] == {"scope": "round", "right": {"agree": 6, "n": 6},
                                                "wrong": {"agree": 0, "n": 2}}
    assert res["own"]["agreement_by_truth"]["wrong"] == {"agree": 2, "n": 2}
    for a in res.values():
        by = {k: v for k, v in a["false_agreement_by_hop"].items() if k != "scope"}
        assert by and sum(v["n"] for v in by.values()) == 8
        assert sum(v["false_agreements"] for v in by.values()) == a["n_false_agreement"]
