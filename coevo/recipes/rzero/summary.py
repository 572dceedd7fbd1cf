"""R-Zero's round columns and ledger views: what its round table and report read.

``round_columns`` adds to each round of summary.json the pseudo-label accuracy of the kept
candidates (``coevo.audit.instruments.pseudo_label_accuracy`` over the oracle verdicts on the
round's kept labels), the kept fraction, the Challenger's mean reward and its format-failure rate.
"""
from __future__ import annotations

from collections import defaultdict

from coevo.audit.instruments import pseudo_label_accuracy
from coevo.ledger import views
from coevo.ledger.store import Ledger
from coevo.recipes.rzero import tables

def round_columns(led: Ledger, run_id: str, r: int) -> dict:
    pl = pseudo_label_accuracy(views.kept_label_rows(led, run_id, r)["label_verdict"])
    kept = tables.kept_counts(led, run_id, r)
    ch = tables.challenger_reward_mean(led, run_id, r)
    ff = tables.format_failure_rate(led, run_id, r)
    return {"pseudo_label_accuracy": None if pl.n == 0 else pl.value,
            "kept_fraction": None if not kept["n"] else float(kept["k"] or 0) / float(kept["n"]),
            "challenger_reward_mean": None if ch is None else float(ch),
            "format_failure_rate": None if ff is None else float(ff),
            "n_pseudo_labels": int(pl.n)}


def challenger_difficulty_mix(led: Ledger, run_id: str) -> dict[int, dict[str, float]]:
    rows = tables.difficulty_counts(led, run_id)
    tot: dict[int, int] = defaultdict(int)
    for r in rows:
        tot[r["round"]] += r["n"]
    out: dict[int, dict[str, float]] = defaultdict(dict)
    for r in rows:
        out[int(r["round"])][r["d"]] = r["n"] / tot[r["round"]]
    return dict(out)


def p_hat_values(led: Ledger, run_id: str, source: str = "candidate") -> dict[int, list[float]]:
    rows = tables.p_hat_rows(led, run_id, source)
    out: dict[int, list[float]] = defaultdict(list)
    for r in rows:
        out[int(r["round"])].append(float(r["p_hat"]))
    return dict(out)
