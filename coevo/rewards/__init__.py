"""Reward formulas (pure functions) that two or more recipes use. See coevo/rewards/formulas.py and docs/formulas.md;
one recipe's own formulas live in its folder (``coevo/recipes/<recipe>/rewards.py``)."""
from coevo.rewards.formulas import advantage_magnitude, criteria_scores, quality_gate, teachability

__all__ = ["teachability", "quality_gate", "advantage_magnitude", "criteria_scores"]
