"""Dr. Zero's reads of the ledger (its experiments' per-run metrics), through the ledger's query API
(``Ledger.query``).  The recipe adds no table of its own.  SQL lives here and in ``coevo/ledger/``
only (tests/test_sql_in_ledger.py)."""
from __future__ import annotations

from coevo.ledger.store import Ledger

__all__ = ["training_rollouts", "last_round_greedy_answers"]


def training_rollouts(led: Ledger) -> int:
    """Training-side rollouts (every role): all but the held-out evaluation (``eval``) and the post-hoc
    audit's draws (``audit_*``)."""
    return int(led.query("SELECT count(*) AS n FROM rollouts WHERE purpose <> 'eval' "
                         "AND purpose NOT LIKE 'audit%'")[0]["n"])


def last_round_greedy_answers(led: Ledger) -> list[dict]:
    """``{task_id, answer}`` of the last round's greedy held-out evaluation."""
    last_round = led.query("SELECT max(round) AS r FROM evals")[0]["r"]
    return led.query("SELECT task_id, answer FROM evals WHERE round = ? AND mode = 'greedy'", [last_round])
