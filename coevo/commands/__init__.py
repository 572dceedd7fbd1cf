"""Command modules: each ``coevo/commands/<name>.py`` defines ``register(apps)`` where ``apps``
is a dict of the CLI's typer apps (``main``, ``bench``, ...); ``coevo.cli`` calls every module's
``register`` at import.  Keep module-level imports light (typer, pathlib): heavy modules are
imported inside the commands so ``coevo --help`` stays instant."""
from __future__ import annotations

import importlib
import pkgutil


def register_all(apps: dict) -> None:
    """Every command module's ``register``, then each installed recipe's own commands
    (``RecipeInfo.commands``: functions or their Refs, each registered once)."""
    from coevo.core.registry import installed_recipes, load

    for m in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        mod = importlib.import_module(f"{__name__}.{m.name}")
        fn = getattr(mod, "register", None)
        if fn is not None:
            fn(apps)
    done: set = set()
    for info in installed_recipes():
        for ref in info.commands:
            if ref not in done:
                done.add(ref)
                load(ref)(apps)
