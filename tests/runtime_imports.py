"""Record every import a coevo module makes while each installed recipe runs, and print them as JSON.

Run as a script in a fresh interpreter (``tests/test_ranks.py`` does): the recorder is installed before
coevo is imported, then each recipe runs its first two steps (the initial evaluation and one training
step) with its ``smoke`` budget through ``coevo.runner.run_from_config`` (summary.json and report.html
included: round columns and report sections are loaded there).  Each import is attributed to the coevo
module that asks for it:

* an ``import`` / ``from ... import`` statement (``builtins.__import__``, run or not before): the module
  whose code holds the statement;
* ``importlib.import_module`` and first-time imports by any other route (a meta path finder): the
  innermost coevo frame on the stack, passing over importlib itself and ``coevo.core.registry.
  import_module`` (a helper that imports on its caller's behalf).

An import whose innermost coevo frame is any other function of ``coevo.core.registry`` is the plugin
loader's (entry points, ``load(Ref)``): printed under ``plugin`` and not checked.
Output: ``{"edges": [[importer, imported], ...], "plugin": [...], "recipes": [...]}``.
"""
from __future__ import annotations

import builtins
import importlib
import importlib.abc
import json
import sys
import tempfile
import types
from pathlib import Path

EDGES: set = set()
PLUGIN: set = set()
_REAL_IMPORT = builtins.__import__
_REAL_IMPORT_MODULE = importlib.import_module
_PASS_OVER = {("coevo.core.registry", "import_module")}


def _coevo(name) -> bool:
    return isinstance(name, str) and (name == "coevo" or name.startswith("coevo."))


def _importer(frame):
    """(module, function) of the innermost coevo frame that is not importlib, this file or a pass-over helper."""
    while frame is not None:
        mod = frame.f_globals.get("__name__")
        if _coevo(mod) and (mod, frame.f_code.co_name) not in _PASS_OVER:
            return mod, frame.f_code.co_name
        frame = frame.f_back
    return None, None


def _record(importer, target) -> None:
    if not (_coevo(importer) and _coevo(target)):
        return
    (PLUGIN if importer == "coevo.core.registry" else EDGES).add((importer, target))


def _import(name, globals=None, locals=None, fromlist=(), level=0):
    mod = _REAL_IMPORT(name, globals, locals, fromlist, level)
    importer = (globals or {}).get("__name__")
    if _coevo(importer):
        full = importlib._bootstrap._resolve_name(name, globals.get("__package__") or importer, level) \
            if level else name
        targets = [full]
        for item in fromlist or ():
            if isinstance(getattr(mod, item, None), types.ModuleType):
                targets.append(f"{full}.{item}")
        for t in targets:
            _record(importer, t)
    return mod


def _import_module(name, package=None):
    mod = _REAL_IMPORT_MODULE(name, package)
    importer, _ = _importer(sys._getframe(1))
    _record(importer, mod.__name__)
    return mod


class _Finder(importlib.abc.MetaPathFinder):
    """Sees each module's first import, whatever route it took (EntryPoint.load included)."""

    def find_spec(self, fullname, path, target=None):
        if _coevo(fullname):
            importer, _ = _importer(sys._getframe(1))
            _record(importer, fullname)
        return None


def install() -> None:
    builtins.__import__ = _import
    importlib.import_module = _import_module
    sys.meta_path.insert(0, _Finder())


def run_each_recipe(out: Path) -> list[str]:
    from coevo.core.registry import recipe_names
    from coevo.knobs import resolve_run_config
    from coevo.runner import loop, run_from_config

    todo = loop.Loop.todo
    loop.Loop.todo = lambda self: todo(self)[:2]  # the initial evaluation and one training step
    names = list(recipe_names())
    for name in names:
        sets = [f"recipe={name}", "verify.workers=0", "tracking.tensorboard=false"]
        cfg = resolve_run_config(None, None, sets, name, "smoke")  # as `coevo run --recipe NAME --budget smoke`
        assert cfg.recipe == name, (cfg.recipe, name)
        run_from_config(cfg, out / name.replace("+", "_"), quiet=True, report=True)
    return names


if __name__ == "__main__":
    install()
    with tempfile.TemporaryDirectory() as d:
        recipes = run_each_recipe(Path(d))
    print(json.dumps({"edges": sorted(EDGES), "plugin": sorted(PLUGIN), "recipes": recipes}))
