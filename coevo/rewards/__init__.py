"""Reward formulas (pure functions). See coevo/rewards/formulas.py and docs/formulas.md."""
from coevo.rewards.formulas import (
    UNCERTAINTY_VARIANTS,
    advantage_magnitude,
    challenger_reward,
    criteria_scores,
    keep_for_solver,
    keep_in_band,
    quality_gate,
    teachability,
    uncertainty_reward,
)

__all__ = [
    "teachability", "quality_gate", "advantage_magnitude", "uncertainty_reward", "challenger_reward",
    "keep_for_solver", "keep_in_band", "criteria_scores", "UNCERTAINTY_VARIANTS",
]
