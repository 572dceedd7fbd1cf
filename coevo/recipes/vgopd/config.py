"""VG-OPD's config section ``vgopd`` (CASA proposal §background); the ``casa`` section is
:class:`coevo.recipes.vgopd.casa.config.CasaConfig`."""
from __future__ import annotations

from pydantic import Field

from coevo.config import Strict


class VgopdConfig(Strict):
    rounds: int = Field(2, ge=1)
    steps_per_round: int = Field(8, ge=1, description="student GRPO steps per round (an evaluation follows)")
    prompts: int = Field(16, ge=1, description="training prompts per step (one GRPO group each)")
    group: int = Field(8, ge=2, description="G: student rollouts per prompt")
    expert_max_tokens: int = Field(56, ge=1, description="token limit of the experts' greedy answers")
    probe_prompts: int = Field(3, ge=0, description="prompts probed every step (first of the held-out set)")
    axis_weights: dict[str, float] = Field(default_factory=dict, description="weights of the axis rewards in "
                                           "the answer's reward (missing axes: 1)")
    recheck: bool = Field(True, description="re-check every licence against the world's deterministic oracle")
    initial_eval: bool = Field(True, description="evaluate the student on the held-out set before training (step "
                               "0); off in coevo experiment casa-arms, whose claims read the last round only")
