"""SynCo's and RGBC's reads of the ledger beyond the core views (``coevo.ledger.views``), through the
ledger's query API (``Ledger.columns``).  The recipe writes the core ``task_stats`` table and adds
none of its own.  SQL lives here and in ``coevo/ledger/`` only (tests/test_sql_in_ledger.py)."""
from __future__ import annotations

from coevo.ledger.store import Ledger

__all__ = ["lag_null_columns"]


def lag_null_columns(led: Ledger, run_id: str) -> dict[str, list]:
    """mu_pre, mu_post, mu_null and lag_null_analytic of the tasks whose post-update and zero-learning
    groups were drawn (raises on a ledger written before the null columns existed)."""
    return led.columns("SELECT mu_pre, mu_post, mu_null, lag_null_analytic FROM task_stats WHERE run_id = ? "
                       "AND mu_post IS NOT NULL AND mu_null IS NOT NULL", [run_id])
