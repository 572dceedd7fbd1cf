"""The knobs of ``coevo run``, shown without a run: run budgets, the resolved config, every config key.

* A **run budget** (``coevo run --budget NAME``) is a named list of ``--set`` overrides per recipe, kept in
  ``coevo/presets/budgets/NAME.yaml`` next to the presets.  It applies after the preset and ``--config`` and
  before ``--set`` / ``--seed`` (those win).  ``smoke`` is the one shipped: a run through every phase of the
  recipe in seconds, for trying things, not for numbers.
* ``resolve_run_config`` is the one resolution of ``coevo run``'s options (preset, config file, budget,
  overrides, shortcuts); ``coevo config show`` prints its result.
* ``config_keys`` lists every key of the typed config (``RunConfig`` and the recipes' sections) with its
  type, default and help, read from the pydantic models.
"""
from __future__ import annotations

import typing
from pathlib import Path
from typing import Any, Optional

import yaml

BUDGET_DIR = Path(__file__).parent / "presets" / "budgets"


class KnobError(Exception):
    """A bad option of ``coevo run`` / ``coevo config``: one line, exit 2."""


# ---------------------------------------------------------------------- run budgets
def budget_names() -> list[str]:
    return sorted(p.stem for p in BUDGET_DIR.glob("*.yaml"))


def budget_overrides(name: str, recipe: str) -> list[str]:
    """The ``key=value`` overrides of budget ``name`` for ``recipe``."""
    path = BUDGET_DIR / f"{name}.yaml"
    if not path.is_file():
        raise KnobError(f"unknown budget {name!r}; available: {', '.join(budget_names()) or 'none'}")
    data = yaml.safe_load(path.read_text()) or {}
    if recipe not in data:
        raise KnobError(f"budget {name!r} has no settings for recipe {recipe!r} (it has: {', '.join(data)}; "
                        f"see {path.relative_to(Path(__file__).parent.parent)})")
    return [str(x) for x in data[recipe]]


# ---------------------------------------------------------------------- one resolution of run's options
def _seed_override(seed: Optional[int], overrides: list[str]) -> list[str]:
    """``--seed N`` as ``seed=N``; an ``--set seed=M`` with another value is an error."""
    if seed is None:
        return []
    from coevo.config import parse_override

    for item in overrides:
        if item.split("=", 1)[0].strip() == "seed":
            given = parse_override(item)["seed"]
            if given != seed:
                raise KnobError(f"--seed {seed} and --set {item} disagree; give one of them")
    return [f"seed={seed}"]


def shortcut_overrides(set_: list[str], recipe: Optional[str] = None, executor: Optional[str] = None,
                       address: Optional[str] = None, seed: Optional[int] = None,
                       max_error_rate: Optional[float] = None) -> list[str]:
    """``--set`` items plus the shortcut options of ``coevo run`` as ``--set`` items."""
    out = list(set_)
    if max_error_rate is not None:
        out.append(f"max_error_rate={max_error_rate!r}")
    if recipe:
        out.append(f"recipe={recipe}")
    if executor:
        out.append(f"executor.kind={executor}")
    if address:
        out.append(f"executor.address={address!r}")
    return out + _seed_override(seed, list(set_))


def resolve_run_config(preset: Optional[str], config: Optional[Path], overrides: list[str],
                       recipe: Optional[str] = None, budget: Optional[str] = None):
    """The RunConfig ``coevo run`` would run: defaults < preset < ``--config`` < budget < ``--set``.
    ``preset`` None: the preset named after ``recipe`` when there is one, else the default preset."""
    from coevo.config import DEFAULT_PRESET, load_config, preset_files

    if preset is None:
        preset = recipe if recipe and recipe in preset_files() else DEFAULT_PRESET
    cfg = load_config(preset, config, overrides)
    if budget:
        extra = budget_overrides(budget, cfg.recipe)
        cfg = load_config(preset, config, [*extra, *overrides])
        cfg.note = f"{cfg.note}; " * bool(cfg.note) + f"budget {budget}: {' '.join(extra)}"
    return cfg


# ---------------------------------------------------------------------- resume: what --set may change
RESUME_RECORD = "resumes.jsonl"  # one JSON line per resume that changed a key (coevo/runner/resume.py)


def load_run_config(run_dir: Path):
    """The config a run directory's ``config.yaml`` holds; any damage is a KnobError (one line)."""
    import yaml

    from coevo.config import ConfigError, build_config

    path = Path(run_dir) / "config.yaml"
    if not path.is_file():
        raise KnobError(f"{run_dir} is not a coevo run directory (no config.yaml)")
    try:
        data = yaml.safe_load(path.read_text())
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise KnobError(f"{path}: not valid YAML ({str(e).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise KnobError(f"{path}: expected a mapping at the top level")
    try:
        return build_config(data)
    except ConfigError as e:
        raise KnobError(f"{path}: {e}") from None


def safe_keys(cfg) -> list[str]:
    """The keys ``--set`` may change on resume, for this run's recipe (``tracking.*``: the whole section)."""
    from coevo.core.registry import RecipeNotFound, get_recipe

    try:
        sections = get_recipe(cfg.recipe).sections
    except RecipeNotFound:
        sections = {}
    rounds = [f"{name}.rounds" for name, model in sections.items() if "rounds" in model.model_fields]
    return [*rounds, "tracking.*", "note", "max_error_rate"]


def _is_safe(key: str, safe: list[str]) -> bool:
    return any(key == s or (s.endswith(".*") and key.startswith(s[:-1])) for s in safe)


def dotted(data: dict, key: str):
    """``data["a"]["b"]`` for ``"a.b"`` (None when a part is missing)."""
    for part in key.split("."):
        data = data.get(part) if isinstance(data, dict) else None
    return data


def apply_resume_overrides(cfg, overrides: list[str]):
    """(new config, {key: (old, new)}) for ``--set`` items on resume; an unsafe key is a KnobError (one line)."""
    from coevo.config import ConfigError, build_config, deep_merge, parse_override

    safe = safe_keys(cfg)
    for item in overrides:
        if "=" not in item:
            raise KnobError(f"--set {item!r}: expected key=value")
    keys = [item.split("=", 1)[0].strip() for item in overrides]
    bad = [k for k in keys if not _is_safe(k, safe)]
    if bad:
        raise KnobError(f"--set {bad[0]} cannot change on --resume: a run continues with the config it started "
                        f"with; keys that may change: {', '.join(safe)} (start a new run for the rest)")
    old = cfg.model_dump(mode="json")
    data = old
    for item in overrides:
        data = deep_merge(data, parse_override(item))
    try:
        new = build_config(data)
    except ConfigError as e:
        raise KnobError(str(e)) from None
    now = new.model_dump(mode="json")
    changes = {k: (dotted(old, k), dotted(now, k)) for k in dict.fromkeys(keys) if dotted(old, k) != dotted(now, k)}
    return new, changes


def prepare_resume(run_dir: Path, overrides: list[str]):
    """The config a resume of ``run_dir`` runs with ``overrides`` applied, and {key: (old, new)}; any refusal
    (a damaged config.yaml, a key that may not change) is a KnobError, before anything is imported or written."""
    return apply_resume_overrides(load_run_config(run_dir), list(overrides))


# ---------------------------------------------------------------------- every key
def _type_name(ann) -> str:
    origin, args = typing.get_origin(ann), typing.get_args(ann)
    if origin is typing.Literal:
        return "|".join(str(a) for a in args)
    if origin is typing.Union or type(ann).__name__ == "UnionType":
        return " | ".join("None" if a is type(None) else _type_name(a) for a in args)
    if origin is not None:
        inner = ", ".join(_type_name(a) for a in args)
        return f"{getattr(origin, '__name__', str(origin))}[{inner}]" if inner else origin.__name__
    if ann is Any:
        return "any"
    return getattr(ann, "__name__", str(ann))


_BOUNDS = (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<"), ("min_length", "len >="))


def _bounds(field) -> str:
    out = []
    for m in field.metadata:
        for attr, sym in _BOUNDS:
            if getattr(m, attr, None) is not None:
                out.append(f"{sym} {getattr(m, attr)}")
    return f" ({', '.join(out)})" if out else ""


def _show(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, tuple):
        value = list(value)
    text = yaml.safe_dump(value, default_flow_style=True, width=10**6).strip()
    return text.removesuffix("...").strip()


def _model_in(ann):
    """The pydantic model an annotation holds (``X`` or ``Optional[X]``), else None."""
    for a in (ann, *typing.get_args(ann)):
        if isinstance(a, type) and hasattr(a, "model_fields"):
            return a
    return None


def _walk(model, prefix: str, rows: list[dict]) -> None:
    from pydantic_core import PydanticUndefined

    for name, f in model.model_fields.items():
        key = f"{prefix}{name}"
        sub = _model_in(f.annotation)
        if sub is not None:  # a section: its keys; an optional one (truth.judge) also as a key of its own
            if f.default_factory is None and f.default is None:
                rows.append({"key": key, "type": f"{sub.__name__} | None", "default": "null",
                             "help": " ".join((f.description or "").split())})
            _walk(sub, f"{key}.", rows)
            continue
        default = f.default_factory() if f.default_factory is not None else f.default
        rows.append({"key": key, "type": _type_name(f.annotation) + _bounds(f),
                     "default": "required" if default is PydanticUndefined else _show(default),
                     "help": " ".join((f.description or "").split())})


def config_keys(recipe: Optional[str] = None) -> list[dict]:
    """Every key (dotted path) of the run config with its type, default and help: the core sections and
    ``recipe``'s own sections, or, without ``recipe``, every installed recipe's (each section once)."""
    from coevo.config import RunConfig
    from coevo.core.registry import RecipeNotFound, get_recipe, installed_recipes

    try:
        infos = [get_recipe(recipe)] if recipe else installed_recipes()
    except RecipeNotFound as e:
        raise KnobError(str(e)) from None
    rows: list[dict] = []
    _walk(RunConfig, "", rows)
    seen: set[str] = set()
    for info in infos:
        for sec, model in info.sections.items():
            if sec not in seen:
                seen.add(sec)
                _walk(model, f"{sec}.", rows)
    return rows


def print_keys(rows: list[dict]) -> None:
    """One key a line, grep-able: ``key: type = default  # help``."""
    width = max(len(r["key"]) for r in rows)
    for r in rows:
        helptext = f"  # {r['help']}" if r["help"] else ""
        print(f"{r['key']:<{width}}  {r['type']} = {r['default']}{helptext}")
