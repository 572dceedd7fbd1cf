"""Worlds by name: the built-in ones, or any ``module:Class`` that implements the World
contract (coevo/worlds/base.py).  A world class builds itself from the run config with
``from_config(cfg)`` when it has one, else from ``world.options`` as keyword arguments."""
from __future__ import annotations

from coevo.core.registry import import_module

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
        return getattr(import_module(mod), attr)  # a module in the current directory too (python -m)
    except (ImportError, AttributeError) as e:
        raise WorldNotFound(f"world {name!r} unavailable: {e}") from None


def option_names(cls) -> frozenset | None:
    """The ``world.options`` keys a world class takes (None = it does not say: any).  Its own
    ``option_names()`` when it has one; else, for a class built as ``cls(**world.options)`` (no
    ``from_config``), the keyword arguments of its constructor."""
    import dataclasses
    import inspect

    own = getattr(cls, "option_names", None)
    if own is not None:
        return frozenset(own())
    if hasattr(cls, "from_config"):
        return None
    if dataclasses.is_dataclass(cls):
        return frozenset(f.name for f in dataclasses.fields(cls) if f.init)
    params = inspect.signature(cls).parameters.values()
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    return frozenset(p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))


def check_options(cls, options: dict) -> None:
    """ValueError naming the first ``world.options`` key the world does not take."""
    import difflib

    known = option_names(cls)
    bad = sorted(set(options or {}) - known) if known is not None else []
    if bad:
        near = difflib.get_close_matches(bad[0], sorted(known), n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise ValueError(f"world.options.{bad[0]}: unknown option of world {getattr(cls, 'name', cls.__name__)!r}"
                         f"{hint}; known: {', '.join(sorted(known)) or 'none'}")


def make_world(cfg):
    """The world of a run config."""
    cls = world_class(cfg.world.name)
    if cfg.world.name == "arithmetic":
        return cls(eval_per_level=cfg.world.eval_per_level, eval_seed=cfg.world.eval_seed)
    if hasattr(cls, "from_config"):
        return cls.from_config(cfg)
    return cls(**cfg.world.options)
