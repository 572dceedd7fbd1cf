"""rzero-seeds' arms as controls (issue 30): every arm's Solver starts from one checkpoint, the frozen arm differs
from the two-model arm only in its Challenger steps (none), the Single arm takes the same Solver updates and the
same Challenger updates on its one model; and the pooled pseudo-label decline, by hand."""
from types import SimpleNamespace

import pytest
import torch

from coevo.config import load_config
from coevo.experiments import load_experiment
from coevo.experiments.claims import ratio_interval
from coevo.experiments.spec import Runs
from coevo.ledger.store import Ledger
from coevo.recipes.rzero.experiments import pl_decline
from coevo.recipes.rzero.recipe import RZeroRecipe
from coevo.runner import ASSETS, RunError, make_policies, run_from_config

EXP = load_experiment("rzero-seeds")


def _configs(budget: str = "default", extra=()) -> dict:
    """{arm: resolved RunConfig} of the grid's first seed."""
    first = EXP.grid(budget)[0].seed
    return {r.arm: load_config(r.preset, None, [*r.overrides, *extra, f"seed={r.seed}"])
            for r in EXP.grid(budget) if r.seed == first}


def _state(pol) -> dict:
    return {k: v.clone() for k, v in pol.model.state_dict().items()}


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_every_arm_starts_its_solver_from_the_shared_asset():
    cfgs = _configs()
    states = {arm: _state(make_policies(cfg)["solver"]) for arm, cfg in cfgs.items()}
    single = make_policies(cfgs["single"])
    assert single["solver"] is single["challenger"]  # one parameter set
    shared = _state(make_policies(load_config("cpu", None, ["backend.roles=shared"]))["solver"])
    assert all(_same(s, shared) for s in states.values())


def test_an_asset_name_loads_that_asset_and_an_unknown_one_is_refused():
    cfg = load_config("cpu", None, ["backend.roles=shared", "backend.checkpoints.shared=asset:solver"])
    solver = _state(make_policies(load_config("cpu", None, []))["solver"])
    assert _same(_state(make_policies(cfg)["solver"]), solver)
    with pytest.raises(RunError, match="nope.pt"):
        make_policies(load_config("cpu", None, ["backend.checkpoints.solver=asset:nope"]))
    assert (ASSETS / "shared.pt").exists()


@pytest.mark.parametrize("budget", ["default", "ci"])
def test_the_arms_differ_only_in_what_they_control(budget):
    dumps = {arm: cfg.model_dump(mode="json") for arm, cfg in _configs(budget).items()}
    two, frozen, single = dumps["two"], dumps["frozen"], dumps["single"]
    assert frozen["rzero"].pop("challenger_steps") == 0 and two["rzero"].pop("challenger_steps") > 0
    assert frozen == two  # the same rounds, candidates, m, Solver steps and prompts, eval set, start
    assert single["backend"].pop("roles") == "shared" and two["backend"].pop("roles") == "separate"
    assert single["backend"].pop("checkpoints") == {"shared": "asset:shared"}
    assert two["backend"].pop("checkpoints") == {"solver": "asset:shared"}
    two["rzero"]["challenger_steps"] = single["rzero"]["challenger_steps"]
    assert single == two


def test_the_plans_match():
    steps = dict.fromkeys(("_challenger", "_dataset", "_solver", "_eval"))  # the plan holds the step functions
    phases = {arm: [s.phase for s in RZeroRecipe.plan(SimpleNamespace(cfg=cfg, **steps))]
              for arm, cfg in _configs().items()}
    for arm in phases:
        assert phases[arm].count("solver") == 45 and phases[arm].count("dataset") == 3 and phases[arm].count("eval") == 4
    assert phases["frozen"].count("challenger") == 0
    assert phases["two"].count("challenger") == phases["single"].count("challenger") == 15


SHORT = ["rzero.rounds=1", "rzero.challenger_prompts=2", "rzero.solver_steps=1", "rzero.n_candidates=32",
         "rzero.solver_prompts=4", "world.eval_per_level=1"]


def test_short_runs_take_the_planned_updates(tmp_path):
    """The ledger of a short run of each arm: the same Solver updates (count and sequences); the Challenger's
    updates in two and, on the one shared model, in single; none in frozen."""
    ups = {}
    for arm, cfg in _configs(extra=SHORT).items():
        if cfg.rzero.challenger_steps:  # two and single: 1 Challenger step (frozen: none, as its arm sets)
            cfg.rzero.challenger_steps = 1
        run = run_from_config(cfg, tmp_path / arm, quiet=True, report=False)
        led = Ledger(run / "ledger.duckdb", read_only=True)
        ups[arm] = {r["role"]: (r["n"], r["seqs"], r["first"]) for r in led.query(
            "SELECT role, count(*) AS n, sum(n_sequences) AS seqs, min(version_before) AS first FROM updates "
            "GROUP BY role")}
        led.close()
    assert ups["two"]["solver"][:2] == ups["frozen"]["solver"][:2] == ups["single"]["solver"][:2] == (1, 4 * 5)
    assert "challenger" not in ups["frozen"]
    assert ups["two"]["challenger"][:2] == ups["single"]["challenger"][:2] == (1, 2 * 4)
    assert ups["single"]["challenger"][2].startswith("shared:") and ups["single"]["solver"][2].startswith("shared:")


def _s(pl: tuple, n: tuple) -> dict:
    return {"rounds": [{"round": k + 1, "pseudo_label_accuracy": a, "n_pseudo_labels": m}
                       for k, (a, m) in enumerate(zip(pl, n))]}


def test_the_decline_pools_the_label_counts():
    runs = Runs({("two", 0): _s((0.8, 0.7, 0.5), (100, 120, 200)), ("two", 1): _s((0.6, 0.6, 0.6), (300, 100, 100))},
                {})
    s = pl_decline("two")(runs)
    assert s.num == {0: 100.0, 1: 60.0} and s.den == {0: 200.0, 1: 100.0}
    assert s.base_num == {0: 80.0, 1: 180.0} and s.base_den == {0: 100.0, 1: 300.0}
    est = ratio_interval(s.num, s.den, s.base_num, s.base_den)["estimate"]
    assert est == pytest.approx(160 / 300 - 260 / 400)  # pooled, not the mean of per-run differences (-0.15)
