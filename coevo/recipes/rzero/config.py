"""R-Zero's config section ``rzero`` (R-Zero §2.2, §3.1; the paper-vs-code options are named)."""
from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from coevo.config import Strict


class RZeroConfig(Strict):
    rounds: int = Field(3, ge=1)
    challenger_steps: int = Field(5, ge=0)
    solver_steps: int = Field(15, ge=0)
    challenger_prompts: int = Field(64, ge=1, description="prompts per Challenger step")
    challenger_group: int = Field(4, ge=1, description="Challenger rollouts per prompt (GRPO group)")
    m: int = Field(10, ge=1, description="solver answers per question for p_hat / majority vote")
    uncertainty_variant: Literal["paper", "reference"] = "paper"
    rep_lambda: float = Field(1.0, ge=0)
    rep_threshold: float = Field(0.5, gt=0, le=1)
    rep_linkage: Literal["average", "complete", "single"] = "average"
    bleu_direction: Literal["symmetric", "reference"] = Field("symmetric", description="symmetric = mean of both BLEU directions (paper: undirected similarity); reference = R-Zero code (earlier question is the hypothesis, upper triangle mirrored)")
    format_failure_reward: float = Field(0.0, description="reward of a malformed question (paper 0, code -1)")
    n_candidates: int = Field(512, ge=1, description="N candidate questions per round for the solver dataset")
    delta: float = Field(0.25, ge=0, le=0.5, description="keep |p_hat - 1/2| <= delta")
    solver_filter: Literal["paper", "reference"] = Field(
        "paper", description="solver-dataset filter: paper = m answers, keep |p_hat - 1/2| <= delta; reference = "
                             "R-Zero's code: filter_samples answers (9), keep filter_band[0] <= p_hat <= filter_band[1]")
    filter_samples: int = Field(9, ge=1, description="answers per candidate under solver_filter=reference (code: 9)")
    filter_band: tuple[float, float] = Field((0.3, 0.8), description="kept p_hat band under solver_filter=reference")
    solver_prompts: int = Field(32, ge=1, description="questions per Solver step")
    solver_group: int = Field(5, ge=1, description="Solver rollouts per question (GRPO group)")

    @field_validator("filter_band")
    @classmethod
    def _band(cls, v: tuple[float, float]) -> tuple[float, float]:
        if not 0 <= v[0] <= v[1] <= 1:
            raise ValueError(f"needs 0 <= low <= high <= 1, got {list(v)}")
        return v
