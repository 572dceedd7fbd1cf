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
    # recipe tables (VG-OPD/CASA): fingerprinted where they hold rows
    "probes": "probe_id, kind, value, reason",
    "criterion_scores": "rollout_id, axis, arm, round(reward, 9), round(r, 9), round(r_tilde, 9), round(phi, 9), "
                        "n_scored, n_abstained, n_failed, n_abstain_licensed, round(w_licensed, 9)",
    "casa_gates": "rollout_id, axis, criterion_id, expert, channel, round(weight, 9), recheck",
}
OPTIONAL = {"probes", "criterion_scores", "casa_gates"}


def fingerprint(run_dir) -> dict:
    con = duckdb.connect(str(run_dir / "ledger.duckdb"), read_only=True)
    out = {}
    try:
        have = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        for table, cols in COLUMNS.items():
            # a table the ledger lacks reads as empty (a recipe's own table exists only in its runs)
            rows = con.execute(f"SELECT {cols} FROM {table} ORDER BY ALL").fetchall() if table in have else []
            if table in OPTIONAL and not rows:
                continue
            h = hashlib.sha256(json.dumps(rows, default=str).encode()).hexdigest()[:16]
            out[table] = f"{len(rows)}:{h}"
    finally:
        con.close()
    return out


def summary_numbers(run_dir) -> dict:
    s = json.loads((run_dir / "summary.json").read_text())
    s.pop("wall_seconds", None)
    return json.loads(json.dumps(s), parse_float=lambda x: round(float(x), 9))
