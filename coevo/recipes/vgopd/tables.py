"""The ledger tables VG-OPD adds to the core schema (``RecipeInfo.tables``; created with the core
tables in VG-OPD runs only), and their read-only views (columns as lists; no statistics here), through
the ledger's query API (``Ledger.columns`` / ``query``).  Rows: ``coevo.recipes.vgopd.casa.rows`` and
``.casa.probes``.  SQL lives here and in ``coevo/ledger/`` only (tests/test_sql_in_ledger.py).

A ledger written before the tables existed (opened read-only, so not migrated) reads as empty."""
from __future__ import annotations

from typing import TYPE_CHECKING, Dict, List, Optional

if TYPE_CHECKING:  # the manifest (vgopd/__init__.py) imports TABLES: no DuckDB at `coevo --help`
    from coevo.ledger.store import Ledger

__all__ = ["TABLES", "has_table", "criterion_score_columns", "oracle_columns", "gate_columns", "probe_rates"]

TABLES: dict[str, list[tuple[str, str]]] = {
    # the three probes per probed prompt and step (own reference, mismatched reference, vacuous template)
    "probes": [("run_id", "VARCHAR"), ("step", "BIGINT"), ("probe_id", "VARCHAR"), ("kind", "VARCHAR"),
               ("verifier_kind", "VARCHAR"), ("value", "INTEGER"), ("reason", "VARCHAR")],
    # CASA (CASA proposal): one row per (rollout, axis) scoring: S(y), A(y) + reasons, r, r~, phi, the arm's reward
    # and the rollout's licences on that axis (coevo.recipes.vgopd.casa.rows)
    "criterion_scores": [("run_id", "VARCHAR"), ("step", "BIGINT"), ("rollout_id", "VARCHAR"), ("task_id", "VARCHAR"),
                         ("group_idx", "BIGINT"), ("arm", "VARCHAR"), ("axis", "VARCHAR"), ("reward", "DOUBLE"),
                         ("r", "DOUBLE"), ("r_tilde", "DOUBLE"), ("r_raw", "DOUBLE"), ("r_tilde_raw", "DOUBLE"),
                         ("phi", "DOUBLE"), ("numerator", "DOUBLE"), ("W", "DOUBLE"), ("W_A", "DOUBLE"),
                         ("n_scored", "BIGINT"), ("n_abstained", "BIGINT"), ("n_failed", "BIGINT"),
                         ("n_failed_licensed", "BIGINT"), ("n_abstain_candidates", "BIGINT"),
                         ("n_abstain_licensed", "BIGINT"), ("w_licensed", "DOUBLE"), ("w_licensed_raw", "DOUBLE"),
                         ("scored_json", "VARCHAR"), ("abstained_json", "VARCHAR"),
                         # the oracle's clipped axis score and its true verdicts (criterion id -> 1/0): what
                         # coevo.recipes.vgopd.casa.consequences compares r and r~ with (NULL without an oracle)
                         ("oracle", "DOUBLE"), ("oracle_json", "VARCHAR")],
    # CASA: one row per licence (rollout, criterion, expert); recheck = deterministic recomputation confirms it
    "casa_gates": [("run_id", "VARCHAR"), ("step", "BIGINT"), ("rollout_id", "VARCHAR"), ("task_id", "VARCHAR"),
                   ("axis", "VARCHAR"), ("criterion_id", "VARCHAR"), ("expert", "VARCHAR"), ("channel", "VARCHAR"),
                   ("weight", "DOUBLE"), ("raw_weight", "DOUBLE"), ("verifier_kind", "VARCHAR"), ("recheck", "INTEGER")],
}

SCORE_COLS = ("step", "rollout_id", "task_id", "group_idx", "arm", "axis", "reward", "r", "r_tilde", "r_raw",
              "r_tilde_raw", "phi", "W", "W_A", "n_scored", "n_abstained", "n_failed", "n_failed_licensed",
              "n_abstain_candidates", "n_abstain_licensed", "w_licensed", "w_licensed_raw", "abstained_json")
GATE_COLS = ("step", "rollout_id", "task_id", "axis", "criterion_id", "expert", "channel", "weight", "raw_weight",
             "verifier_kind", "recheck")


def has_table(led: Ledger, table: str) -> bool:
    """Whether the ledger file holds ``table`` (VG-OPD's tables exist only in VG-OPD runs)."""
    return led.has_table(table)


def _columns(led: Ledger, table: str, cols, run_id: str) -> Dict[str, List]:
    if not has_table(led, table):
        return {c: [] for c in cols}
    return led.columns(f"SELECT {', '.join(cols)} FROM {table} WHERE run_id = ? "
                       f"ORDER BY step, rollout_id, {cols[5] if table == 'criterion_scores' else 'criterion_id'}",
                       [run_id])


def criterion_score_columns(led: Ledger, run_id: str) -> Dict[str, List]:
    """The run's ``criterion_scores`` rows as columns (ordered by step, rollout, axis)."""
    return _columns(led, "criterion_scores", SCORE_COLS, run_id)


def oracle_columns(led: Ledger, run_id: str) -> Optional[Dict[str, List]]:
    """``rollout_id``, ``oracle`` and ``oracle_json`` of the run's ``criterion_scores`` rows, in the order of
    :func:`criterion_score_columns`; None for a ledger written before those columns existed."""
    if not has_table(led, "criterion_scores"):
        return None
    if not {"oracle", "oracle_json"} <= led.column_names("criterion_scores"):
        return None
    return led.columns("SELECT rollout_id, oracle, oracle_json FROM criterion_scores WHERE run_id = ? "
                       "ORDER BY step, rollout_id, axis", [run_id])


def gate_columns(led: Ledger, run_id: str) -> Dict[str, List]:
    """The run's ``casa_gates`` rows as columns."""
    return _columns(led, "casa_gates", GATE_COLS, run_id)


def probe_rates(led: Ledger, run_id: str) -> List[dict]:
    """Per (step, probe kind): n, pass rate, abstention rate of the ``probes`` rows."""
    return led.query("SELECT step, kind, count(*) AS n, avg(CASE WHEN value = 1 THEN 1.0 ELSE 0.0 END) AS pass_rate, "
                     "avg(CASE WHEN value IS NULL THEN 1.0 ELSE 0.0 END) AS abstention_rate FROM probes "
                     "WHERE run_id = ? GROUP BY step, kind ORDER BY step, kind", [run_id])
