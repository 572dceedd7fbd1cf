"""Reward formulas (pure functions). See coevo/rewards/formulas.py and docs/formulas.md."""
from coevo.rewards.formulas import (
    CROSSFIT_OUTSIDE,
    UNCERTAINTY_VARIANTS,
    advantage_magnitude,
    challenger_reward,
    criteria_scores,
    crossfit_reward,
    keep_for_solver,
    keep_in_band,
    quality_gate,
    rgbc_reward,
    synco_reward,
    teachability,
    uncertainty_reward,
)

__all__ = [
    "teachability", "quality_gate", "synco_reward", "rgbc_reward", "advantage_magnitude",
    "uncertainty_reward", "challenger_reward", "keep_for_solver", "keep_in_band", "crossfit_reward",
    "criteria_scores", "UNCERTAINTY_VARIANTS", "CROSSFIT_OUTSIDE",
]
