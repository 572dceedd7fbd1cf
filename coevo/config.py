"""Typed run configuration: defaults < preset YAML < --config YAML < --set key=value.

A bad value fails at load with the field's dotted name, e.g.
``rzero.delta: Input should be less than or equal to 0.5 (got 0.9)``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, Optional, Union

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

PRESET_DIR = Path(__file__).parent / "presets"


class ConfigError(Exception):
    pass


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class WorldConfig(Strict):
    name: Literal["arithmetic", "math"] = "arithmetic"
    eval_per_level: int = Field(500, ge=1, description="held-out eval tasks per difficulty level (L1 has only 200 distinct)")
    eval_seed: int = 12345
    frontier_band: Union[Literal["auto"], list[str]] = Field(
        "auto", description="levels reported as the frontier; auto = levels whose initial (round 0) accuracy "
                            "lies in [frontier_low, frontier_high]")
    frontier_low: float = Field(0.2, ge=0, le=1)
    frontier_high: float = Field(0.8, ge=0, le=1)
    challenger_prompt_line: str = Field(
        "fewer than 30% of advanced high-school students could solve it",
        description="math world: R-Zero's difficulty line in the Challenger prompt")
    prompt_style: Literal["rzero", "fewshot"] = Field(
        "rzero", description="math world: rzero = R-Zero's prompts; fewshot = one worked example, "
                             "<question> prefill and stop strings, for small models (SmolLM2-135M)")
    answer_extraction: Literal["boxed", "lenient"] = Field(
        "boxed", description="math world: boxed = last \\boxed{} (R-Zero); lenient = else the number "
                             "after the last 'answer is'")


class SamplingConfig(Strict):
    temperature: float = Field(1.0, gt=0)
    top_p: float = Field(1.0, gt=0, le=1)
    max_new_tokens: int = Field(64, ge=1)


class LossSection(Strict):
    clip_eps: float = Field(0.2, gt=0)
    clip_eps_high: Optional[float] = Field(None, gt=0)
    aggregation: Literal["grpo", "dr_grpo", "dapo", "bnpo"] = "grpo"
    kl_coef: float = Field(0.0, ge=0)
    advantage_scale: Literal["group", "batch", "none"] = "group"
    max_completion_length: Optional[int] = Field(
        None, ge=1, description="dr_grpo: the fixed normaliser L in sum / (B * L) (Dr. GRPO, TRL "
                                "max_completion_length); None = sampling.max_new_tokens")
    kl_bias_correction: bool = Field(
        False, description="multiply the KL term by the importance ratio (TRL use_bias_correction_kl)")


class BackendConfig(Strict):
    kind: Literal["tiny", "hf", "openai"] = "tiny"
    roles: Literal["separate", "shared", "lora"] = Field(
        "separate", description="separate = two policies; shared = one policy for both roles (R-Zero 'Single'); "
                                "lora = two adapters on one base (hf)")
    solver_checkpoint: Optional[str] = Field(None, description="tiny: path; None = shipped pretrained asset")
    challenger_checkpoint: Optional[str] = None
    synthesizer_checkpoint: Optional[str] = None
    lr_solver: float = Field(1e-4, gt=0)
    lr_challenger: float = Field(1e-4, gt=0)
    grad_clip: float = Field(1.0, gt=0)
    threads: int = Field(2, ge=1, description="torch CPU threads")
    options: dict[str, Any] = Field(default_factory=dict, description="backend-specific (hf model id, urls, ...)")


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
    solver_prompts: int = Field(32, ge=1, description="questions per Solver step")
    solver_group: int = Field(5, ge=1, description="Solver rollouts per question (GRPO group)")


class EvalConfig(Strict):
    greedy: bool = True
    samples: int = Field(0, ge=0, description="also report mean@k at the sampling temperature when > 0")


class VerifyConfig(Strict):
    workers: int = Field(2, ge=0, description="verifier pool processes (0 = in-process)")
    timeout_s: float = Field(5.0, gt=0)
    kind: Optional[str] = Field(None, description="verifier kind of answer checks (coevo.verify KINDS); "
                                                  "None = the world's default")
    options: dict[str, Any] = Field(default_factory=dict, description="options of that verifier kind")
    cache: bool = Field(True, description="cache verdicts in the run's ledger (verdict_cache table)")


class SynCoConfig(Strict):
    """SynCo loop counts and validator/consensus settings (seed 000; shared by recipes synco and rgbc).

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
    instrument: bool = Field(True, description="audit-only confirm/post groups where the arm has none (kappa, nu, lag of SynCo)")
    audit_samples: int = Field(48, ge=0, description="oracle audit: extra samples per task for its true pass rate (audit-only cost)")
    mid_band: list[float] = Field(default_factory=lambda: [0.25, 0.75], min_length=2, max_length=2,
                                  description="true-p band reported as the mid band (m_4(p) >= 0.68 inside it)")

    @model_validator(mode="after")
    def _groups_divide(self):
        if self.tasks_per_step % self.synth_group:
            raise ValueError(f"tasks_per_step ({self.tasks_per_step}) must be a multiple of synth_group "
                             f"({self.synth_group})")
        return self


class RGBCConfig(Strict):
    """RGBC options (seed 000 §核心思路); counts come from the synco section."""
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
    doubt_reward: float = Field(0.0, description="Synthesizer reward of a dropped in-doubt task")
    budget: Literal["matched", "none"] = Field(
        "matched", description="matched: arm synco spends the confirm budget an RGBC arm would (its observed "
                               "bearing rate) on extra tasks; none: no matching")
    budget_prior: float = Field(0.17, ge=0, le=1, description="bearing rate assumed before the first step (seed: ~17%)")
    doubt_gate_precision: float = Field(0.80, ge=0, le=1, description="human-check gate: precision of the mode anchor")
    doubt_gate_recall: float = Field(0.75, ge=0, le=1, description="human-check gate: recall of the mode anchor")


class RunConfig(Strict):
    recipe: Literal["rzero", "synco", "rgbc"] = "rzero"
    preset: str = "cpu"
    note: str = ""
    seed: int = 0
    out_root: str = "runs"
    world: WorldConfig = Field(default_factory=WorldConfig)
    backend: BackendConfig = Field(default_factory=BackendConfig)
    sampling: SamplingConfig = Field(default_factory=SamplingConfig)
    loss: LossSection = Field(default_factory=LossSection)
    rzero: RZeroConfig = Field(default_factory=RZeroConfig)
    synco: SynCoConfig = Field(default_factory=SynCoConfig)
    rgbc: RGBCConfig = Field(default_factory=RGBCConfig)
    eval: EvalConfig = Field(default_factory=EvalConfig)
    verify: VerifyConfig = Field(default_factory=VerifyConfig)


def available_presets() -> list[str]:
    return sorted(p.stem for p in PRESET_DIR.glob("*.yaml"))


def _deep_merge(base: dict, over: dict) -> dict:
    out = dict(base)
    for k, v in over.items():
        out[k] = _deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def _read_yaml(path: Path) -> dict:
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: not valid YAML ({str(e).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at the top level")
    return data


def parse_override(item: str) -> dict:
    if "=" not in item:
        raise ConfigError(f"--set {item!r}: expected key=value")
    key, raw = item.split("=", 1)
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    node: Any = value
    for part in reversed(key.strip().split(".")):
        node = {part: node}
    return node


def format_validation_error(e: ValidationError) -> str:
    parts = []
    for err in e.errors():
        loc = ".".join(str(x) for x in err["loc"])
        msg = "unknown field" if err["type"] == "extra_forbidden" else err["msg"]
        got = err.get("input")
        got_s = "" if err["type"] == "extra_forbidden" or isinstance(got, dict) else f" (got {got!r})"
        parts.append(f"{loc}: {msg}{got_s}")
    return "; ".join(parts)


def build_config(data: dict) -> RunConfig:
    try:
        return RunConfig.model_validate(data)
    except ValidationError as e:
        raise ConfigError(f"invalid config: {format_validation_error(e)}") from None


def load_config(preset: str = "cpu", config: Path | None = None, overrides: list[str] | None = None) -> RunConfig:
    """Resolve defaults < preset < YAML file < --set overrides into a validated RunConfig."""
    p = Path(preset)
    if p.suffix in (".yaml", ".yml"):
        if not p.is_file():
            raise ConfigError(f"preset file not found: {p}")
        data = _read_yaml(p)
    else:
        f = PRESET_DIR / f"{preset}.yaml"
        if not f.is_file():
            raise ConfigError(f"unknown preset {preset!r}; available: {', '.join(available_presets())}")
        data = _read_yaml(f)
        data.setdefault("preset", preset)
    if config is not None:
        if not Path(config).is_file():
            raise ConfigError(f"config file not found: {config}")
        data = _deep_merge(data, _read_yaml(Path(config)))
    for item in overrides or []:
        data = _deep_merge(data, parse_override(item))
    return build_config(data)


def dump_config(cfg: RunConfig) -> str:
    return yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False)
