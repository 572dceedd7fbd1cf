"""`coevo pretrain` is deterministic; the shipped checkpoints are what it produces."""
import json
from pathlib import Path

import pytest

from conftest import run_coevo
from coevo.pretrain import ROLES, solution_steps, solver_path, state_digest
from coevo.backends.tiny import TinyPolicy
from coevo.worlds.arithmetic import ArithmeticWorld, evaluate, generate, LEVELS

ASSETS = Path(__file__).resolve().parents[1] / "coevo" / "assets"


def test_short_pretraining_is_bit_for_bit_reproducible(tmp_path):
    a = json.loads(run_coevo("pretrain", "--role", "solver", "--steps", "8", "--out", str(tmp_path / "a"), "-q", "--json").stdout)
    b = json.loads(run_coevo("pretrain", "--role", "solver", "--steps", "8", "--out", str(tmp_path / "b"), "-q", "--json").stdout)
    assert a["solver"]["sha256_state"] == b["solver"]["sha256_state"]
    # written as data: model.safetensors + config.json, whose tensors are what the digest covers
    d = tmp_path / "a" / "solver.pt"
    assert sorted(p.name for p in d.iterdir()) == ["config.json", "model.safetensors"]
    pol = TinyPolicy.from_checkpoint("solver", d)
    assert state_digest(pol) == a["solver"]["sha256_state"]


def test_solver_paths_are_valid_and_varied():
    import random

    rng, w = random.Random(0), ArithmeticWorld()
    for lv in LEVELS:
        for _ in range(30):
            e = generate(lv, rng)
            assert w.extract_answer(solver_path(e, rng)) == str(evaluate(e))
    paths = {solver_path("72-48+15", random.Random(i)) for i in range(40)}
    assert len(paths) >= 3
    assert solution_steps("4*46+22") == ("4*46=184;184+22=206", 206)


@pytest.mark.parametrize("role", ROLES)
def test_shipped_checkpoints_exist_and_match_recorded_digest(role):
    info = json.loads((ASSETS / "pretrain_info.json").read_text())
    pol = TinyPolicy.from_checkpoint(role, ASSETS / f"{role}.pt")
    assert state_digest(pol) == info[role]["sha256_state"]


@pytest.mark.slow
def test_pretrain_regenerates_shipped_checkpoints(tmp_path):
    """Full regeneration (about 20 minutes on 2 cores): same digests as the shipped files."""
    info = json.loads((ASSETS / "pretrain_info.json").read_text())
    out = json.loads(run_coevo("pretrain", "--role", "all", "--out", str(tmp_path), "-q", "--json", timeout=3600).stdout)
    for role in ROLES:
        assert out[role]["sha256_state"] == info[role]["sha256_state"], role


def test_arithmetic_assets_are_declared_by_the_recipe_folders():
    """The solver's spec is the core's; every other arithmetic asset comes from the folder of the recipe
    that loads it (RecipeInfo.pretrain), so coevo.pretrain names no role of a recipe."""
    from coevo.core.registry import builtin_recipes, resolve
    from coevo.pretrain import RECIPES, SOLVER_SPEC

    declared = {}
    for info in builtin_recipes():
        if info.pretrain:
            declared.update(resolve(info.pretrain))
    assert ROLES == ("solver", *declared) and RECIPES["solver"] is SOLVER_SPEC
    loaded = {r.asset for info in builtin_recipes() for r in info.roles if r.asset in RECIPES}
    assert loaded == {"solver", "challenger", "synthesizer"}  # the RoleSpec.asset of R-Zero's and SynCo's roles
    assert {RECIPES[a]["task"] for a in ROLES} == {"solve", "propose", "synthesize"}


def test_six_steps_of_each_arithmetic_asset_are_pinned():
    """6 single-threaded steps of every arithmetic asset give the weights the code gave before the specs
    moved to the recipe folders (digests computed with coevo/pretrain at 2dbcad5)."""
    import torch

    from coevo.pretrain import train_role

    pinned = {"solver": "1af65e49a91abee9", "challenger": "a6527100f8b1f2a1", "synthesizer": "d006be824eb5b95d",
              "shared": "dba776b024c03f0d"}
    prev = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        assert {r: state_digest(train_role(r, steps=6))[:16] for r in ROLES} == pinned
    finally:
        torch.set_num_threads(prev)
