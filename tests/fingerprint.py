"""Result fingerprints of a run directory: what a refactor must not change.

One sha256 per ledger table over the columns that carry results (texts, answers, verdict
values, rewards, advantages, task statistics), not metadata (verifier kind/version strings,
timings, JSON blobs), so a change of bookkeeping passes and a change of numbers fails.
"""
import hashlib
import json

import duckdb

COLUMNS = {
    "tasks": "task_id, source, question, parse_ok, reference, pseudo_label, round(p_hat, 9), kept",
    "rollouts": "rollout_id, purpose, text, answer",
    "rewards": "role, item_id, round(reward, 9), round(advantage, 5)",
    "verdicts": "rollout_id, target, value",
    "evals": "task_id, mode, answer, correct",
    "updates": "step, n_sequences",
    "task_stats": "task_id, validator_ok, consensus_ok, mu_screen, mu_confirm, kappa, mode_answer, nu, in_doubt, "
                  "mu_post, round(reward, 9), true_p, reference_correct",
}


def fingerprint(run_dir) -> dict:
    con = duckdb.connect(str(run_dir / "ledger.duckdb"), read_only=True)
    out = {}
    try:
        for table, cols in COLUMNS.items():
            rows = con.execute(f"SELECT {cols} FROM {table} ORDER BY ALL").fetchall()
            h = hashlib.sha256(json.dumps(rows, default=str).encode()).hexdigest()[:16]
            out[table] = f"{len(rows)}:{h}"
    finally:
        con.close()
    return out


def summary_numbers(run_dir) -> dict:
    s = json.loads((run_dir / "summary.json").read_text())
    s.pop("wall_seconds", None)
    return json.loads(json.dumps(s), parse_float=lambda x: round(float(x), 9))
