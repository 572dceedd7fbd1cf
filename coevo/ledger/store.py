"""The ledger: DuckDB, append-only, and the rows a step writes to it.

Rows of one step are appended inside one transaction together with that step's
``steps`` marker row, so a crash (even SIGKILL) leaves either the whole step or none
of it; ``last_completed_step`` is the resume point. A run being written is read from a
copy of its last committed step: the writer holds ``WriteGuard`` while it writes the file,
readers copy it under the shared lock (``coevo/ledger/live.py``).

The row builders at the end (``rollout_row``, ``verdict_row``, ``reward_row``, ...) are the one
place that knows a row's columns (the tables: ``coevo/ledger/schema.py``): stages call them and
return the rows they produced, and the loop commits a step's rows in one transaction (``Ledger.step``).
"""
from __future__ import annotations

import json
import os
import sys
import time
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import duckdb
import pyarrow as pa

from coevo import timing
from coevo.core.policy import Completion, full_text, sampler_info
from coevo.ledger import live
from coevo.ledger.schema import TABLES

_PA = {"VARCHAR": pa.string(), "BIGINT": pa.int64(), "INTEGER": pa.int32(), "DOUBLE": pa.float64(),
       "BOOLEAN": pa.bool_()}


class LedgerError(Exception):
    pass


class WriteGuard:
    """``with guard:`` — the exclusive flock on the ledger's directory around a write to the file.
    Reentrant (a step's appends run inside its transaction); a no-op where flock is unavailable."""

    def __init__(self, directory: Path) -> None:
        self.fcntl, self.fd, self.depth = live.flock_module(), None, 0
        if self.fcntl is not None:
            try:
                self.fd = os.open(directory, os.O_RDONLY)
            except OSError:
                self.fd = None

    def __enter__(self) -> "WriteGuard":
        if self.depth == 0 and self.fd is not None:
            try:
                self.fcntl.flock(self.fd, self.fcntl.LOCK_EX)
            except OSError:  # a filesystem without flock: readers will refuse (coevo/ledger/live.py)
                os.close(self.fd)
                self.fd = None
        self.depth += 1
        return self

    def __exit__(self, *exc) -> None:
        self.depth -= 1
        if self.depth == 0 and self.fd is not None:
            self.fcntl.flock(self.fd, self.fcntl.LOCK_UN)

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)  # closing the descriptor drops the flock too
            self.fd = None


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
        # a writer holds the flock of its directory while it writes the file (readers of a live run copy it)
        self.guard = nullcontext() if read_only else WriteGuard(self.path.parent)
        self.live: dict | None = None  # a live run's copy: {"pid", "step"} (open_run_ledger)
        try:
            with self.guard:
                self.con = duckdb.connect(str(self.path), read_only=read_only)
        except duckdb.Error as e:
            self.close_guard()
            raise LedgerError(f"cannot open ledger {self.path}: {e}") from None
        self._in_tx = False
        if read_only:  # tables the file has beyond those named (a recipe's own, written by another run)
            extra = tables or {}
            for name, col, typ in self.con.execute("SELECT table_name, column_name, data_type FROM "
                                                    "information_schema.columns ORDER BY ordinal_position").fetchall():
                if name not in TABLES and name not in extra:
                    self.tables.setdefault(name, []).append((col, typ))
        if not read_only:
            with self.guard:
                self._create_tables()
                self.con.execute("CHECKPOINT")  # the tables are in the file a reader of the live run copies

    def _create_tables(self) -> None:
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
        with self.guard:  # outside a transaction DuckDB may checkpoint into the file here
            self.con.execute(f"INSERT INTO {table} ({names}) SELECT {names} FROM tbl")
        return len(rows)

    @contextmanager
    def transaction(self, checkpoint: bool = True) -> Iterator[None]:
        """Appends in the block commit together, then (``checkpoint``) move from DuckDB's log into the
        file, where a reader of the live run copies them from; an exception rolls them back."""
        with self.guard:
            self.con.execute("BEGIN TRANSACTION")
            try:
                yield
                self.con.execute("COMMIT")
            except BaseException:
                self.con.execute("ROLLBACK")
                raise
            if checkpoint:
                self.con.execute("CHECKPOINT")

    def commit(self, rows: dict[str, list[dict[str, Any]]], marker: Callable[[], dict] | None = None,
               checkpoint: bool = True) -> int:
        """The step transaction: every table's ``rows`` and, given ``marker``, the ``steps`` row it builds
        once they are appended (its timings include them) commit together or not at all (``transaction``).
        Every write goes through it: the loop's steps (:meth:`step`) and the integrations' ledger parts
        (``coevo.integrations.ledger_writer``: no marker, no ``checkpoint``).  Returns the rows appended."""
        with self.transaction(checkpoint):
            with timing.stage("ledger"):  # the step's rows (the marker, COMMIT and CHECKPOINT come after)
                n = sum(self.append(table, rs) for table, rs in rows.items())
            if marker is not None:
                self.append("steps", [marker()])
        return n

    @contextmanager
    def step(self, run_id: str, step: int, round_: int, phase: str, phase_step: int) -> Iterator["StepWriter"]:
        """All rows of one step, committed atomically with the step marker."""
        writer = StepWriter(self.tables)
        t0 = time.time()
        yield writer

        def marker() -> dict:
            times = timing.current()  # per-stage seconds when the runner times this step
            return {"run_id": run_id, "step": step, "round": round_, "phase": phase, "phase_step": phase_step,
                    "completed_at": time.time(), "seconds": time.time() - t0,
                    "versions_json": json.dumps(writer.versions, sort_keys=True),
                    "metrics_json": json.dumps(writer.metrics, default=float),
                    "stage_seconds_json": json.dumps(times.as_dict()) if times else None}

        self.commit(writer.rows, marker)

    # ------------------------------------------------------------------ reads
    def has_table(self, table: str) -> bool:
        """Whether the file holds ``table`` (a recipe's own table exists only in that recipe's runs)."""
        return bool(self.con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = ?",
                                     [table]).fetchone()[0])

    def last_committed(self) -> int:
        """The last step committed by any run in the file; -1 when none."""
        r = self.con.execute("SELECT max(step) FROM steps").fetchone() if self.has_table("steps") else None
        return -1 if r is None or r[0] is None else int(r[0])

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

    def rows(self, table: str, run_id: str | None = None) -> list[dict]:
        """Every row of ``table`` (of one run, given ``run_id``), in the file's order."""
        if table not in self.tables:
            raise LedgerError(f"unknown table {table}")
        if run_id is None:
            return self.query(f"SELECT * FROM {table}")
        return self.query(f"SELECT * FROM {table} WHERE run_id = ?", [run_id])

    def column_names(self, table: str) -> set[str]:
        """The columns ``table`` has in the file (a ledger written by an older coevo may lack new ones)."""
        return {r[0] for r in self.con.execute("SELECT column_name FROM information_schema.columns "
                                               "WHERE table_name = ?", [table]).fetchall()}

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
            with self.guard:  # DuckDB checkpoints on close
                self.con.close()
        except duckdb.Error:
            pass
        self.close_guard()
        if self.live is not None:  # a live run's copy: its temporary directory goes
            live.discard(self.path)

    def close_guard(self) -> None:
        if isinstance(self.guard, WriteGuard):
            self.guard.close()


def open_run_ledger(run_dir: str | Path) -> Ledger:
    """The ledger of a run directory, read-only; LedgerError with a one-line reason if absent.

    A run being written (a live holder of its run lock, or DuckDB's lock on the file) is read from a copy
    of its last committed step (coevo/ledger/live.py); the ledger's ``live`` says so ({"pid", "step"}) and
    the first open in this process prints ``live run (pid N): read at step K, the last committed`` to stderr.
    """
    path = Path(run_dir) / "ledger.duckdb"
    if not path.is_file():
        raise LedgerError(f"{run_dir} is not a coevo run directory (no ledger.duckdb)")
    holder = live.live_writer(Path(run_dir))
    if holder is None:
        try:
            return Ledger(path, read_only=True)
        except LedgerError as e:
            if "conflicting lock" not in str(e).lower():
                raise
            holder = {"pid": live.pid_in(str(e))}  # a writer without a run lock (a script, an import)
    try:
        copy = live.committed_copy(path)
    except live.LiveReadError as e:
        raise LedgerError(str(e)) from None
    led = Ledger(copy, read_only=True)
    led.live = {"pid": holder.get("pid"), "step": led.last_committed()}
    live.announce(Path(run_dir), live.live_line(led.live["pid"], led.live["step"]), sys.stderr)
    return led


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


# ---------------------------------------------------------------------- rows
def dumps(obj: Any) -> str:
    return json.dumps(obj, default=float, sort_keys=True)


def segments_info(c: Completion) -> list[dict] | None:
    """The rollout's segments (kind, tokens, text) for the ledger; None for single-turn."""
    if not c.segments:
        return None
    return [{"kind": s.kind, "n_tokens": s.n_tokens, "text": s.text} for s in c.segments]


def rollout_row(run_id: str, round_: int, step: int, rollout_id: str, task_id: str, role: str, purpose: str,
                group_idx: int, c: Completion, answer: str | None) -> dict:
    segs = segments_info(c)
    return {"run_id": run_id, "rollout_id": rollout_id, "task_id": task_id, "round": round_, "step": step,
            "role": role, "purpose": purpose, "group_idx": group_idx, "policy_version": c.policy_version,
            "text": c.text, "answer": answer, "n_tokens": len(c.token_ids), "finish_reason": c.finish_reason,
            "sampler_json": sampler_info(c), "segments_json": dumps(segs) if segs is not None else None,
            "n_masked_tokens": (len(c.token_mask) - sum(c.token_mask)) if c.token_mask is not None else 0}


def verdict_row(run_id: str, step: int, rollout_id: str, task_id: str, target: str, value: int | None, reason: str,
                kind: str, version: str, elapsed_s: float = 0.0, criterion_id: str | None = None) -> dict:
    return {"run_id": run_id, "rollout_id": rollout_id, "task_id": task_id, "step": step, "target": target,
            "verifier_kind": kind, "verifier_version": version, "criterion_id": criterion_id, "value": value,
            "reason": reason, "elapsed_s": elapsed_s}


def verdict_row_of(run_id: str, step: int, rollout_id: str, task_id: str, target: str, v, default_kind: str = "",
                   default_version: str = "") -> dict:
    """A verdict row from a ``coevo.verify.Verdict`` (its kind, version, criterion, elapsed)."""
    return verdict_row(run_id, step, rollout_id, task_id, target, v.value, v.reason,
                       getattr(v, "kind", "") or default_kind, getattr(v, "version", "") or default_version,
                       getattr(v, "elapsed_s", 0.0) or 0.0, getattr(v, "criterion_id", None))


def task_row(run_id: str, round_: int, step: int, task_id: str, source: str, proposer: Completion | None,
             prompt_version: str, task=None, parse_reason: str = "", oracle_answer: str | None = None,
             **extra) -> dict:
    row = {"run_id": run_id, "task_id": task_id, "round": round_, "step": step, "source": source,
           "proposer_version": proposer.policy_version if proposer is not None else None,
           "prompt_version": prompt_version, "raw_text": full_text(proposer) if proposer is not None else None,
           "question": task.question if task else None, "parse_ok": task is not None, "parse_reason": parse_reason,
           "difficulty": task.meta.get("difficulty") if task else None,
           "reference": task.reference if task else None, "oracle_answer": oracle_answer,
           "pseudo_label": None, "p_hat": None, "kept": None, "meta_json": None}
    row.update(extra)
    sampler = sampler_info(proposer) if proposer is not None else None
    if sampler is not None:  # served by an inference server: which one, which adapter
        meta = json.loads(row.get("meta_json") or "{}")
        meta["sampler"] = sampler
        row["meta_json"] = dumps(meta)
    return row


def reward_row(run_id: str, step: int, role: str, item_id: str, task_id: str, reward: float, advantage: float,
               components: dict | None = None) -> dict:
    return {"run_id": run_id, "step": step, "role": role, "item_id": item_id, "task_id": task_id,
            "reward": float(reward), "advantage": float(advantage),
            "components_json": dumps(components) if components is not None else None}


def update_row(run_id: str, step: int, role: str, before: str, after: str, n_sequences: int, metrics: dict) -> dict:
    return {"run_id": run_id, "step": step, "role": role, "version_before": before, "version_after": after,
            "n_sequences": n_sequences, "metrics_json": dumps(metrics)}
