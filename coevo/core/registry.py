"""The recipe registry: what a recipe declares, and how the runner, config, CLI and report
find it without naming it.

Recipes are plugins, registered as pytest registers its plugins: through the Python entry-point
group ``coevo.recipes`` (``pyproject.toml``: ``name = "package.module"``), read with
``importlib.metadata``.  The module defines ``RECIPES = {name: RecipeInfo(...)}`` (one module may
serve several names: ``synco`` and ``rgbc`` share a folder).  This module holds no list of recipes
and names none: the installed entry points are the list, a package outside coevo registers the same
way, and ``recipe`` in a run config is one of their names or the import path of a module that is
not installed (``mypkg.my_recipe`` or ``mypkg.my_recipe:name``; looked up in the current directory
as ``python -m`` does: ``coevo run --preset examples/toy_recipe.yaml`` from the repository root).

A manifest holds objects, or typed lazy references (:class:`Ref`) to what would import heavy code
(the recipe class, its report sections, commands, experiments): ``tests/test_ranks.py`` reads a
``Ref``'s module as an import.  :func:`load` and the entry points are the one place that imports a
recipe's code at run time (the documented exception of the run-time rank check).
"""
from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass, field
from importlib.metadata import distributions
from pathlib import Path
from typing import Any, Callable

GROUP = "coevo.recipes"  # the entry-point group recipes register in


@dataclass(frozen=True)
class Ref:
    """A typed lazy reference to ``module.attr`` (``attr`` empty: the module): imported by
    :meth:`load` on first use, so a manifest stays light; the rank test reads ``module``."""

    module: str
    attr: str = ""

    def load(self) -> Any:
        return load(self)

    def __str__(self) -> str:
        return f"{self.module}:{self.attr}" if self.attr else self.module


class RecipeNotFound(Exception):
    pass


@dataclass(frozen=True)
class RoleSpec:
    """A role the recipe needs.  ``trainable``: updated by GRPO (else frozen: sampled only).
    ``asset``: the tiny backend's shipped checkpoint for it (``coevo/assets/<asset>.pt``) when
    ``backend.checkpoints`` names none; ``seed_offset``: added to the run seed for its sampler.
    ``lr``: which learning-rate field of the backend section it uses by default."""

    name: str
    trainable: bool = True
    asset: str | None = None
    seed_offset: int = 0
    lr: str = "lr_solver"


# the fields that hold a callable / object or its Ref (a "module:attr" string is refused: a tool cannot follow it)
_REF_FIELDS = ("factory", "report_sections", "round_columns", "predictions", "commands", "experiments",
               "prompt_styles", "pretrain")


@dataclass(frozen=True)
class RecipeInfo:
    name: str
    factory: Any  # the recipe class or its Ref; called as Class(cfg, world, policies, run_id, verifier)
    roles: tuple[RoleSpec, ...]
    sections: dict[str, Any] = field(default_factory=dict)  # config section name -> pydantic model class
    worlds: tuple[str, ...] = ()  # world names it supports (empty = any)
    summary_columns: tuple[str, ...] = ()  # per-round keys of summary.json shown in the round table
    optional_summary_columns: tuple[str, ...] = ()  # per-round keys kept only in rounds whose steps have them
    report_sections: tuple[Any, ...] = ()  # functions or Refs, each (ledger, run_id, run_dir) -> HTML fragment
    description: str = ""
    solver_role: str = "solver"  # the role whose rollouts the round table counts (VG-OPD: the student)
    # ledger tables only this recipe writes: {table: [(column, DuckDB type), ...]} (created with the core tables)
    tables: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    # names of its summary columns in the round table: {column: (short header, long caption)}
    column_names: dict[str, tuple[str, str]] = field(default_factory=dict)
    # function or Ref, (ledger, run_id, round) -> {column: value}: round-row columns computed from
    # the ledger (beside the per-round means of the steps' metrics); None = none
    round_columns: Any = None
    # function or Ref, (run_dirs, stress) -> [prediction dicts]: its predictions in `coevo audit --predictions`,
    # called with the audited run directories of this recipe and the `--stress` file (or None)
    predictions: Any = None
    # functions or Refs, (apps) -> None: register the recipe's own CLI commands
    commands: tuple[Any, ...] = ()
    # {experiment name: Experiment or Ref} of the experiments that belong to the recipe
    experiments: dict[str, Any] = field(default_factory=dict)
    # {style name: InstructionPrompts or Ref} of the math world's prompt styles the recipe ships
    # (coevo.worlds.math.InstructionPrompts; `world.prompt_style`, `--prompt-style`); a Ref to the
    # world's own style registers an alias of it
    prompt_styles: dict[str, Any] = field(default_factory=dict)
    # {asset: spec} or its Ref: the tiny arithmetic assets the recipe's roles load (RoleSpec.asset)
    # and how `coevo pretrain` trains them (coevo.pretrain.asset_specs); None = none of its own
    pretrain: Any = None
    # {budget: ("key=value", ...)}: the run sizes `coevo bench step --budget` applies to the recipe's preset
    bench_budgets: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for f in _REF_FIELDS:
            v = getattr(self, f)
            for x in (v.values() if isinstance(v, dict) else v if isinstance(v, tuple) else (v,)):
                if isinstance(x, str):
                    raise RecipeNotFound(f"recipe {self.name!r}: {f} holds the string {x!r}; give the object "
                                         f"or Ref(module, attr)")

    @property
    def role_names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.roles)


def import_module(name: str):
    """``importlib.import_module``; a module that is not installed but whose top-level package (or
    module) is in the current directory is imported from there, as ``python -m`` would (the current
    directory goes last on ``sys.path``, so it shadows nothing installed)."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as e:
        top = name.split(".")[0]
        here = os.getcwd()
        if e.name != top or here in sys.path or not ((Path(here) / top).is_dir() or (Path(here) / f"{top}.py").is_file()):
            raise
        sys.path.append(here)
        return importlib.import_module(name)


def load(obj: Any) -> Any:
    """A manifest entry as an object: a :class:`Ref` is imported (a clear error when it is missing),
    anything else is returned as it is."""
    if not isinstance(obj, Ref):
        return obj
    try:
        m = import_module(obj.module)
    except ImportError as e:
        raise RecipeNotFound(f"cannot import {obj.module!r}: {e}") from None
    if not obj.attr:
        return m
    try:
        return getattr(m, obj.attr)
    except AttributeError:
        raise RecipeNotFound(f"{obj.module!r} has no {obj.attr!r}") from None


def _entry_points() -> dict[str, Any]:
    """{recipe name: entry point} of the group ``coevo.recipes`` (the first of each name), read from every
    installed distribution, a name met twice included (``importlib.metadata.entry_points`` reads only the first
    of each): run from the source tree, an editable install's ``coevo.egg-info`` there comes first on
    ``sys.path``, and while another editable install rewrites it (the peer venvs of ``.ci/run``) it holds no
    entry point; the venv's own metadata still does."""
    out: dict[str, Any] = {}
    for dist in distributions():
        try:
            eps = dist.entry_points
        except Exception:  # noqa: BLE001 - a distribution whose metadata is being written
            continue
        for ep in eps:
            if ep.group == GROUP:
                out.setdefault(ep.name, ep)
    return out


def recipe_names() -> tuple[str, ...]:
    """The names of the installed recipes (the entry-point group ``coevo.recipes``)."""
    return tuple(_entry_points())


def _from_module(m: Any, mod: str, key: str) -> RecipeInfo:
    if isinstance(m, RecipeInfo):
        return m
    recipes = getattr(m, "RECIPES", None)
    if not isinstance(recipes, dict) or not recipes:
        raise RecipeNotFound(f"module {mod!r} defines no RECIPES dict")
    if not key:
        if len(recipes) != 1:
            raise RecipeNotFound(f"module {mod!r} defines several recipes ({', '.join(recipes)}): name one, "
                                 f"{mod}:<name>")
        key = next(iter(recipes))
    if key not in recipes:
        raise RecipeNotFound(f"module {mod!r} defines no recipe {key!r} (has: {', '.join(recipes)})")
    return recipes[key]


def get_recipe(name: str) -> RecipeInfo:
    """The RecipeInfo of an installed recipe (entry point ``name``) or of ``module[:name]``."""
    eps = _entry_points()
    if name in eps:
        ep = eps[name]
        try:
            m = ep.load()
        except ImportError as e:
            raise RecipeNotFound(f"recipe {name!r} ({ep.value}) does not import: {e}") from None
        return _from_module(m, ep.value, name)
    mod, _, key = name.partition(":")
    if "." not in mod:
        known = ", ".join(sorted(eps)) or f"none (no entry points in group {GROUP!r}: pip install -e .)"
        raise RecipeNotFound(f"unknown recipe {name!r}; installed: {known} (or the import path of a module "
                             f"that defines RECIPES)")
    return _from_module(load(Ref(mod)), mod, key)


def installed_recipes() -> list[RecipeInfo]:
    """The RecipeInfo of every installed recipe (each manifest imports only its config)."""
    return [get_recipe(name) for name in recipe_names()]


def recipe_folders() -> list[Path]:
    """The folder of each installed recipe package (its ``presets/`` are presets), found without
    running the recipe's code."""
    import importlib.util

    out: list[Path] = []
    for ep in _entry_points().values():
        spec = importlib.util.find_spec(ep.module)
        locs = list(spec.submodule_search_locations or []) if spec else []
        for p in locs:
            if Path(p) not in out:
                out.append(Path(p))
    return out


def prompt_styles() -> dict[str, Any]:
    """``{style: InstructionPrompts or Ref}``: the math world's prompt styles the installed recipes register."""
    out: dict[str, Any] = {}
    for info in installed_recipes():
        for style, ref in info.prompt_styles.items():
            out.setdefault(style, ref)
    return out


def report_section_functions(info: RecipeInfo) -> list[Callable]:
    return [load(ref) for ref in info.report_sections]
