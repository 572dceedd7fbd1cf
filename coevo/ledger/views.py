"""Read-only views over a run's ledger: the numbers summaries, reports and audits use."""
from __future__ import annotations

import json
from collections import defaultdict

from coevo.ledger.store import Ledger


def eval_accuracy(led: Ledger, run_id: str, round_: int, mode: str = "greedy") -> dict | None:
    rows = led.query("SELECT difficulty, avg(correct) AS acc, count(*) AS n FROM evals "
                     "WHERE run_id = ? AND round = ? AND mode = ? GROUP BY difficulty ORDER BY difficulty",
                     [run_id, round_, mode])
    if not rows:
        return None
    overall = led.query("SELECT avg(correct) AS acc FROM evals WHERE run_id = ? AND round = ? AND mode = ?",
                        [run_id, round_, mode])[0]["acc"]
    return {"overall": float(overall), "by_difficulty": {r["difficulty"]: float(r["acc"]) for r in rows}}


def eval_counts(led: Ledger, run_id: str, round_: int = 0, mode: str = "greedy") -> dict:
    rows = led.query("SELECT difficulty, count(*) AS n FROM evals WHERE run_id = ? AND round = ? AND mode = ? "
                     "GROUP BY difficulty ORDER BY difficulty", [run_id, round_, mode])
    return {r["difficulty"]: int(r["n"]) for r in rows}


def eval_modes(led: Ledger, run_id: str) -> list[str]:
    return [r["mode"] for r in led.query("SELECT DISTINCT mode FROM evals WHERE run_id = ? ORDER BY mode", [run_id])]


def rounds_completed(led: Ledger, run_id: str) -> list[int]:
    rows = led.query("SELECT DISTINCT round FROM evals WHERE run_id = ? AND round > 0 ORDER BY round", [run_id])
    return [int(r["round"]) for r in rows]


def round_row(led: Ledger, run_id: str, r: int) -> dict:
    """One entry of summary.json's ``rounds`` list, computed from ledger rows only."""
    pl = led.query("SELECT avg(CASE WHEN pseudo_label = oracle_answer THEN 1.0 ELSE 0.0 END) AS acc, count(*) AS n "
                   "FROM tasks WHERE run_id = ? AND round = ? AND source = 'candidate' AND kept "
                   "AND oracle_answer IS NOT NULL", [run_id, r])[0]
    kept = led.query("SELECT sum(CASE WHEN kept THEN 1 ELSE 0 END) AS k, count(*) AS n FROM tasks "
                     "WHERE run_id = ? AND round = ? AND source = 'candidate' AND parse_ok", [run_id, r])[0]
    ch = led.query("SELECT avg(w.reward) AS r FROM rewards w JOIN steps s ON w.run_id = s.run_id AND w.step = s.step "
                   "WHERE w.run_id = ? AND s.round = ? AND w.role = 'challenger'", [run_id, r])[0]
    ff = led.query("SELECT avg(CASE WHEN parse_ok THEN 0.0 ELSE 1.0 END) AS f FROM tasks "
                   "WHERE run_id = ? AND round = ? AND source = 'challenger'", [run_id, r])[0]
    nr = led.query("SELECT count(*) AS n FROM rollouts WHERE run_id = ? AND round = ? AND role = 'solver'",
                   [run_id, r])[0]
    out = {"round": r, "solver_eval_accuracy": eval_accuracy(led, run_id, r),
           "pseudo_label_accuracy": None if pl["n"] == 0 else float(pl["acc"]),
           "kept_fraction": None if not kept["n"] else float(kept["k"] or 0) / float(kept["n"]),
           "challenger_reward_mean": None if ch["r"] is None else float(ch["r"]),
           "format_failure_rate": None if ff["f"] is None else float(ff["f"]),
           "n_rollouts": int(nr["n"]), "n_pseudo_labels": int(pl["n"])}
    for mode in eval_modes(led, run_id):
        if mode != "greedy":
            out[f"solver_eval_accuracy_{mode}"] = eval_accuracy(led, run_id, r, mode)
    return out


def step_metrics(led: Ledger, run_id: str) -> list[dict]:
    rows = led.query("SELECT step, round, phase, phase_step, seconds, metrics_json FROM steps WHERE run_id = ? "
                     "ORDER BY step", [run_id])
    for r in rows:
        r["metrics"] = json.loads(r.pop("metrics_json") or "{}")
    return rows


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


def run_info(led: Ledger) -> dict:
    rows = led.query("SELECT * FROM runs")
    if not rows:
        raise ValueError("ledger holds no run")
    return rows[0]
