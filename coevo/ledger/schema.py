"""Ledger schema: append-only tables keyed by run / round / step / task / rollout ids.

Every row carries the versions that produced it (policy checkpoint version, prompt
version, verifier kind + version). Column types are DuckDB types.
"""
from __future__ import annotations

TABLES: dict[str, list[tuple[str, str]]] = {
    "runs": [("run_id", "VARCHAR"), ("created_at", "DOUBLE"), ("recipe", "VARCHAR"), ("world", "VARCHAR"),
             ("seed", "BIGINT"), ("config_yaml", "VARCHAR"), ("coevo_version", "VARCHAR")],
    # one row per completed step: the commit marker of that step's rows
    "steps": [("run_id", "VARCHAR"), ("step", "BIGINT"), ("round", "BIGINT"), ("phase", "VARCHAR"),
              ("phase_step", "BIGINT"), ("completed_at", "DOUBLE"), ("seconds", "DOUBLE"),
              ("proposer_version", "VARCHAR"), ("solver_version", "VARCHAR"), ("metrics_json", "VARCHAR"),
              ("versions_json", "VARCHAR"),  # {role: policy version} after the step (the two
              # *_version columns are kept for ledgers written before roles were a map; NULL in new rows)
              ("stage_seconds_json", "VARCHAR")],  # {stage: seconds} of the step (coevo.timing); NULL in old ledgers
    "rounds": [("run_id", "VARCHAR"), ("round", "BIGINT"), ("step", "BIGINT"), ("summary_json", "VARCHAR")],
    "tasks": [("run_id", "VARCHAR"), ("task_id", "VARCHAR"), ("round", "BIGINT"), ("step", "BIGINT"),
              ("source", "VARCHAR"), ("proposer_version", "VARCHAR"), ("prompt_version", "VARCHAR"),
              ("raw_text", "VARCHAR"), ("question", "VARCHAR"), ("parse_ok", "BOOLEAN"), ("parse_reason", "VARCHAR"),
              ("difficulty", "VARCHAR"), ("reference", "VARCHAR"), ("oracle_answer", "VARCHAR"),
              ("pseudo_label", "VARCHAR"), ("p_hat", "DOUBLE"), ("kept", "BOOLEAN"), ("meta_json", "VARCHAR")],
    "rollouts": [("run_id", "VARCHAR"), ("rollout_id", "VARCHAR"), ("task_id", "VARCHAR"), ("round", "BIGINT"),
                 ("step", "BIGINT"), ("role", "VARCHAR"), ("purpose", "VARCHAR"), ("group_idx", "BIGINT"),
                 ("policy_version", "VARCHAR"), ("text", "VARCHAR"), ("answer", "VARCHAR"), ("n_tokens", "BIGINT"),
                 ("finish_reason", "VARCHAR"), ("sampler_json", "VARCHAR"),  # who served it (openai backend)
                 # multi-turn: [{kind: policy|env, n_tokens, text}] in order (env = tool output, masked)
                 ("segments_json", "VARCHAR"), ("n_masked_tokens", "BIGINT")],
    "verdicts": [("run_id", "VARCHAR"), ("rollout_id", "VARCHAR"), ("task_id", "VARCHAR"), ("step", "BIGINT"),
                 ("target", "VARCHAR"), ("verifier_kind", "VARCHAR"), ("verifier_version", "VARCHAR"),
                 ("criterion_id", "VARCHAR"), ("value", "INTEGER"), ("reason", "VARCHAR"), ("elapsed_s", "DOUBLE")],
    "rewards": [("run_id", "VARCHAR"), ("step", "BIGINT"), ("role", "VARCHAR"), ("item_id", "VARCHAR"),
                ("task_id", "VARCHAR"), ("reward", "DOUBLE"), ("advantage", "DOUBLE"), ("components_json", "VARCHAR")],
    "updates": [("run_id", "VARCHAR"), ("step", "BIGINT"), ("role", "VARCHAR"), ("version_before", "VARCHAR"),
                ("version_after", "VARCHAR"), ("n_sequences", "BIGINT"), ("metrics_json", "VARCHAR")],
    "evals": [("run_id", "VARCHAR"), ("round", "BIGINT"), ("step", "BIGINT"), ("task_id", "VARCHAR"),
              ("difficulty", "VARCHAR"), ("policy_version", "VARCHAR"), ("mode", "VARCHAR"), ("answer", "VARCHAR"),
              ("correct", "DOUBLE")],
    # per-task statistics of screen/confirm recipes (SynCo, RGBC; RGBC proposal §core idea). NULL = not defined / not measured.
    "task_stats": [("run_id", "VARCHAR"), ("task_id", "VARCHAR"), ("round", "BIGINT"), ("step", "BIGINT"),
                   ("arm", "VARCHAR"), ("validator_ok", "BOOLEAN"), ("consensus_ok", "BOOLEAN"),
                   ("k_screen", "BIGINT"), ("mu_screen", "DOUBLE"), ("k_confirm", "BIGINT"), ("mu_confirm", "DOUBLE"),
                   ("kappa", "INTEGER"), ("mu_tilde", "DOUBLE"), ("mode_answer", "VARCHAR"), ("mode_share", "DOUBLE"),
                   ("nu", "DOUBLE"), ("in_doubt", "BOOLEAN"), ("mu_pre", "DOUBLE"), ("mu_post", "DOUBLE"),
                   ("lag", "DOUBLE"), ("reward", "DOUBLE"), ("true_p", "DOUBLE"), ("true_p_n", "BIGINT"),
                   ("reference_correct", "BOOLEAN"), ("proposer_answer", "VARCHAR"),
                   # the solver's majority over the task's solves (every screened task, mu_1 = 1 included;
                   # = mode_answer where that exists), its share, and 1/0 = it matches the reference (FF)
                   ("solver_majority", "VARCHAR"), ("solver_majority_share", "DOUBLE"), ("solver_agrees", "DOUBLE"),
                   # the lag's zero-learning null (issue 13): mu of an independent pre-update group of the same
                   # task, l_null = mu_pre - mu_null, where it came from, and E[l | bearing] at true_p (oracle)
                   ("mu_null", "DOUBLE"), ("lag_null", "DOUBLE"), ("null_source", "VARCHAR"),
                   ("lag_null_analytic", "DOUBLE")],
    "verdict_cache": [("key", "VARCHAR"), ("row_json", "VARCHAR")],
}
