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
