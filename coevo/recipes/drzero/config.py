"""The config sections of the Dr. Zero family: ``drzero`` (every recipe of the family), ``crossfit``
(CrossFit and MSV+CrossFit: folds and auxiliary solvers, False Frontiers (CrossFit, the fold ablation)) and ``audit``
(an optional auditor model for FF)."""
from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from coevo.config import Strict


class DrZeroConfig(Strict):
    rounds: int = Field(3, ge=1, description="False Frontiers: 3 rounds")
    proposer_steps: int = Field(2, ge=0, description="proposer GRPO steps per round (paper: 18)")
    solver_steps: int = Field(3, ge=0, description="main-solver GRPO steps per round (paper: 25)")
    prompts: int = Field(16, ge=1, description="proposer prompts per step, one sample each (Dr. Zero group 1)")
    n_answers: int = Field(5, ge=2, description="scoring answers per question (Dr. Zero reward_group_size=5)")
    format_weight: float = Field(0.5, ge=0, description="reward = format_weight x format score + difficulty "
                                                        "(Dr. Zero reward_function.py: 0.5)")
    solver_prompts: int = Field(8, ge=1, description="questions per main-solver step")
    solver_group: int = Field(5, ge=1, description="main-solver rollouts per question (GRPO group)")
    max_turns: int = Field(3, ge=0, description="search calls per solver episode (training and evaluation)")
    proposer_max_tokens: int | None = Field(None, ge=1, description="proposer tokens (None = sampling.max_new_tokens)")
    msv: bool = Field(False, description="multi-sample verification (always on in recipe msv+crossfit)")
    msv_source_aware: int = Field(3, ge=1, description="MSV source-aware answers per question")
    msv_blind: int = Field(3, ge=1, description="MSV source-blind answers per question")
    ff_agreement: Literal["strict_majority", "plurality"] = Field(
        "strict_majority", description="when the scoring group agrees with the label for FF "
                                       "(coevo.audit.false_agreement.group_agrees): strict_majority = more than half "
                                       "of its answers equal the label (order-free; False Frontiers (FF) 'give the "
                                       "same wrong answer'); plurality = its plurality answer, ties first seen")
    audit_prompts: int = Field(0, ge=0, description="the post-hoc FF audit after the last round (False Frontiers (FF); "
                                                    "coevo.recipes.drzero.posthoc): this many proposer contexts, the same "
                                                    "for every arm of a run seed; the final proposer writes, the arm's "
                                                    "acceptance filter (MSV or none) decides, the final main solver "
                                                    "answers n_answers times; 0 = off")
    advantage_variant: Literal["paper", "code"] = Field(
        "paper", description="hop-bucket advantages: paper = population std (False Frontiers (CrossFit)); code = Dr. Zero's "
                             "grpo_batch (unbiased std, a bucket of one: mean 0, std 1)")


class AuditConfig(Strict):
    auditor: dict[str, Any] = Field(
        default_factory=dict, description="FF against an auditor model too: OpenAI-compatible endpoint options "
                                          "(base_url, model, api_key_env, ...; coevo.audit.auditor.Auditor); "
                                          "empty = oracle audit only")


class CrossFitConfig(Strict):
    fold_strategy: Literal["same-source", "random-question", "source-id"] = Field(
        "source-id", description="how questions are split into folds and who scores them (False Frontiers (the fold ablation))")
    outside: Literal["zero", "extrapolate"] = Field(
        "zero", description="f(k) at k = 0 and k = 5 (False Frontiers leaves it open): zero = 0 (k = 0 / k = 5 value "
                            "0, default), extrapolate = the line (5 - k)/4 (1.25 / 0)")
    retrieve_in_fold: bool = Field(True, description="auxiliary solvers retrieve only from their fold's sources "
                                                     "(source-id and same-source strategies)")
    retrieve_own_source: bool = Field(False, description="a control (issue #30): the scorer may also retrieve from the "
                                                         "question's own source (with retrieve_in_fold, source-id "
                                                         "folds never do)")
    aux_steps: int = Field(2, ge=0, description="auxiliary-solver GRPO steps per round (each fold)")
    aux_prompts: int = Field(8, ge=1, description="questions per auxiliary step")
    aux_group: int = Field(5, ge=1, description="auxiliary rollouts per question (GRPO group)")
    fold_seed: int = Field(0, description="seed of the source split (and of random-question folds)")
    replay: bool = Field(False, description="False Frontiers (the fold ablation)'s fixed question-bank replay instead of the loop: one "
                                            "round of a bank step (drzero.prompts proposals by the untrained proposer, "
                                            "no update), aux_steps auxiliary steps on the bank's folds, a scoring step "
                                            "(n_answers each) and the audit; the main solver is not trained")
