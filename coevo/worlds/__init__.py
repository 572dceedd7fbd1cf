"""Worlds by name: the built-in ones, or any ``module:Class`` that implements the World
contract (coevo/worlds/base.py).  A world class builds itself from the run config with
``from_config(cfg)`` when it has one, else from ``world.options`` as keyword arguments."""
from __future__ import annotations

import importlib

WORLDS = {"arithmetic": "coevo.worlds.arithmetic:ArithmeticWorld", "math": "coevo.worlds.math:MathWorld",
          "scripted": "coevo.worlds.scripted:ScriptedToolWorld", "facts": "coevo.worlds.facts:FactsWorld",
          "criteria": "coevo.worlds.criteria:CriteriaWorld"}


class WorldNotFound(Exception):
    pass


def world_class(name: str):
    ref = WORLDS.get(name, name)
    mod, _, attr = ref.partition(":")
    if not attr:
        raise WorldNotFound(f"unknown world {name!r}; built-in: {', '.join(WORLDS)} (or 'module:Class')")
    try:
        return getattr(importlib.import_module(mod), attr)
    except (ImportError, AttributeError) as e:
        raise WorldNotFound(f"world {name!r} unavailable: {e}") from None


def make_world(cfg):
    """The world of a run config."""
    cls = world_class(cfg.world.name)
    if cfg.world.name == "arithmetic":
        return cls(eval_per_level=cfg.world.eval_per_level, eval_seed=cfg.world.eval_seed)
    if hasattr(cls, "from_config"):
        return cls.from_config(cfg)
    return cls(**cfg.world.options)
