"""Experiments: a declared grid of runs (arms x seeds) plus claims with verdicts (docs/experiments.md).

``REGISTRY`` names each experiment's spec as a ``"module:attr"`` string, gathered from the built-in
recipes' registrations (``RecipeInfo.experiments``: an experiment belongs to its recipe's folder), so
listing them imports no recipe code beyond the registrations; ``load_experiment`` takes a registered name or any ``module:attr`` /
``path/to/file.py:attr`` whose attribute is a ``coevo.experiments.spec.Experiment``.
"""
from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path

__all__ = ["REGISTRY", "load_experiment", "ExperimentNotFound"]



def _builtin_experiments() -> dict[str, str]:
    from coevo.core.registry import BUILTIN, get_recipe

    out: dict[str, str] = {}
    for name in BUILTIN:
        out.update(get_recipe(name).experiments)
    return out


REGISTRY = _builtin_experiments()


class ExperimentNotFound(Exception):
    pass


def _import(ref: str):
    mod_name, _, attr = ref.rpartition(":")
    if not mod_name or not attr:
        raise ExperimentNotFound(f"not a module:attr path: {ref!r}")
    try:
        if mod_name.endswith(".py"):
            path = Path(mod_name)
            if not path.is_file():
                raise ExperimentNotFound(f"experiment file not found: {path}")
            spec = importlib.util.spec_from_file_location(f"coevo_experiment_{path.stem}", path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
        else:
            mod = importlib.import_module(mod_name)
    except ImportError as e:
        raise ExperimentNotFound(f"cannot import {mod_name}: {e}") from None
    try:
        return getattr(mod, attr)
    except AttributeError:
        raise ExperimentNotFound(f"{mod_name} has no attribute {attr!r}") from None


def load_experiment(name: str):
    """The Experiment registered as ``name``, or at the ``module:attr`` / ``file.py:attr`` path ``name``."""
    from coevo.experiments.spec import Experiment

    if name in REGISTRY:
        exp = _import(REGISTRY[name])
    elif ":" in name:
        exp = _import(name)
    else:
        raise ExperimentNotFound(f"unknown experiment {name!r}; registered: {', '.join(sorted(REGISTRY))} "
                                 f"(or pass module:attr)")
    if callable(exp) and not isinstance(exp, Experiment):
        exp = exp()
    if not isinstance(exp, Experiment):
        raise ExperimentNotFound(f"{name} is a {type(exp).__name__}, not a coevo.experiments.spec.Experiment")
    return exp
