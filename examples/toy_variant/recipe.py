"""The variant's one change: the proposer is rewarded by the solver's uncertainty on its task,
1 - 2|p - 1/2| (R-Zero's paper form, ``coevo.recipes.rzero.rewards.uncertainty_reward``), instead of the toy's
solver-vs-helper gap.  The frozen helper still answers (the toy's step draws it); it no longer
enters the reward."""
from __future__ import annotations

from coevo.recipes.rzero.rewards import uncertainty_reward
from examples.toy_recipe import ToyRecipe


class VariantRecipe(ToyRecipe):
    name = "toy-variant"

    def __init__(self, cfg, world, policies: dict, run_id: str, verifier) -> None:
        super().__init__(cfg, world, {**policies, "helper": policies["solver"]}, run_id, verifier)

    def proposer_reward(self, mu_solver: float, mu_helper: float) -> float:
        return float(uncertainty_reward(mu_solver))
