"""coevo's packages are ranked (docs/architecture.md, table "Ranks"): every import of another
coevo package — module level or inside a function — must point to a strictly lower rank.

The test reads the rank table from the document, so the document and the code cannot drift
apart: a package missing from the table fails, and so does each upward import (``file:line``).
A typed lazy reference ``Ref("coevo.x.y", ...)`` (``coevo.core.registry``) counts as an import of
``coevo.x``.  Run time too: ``tests/runtime_imports.py`` records every import a coevo module makes
while each installed recipe runs (an import hook), and none may climb a rank; the one exception is
the registry's plugin loader (entry points and ``load(Ref)``, ``coevo/core/registry.py``).  And no
module ranked below ``recipes`` names a recipe: neither a recipe's name nor a ``coevo.recipes.*``
module in its code (docstrings and comments aside; the entry-point group's name is the registry's).
"""
import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PKG = REPO / "coevo"
DOC = REPO / "docs" / "architecture.md"


def rank_table() -> dict[str, int]:
    text = DOC.read_text()
    sect = text.split("## Ranks", 1)[1].split("\n## ", 1)[0]
    ranks = {}
    for line in sect.splitlines():
        m = re.match(r"\|\s*(\d+)\s*\|([^|]+)\|", line)
        if m:
            for name in re.findall(r"`([a-z_0-9]+)`", m.group(2)):
                ranks[name] = int(m.group(1))
    return ranks


def unit_of(path: Path) -> str:
    rel = path.relative_to(PKG).parts
    return rel[0] if len(rel) > 1 else rel[0][:-3]


def coevo_imports(path: Path):
    """(line, imported top-level unit) for every ``import coevo.X`` / ``from coevo.X`` /
    ``from coevo import X`` / ``Ref("coevo.X...", ...)`` in the file, at any depth."""
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "Ref" \
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str) \
                and node.args[0].value.startswith("coevo."):
            yield node.lineno, node.args[0].value.split(".")[1]
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("coevo."):
                    yield node.lineno, a.name.split(".")[1]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.startswith("coevo."):
                yield node.lineno, node.module.split(".")[1]
            elif node.module == "coevo":
                for a in node.names:
                    if (PKG / a.name).is_dir() or (PKG / f"{a.name}.py").is_file():
                        yield node.lineno, a.name


def upward_imports(ranks: dict[str, int]) -> list[str]:
    bad = []
    for path in sorted(PKG.rglob("*.py")):
        src = unit_of(path)
        if src == "__init__":
            continue
        for line, dst in coevo_imports(path):
            if dst != src and ranks.get(dst, 10**6) >= ranks.get(src, -1):
                bad.append(f"{path.relative_to(REPO)}:{line}: {src} (rank {ranks.get(src)}) imports "
                           f"{dst} (rank {ranks.get(dst)})")
    return bad


def test_every_package_has_a_rank():
    ranks = rank_table()
    units = {unit_of(p) for p in PKG.rglob("*.py")} - {"__init__"}
    assert not sorted(units - set(ranks)), "packages missing from the rank table in docs/architecture.md"


def test_no_upward_imports():
    bad = upward_imports(rank_table())
    assert not bad, f"{len(bad)} upward imports:\n" + "\n".join(bad)


def test_the_rank_test_catches_a_function_level_import(tmp_path):
    src = "def f():\n    from coevo.runner import RunError\n"
    p = tmp_path / "m.py"
    p.write_text(src)
    assert [d for _, d in coevo_imports(p)] == ["runner"]


def test_the_rank_test_reads_a_ref_as_an_import(tmp_path):
    p = tmp_path / "m.py"
    p.write_text('from coevo.core.registry import Ref\nX = Ref("coevo.recipes.rzero.summary", "round_columns")\n')
    assert [d for _, d in coevo_imports(p)] == ["core", "recipes"]


def unit_of_module(name: str) -> str | None:
    parts = name.split(".")
    return parts[1] if len(parts) > 1 else None


def climbing(edges, ranks: dict[str, int]) -> list[str]:
    """The recorded (importer, imported) pairs whose imported package is not of a strictly lower rank."""
    bad = []
    for a, b in edges:
        src, dst = unit_of_module(a), unit_of_module(b)
        if src and dst and src != dst and ranks.get(dst, 10**6) >= ranks.get(src, -1):
            bad.append(f"{a} (rank {ranks.get(src)}) imports {b} (rank {ranks.get(dst)}) at run time")
    return bad


def test_no_run_time_import_climbs_a_rank():
    """Every recipe runs two steps (summary and report included) under the import recorder: 0 climbing imports.
    The recorder sees the recipes: each one's own modules are loaded, by the registry's plugin loader only."""
    env = dict(os.environ, COEVO_MAX_THREADS="1", OMP_NUM_THREADS="1", PYTHONPATH=str(REPO))
    p = subprocess.run([sys.executable, str(REPO / "tests" / "runtime_imports.py")], capture_output=True, text=True,
                       timeout=900, env=env, cwd=REPO)
    assert p.returncode == 0, p.stderr[-3000:]
    got = json.loads(p.stdout.strip().splitlines()[-1])
    from coevo.core.registry import recipe_names

    assert got["recipes"] == list(recipe_names()) and len(got["recipes"]) >= 7
    assert len(got["edges"]) > 200  # the recorder saw the run's imports
    loaded = {b for a, b in got["plugin"]}
    assert {"coevo.recipes.rzero", "coevo.recipes.rzero.recipe", "coevo.recipes.rzero.report",
            "coevo.recipes.vgopd.recipe", "coevo.recipes.drzero.recipe", "coevo.recipes.rgbc.recipe"} <= loaded
    bad = climbing(got["edges"], rank_table())
    assert not bad, f"{len(bad)} run-time imports climb a rank:\n" + "\n".join(bad)


def test_the_run_time_check_catches_a_climbing_import():
    assert climbing([("coevo.worlds.math", "coevo.recipes.rzero.prompts"), ("coevo.recipes.rzero", "coevo.worlds"),
                     ("coevo.runner.loop", "coevo.runner.summary")], rank_table()) == [
        "coevo.worlds.math (rank 3) imports coevo.recipes.rzero.prompts (rank 12) at run time"]


def _named_recipes(path: Path, names: set[str]) -> list[str]:
    """The string constants of a module's code (not its docstrings) that name a recipe or a recipe module."""
    tree = ast.parse(path.read_text(), str(path))
    docs = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    out, where = [], path.relative_to(REPO) if path.is_relative_to(REPO) else path.name
    for n in ast.walk(tree):
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs:
            v = n.value
            if v in names or re.search(r"coevo[./]recipes[./]", v) or (v == "coevo.recipes" and path.name != "registry.py"):
                out.append(f"{where}:{n.lineno}: {v[:80]!r}")
    return out


def test_no_module_below_recipes_names_a_recipe():
    from coevo.core.registry import recipe_names

    ranks = rank_table()
    names = set(recipe_names())
    assert {"rzero", "synco", "rgbc", "drzero", "crossfit", "msv+crossfit", "vgopd"} <= names
    bad = [hit for path in sorted(PKG.rglob("*.py")) if unit_of(path) != "__init__"
           and ranks.get(unit_of(path), 10**6) < ranks["recipes"] for hit in _named_recipes(path, names)]
    assert not bad, "modules ranked below recipes name a recipe:\n" + "\n".join(bad)


def test_the_grep_catches_a_name(tmp_path):
    p = tmp_path / "names_a_recipe.py"
    p.write_text('"""mentions rzero in a docstring: allowed"""\nX = "rzero"\nY = f"coevo.recipes.{X}.recipe"\n')
    assert sorted(h.split(": ", 1)[1] for h in _named_recipes(p, {"rzero"})) == ["'coevo.recipes.'", "'rzero'"]
