"""The instrument control of rgbc-arms (issue 30 item 3): the arithmetic world with a known pass-rate law
(coevo/worlds/arithmetic_law.py), the RGBC recipe on it (scripted Reasoner answers), the control table that says
whether P1 / P2 separate the laws, and the cheaper default budget's interim evaluation."""
from pathlib import Path

import duckdb
import numpy as np
import pytest

from coevo.config import ConfigError, load_config
from coevo.core.world import Task
from coevo.worlds.arithmetic_law import LAWS, WORLD_REF, ArithmeticLawWorld, _uniforms, draw_pass_rate, law_truth

LAW_SET = ["--set", "recipe=rgbc", "--set", "rgbc.arm=full", "--set", f"world.name={WORLD_REF}",
           "--set", "synco.reasoner_updates=false", "--set", "synco.consensus=false"]


def test_the_laws_fix_kappa_and_share_the_mean():
    """The proposal's bounds: a frontier pool (p in [.25, .75]) gives kappa-bar 0.68-0.875, a pool outside [.1, .9]
    at most 0.344; both laws have mean 0.5, and a two-point pool reproduces both triples (P2's blind spot)."""
    from coevo.audit.nullmodel import expected_kappa, null_fit_error

    u, b = law_truth("unimodal"), law_truth("bimodal")
    assert u["kappa_bar"] == pytest.approx(0.8389, abs=1e-3) and 0.68 <= u["kappa_bar"] <= 0.875
    assert b["kappa_bar"] == pytest.approx(0.2151, abs=1e-3) and b["kappa_bar"] <= 0.344
    assert u["p_mean"] == pytest.approx(0.5) and b["p_mean"] == pytest.approx(0.5)
    for t in (u, b):
        assert t["all_correct"] + t["bearing"] + t["all_wrong"] == pytest.approx(1.0)
        assert null_fit_error([t["all_correct"], t["bearing"], t["all_wrong"]], 4)["error"] < 2e-4
    # the draws follow the law: kappa-bar of 20,000 drawn pass rates (the nullmodel's formula)
    for law in LAWS:
        ps = np.array([draw_pass_rate(law, _uniforms("p", 7, i, n=4)) for i in range(20000)])
        assert expected_kappa(np.ones_like(ps), ps) == pytest.approx(law_truth(law)["kappa_bar"], abs=0.01)
        lo, hi = (0.25, 0.75) if law == "unimodal" else (0.0, 1.0)
        assert ps.min() >= lo and ps.max() <= hi
        if law == "bimodal":
            assert not ((ps > 0.1) & (ps < 0.9)).any()


def test_scripted_answers_are_deterministic_and_bernoulli():
    w = ArithmeticLawWorld(law="unimodal", seed=3)
    t = Task("s1-0-0", "12+30", reference="42")
    p = w.pass_rate(t)
    draws = [w.scripted_answer(t, f"1:screen:0:{k}") for k in range(4000)]
    assert draws == [w.scripted_answer(t, f"1:screen:0:{k}") for k in range(4000)]  # resumable
    share = np.mean([a == "42" for a in draws])
    assert share == pytest.approx(p, abs=0.03)
    wrong = {a for a in draws if a != "42"}
    assert wrong and all(1 <= abs(int(a) - 42) <= 9 for a in wrong)
    assert ArithmeticLawWorld(law="unimodal", seed=4).pass_rate(t) != p  # another run seed, another p
    assert w.scripted_answer(Task("x", "1+1", reference=None), "k") == ""
    comps = w.scripted_sampler("1:screen:0")(None, w, [t], 3, None)
    assert [c.text for c in comps[0]] == draws[:3] and comps[0][0].token_ids == []
    with pytest.raises(ValueError, match="unknown pass-rate law"):
        ArithmeticLawWorld(law="flat")


def test_the_law_world_is_an_rgbc_world_with_a_frozen_reasoner():
    from coevo.core.errors import CannotRun
    from coevo.recipes.rgbc.recipe import RGBCRecipe
    from coevo.worlds import make_world

    cfg = load_config("cpu", None, [s for s in LAW_SET if s != "--set"] + ["world.options.law=bimodal", "seed=5"])
    w = make_world(cfg)
    assert isinstance(w, ArithmeticLawWorld) and w.law == "bimodal"
    RGBCRecipe._check_world(cfg, w)
    with pytest.raises(CannotRun, match="synco.reasoner_updates=false"):
        RGBCRecipe._check_world(load_config("cpu", None, ["recipe=rgbc", f"world.name={WORLD_REF}"]), w)
    with pytest.raises(ConfigError, match="unknown option"):
        load_config("cpu", None, ["recipe=rgbc", f"world.name={WORLD_REF}", "world.options.lwa=bimodal"])


def _run(tmp: Path, law: str) -> Path:
    from coevo.runner import run_from_config

    cfg = load_config("cpu", None, [s for s in LAW_SET if s != "--set"] + [
        f"world.options.law={law}", "synco.rounds=2", "synco.steps_per_round=1", "synco.tasks_per_step=16",
        "synco.audit_samples=2", "world.eval_per_level=4", "synco.eval_interim_per_level=1",
        "tracking.tensorboard=false", "verify.workers=0", "backend.threads=1", "seed=1"])
    return run_from_config(cfg, tmp / law, quiet=True, report=False)


def test_rgbc_on_the_law_worlds_separates_kappa_and_evaluates_the_last_round_in_full(tmp_path):
    kap = {}
    for law in LAWS:
        run = _run(tmp_path, law)
        con = duckdb.connect(str(run / "ledger.duckdb"), read_only=True)
        s, c = np.array(con.execute("SELECT mu_screen, mu_confirm FROM task_stats WHERE mu_screen > 0 AND "
                                    "mu_screen < 1 AND mu_confirm IS NOT NULL").fetchall(), dtype=float).T
        kap[law] = float(np.mean((c > 0) & (c < 1)))
        # scripted: no model token in any Reasoner rollout, answers are the reference or a near miss
        assert con.execute("SELECT max(n_tokens) FROM rollouts WHERE role = 'solver'").fetchone()[0] == 0
        # the interim evaluations on 1 item per level, the last round's on the full set (2 rounds here)
        assert dict(con.execute("SELECT round, count(*) FROM evals GROUP BY round").fetchall()) == {0: 5, 1: 5, 2: 20}
        con.close()
    assert kap["unimodal"] > 0.6 and kap["bimodal"] < 0.45, kap


def test_interim_tasks_are_the_first_n_of_each_level():
    from coevo.recipes.rgbc.state import interim_tasks

    tasks = [Task(f"{lv}{i}", "1+1", meta={"difficulty": lv}) for lv in ("L1", "L2") for i in range(3)]
    assert [t.task_id for t in interim_tasks(tasks, 2)] == ["L10", "L11", "L20", "L21"]
