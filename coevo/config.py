"""Typed run configuration: defaults < preset YAML < --config YAML < --set key=value.

A bad value fails at load with the field's dotted name, e.g.
``rzero.delta: Input should be less than or equal to 0.5 (got 0.9)``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Literal, Optional, Union

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, field_validator, model_validator

from coevo.worlds.math_prompts import INSTRUCT

PRESET_DIR = Path(__file__).parent / "presets"
DEFAULT_PRESET = "cpu"  # what `coevo run` runs with no --preset / --recipe; its `recipe` is the default recipe


class ConfigError(Exception):
    pass


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)


class WorldConfig(Strict):
    name: str = Field("arithmetic", description="a built-in world (coevo.worlds.WORLDS) or 'module:Class'")
    options: dict[str, Any] = Field(default_factory=dict, description="options of a world outside coevo")
    eval_per_level: int = Field(500, ge=1, description="held-out eval tasks per difficulty level (L1 has only 200 distinct)")
    eval_seed: int = Field(12345, description="seed of the held-out eval set (the same set for every run seed)")
    frontier_band: Union[Literal["auto"], list[str]] = Field(
        "auto", description="levels reported as the frontier; auto = levels whose initial (round 0) accuracy "
                            "lies in [frontier_low, frontier_high]")
    frontier_low: float = Field(0.2, ge=0, le=1, description="frontier_band=auto: lowest initial accuracy of a frontier level")
    frontier_high: float = Field(0.8, ge=0, le=1, description="frontier_band=auto: highest initial accuracy of a frontier level")
    challenger_prompt_line: str = Field(
        "fewer than 30% of advanced high-school students could solve it",
        description="math world: R-Zero's difficulty line in the Challenger prompt")
    prompt_style: str = Field(
        INSTRUCT, description="math world: instruct = the world's instruction prompts (R-Zero's, "
                              "coevo/worlds/math_prompts.py), a style a recipe folder registers, or fewshot = one "
                              "worked example, <question> prefill and stop strings, for small models (SmolLM2-135M)")
    answer_extraction: Literal["boxed", "lenient"] = Field(
        "boxed", description="math world: boxed = last \\boxed{} (R-Zero); lenient = else the number "
                             "after the last 'answer is'")

    @field_validator("prompt_style")
    @classmethod
    def _known_style(cls, v: str) -> str:
        from coevo.worlds.math import prompt_style_names

        if v not in prompt_style_names():
            raise ValueError(f"unknown prompt style {v!r}; known: {', '.join(prompt_style_names())}")
        return v


class SamplingConfig(Strict):
    temperature: float = Field(1.0, gt=0, description="sampling temperature of training rollouts")
    top_p: float = Field(1.0, gt=0, le=1, description="nucleus sampling mass (1 = off)")
    max_new_tokens: int = Field(64, ge=1, description="tokens a rollout may generate")


class LossSection(Strict):
    clip_eps: float = Field(0.2, gt=0, description="PPO/GRPO ratio clip epsilon")
    clip_eps_high: Optional[float] = Field(None, gt=0, description="upper clip (DAPO clip-higher); None = clip_eps")
    aggregation: Literal["grpo", "dr_grpo", "dapo", "bnpo"] = Field(
        "grpo", description="token-loss aggregation (TRL): grpo = mean per sequence, then over sequences; dr_grpo = "
                            "sum / (B * L); dapo = sum / active tokens of the optimiser step; bnpo = sum / active "
                            "tokens of the micro-batch")
    kl_coef: float = Field(0.0, ge=0, description="k3 KL penalty to the starting (reference) policy; 0 = none, no reference kept")
    advantage_scale: Literal["group", "batch", "none"] = Field(
        "group", description="advantage = reward - group mean, divided by the group's SD, the batch's SD or nothing")
    max_completion_length: Optional[int] = Field(
        None, ge=1, description="dr_grpo: the fixed normaliser L in sum / (B * L) (Dr. GRPO, TRL "
                                "max_completion_length); None = sampling.max_new_tokens")
    kl_bias_correction: bool = Field(
        False, description="multiply the KL term by the importance ratio (TRL use_bias_correction_kl)")


class BackendConfig(Strict):
    kind: Literal["tiny", "hf", "openai"] = Field(
        "tiny", description="tiny = shipped CPU transformers; hf = transformers; openai = OpenAI-compatible servers")
    roles: Literal["separate", "shared", "lora"] = Field(
        "separate", description="separate = two policies; shared = one policy for both roles (R-Zero 'Single'); "
                                "lora = two adapters on one base (hf)")
    checkpoints: dict[str, str] = Field(default_factory=dict, description="tiny: role -> checkpoint path, or "
                                        "asset:NAME for the shipped coevo/assets/NAME.pt; a role not named uses the "
                                        "legacy *_checkpoint field or its shipped asset")
    lr: dict[str, float] = Field(default_factory=dict, description="role -> learning rate (overrides the role's "
                                                                   "default field, lr_solver or lr_challenger)")
    solver_checkpoint: Optional[str] = Field(None, description="tiny: path; None = shipped pretrained asset")
    challenger_checkpoint: Optional[str] = Field(None, description="tiny: path; None = shipped pretrained asset")
    synthesizer_checkpoint: Optional[str] = Field(None, description="tiny: path; None = shipped pretrained asset")
    lr_solver: float = Field(1e-4, gt=0, description="learning rate of the solver-side roles")
    lr_challenger: float = Field(1e-4, gt=0, description="learning rate of the proposer-side roles")
    grad_clip: float = Field(1.0, gt=0, description="gradient-norm clip of every update")
    threads: int = Field(2, ge=1, description="torch CPU threads")
    options: dict[str, Any] = Field(default_factory=dict, description="backend-specific (hf model id, urls, ...)")

    @field_validator("options")
    @classmethod
    def _known_options(cls, v, info):
        from coevo.backends.roles import check_option_keys
        from coevo.secrets import refuse_literal_key

        refuse_literal_key(v, "backend.options")  # a key in the config would be written to the run directory
        if v and "kind" in info.data:
            check_option_keys(v, info.data["kind"])  # per backend kind, nested lora/tiny keys too
        return v


class EvalConfig(Strict):
    greedy: bool = Field(True, description="held-out eval with greedy answers (accuracy in the round table)")
    samples: int = Field(0, ge=0, description="also report mean@k at the sampling temperature when > 0")


class VerifyConfig(Strict):
    workers: int = Field(2, ge=0, description="verifier pool processes (0 = in-process)")
    timeout_s: float = Field(5.0, gt=0, description="seconds per answer check before it abstains (pool only)")
    kind: Optional[str] = Field(None, description="verifier kind of answer checks (coevo.verify KINDS); "
                                                  "None = the world's default")
    options: dict[str, Any] = Field(default_factory=dict, description="options of that verifier kind")
    cache: bool = Field(True, description="cache verdicts in the run's ledger (verdict_cache table)")
    criteria: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="criterion id -> {kind, options}: a verifier of its own for the "
                                          "verdicts of that criterion")

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, v):
        from coevo.verify.verifiers import KINDS

        if v is not None and v not in KINDS and v != "world-equivalent":
            raise ValueError(f"unknown verifier kind {v!r}; known: {', '.join(sorted(KINDS))}")
        return v

    @field_validator("options")
    @classmethod
    def _no_literal_key(cls, v):
        from coevo.secrets import refuse_literal_key

        refuse_literal_key(v, "verify.options")
        return v

    @field_validator("criteria")
    @classmethod
    def _criteria_kinds(cls, v):
        from coevo.secrets import refuse_literal_key
        from coevo.verify.verifiers import KINDS

        for cid, spec in v.items():
            refuse_literal_key(spec.get("options") if isinstance(spec, dict) else None, f"verify.criteria.{cid}.options")
            if not isinstance(spec, dict) or spec.get("kind") not in KINDS:
                raise ValueError(f"criterion {cid!r}: needs kind, one of {', '.join(sorted(KINDS))}")
            if set(spec) - {"kind", "options"}:
                raise ValueError(f"criterion {cid!r}: only kind and options, got {sorted(set(spec))}")
        return v


class TrackingConfig(Strict):
    """Per-step metrics also written to experiment trackers (coevo/tracking.py, docs/tracking.md);
    the ledger stays the record: a tracker that fails prints one warning and the run goes on."""
    tensorboard: bool = Field(True, description="TensorBoard event files in RUN/tensorboard/ (tensorboardX)")
    wandb: bool = Field(False, description="W&B, offline only (WANDB_MODE=offline), files under RUN/wandb/")
    wandb_project: str = Field("coevo", min_length=1, description="W&B project name")
    audit_instruments: bool = Field(True, description="also the audit's per-step instruments (audit/...)")


class ExecutorConfig(Strict):
    """Where verification and sampling run (coevo/executors, docs/cluster.md); same numbers either way."""
    kind: Literal["local", "ray"] = Field("local", description="local: this machine; ray: Ray actors")
    address: Optional[str] = Field(None, description="ray: cluster address (host:port or 'auto'); None = "
                                                     "start a Ray instance on this machine")
    local_cpus: Optional[int] = Field(None, ge=1, description="ray without address: CPUs of that instance")
    verify_actors: Optional[int] = Field(None, ge=1, description="ray: verifier actors (None = cluster CPUs "
                                                                 "/ workers_per_actor)")
    workers_per_actor: int = Field(1, ge=1, description="ray: killable verifier processes per actor (its CPUs)")
    sample_replicas: bool = Field(True, description="ray: tiny policies sample on replica actors")
    replica_cpus: float = Field(0.0, ge=0, description="ray: CPUs reserved by each sampling replica")
    start_timeout_s: float = Field(120.0, gt=0, description="ray: wait this long for actors to be placed")

    @field_validator("address")
    @classmethod
    def _address_needs_ray(cls, v, info):
        if v and info.data.get("kind") != "ray":
            raise ValueError("an address needs executor.kind=ray (--executor ray)")
        return v


class JudgeEndpoint(Strict):
    base_url: str = Field(..., min_length=1, description="OpenAI-compatible /v1 root")
    model: str = Field(..., min_length=1, description="model name the endpoint serves")
    api_key_env: str = Field("OPENAI_API_KEY", description="the environment variable holding the key (never the key)")
    timeout_s: float = Field(30.0, gt=0, description="seconds per request")
    retries: int = Field(3, ge=0, description="retries of a failed request")


class TruthConfig(Strict):
    """Truth of pseudo-labels / references where the world has no oracle (coevo.audit.truth)."""

    judge: Optional[JudgeEndpoint] = Field(None, description="an LLM judge asked whether an answer is correct")
    references: Optional[str] = Field(None, description="JSONL of question + answer(s), matched by question text")

    @model_validator(mode="after")
    def _one(self) -> "TruthConfig":
        if self.judge is not None and self.references is not None:
            raise ValueError("set one of truth.judge and truth.references, not both")
        return self


class RunConfig(Strict):
    """Core sections here; each recipe's own sections (``rzero``, ``synco``, ``rgbc``, ...) are
    pydantic models declared by the recipe (``RecipeInfo.sections``): ``build_config`` validates a
    config with ``config_model(sections)``, a subclass of this one whose fields are those sections
    (``cfg.rzero`` is an ``RZeroConfig``); an unknown key anywhere is an error naming its path."""

    recipe: str = Field(default_factory=lambda: default_recipe(),
                        description="an installed recipe (its entry point's name) or a module path; default: the "
                                    "default preset's")
    preset: str = Field(DEFAULT_PRESET, description="the preset this config came from (set by --preset)")
    intended_backends: Optional[list[Literal["tiny", "hf", "openai"]]] = Field(
        None, min_length=1, description="the backend kinds this preset is sized for; `coevo run` refuses "
                                        "another backend.kind unless --force (None = any)")
    note: str = Field("", description="free text kept with the run (a budget adds its overrides here)")
    seed: int = Field(0, description="run seed: every RNG stream of the run derives from it (--seed N)")
    out_root: str = Field("runs", description="where default run directories go (<recipe>-<timestamp>)")
    max_error_rate: float = Field(0.0, ge=0.0, le=1.0, description="exit 2 after the run when more than this share "
                                  "of the calls to a model server or judge failed after retries (0: any; "
                                  "--max-error-rate; a step whose calls all fail stops the run at once)")
    world: WorldConfig = Field(default_factory=WorldConfig)
    backend: BackendConfig = Field(default_factory=BackendConfig)
    sampling: SamplingConfig = Field(default_factory=SamplingConfig)
    loss: LossSection = Field(default_factory=LossSection)
    eval: EvalConfig = Field(default_factory=EvalConfig)
    verify: VerifyConfig = Field(default_factory=VerifyConfig)
    executor: ExecutorConfig = Field(default_factory=ExecutorConfig)
    tracking: TrackingConfig = Field(default_factory=TrackingConfig)
    truth: TruthConfig = Field(default_factory=TruthConfig)

    def __reduce__(self):  # a recipe's config class is made at load: pickle the data, rebuild on load
        return build_config, (self.model_dump(mode="json"),)


_MODELS: dict[tuple, type] = {}


def config_model(sections: dict[str, type]) -> type[RunConfig]:
    """The RunConfig subclass with one typed field per recipe section (``{name: model}``, in that
    order: the order ``config.yaml`` lists them), made once per list of sections."""
    key = tuple((name, id(model)) for name, model in sections.items())
    if key not in _MODELS:
        fields = {name: (model, Field(default_factory=model)) for name, model in sections.items()}
        _MODELS[key] = create_model("RunConfig_" + "_".join(sections), __base__=RunConfig, __module__=__name__,
                                    **fields)
    return _MODELS[key]


def preset_files() -> dict[str, Path]:
    """Every shipped preset by name: the shared ones (``coevo/presets``) and each installed recipe
    folder's ``presets/`` (``coevo.core.registry.recipe_folders``)."""
    from coevo.core.registry import recipe_folders

    files = {p.stem: p for d in recipe_folders() for p in sorted(d.glob("presets/*.yaml"))}
    files.update({p.stem: p for p in sorted(PRESET_DIR.glob("*.yaml"))})
    return files


def default_recipe() -> str:
    """The recipe of the default preset (``DEFAULT_PRESET``): a config that names none runs it."""
    f = preset_files().get(DEFAULT_PRESET)
    recipe = _read_yaml(f).get("recipe") if f is not None else None
    if not recipe:
        raise ConfigError(f"no recipe given and the default preset {DEFAULT_PRESET!r} names none "
                          f"(installed presets: {', '.join(available_presets()) or 'none'})")
    return str(recipe)


def available_presets() -> list[str]:
    return sorted(preset_files())


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


def _field_names(model, path) -> list[str]:
    """The field names of the pydantic model at ``path`` (a loc without its last part) under ``model``."""
    for part in path:
        field = getattr(model, "model_fields", {}).get(str(part))
        if field is None:
            return []
        model = field.annotation
        model = next((a for a in getattr(model, "__args__", ()) if hasattr(a, "model_fields")), model)
    return list(getattr(model, "model_fields", {}))


def _did_you_mean(model, loc) -> str:
    import difflib

    near = difflib.get_close_matches(str(loc[-1]), _field_names(model, loc[:-1]), n=1, cutoff=0.6) if model else []
    return f" (did you mean '{near[0]}'?)" if near else ""


def format_validation_error(e: ValidationError, model=None) -> str:
    """One line per error, each with its dotted path; an unknown key names the closest known one of ``model``."""
    parts = []
    for err in e.errors():
        loc = ".".join(str(x) for x in err["loc"])
        msg = "unknown field" + _did_you_mean(model, err["loc"]) if err["type"] == "extra_forbidden" \
            else err["msg"].removeprefix("Value error, ")
        got = err.get("input")
        got_s = "" if err["type"] == "extra_forbidden" or isinstance(got, dict) else f" (got {got!r})"
        parts.append(f"{loc}: {msg}{got_s}")
    return "; ".join(parts)


def _recipe_sections(recipe: str, keys) -> tuple[Any, dict[str, Any]]:
    """The selected recipe and the models of the sections ``keys`` names: the recipe's own and,
    only for a section it does not declare, those of the other installed recipes (a preset may carry
    the sections of several recipes, e.g. paper.yaml); no other recipe is imported."""
    from coevo.core.registry import RecipeNotFound, get_recipe, recipe_names

    try:
        info = get_recipe(recipe)
    except RecipeNotFound as e:
        raise ConfigError(f"invalid config: recipe: {e}") from None
    known: dict[str, Any] = dict(info.sections)
    if any(k not in known for k in keys):
        for name in recipe_names():
            for sec, model in get_recipe(name).sections.items():
                known.setdefault(sec, model)
    return info, known


def build_config(data: dict) -> RunConfig:
    """Validate a config mapping with the typed model of its sections: core sections as RunConfig
    declares them, recipe sections by the models the recipes declare (the selected recipe's, and
    any other installed recipe's section the mapping carries), then the recipe/world pair by the
    recipe's supported worlds and ``world.options`` by the world's option names.  Every error names
    its dotted path (``rzero.solver_stepz: unknown field``)."""
    data = dict(data or {})
    extra = [k for k in data if k not in RunConfig.model_fields]
    info, known = _recipe_sections(str(data["recipe"] if "recipe" in data else default_recipe()), extra)
    sections = {k: known[k] for k in extra if k in known}  # the mapping's order, then the recipe's other sections
    sections.update({k: m for k, m in info.sections.items() if k not in sections})
    model = config_model(sections)
    try:
        cfg = model.model_validate(data)
    except ValidationError as e:
        raise ConfigError(f"invalid config: {format_validation_error(e, model)}") from None
    _check_world(cfg, info)
    return cfg


def _check_world(cfg: RunConfig, info) -> None:
    from coevo.worlds import WORLDS, WorldNotFound, check_options, world_class

    name = cfg.world.name
    if name not in WORLDS and ":" not in name:
        raise ConfigError(f"invalid config: world.name: unknown world {name!r}; built-in: {', '.join(WORLDS)} "
                          f"(or 'module:Class')")
    if info.worlds and name not in info.worlds:
        raise ConfigError(f"invalid config: recipe {info.name!r} does not support world {name!r} "
                          f"(supports: {', '.join(info.worlds)})")
    try:
        check_options(world_class(name), cfg.world.options)
    except WorldNotFound:
        return  # a world outside coevo that does not import: the run says so when it builds the world
    except ValueError as e:
        raise ConfigError(f"invalid config: {e}") from None


deep_merge = _deep_merge  # public name: coevo.knobs merges budgets and --set items the same way


def load_config(preset: str = DEFAULT_PRESET, config: Path | None = None, overrides: list[str] | None = None) -> RunConfig:
    """Resolve defaults < preset < YAML file < --set overrides into a validated RunConfig."""
    p = Path(preset)
    if p.suffix in (".yaml", ".yml"):
        if not p.is_file():
            raise ConfigError(f"preset file not found: {p}")
        data = _read_yaml(p)
    else:
        f = preset_files().get(preset)
        if f is None:
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


def check_intended_backend(cfg: RunConfig) -> None:
    """ConfigError (one line) if the preset is not meant for ``backend.kind`` (``--force`` skips this)."""
    meant = cfg.intended_backends
    if meant and cfg.backend.kind not in meant:
        raise ConfigError(f"preset {cfg.preset!r} is meant for backend {' or '.join(meant)}, not "
                          f"{cfg.backend.kind!r} (intended_backends); set backend.kind, or pass --force "
                          f"to run it anyway")


def dump_config(cfg: RunConfig) -> str:
    return yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False)
