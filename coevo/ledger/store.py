"""The ledger: DuckDB, append-only. The only module in coevo that speaks SQL.

Rows of one step are appended inside one transaction together with that step's
``steps`` marker row, so a crash (even SIGKILL) leaves either the whole step or none
of it; ``last_completed_step`` is the resume point.
"""
from __future__ import annotations

import json
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterable, Iterator

import duckdb
import pyarrow as pa

from coevo import timing
from coevo.ledger.schema import TABLES

_PA = {"VARCHAR": pa.string(), "BIGINT": pa.int64(), "INTEGER": pa.int32(), "DOUBLE": pa.float64(),
       "BOOLEAN": pa.bool_()}


class LedgerError(Exception):
    pass


class Ledger:
    """``tables``: tables beyond the core schema that this ledger holds (a recipe's own,
    ``RecipeInfo.tables``); they are created with the core tables.  Opened read-only, the
    ledger knows every table the file has."""

    def __init__(self, path: str | Path, read_only: bool = False,
                 tables: dict[str, list[tuple[str, str]]] | None = None) -> None:
        self.path = Path(path)
        self.tables = {**TABLES, **(tables or {})}
        if read_only and not self.path.exists():
            raise LedgerError(f"no ledger at {self.path}")
        try:
            self.con = duckdb.connect(str(self.path), read_only=read_only)
        except duckdb.Error as e:
            raise LedgerError(f"cannot open ledger {self.path}: {e}") from None
        self._in_tx = False
        if read_only:  # tables the file has beyond those named (a recipe's own, written by another run)
            extra = tables or {}
            for name, col, typ in self.con.execute("SELECT table_name, column_name, data_type FROM "
                                                    "information_schema.columns ORDER BY ordinal_position").fetchall():
                if name not in TABLES and name not in extra:
                    self.tables.setdefault(name, []).append((col, typ))
        if not read_only:
            for name, cols in self.tables.items():
                coldefs = ", ".join(f"{c} {t}" for c, t in cols)
                self.con.execute(f"CREATE TABLE IF NOT EXISTS {name} ({coldefs})")
                have = {r[0] for r in self.con.execute(f"DESCRIBE {name}").fetchall()}
                for c, t in cols:  # a ledger written by an older coevo: add the new columns (NULL there)
                    if c not in have:
                        self.con.execute(f"ALTER TABLE {name} ADD COLUMN {c} {t}")

    # ------------------------------------------------------------------ writes
    def append(self, table: str, rows: Iterable[dict[str, Any]]) -> int:
        rows = list(rows)
        if not rows:
            return 0
        if table not in self.tables:
            raise LedgerError(f"unknown table {table}")
        cols = self.tables[table]
        schema = pa.schema([(c, _PA[t]) for c, t in cols])
        data = {c: [r.get(c) for r in rows] for c, _ in cols}
        for c, t in cols:
            if t == "VARCHAR":
                data[c] = [v if v is None or isinstance(v, str) else json.dumps(v, default=float) for v in data[c]]
        tbl = pa.Table.from_pydict(data, schema=schema)  # noqa: F841 (used by SQL below)
        names = ", ".join(c for c, _ in cols)
        self.con.execute(f"INSERT INTO {table} ({names}) SELECT {names} FROM tbl")
        return len(rows)

    @contextmanager
    def step(self, run_id: str, step: int, round_: int, phase: str, phase_step: int) -> Iterator["StepWriter"]:
        """All rows of one step, committed atomically with the step marker."""
        writer = StepWriter(self.tables)
        t0 = time.time()
        yield writer
        self.con.execute("BEGIN TRANSACTION")
        try:
            with timing.stage("ledger"):  # the step's rows (the marker, COMMIT and CHECKPOINT come after)
                for table, rows in writer.rows.items():
                    self.append(table, rows)
            times = timing.current()  # per-stage seconds when the runner times this step
            self.append("steps", [{"run_id": run_id, "step": step, "round": round_, "phase": phase,
                                   "phase_step": phase_step, "completed_at": time.time(), "seconds": time.time() - t0,
                                   "versions_json": json.dumps(writer.versions, sort_keys=True),
                                   "metrics_json": json.dumps(writer.metrics, default=float),
                                   "stage_seconds_json": json.dumps(times.as_dict()) if times else None}])
            self.con.execute("COMMIT")
        except BaseException:
            self.con.execute("ROLLBACK")
            raise
        self.con.execute("CHECKPOINT")

    # ------------------------------------------------------------------ reads
    def has_table(self, table: str) -> bool:
        """Whether the file holds ``table`` (a recipe's own table exists only in that recipe's runs)."""
        return bool(self.con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = ?",
                                     [table]).fetchone()[0])

    def last_completed_step(self, run_id: str) -> int:
        r = self.con.execute("SELECT max(step) FROM steps WHERE run_id = ?", [run_id]).fetchone()
        return -1 if r is None or r[0] is None else int(r[0])

    def query(self, sql: str, params: list | None = None) -> list[dict]:
        cur = self.con.execute(sql, params or [])
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row)) for row in cur.fetchall()]

    def columns(self, sql: str, params: list | None = None) -> dict[str, list]:
        cur = self.con.execute(sql, params or [])
        names = [d[0] for d in cur.description]
        rows = cur.fetchall()
        return {n: [r[i] for r in rows] for i, n in enumerate(names)}

    def count(self, table: str, run_id: str | None = None) -> int:
        if table not in self.tables:
            raise LedgerError(f"unknown table {table}")
        if run_id is None:
            return int(self.con.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
        return int(self.con.execute(f"SELECT count(*) FROM {table} WHERE run_id = ?", [run_id]).fetchone()[0])

    # ------------------------------------------------------------------ verdict cache store (coevo.verify.cache protocol)
    def get_many(self, keys: list[str]) -> dict[str, dict]:
        if not keys:
            return {}
        tbl = pa.table({"key": pa.array(keys, pa.string())})  # noqa: F841
        rows = self.con.execute("SELECT c.key, c.row_json FROM verdict_cache c JOIN tbl USING (key)").fetchall()
        return {k: json.loads(v) for k, v in rows}

    def put_many(self, rows: list[dict]) -> None:
        self.append("verdict_cache", [{"key": r["key"], "row_json": json.dumps(r, default=float)} for r in rows])

    def close(self) -> None:
        try:
            self.con.close()
        except duckdb.Error:
            pass


def open_run_ledger(run_dir: str | Path) -> Ledger:
    """The ledger of a run directory, read-only; LedgerError with a one-line reason if absent."""
    path = Path(run_dir) / "ledger.duckdb"
    if not path.is_file():
        raise LedgerError(f"{run_dir} is not a coevo run directory (no ledger.duckdb)")
    return Ledger(path, read_only=True)


class StepWriter:
    """Collects a step's rows in memory; the ledger writes them in one transaction."""

    def __init__(self, tables: dict | None = None) -> None:
        self.tables = TABLES if tables is None else tables  # the tables it may hold rows for
        self.rows: dict[str, list[dict]] = {}
        self.metrics: dict[str, Any] = {}
        self.versions: dict[str, str] = {}  # role -> policy version after the step

    def extend(self, rows: dict[str, list[dict]]) -> None:
        """Add the rows a stage produced ({table: rows})."""
        for table, r in rows.items():
            self.add(table, r)

    def add(self, table: str, rows: Iterable[dict]) -> None:
        if table not in self.tables:
            raise LedgerError(f"unknown table {table}")
        self.rows.setdefault(table, []).extend(rows)
