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

def round_columns(led: Ledger, run_id: str, r: int) -> dict:
    pl = pseudo_label_accuracy(views.kept_label_rows(led, run_id, r)["label_verdict"])
    kept = led.query("SELECT sum(CASE WHEN kept THEN 1 ELSE 0 END) AS k, count(*) AS n FROM tasks "
                     "WHERE run_id = ? AND round = ? AND source = 'candidate' AND parse_ok", [run_id, r])[0]
    ch = led.query("SELECT avg(w.reward) AS r FROM rewards w JOIN steps s ON w.run_id = s.run_id AND w.step = s.step "
                   "WHERE w.run_id = ? AND s.round = ? AND w.role = 'challenger'", [run_id, r])[0]
    ff = led.query("SELECT avg(CASE WHEN parse_ok THEN 0.0 ELSE 1.0 END) AS f FROM tasks "
                   "WHERE run_id = ? AND round = ? AND source = 'challenger'", [run_id, r])[0]
    return {"pseudo_label_accuracy": None if pl.n == 0 else pl.value,
            "kept_fraction": None if not kept["n"] else float(kept["k"] or 0) / float(kept["n"]),
            "challenger_reward_mean": None if ch["r"] is None else float(ch["r"]),
            "format_failure_rate": None if ff["f"] is None else float(ff["f"]),
            "n_pseudo_labels": int(pl.n)}


def challenger_difficulty_mix(led: Ledger, run_id: str) -> dict[int, dict[str, float]]:
    rows = led.query("SELECT round, coalesce(difficulty, 'malformed') AS d, count(*) AS n FROM tasks "
                     "WHERE run_id = ? AND source IN ('challenger', 'candidate') GROUP BY round, d", [run_id])
    tot: dict[int, int] = defaultdict(int)
    for r in rows:
        tot[r["round"]] += r["n"]
    out: dict[int, dict[str, float]] = defaultdict(dict)
    for r in rows:
        out[int(r["round"])][r["d"]] = r["n"] / tot[r["round"]]
    return dict(out)


def p_hat_values(led: Ledger, run_id: str, source: str = "candidate") -> dict[int, list[float]]:
    rows = led.query("SELECT round, p_hat FROM tasks WHERE run_id = ? AND source = ? AND p_hat IS NOT NULL",
                     [run_id, source])
    out: dict[int, list[float]] = defaultdict(list)
    for r in rows:
        out[int(r["round"])].append(float(r["p_hat"]))
    return dict(out)
