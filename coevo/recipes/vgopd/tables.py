"""The ledger tables VG-OPD adds to the core schema (``RecipeInfo.tables``; created with the core
tables in VG-OPD runs only).  Rows: ``coevo.recipes.vgopd.casa.rows`` and ``.casa.probes``; reads:
``coevo.recipes.vgopd.casa.views``."""
from __future__ import annotations

TABLES: dict[str, list[tuple[str, str]]] = {
    # the three probes per probed prompt and step (own reference, mismatched reference, vacuous template)
    "probes": [("run_id", "VARCHAR"), ("step", "BIGINT"), ("probe_id", "VARCHAR"), ("kind", "VARCHAR"),
               ("verifier_kind", "VARCHAR"), ("value", "INTEGER"), ("reason", "VARCHAR")],
    # CASA (CASA proposal): one row per (rollout, axis) scoring: S(y), A(y) + reasons, r, r~, phi, the arm's reward
    # and the rollout's licences on that axis (coevo.recipes.vgopd.casa.rows)
    "criterion_scores": [("run_id", "VARCHAR"), ("step", "BIGINT"), ("rollout_id", "VARCHAR"), ("task_id", "VARCHAR"),
                         ("group_idx", "BIGINT"), ("arm", "VARCHAR"), ("axis", "VARCHAR"), ("reward", "DOUBLE"),
                         ("r", "DOUBLE"), ("r_tilde", "DOUBLE"), ("r_raw", "DOUBLE"), ("r_tilde_raw", "DOUBLE"),
                         ("phi", "DOUBLE"), ("numerator", "DOUBLE"), ("W", "DOUBLE"), ("W_A", "DOUBLE"),
                         ("n_scored", "BIGINT"), ("n_abstained", "BIGINT"), ("n_failed", "BIGINT"),
                         ("n_failed_licensed", "BIGINT"), ("n_abstain_candidates", "BIGINT"),
                         ("n_abstain_licensed", "BIGINT"), ("w_licensed", "DOUBLE"), ("w_licensed_raw", "DOUBLE"),
                         ("scored_json", "VARCHAR"), ("abstained_json", "VARCHAR"),
                         # the oracle's clipped axis score and its true verdicts (criterion id -> 1/0): what
                         # coevo.recipes.vgopd.casa.consequences compares r and r~ with (NULL without an oracle)
                         ("oracle", "DOUBLE"), ("oracle_json", "VARCHAR")],
    # CASA: one row per licence (rollout, criterion, expert); recheck = deterministic recomputation confirms it
    "casa_gates": [("run_id", "VARCHAR"), ("step", "BIGINT"), ("rollout_id", "VARCHAR"), ("task_id", "VARCHAR"),
                   ("axis", "VARCHAR"), ("criterion_id", "VARCHAR"), ("expert", "VARCHAR"), ("channel", "VARCHAR"),
                   ("weight", "DOUBLE"), ("raw_weight", "DOUBLE"), ("verifier_kind", "VARCHAR"), ("recheck", "INTEGER")],
}
