"""House rules checked on the source of the ``coevo`` package (parsed with ``ast``, nothing imported):

* no import cycle between coevo modules: module-level and function-level imports both count,
  relative imports are resolved; ``from pkg import name`` is an edge to ``pkg.name`` when that is a
  module, else to ``pkg`` (importing ``pkg.mod`` is not counted as importing ``pkg/__init__``, the
  usual package pattern);
* no ``from coevo.x import _name`` across modules (a private name stays in its module);
* no module over 500 lines;
* no function over 80 lines under coevo/recipes/ and coevo/stages/.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "coevo"
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80
FUNCTION_DIRS = ("recipes", "stages")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def _resolve(node: ast.ImportFrom, mod: str, is_pkg: bool) -> str:
    """The absolute module name an ImportFrom names (relative imports resolved)."""
    if not node.level:
        return node.module or ""
    base = mod.split(".") if is_pkg else mod.split(".")[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports(mod: str, path: Path, known: set[str]) -> list[tuple[str, str | None, int]]:
    """(target module, imported name or None, line) for every import anywhere in the module."""
    tree = ast.parse(path.read_text(), filename=str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(a.name, None, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            src = _resolve(node, mod, path.name == "__init__.py")
            for a in node.names:
                sub = f"{src}.{a.name}"
                out.append((sub, None, node.lineno) if sub in known else (src, a.name, node.lineno))
    return out


def import_graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for m, p in mods.items():
        for target, _, _ in imports(m, p, known):
            if target in known and target != m:
                graph[m].add(target)
    return graph


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components (iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                out.append(sorted(comp))
    return out


def cycle_in(graph: dict[str, set[str]], comp: list[str]) -> list[str]:
    """One concrete cycle through the first module of a strongly connected component."""
    members = set(comp)
    start = comp[0]
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & members):
                if w == start:
                    return paths[v] + [start]
                if w not in paths:
                    paths[w] = paths[v] + [w]
                    nxt.append(w)
        frontier = nxt
    return comp


def test_graph_sees_function_level_and_relative_imports(tmp_path):
    src = "def f():\n    from .b import x\n    import coevo.c\n"
    p = tmp_path / "a.py"
    p.write_text(src)
    got = imports("coevo.pkg.a", p, {"coevo.pkg.b", "coevo.c"})
    assert got == [("coevo.pkg.b", "x", 2), ("coevo.c", None, 3)]
    g = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    comps = [c for c in strongly_connected(g) if len(c) > 1]
    assert comps == [["a", "b", "c"]] and cycle_in(g, comps[0]) == ["a", "b", "c", "a"]


def test_no_import_cycles():
    graph = import_graph()
    cycles = [cycle_in(graph, c) for c in strongly_connected(graph) if len(c) > 1]
    for c in cycles:
        print("import cycle: " + " -> ".join(c))
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_no_private_names_across_modules():
    mods = modules()
    known = set(mods)
    bad = []
    for m, p in mods.items():
        for target, name, line in imports(m, p, known):
            if name and name.startswith("_") and not name.startswith("__") and target.split(".")[0] == "coevo" \
                    and target != m:
                bad.append(f"{p.relative_to(PKG.parent)}:{line}: from {target} import {name}")
    print("\n".join(bad))
    assert not bad, "private names imported across modules:\n" + "\n".join(bad)


def test_modules_at_most_500_lines():
    long = [f"{p.relative_to(PKG.parent)}: {n} lines" for p in modules().values()
            if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES]
    print("\n".join(long))
    assert not long, f"modules over {MAX_MODULE_LINES} lines:\n" + "\n".join(long)


@pytest.mark.parametrize("sub", FUNCTION_DIRS)
def test_functions_at_most_80_lines(sub):
    long = []
    for p in sorted((PKG / sub).rglob("*.py")):
        for node in ast.walk(ast.parse(p.read_text(), filename=str(p))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long.append(f"{p.relative_to(PKG.parent)}:{node.lineno}: {node.name} is {n} lines")
    print("\n".join(long))
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines:\n" + "\n".join(long)
