"""R-Zero's reads of the ledger: the queries its round columns and report need, through the ledger's
query API (``Ledger.query``).  R-Zero adds no table of its own; it reads the core ``tasks``,
``rewards`` and ``steps`` (its Challenger's questions are ``tasks.source = 'challenger'``, the
candidates of the Solver's dataset ``'candidate'``).  SQL lives here and in ``coevo/ledger/`` only
(tests/test_sql_in_ledger.py)."""
from __future__ import annotations

from coevo.ledger.store import Ledger

__all__ = ["kept_counts", "challenger_reward_mean", "format_failure_rate", "difficulty_counts", "p_hat_rows"]


def kept_counts(led: Ledger, run_id: str, r: int) -> dict:
    """``{k, n}``: the round's parsed candidates kept for the Solver's dataset, and all of them."""
    return led.query("SELECT sum(CASE WHEN kept THEN 1 ELSE 0 END) AS k, count(*) AS n FROM tasks "
                     "WHERE run_id = ? AND round = ? AND source = 'candidate' AND parse_ok", [run_id, r])[0]


def challenger_reward_mean(led: Ledger, run_id: str, r: int):
    """The mean reward of the Challenger's rows in the round's steps (None without rows)."""
    return led.query("SELECT avg(w.reward) AS r FROM rewards w JOIN steps s ON w.run_id = s.run_id AND w.step = s.step "
                     "WHERE w.run_id = ? AND s.round = ? AND w.role = 'challenger'", [run_id, r])[0]["r"]


def format_failure_rate(led: Ledger, run_id: str, r: int):
    """The share of the round's Challenger outputs that did not parse (None without any)."""
    return led.query("SELECT avg(CASE WHEN parse_ok THEN 0.0 ELSE 1.0 END) AS f FROM tasks "
                     "WHERE run_id = ? AND round = ? AND source = 'challenger'", [run_id, r])[0]["f"]


def difficulty_counts(led: Ledger, run_id: str) -> list[dict]:
    """``{round, d, n}``: Challenger and candidate questions per round and difficulty (``malformed``: none)."""
    return led.query("SELECT round, coalesce(difficulty, 'malformed') AS d, count(*) AS n FROM tasks "
                     "WHERE run_id = ? AND source IN ('challenger', 'candidate') GROUP BY round, d", [run_id])


def p_hat_rows(led: Ledger, run_id: str, source: str = "candidate") -> list[dict]:
    """``{round, p_hat}`` of the tasks of ``source`` that have one."""
    return led.query("SELECT round, p_hat FROM tasks WHERE run_id = ? AND source = ? AND p_hat IS NOT NULL",
                     [run_id, source])
