"""Experiments: a declared grid of runs (arms x seeds) plus claims with verdicts (docs/experiments.md).

``REGISTRY`` holds each experiment's spec or its ``Ref``, gathered from the installed
recipes' registrations (``RecipeInfo.experiments``: an experiment belongs to its recipe's folder), so
listing them imports no recipe code beyond the registrations; ``load_experiment`` takes a registered name or any ``module:attr`` /
``path/to/file.py:attr`` whose attribute is a ``coevo.experiments.spec.Experiment``.
"""
from __future__ import annotations

import importlib
import importlib.util
from pathlib import Path

__all__ = ["REGISTRY", "load_experiment", "ExperimentNotFound"]



def _installed_experiments() -> dict:
    from coevo.core.registry import installed_recipes

    out: dict = {}
    for info in installed_recipes():
        out.update(info.experiments)
    return out


REGISTRY = _installed_experiments()


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
    from coevo.core.registry import RecipeNotFound, load
    from coevo.experiments.spec import Experiment

    if name in REGISTRY:
        try:
            exp = load(REGISTRY[name])  # through the registry: the one loader of a recipe's code
        except RecipeNotFound as e:
            raise ExperimentNotFound(str(e)) from None
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
