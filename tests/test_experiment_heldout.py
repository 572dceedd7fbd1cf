"""Held-out calibration (docs/experiments.md "Calibration held out"): an experiment records what was tuned on
which seeds, and the grid refuses an evaluation run whose resolved config uses one of them."""
from dataclasses import replace

import pytest

from coevo.experiments import REGISTRY, load_experiment
from coevo.experiments.claims import Claim, Design, over_seeds
from coevo.experiments.montecarlo import power, seeds_for_power
from coevo.experiments.spec import Arm, Calibration, Experiment


def _exp(**kw) -> Experiment:
    c = Claim("gain", "a gain", "gain", over_seeds("a", lambda s: s["g"]), role="primary", direction=1,
              smallest_effect=0.0, smallest_effect_why="any gain",
              design=Design("seeds", 0.05, "the source's effect", 0.05, "a pilot on calibration seeds"))
    return Experiment("toy", "toy", [Arm("a", "crossfit")], [c], **kw)


CAL = Calibration.on("world.options.misread_rate=0.8", "FF(same-source) at 5-9 %",
                     {"seed": range(3), "world.options.seed": [0], "crossfit.fold_seed": [0]}, "docs/drzero.md")


def test_a_run_on_a_calibration_seed_is_refused_on_one_line():
    with pytest.raises(ValueError) as e:
        _exp(calibration=[CAL]).grid()
    msg = str(e.value)
    assert "\n" not in msg and "a-s0 has seed=0" in msg and "calibration seed of world.options.misread_rate=0.8" in msg


def test_the_world_seed_counts_too():
    # run seeds 100-102 are held out, but the preset's world seed 0 is the calibration world
    with pytest.raises(ValueError, match="world.options.seed=0"):
        _exp(calibration=[CAL], first_seed=100).grid()
    with pytest.raises(ValueError, match="crossfit.fold_seed=0"):
        _exp(calibration=[CAL], first_seed=100, seeded={"world.options.seed": 0}).grid()


def test_held_out_seeds_pass_and_vary_per_run():
    exp = _exp(calibration=[CAL], first_seed=100, seeded={"world.options.seed": 0, "crossfit.fold_seed": 7})
    grid = exp.grid()
    assert [r.seed for r in grid] == [100, 101, 102]
    assert grid[1].run_args()[-2:] == ["--set", "seed=101"]
    assert "world.options.seed=101" in grid[1].overrides and "crossfit.fold_seed=108" in grid[1].overrides


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_registered_experiment_holds_its_calibration_out(name):
    exp = load_experiment(name)
    exp.grid()  # raises if a default evaluation run uses a calibration seed
    assert exp.calibration, f"{name} records no calibration"


def test_seeds_for_power_is_the_fewest_seeds_reaching_80_percent():
    c = _exp().claims[0]
    n = seeds_for_power(c)
    assert n is not None and power(c, n, n_sims=4000) >= 0.8 > power(c, n - 1, n_sims=4000)
    tiny = replace(c, design=replace(c.design, powered_for=0.0001))
    assert seeds_for_power(tiny, max_seeds=10) is None
