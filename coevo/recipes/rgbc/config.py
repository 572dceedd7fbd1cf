"""Config sections of the SynCo / RGBC recipes (``synco``, ``rgbc``; SynCo, RGBC proposal, docs/rgbc.md)."""
from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from coevo.config import Strict

__all__ = ["SynCoConfig", "RGBCConfig"]


class SynCoConfig(Strict):
    """SynCo loop counts and validator/consensus settings (SynCo appendix B.2, C.3; shared by recipes synco and rgbc).

    Defaults are CPU-sized; the paper constants (32 tasks per step, K = 4) are in presets/paper.yaml.
    """
    rounds: int = Field(2, ge=1, description="rounds; each = steps_per_round joint steps, then an eval")
    steps_per_round: int = Field(5, ge=1, description="joint Synthesizer+Reasoner steps per round")
    tasks_per_step: int = Field(32, ge=1, description="tasks the Synthesizer writes per step (paper: 32)")
    synth_group: int = Field(4, ge=1, description="tasks per Synthesizer prompt (its GRPO group); divides tasks_per_step")
    k: int = Field(4, ge=1, description="Reasoner rollouts per task and group (paper: K = 4)")
    synth_max_tokens: int = Field(80, ge=8, description="max new tokens of a Synthesizer output")
    consensus: bool = Field(True, description="run the independent consensus check before any rollout")
    consensus_n: int = Field(4, ge=1, description="independent solves per task in the consensus check")
    consensus_min_agree: int = Field(1, ge=1, description="reject a task when fewer solves than this match its reference")
    redundancy_window: int = Field(256, ge=0, description="N: redundancy is checked against the last N validated tasks")
    hard_checks: list[Literal["schema", "well_posed", "consistency", "legality", "redundancy"]] = Field(
        default_factory=lambda: ["schema", "well_posed", "consistency", "legality", "redundancy"],
        description="validator checks whose failure rejects the task before any rollout")
    quality_weights: dict[str, float] = Field(
        default_factory=lambda: {"schema": 1.0, "well_posed": 1.0, "legality": 1.0, "novelty": 1.0},
        description="quality score v_q = weighted mean of these components (feeds G_q); see docs/rgbc.md")
    reliability_weights: dict[str, float] = Field(
        default_factory=lambda: {"steps_parse": 1.0, "chain": 1.0, "operands": 1.0, "final": 1.0},
        description="reliability score v_r = weighted mean of rule-based consistency checks (feeds G_r)")
    reward_formatted: float = Field(1.0, description="Reasoner reward: correct and well formatted")
    reward_recovered: float = Field(0.9, description="Reasoner reward: correct after format recovery")
    invalid_reward: float = Field(-1.0, description="Synthesizer reward of an output the validator rejects")
    consensus_reject_reward: float = Field(-0.5, description="Synthesizer reward of a task the consensus check rejects")
    reasoner_updates: bool = Field(True, description="False: the Reasoner is frozen (no GRPO step, its version "
                                   "stays): the zero-learning control of the lag null (docs/rgbc.md)")
    instrument: bool = Field(True, description="audit-only confirm/post groups where the arm has none (kappa, nu, lag of SynCo)")
    audit_samples: int = Field(48, ge=0, description="oracle audit: extra samples per task for its true pass rate (audit-only cost)")
    eval_interim_per_level: int | None = Field(
        None, ge=1, description="held-out evaluations before the last round's (the initial one, between rounds) on "
                                "the first n items of each level only; None = the full set (world.eval_per_level) "
                                "every time (the last round's evaluation always uses the full set)")
    mid_band: list[float] = Field(default_factory=lambda: [0.25, 0.75], min_length=2, max_length=2,
                                  description="true-p band reported as the mid band (m_4(p) >= 0.68 inside it)")

    @model_validator(mode="after")
    def _groups_divide(self):
        if self.tasks_per_step % self.synth_group:
            raise ValueError(f"tasks_per_step ({self.tasks_per_step}) must be a multiple of synth_group "
                             f"({self.synth_group})")
        return self


class RGBCConfig(Strict):
    """RGBC options (RGBC proposal §core idea); counts come from the synco section."""
    arm: Literal["synco", "mu_tilde", "full"] = Field("full", description="synco = T(mu_1); mu_tilde = T(mu~) no "
                                                      "kappa discount; full = T(mu~) omega(kappa), confirm after update")
    omega0: float = Field(0.2, ge=0, le=1, description="omega(kappa = 0)")
    confirm: bool = Field(True, description="draw the confirm group (off + omega0 = 1 reduces to SynCo)")
    confirm_timing: Literal["auto", "pre", "post"] = Field(
        "auto", description="confirm group before or after the Reasoner update; auto: full = post, others = pre")
    reward_mu: Literal["tilde", "post"] = Field("tilde", description="argument of T in arm full: mu~ over 2K, or mu_post alone")
    doubt_policy: Literal["drop", "anchor"] = Field(
        "drop", description="reference-in-doubt tasks: drop, or use the mode answer as provisional anchor")
    doubt_stable: float = Field(0.75, gt=0, le=1, description="mode share that makes a nu = 0 task 'in doubt'")
    doubt_screen: bool = Field(
        False, description="arm full (confirm after the update): decide the doubt bucket on the K screen answers "
                           "before the Reasoner update (mode != reference, mode share >= doubt_stable) and apply "
                           "doubt_policy to the Reasoner's rewards as well as the Synthesizer's; False: the bucket "
                           "of the 2K answers, known after the update, acts on the Synthesizer only (docs/rgbc.md)")
    doubt_reward: float = Field(0.0, description="Synthesizer reward of a dropped in-doubt task")
    budget: Literal["matched", "none"] = Field(
        "matched", description="matched: arm synco spends the confirm budget an RGBC arm would (its observed "
                               "bearing rate) on extra tasks; none: no matching")
    budget_prior: float = Field(0.17, ge=0, le=1, description="bearing rate assumed before the first step (seed: ~17%)")
    budget_scale: float = Field(1.0, gt=0, description="matched arm synco: extra Synthesizer groups = round(scale x b x "
                                "groups per step) (> 1 makes up for proposals that fail validator / consensus)")
    budget_carry: bool = Field(False, description="matched arm synco: carry each step's rounding remainder of the "
                               "extra groups to the next step (the run's extra tasks then match b x tasks on average)")
    lag_null: Literal["auto", "draw", "off"] = Field(
        "auto", description="the lag's zero-learning null mu_null (an independent group of the bearing tasks with the "
                            "pre-update weights): auto = the pre-update confirm group where the arm draws one (no "
                            "extra rollouts); draw = also an audit-stream 'lag-null' group of K where it does not "
                            "(arm full); off")
    reward_shape: Literal["T", "adv_hat"] = Field(
        "T", description="the Synthesizer's teachability term: SynCo's T(mu), or the continuous advantage magnitude "
                         "adv_hat = n/(n-1) mu (1-mu) over the n rollouts behind mu (K arm, RGBC proposal §limitation 6)")
    k_budget_ref: int | None = Field(
        None, ge=1, description="budget matching of the K arm: tasks per step become tasks_per_step * k_budget_ref / K "
                                "(down to a multiple of synth_group), so screen rollouts per step equal K = "
                                "k_budget_ref's; None = no matching")
    doubt_gate_precision: float = Field(0.80, ge=0, le=1, description="human-check gate: precision of the mode anchor")
    doubt_gate_recall: float = Field(0.75, ge=0, le=1, description="human-check gate: recall of the mode anchor")
