"""Dr. Zero, MSV and CrossFit recipe steps on scripted policies and a stub facts world
(tests/drzero_stub.py): rewards, acceptance, fold assignment and fold-restricted retrieval,
checked by hand.  Seconds each; no checkpoints."""
from __future__ import annotations

import json

import numpy as np
import pytest

from coevo.runner.loop import Loop
from coevo.config import load_config
from coevo.ledger.store import Ledger
from coevo.recipes.drzero import steps
from coevo.recipes.drzero.crossfit import (question_fold, retrieval_sources, scorer_fold, source_folds,
                                           split_by_fold)
from coevo.core.registry import get_recipe, load
from coevo.verify.run import WorldEquivalence
from drzero_stub import FakeProposer, FakeSolver, StubFactsWorld


@pytest.fixture(autouse=True)
def stub_world(monkeypatch):
    import coevo.worlds as W

    monkeypatch.setitem(W.WORLDS, "facts", "drzero_stub:StubFactsWorld")


def run_recipe(tmp_path, recipe: str, extra=(), misread=("src0", "src1")):
    cfg = load_config("cpu", None, [f"recipe={recipe}", "world.name=facts", "drzero.rounds=1", "drzero.prompts=10",
                                    "drzero.proposer_steps=1", "drzero.solver_steps=1", "crossfit.aux_steps=1", *extra])
    world = StubFactsWorld(misread=frozenset(misread))
    pols = {"proposer": FakeProposer(world), "solver": FakeSolver("solver"), "aux_a": FakeSolver("aux_a"),
            "aux_b": FakeSolver("aux_b")}
    rec = load(get_recipe(recipe).factory)(cfg, world, pols, recipe, WorldEquivalence(world, None))
    led = Ledger(tmp_path / f"{recipe.replace('+', '_')}.duckdb")
    led.append("runs", [{"run_id": recipe, "recipe": recipe, "config_yaml": "{}"}])
    metrics = {}
    for spec, m in Loop(led, recipe, rec, pols).run():  # the one step loop (a transaction per step)
        metrics.setdefault(spec.phase, []).append(m)
    return led, rec, metrics, world, pols


# ---------------------------------------------------------------------- formulas
def test_proposer_reward_by_hand():
    # Dr. Zero: 0.5 x format + (5 - k)/4 for 0 < k < 5, 0 at k = 0 / 5; k = -1: no scoring group
    r = steps.proposer_reward([1, 1, 1, 1, 1, 0, 1], [0, 1, 2, 4, 5, -1, -1], n=5, format_weight=0.5)
    assert r.tolist() == pytest.approx([0.5, 1.5, 1.25, 0.75, 0.5, 0.0, 0.5])
    # CrossFit with the line at the ends: f(0) = 5/4, f(5) = 0
    r = steps.proposer_reward([1, 1], [0, 5], n=5, format_weight=0.0, outside="extrapolate")
    assert r.tolist() == pytest.approx([1.25, 0.0])


def test_hop_bucket_advantages_by_hand():
    # bucket 1: rewards 1, 0 -> mean 0.5, population std 0.5 -> +-1; bucket 2 alone -> 0
    a = steps.hop_advantages([1.0, 0.0, 0.7], [1, 1, 2])
    assert a.tolist() == pytest.approx([1 / (0.5 + 1e-6) * 0.5, -0.5 / (0.5 + 1e-6), 0.0])


def test_proposer_reward_is_drzero_reward_by_default():
    from coevo.recipes.drzero.rewards import drzero_proposer_reward

    k = np.array([0, 1, 2, 3, 4, 5])
    assert steps.proposer_reward(np.ones(6), k).tolist() == pytest.approx(drzero_proposer_reward(np.ones(6), k).tolist())


def test_fold_assignment_by_strategy():
    srcs = [f"src{i}" for i in range(8)]
    folds = source_folds(srcs, seed=0)
    assert sorted(folds.values()).count(0) == 4 and set(folds) == set(srcs)
    assert folds == source_folds(reversed(srcs), seed=0)  # order-free, seeded
    f_a = next(s for s, f in folds.items() if f == 0)
    for strategy in ("source-id", "same-source"):
        assert question_fold("t1", f_a, strategy, folds) == 0
    assert scorer_fold(0, "source-id") == 1 and scorer_fold(0, "random-question") == 1
    assert scorer_fold(0, "same-source") == 0
    rq = [question_fold(f"t{i}", f_a, "random-question", folds) for i in range(200)]
    assert 60 < sum(rq) < 140  # by question id, not by source
    assert retrieval_sources(1, "source-id", folds, True) == frozenset(s for s, f in folds.items() if f == 1)
    assert retrieval_sources(1, "random-question", folds, True) is None
    assert retrieval_sources(1, "source-id", folds, False) is None
    a, b = split_by_fold([{"fold": 0}, {"fold": 1}, {"fold": 0}])
    assert len(a) == 2 and len(b) == 1


# ---------------------------------------------------------------------- recipe steps
def test_drzero_step_rewards_and_ledger(tmp_path):
    led, rec, m, world, pols = run_recipe(tmp_path, "drzero")
    p = m["proposer"][0]
    # 10 prompts, every 5th malformed -> 8 valid, all accepted; the main solver reads the question's own
    # source, so it always agrees with the draft: k = 5 -> difficulty 0, reward = 0.5 x format
    assert (p["n_proposals"], p["n_valid"], p["n_accepted"]) == (10, 8, 8)
    rows = led.query("SELECT item_id, reward, components_json FROM rewards WHERE role = 'proposer' ORDER BY item_id")
    assert sorted(r["reward"] for r in rows) == [0.0, 0.0] + [0.5] * 8
    bad = [json.loads(r["components_json"]) for r in rows if r["reward"] == 0.0]
    assert all(c["reason"] == "no-answer-tag" for c in bad)
    assert led.query("SELECT count(*) AS n FROM rollouts WHERE purpose = 'score' AND role = 'solver'")[0]["n"] == 40
    # hop buckets of the ten contexts: 4:3:2:1
    assert p["hop_mix"] == {"hop1": 4, "hop2": 3, "hop3": 2, "hop4": 1}
    # misread sources src0 / src1: the drafts of their questions are wrong and the solver agrees -> FF
    tasks = led.query("SELECT task_id, reference, oracle_answer, kept, meta_json FROM tasks WHERE parse_ok")
    wrong = [t for t in tasks if t["reference"] != t["oracle_answer"]]
    assert wrong and all(json.loads(t["meta_json"])["source_id"] in ("src0", "src1") for t in wrong)
    a = m["audit"][0]
    assert a["false_agreement"]["value"] == pytest.approx(len(wrong) / 8)
    assert a["false_agreement"]["n"] == 8
    assert a["pseudo_label_accuracy"]["value"] == pytest.approx(1 - len(wrong) / 8)
    # the proposer's advantages are the hop-bucket standardisation of its rewards (in proposal order)
    _, adv = pols["proposer"].batches[0]
    rows = led.query("SELECT r.reward, r.advantage, t.meta_json FROM rewards r JOIN tasks t ON t.task_id = r.item_id "
                     "WHERE r.role = 'proposer' ORDER BY r.item_id")
    hops = [json.loads(x["meta_json"])["hops"] for x in rows]
    want = steps.hop_advantages([x["reward"] for x in rows], hops)
    assert [x["advantage"] for x in rows] == pytest.approx(want.tolist(), abs=1e-5)
    assert sorted(adv) == pytest.approx(sorted(want.tolist()), abs=1e-6)


def test_crossfit_scores_by_other_fold_with_fold_retrieval(tmp_path):
    led, rec, m, world, _ = run_recipe(tmp_path, "crossfit")
    folds = rec.folds
    fold_sets = {f: frozenset(s for s, x in folds.items() if x == f) for f in (0, 1)}
    # every auxiliary tool call was restricted to one fold's sources (fold-restricted retrieval reached run_tool)
    assert world.tool_log and all(s in (fold_sets[0], fold_sets[1], None) for s in world.tool_log)
    assert fold_sets[0] in world.tool_log and fold_sets[1] in world.tool_log
    tasks = led.query("SELECT task_id, meta_json FROM tasks WHERE kept")
    for t in tasks:
        meta = json.loads(t["meta_json"])
        assert meta["fold"] == folds[meta["source_id"]]
        assert meta["scorer"] == ("aux_b" if meta["fold"] == 0 else "aux_a")  # the other fold scores
    # the other fold never retrieves the misread source: it disagrees with every wrong draft, so the round audit's
    # FF of the scoring group (CrossFit's *internal agreement*, not FF across arms) is 0 by construction; FF with one
    # instrument for every arm is the post-hoc audit's (tests/test_drzero_audit.py: equal to Dr. Zero's here)
    a = m["audit"][0]
    assert a["false_agreement"]["value"] == 0.0 and a["false_agreement"]["n"] == 8
    # R_P = 0.5 x format + f(k): right drafts k = 5 -> 0.5, wrong drafts k = 0 -> 0.5 (f(0) = 0)
    rows = led.query("SELECT reward FROM rewards WHERE role = 'proposer'")
    assert sorted(r["reward"] for r in rows) == [0.0, 0.0] + [0.5] * 8
    n_aux = led.query("SELECT count(*) AS n FROM rollouts WHERE purpose = 'aux_train'")[0]["n"]
    assert n_aux == sum(m["aux"][0]["rollouts"].values()) > 0


def test_same_source_strategy_keeps_the_shared_misreading(tmp_path):
    _, _, m, _, _ = run_recipe(tmp_path, "crossfit", ["crossfit.fold_strategy=same-source"])
    _, _, m0, _, _ = run_recipe(tmp_path, "drzero")
    assert m["audit"][0]["false_agreement"]["value"] == m0["audit"][0]["false_agreement"]["value"] > 0


def test_msv_relabels_and_rejects_with_reasons(tmp_path):
    led, _, m, _, _ = run_recipe(tmp_path, "msv+crossfit")
    p = m["proposer"][0]
    assert p["rollouts"]["msv"] == 8 * (3 + 3)
    n = led.query("SELECT purpose, count(*) AS n FROM rollouts WHERE purpose LIKE 'msv%' GROUP BY purpose "
                  "ORDER BY purpose")
    assert [(r["purpose"], r["n"]) for r in n] == [("msv_blind", 24), ("msv_src", 24)]
    # the scripted views agree (both read the question's own source): everything is accepted with the
    # consensus, equal to the draft here
    t = led.query("SELECT reference, pseudo_label FROM tasks WHERE kept")
    assert len(t) == 8 and all(r["pseudo_label"] == r["reference"] for r in t)


def test_msv_disagreement_is_a_rejection_row(tmp_path, monkeypatch):
    # the source-aware view reads a different value than the blind search for q-ids divisible by 3
    orig = StubFactsWorld.solver_prompt_with_source

    def aware(self, task):
        s = orig(self, task)
        return s.replace("<source ", "<source x") if int(task.question[1:]) % 3 == 0 else s
    monkeypatch.setattr(StubFactsWorld, "solver_prompt_with_source", aware)
    led, _, m, _, _ = run_recipe(tmp_path, "msv+crossfit")
    rej = led.query("SELECT question, kept, meta_json FROM tasks WHERE parse_ok AND NOT kept")
    assert rej and all(int(r["question"][1:]) % 3 == 0 for r in rej)
    assert all(json.loads(r["meta_json"])["reject_reason"] == "msv-disagree" for r in rej)
    comps = [json.loads(r["components_json"]) for r in led.query(
        "SELECT components_json FROM rewards WHERE role = 'proposer'")]
    assert sum(c.get("reason") == "msv-disagree" for c in comps) == len(rej)
    assert m["proposer"][0]["n_accepted"] == 8 - len(rej)


def test_null_check_no_misreading_gives_zero_ff(tmp_path):
    for recipe in ("drzero", "crossfit"):
        _, _, m, _, _ = run_recipe(tmp_path, recipe, misread=())
        ff = m["audit"][0]["false_agreement"]
        assert ff["value"] == 0.0 and ff["se"] == 0.0 and ff["n"] == 8


def test_replay_bank_then_aux_then_score(tmp_path):
    # crossfit.replay: one round of bank, aux, score, audit (and the evals); the proposer is not trained
    res = {}
    for strategy in ("same-source", "random-question", "source-id"):
        for null, misread in (("", ("src0", "src1")), ("null-", ())):
            (tmp_path / f"{null}{strategy}").mkdir()
            led, rec, m, _, _ = run_recipe(tmp_path / f"{null}{strategy}", "crossfit",
                                           ["crossfit.replay=true", f"crossfit.fold_strategy={strategy}"], misread)
            assert [s.phase for s in rec.plan()] == ["eval", "bank", "aux", "score", "audit", "eval"]
            assert not led.query("SELECT count(*) AS n FROM rewards WHERE role = 'proposer'")[0]["n"]
            bank = [r["question"] for r in led.query("SELECT question FROM tasks WHERE kept ORDER BY task_id")]
            res[null + strategy] = (m["audit"][0]["false_agreement"], bank, m["score"][0])
            led.close()
    banks = {tuple(b) for _, b, _ in res.values()}
    assert len(banks) == 1 and len(next(iter(banks))) == 8  # one bank for every arm of a seed
    # the stub's misread sources src0, src1: 2 of 8 drafts wrong; a scorer that reads the source agrees
    assert res["same-source"][0]["value"] == res["random-question"][0]["value"] == 2 / 8
    assert res["source-id"][0]["value"] == 0.0
    for s in ("same-source", "random-question", "source-id"):
        assert res["null-" + s][0]["value"] == 0.0 and res["null-" + s][0]["n"] == 8
        assert res[s][2]["rollouts"] == {"score": 8 * 5}


def test_summary_keeps_round_estimates_whole():
    from coevo.runner import recipe_columns

    est = {"value": 0.25, "se": 0.1, "n": 8, "scope": "round"}
    steps_ = [{"round": 1, "phase": "proposer", "metrics": {"proposer_reward_mean": 0.5}},
              {"round": 1, "phase": "proposer", "metrics": {"proposer_reward_mean": 0.7}},
              {"round": 1, "phase": "audit", "metrics": {"false_agreement": est}}]
    out = recipe_columns(steps_, 1, ["false_agreement", "proposer_reward_mean"])
    assert out == {"false_agreement": {"value": 0.25, "se": 0.1, "n": 8}, "proposer_reward_mean": pytest.approx(0.6)}


def test_report_section_renders(tmp_path):
    from coevo.recipes.drzero.report import round_series, section
    from coevo.ledger import views

    led, _, _, _, _ = run_recipe(tmp_path, "crossfit")
    s = round_series(views.step_metrics(led, "crossfit"))
    assert list(s) == [1] and s[1]["hops"] == {"hop1": 4, "hop2": 3, "hop3": 2, "hop4": 1}
    frag = section(led, "crossfit", tmp_path)
    assert "FF oracle" in frag and "data:image/png;base64" in frag
    assert np.isfinite(s[1]["false_agreement"]["value"])


class FakeAuditor:
    """Says every label is correct except those of source src0 (so it misses src1's misreadings)."""

    class judge:
        kind, version = "llm_auditor", "fake"

    def audit_many(self, items):
        from coevo.core.verdict import Verdict

        return [Verdict(0 if "src0" in docs[0] else 1, "") for _, _, docs in items]


def test_auditor_ff_next_to_oracle_ff(tmp_path, monkeypatch):
    monkeypatch.setattr(StubFactsWorld, "source_text", lambda self, s: f"document of {s}", raising=False)
    cfg_auditor = ["audit.auditor={base_url: 'http://127.0.0.1:9', model: m}"]
    from coevo.audit import auditor as A

    monkeypatch.setattr(A.Auditor, "from_options", classmethod(lambda cls, opts, where="": FakeAuditor()))
    led, _, m, _, _ = run_recipe(tmp_path, "drzero", cfg_auditor)
    a = m["audit"][0]
    wrong = led.query("SELECT meta_json FROM tasks WHERE kept AND reference <> oracle_answer")
    n_src0 = sum(json.loads(t["meta_json"])["source_id"] == "src0" for t in wrong)
    assert a["false_agreement_auditor"]["value"] == pytest.approx(n_src0 / 8)
    assert a["false_agreement"]["value"] == pytest.approx(len(wrong) / 8)
    assert a["auditor_vs_oracle"]["n"] == 8
    assert led.query("SELECT count(*) AS n FROM verdicts WHERE target = 'auditor'")[0]["n"] == 8
