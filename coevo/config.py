"""Typed run configuration: defaults < preset YAML < --config YAML < --set key=value.

A bad value fails at load with the field's dotted name, e.g.
``rzero.delta: Input should be less than or equal to 0.5 (got 0.9)``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, Optional

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

PRESET_DIR = Path(__file__).parent / "presets"


class ConfigError(Exception):
    pass


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class WorldConfig(Strict):
    name: Literal["arithmetic", "math"] = "arithmetic"
    eval_per_level: int = Field(200, ge=1, description="held-out eval tasks per difficulty level")
    eval_seed: int = 12345
    frontier_band: list[str] = Field(default_factory=lambda: ["L3"], description="levels reported as the frontier")
    challenger_prompt_line: str = Field(
        "fewer than 30% of advanced high-school students could solve it",
        description="math world: R-Zero's difficulty line in the Challenger prompt")


class SamplingConfig(Strict):
    temperature: float = Field(1.0, gt=0)
    top_p: float = Field(1.0, gt=0, le=1)
    max_new_tokens: int = Field(24, ge=1)


class LossSection(Strict):
    clip_eps: float = Field(0.2, gt=0)
    clip_eps_high: Optional[float] = Field(None, gt=0)
    aggregation: Literal["grpo", "dr_grpo", "dapo", "bnpo"] = "grpo"
    kl_coef: float = Field(0.0, ge=0)
    advantage_scale: Literal["group", "batch", "none"] = "group"


class BackendConfig(Strict):
    kind: Literal["tiny", "hf", "openai"] = "tiny"
    roles: Literal["separate", "shared", "lora"] = Field(
        "separate", description="separate = two policies; shared = one policy for both roles (R-Zero 'Single'); "
                                "lora = two adapters on one base (hf)")
    solver_checkpoint: Optional[str] = Field(None, description="tiny: path; None = shipped pretrained asset")
    challenger_checkpoint: Optional[str] = None
    synthesizer_checkpoint: Optional[str] = None
    lr_solver: float = Field(3e-4, gt=0)
    lr_challenger: float = Field(3e-4, gt=0)
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
