"""The recipe registry: what a recipe declares, and how the runner, config, CLI and report
find it without naming it.

A recipe module defines ``RECIPES = {name: RecipeInfo(...)}`` (one module may serve several
recipe names: ``coevo.recipes.rgbc`` serves ``synco`` and ``rgbc``).  ``recipe`` in a run
config is either a built-in name (``BUILTIN``) or the import path of a module outside coevo
(``mypkg.my_recipe`` or ``mypkg.my_recipe:name``): adding a recipe is one module plus one
preset file that names it.  This module imports no recipe until one is asked for.  A module path
that is not installed is looked up in the current directory, as ``python -m`` does
(:func:`import_module`): ``coevo run --preset examples/toy_recipe.yaml`` from the repository root.
"""
from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

BUILTIN = {"rzero": "coevo.recipes.rzero", "synco": "coevo.recipes.rgbc", "rgbc": "coevo.recipes.rgbc",
           "drzero": "coevo.recipes.drzero", "crossfit": "coevo.recipes.drzero", "msv+crossfit": "coevo.recipes.drzero",
           "vgopd": "coevo.recipes.vgopd"}
DEFAULT_RECIPE = "rzero"  # what `coevo run` runs with no --recipe (the default preset `cpu` is R-Zero's)
# the math world's default prompt style: R-Zero's prompts, which its folder registers (RecipeInfo.prompt_styles)
DEFAULT_PROMPT_STYLE = "rzero"


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


@dataclass(frozen=True)
class RecipeInfo:
    name: str
    factory: str  # "module:Class"; called as Class(cfg, world, policies, run_id, verifier)
    roles: tuple[RoleSpec, ...]
    sections: dict[str, Any] = field(default_factory=dict)  # config section name -> pydantic model class
    worlds: tuple[str, ...] = ()  # world names it supports (empty = any)
    summary_columns: tuple[str, ...] = ()  # per-round keys of summary.json shown in the round table
    optional_summary_columns: tuple[str, ...] = ()  # per-round keys kept only in rounds whose steps have them
    report_sections: tuple[str, ...] = ()  # "module:function", each (ledger, run_id) -> HTML fragment
    description: str = ""
    solver_role: str = "solver"  # the role whose rollouts the round table counts (VG-OPD: the student)
    # ledger tables only this recipe writes: {table: [(column, DuckDB type), ...]} (created with the core tables)
    tables: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    # names of its summary columns in the round table: {column: (short header, long caption)}
    column_names: dict[str, tuple[str, str]] = field(default_factory=dict)
    # "module:function" (ledger, run_id, round) -> {column: value}: round-row columns computed from
    # the ledger (beside the per-round means of the steps' metrics); None = none
    round_columns: str | None = None
    # "module:function" (run_dirs, stress) -> [prediction dicts]: its predictions in `coevo audit --predictions`,
    # called with the audited run directories of this recipe and the `--stress` file (or None)
    predictions: str | None = None
    # "module:function" (apps) -> None: registers the recipe's own CLI commands
    commands: tuple[str, ...] = ()
    # {experiment name: "module:attr"} of the experiments that belong to the recipe
    experiments: dict[str, str] = field(default_factory=dict)
    # {style name: "module:attr"} of the math world's prompt styles the recipe ships
    # (coevo.worlds.math.InstructionPrompts; `world.prompt_style`, `--prompt-style`)
    prompt_styles: dict[str, str] = field(default_factory=dict)
    # "module:attr" -> {asset: spec}: the tiny arithmetic assets the recipe's roles load (RoleSpec.asset)
    # and how `coevo pretrain` trains them (coevo.pretrain.asset_specs); None = none of its own
    pretrain: str | None = None

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


def resolve(ref: str) -> Any:
    """``"package.module:attr"`` -> the attribute (a clear error when it is missing)."""
    mod, _, attr = ref.partition(":")
    try:
        m = import_module(mod)
    except ImportError as e:
        raise RecipeNotFound(f"cannot import {mod!r}: {e}") from None
    if not attr:
        return m
    try:
        return getattr(m, attr)
    except AttributeError:
        raise RecipeNotFound(f"{mod!r} has no {attr!r}") from None


def get_recipe(name: str) -> RecipeInfo:
    """The RecipeInfo of a built-in name or of ``module[:name]``."""
    if name in BUILTIN:
        mod, key = BUILTIN[name], name
    else:
        mod, _, key = name.partition(":")
        if "." not in mod:
            raise RecipeNotFound(f"unknown recipe {name!r}; built-in: {', '.join(sorted(BUILTIN))} "
                                 f"(or the import path of a module that defines RECIPES)")
    m = resolve(mod)
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


def builtin_recipes() -> list[RecipeInfo]:
    """The RecipeInfo of every built-in recipe name (each folder's ``__init__`` imports only its config)."""
    return [get_recipe(name) for name in BUILTIN]


def prompt_styles() -> dict[str, str]:
    """``{style: "module:attr"}``: the math world's prompt styles the built-in recipes register."""
    out: dict[str, str] = {}
    for info in builtin_recipes():
        for style, ref in info.prompt_styles.items():
            out.setdefault(style, ref)
    return out


def report_section_functions(info: RecipeInfo) -> list[Callable]:
    return [resolve(ref) for ref in info.report_sections]
