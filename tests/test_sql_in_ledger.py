"""SQL lives in coevo/ledger/ only (#33 item 4), and in a recipe folder's ``tables.py``, which reaches the
file through the ledger's query API (``Ledger.query`` / ``columns``), never through DuckDB itself.

Every string literal of every module under coevo/ (docstrings aside) is read with ``ast``: one that
starts with an SQL statement, or an ``import duckdb``, outside those places fails with ``file:line``."""
import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SQL = re.compile(r"^\s*(SELECT|INSERT|CREATE|BEGIN|COMMIT|ROLLBACK|UPDATE|DELETE|DROP|ALTER|DESCRIBE|CHECKPOINT|"
                 r"PRAGMA|ATTACH|COPY|WITH\s+\w+\s+AS)\b")


def _docstrings(tree) -> set:
    out = set()
    for n in ast.walk(tree):
        if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.body:
            first = n.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def findings(path: Path) -> list[str]:
    """``line: what`` of each SQL string and each DuckDB import in one module."""
    tree = ast.parse(path.read_text(), filename=str(path))
    skip, out = _docstrings(tree), []
    for n in ast.walk(tree):  # an f-string's parts are read once, as the whole f-string
        if isinstance(n, ast.JoinedStr):
            skip.update(id(v) for v in n.values)
    for n in ast.walk(tree):
        text = None
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in skip:
            text = n.value
        elif isinstance(n, ast.JoinedStr):
            text = "".join(v.value for v in n.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
        if text is not None and SQL.search(text):
            out.append(f"{n.lineno}: SQL {text.strip()[:60]!r}")
        if isinstance(n, ast.Import) and any(a.name.split(".")[0] == "duckdb" for a in n.names):
            out.append(f"{n.lineno}: import duckdb")
        if isinstance(n, ast.ImportFrom) and (n.module or "").split(".")[0] == "duckdb":
            out.append(f"{n.lineno}: from duckdb import")
    return out


def allowed(rel: str) -> str:
    """'' outside the allowed places; 'ledger' in coevo/ledger/; 'tables' in a recipe folder's tables.py."""
    parts = rel.split("/")
    if parts[:2] == ["coevo", "ledger"]:
        return "ledger"
    if parts[:2] == ["coevo", "recipes"] and len(parts) == 4 and parts[3] == "tables.py":
        return "tables"
    return ""


def test_sql_only_in_the_ledger_and_recipe_tables():
    bad = []
    for p in sorted((ROOT / "coevo").rglob("*.py")):
        rel = p.relative_to(ROOT).as_posix()
        where = allowed(rel)
        for f in findings(p):
            if where == "ledger" or (where == "tables" and " SQL " in f):
                continue  # a recipe's tables.py may hold SQL, never a DuckDB connection of its own
            bad.append(f"{rel}:{f}")
    assert not bad, "SQL outside coevo/ledger/ and the recipes' tables.py:\n" + "\n".join(bad)


def test_the_check_finds_what_it_guards(tmp_path):
    """The scanner is not vacuous: a query, a transaction, an f-string query and a DuckDB import are found;
    a docstring that names SELECT and prose are not."""
    src = tmp_path / "m.py"
    src.write_text('"""Explains SELECT in prose."""\nimport duckdb\nQ = "SELECT 1"\nT = "BEGIN TRANSACTION"\n'
                   'def f(t):\n    """SELECT nothing."""\n    return f"SELECT * FROM {t}", "select a drink"\n')
    assert [x.split(":")[0] for x in findings(src)] == ["2", "3", "4", "7"]
    assert allowed("coevo/ledger/views.py") == "ledger" and allowed("coevo/recipes/vgopd/tables.py") == "tables"
    assert allowed("coevo/recipes/vgopd/casa/tables.py") == "" and allowed("coevo/experiments/rundirs.py") == ""
