"""Reinforcement-learning core: GRPO advantages and loss as pure tensor functions."""
from coevo.rl.grpo import (
    AGGREGATIONS,
    SCALES,
    bucket_advantages,
    group_advantages,
    policy_loss,
    token_logprobs,
)

__all__ = [
    "AGGREGATIONS",
    "SCALES",
    "bucket_advantages",
    "group_advantages",
    "policy_loss",
    "token_logprobs",
]
