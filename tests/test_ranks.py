"""coevo's packages are ranked (docs/architecture.md, table "Ranks"): every import of another
coevo package — module level or inside a function — must point to a strictly lower rank.

The test reads the rank table from the document, so the document and the code cannot drift
apart: a package missing from the table fails, and so does each upward import (``file:line``).
"""
import ast
import re
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
    ``from coevo import X`` in the file, at any depth."""
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
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
