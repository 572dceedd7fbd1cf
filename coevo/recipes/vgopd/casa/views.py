"""Read-only views of the CASA tables of a run's ledger (columns as lists; no statistics here).

A ledger written before the tables existed (opened read-only, so not migrated) reads as empty."""
from __future__ import annotations

from typing import Dict, List, Optional

from coevo.ledger.store import Ledger

__all__ = ["has_table", "criterion_score_columns", "oracle_columns", "gate_columns", "probe_rates"]

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
    have = {r["column_name"] for r in led.query("SELECT column_name FROM information_schema.columns "
                                                "WHERE table_name = 'criterion_scores'")}
    if not {"oracle", "oracle_json"} <= have:
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
