"""VG-OPD's round-table columns: the names the round table and its caption use (the values are the
per-round means of the step metrics of ``coevo.recipes.vgopd.steps.step_metrics``)."""
from __future__ import annotations

SUMMARY_COLUMNS = ("reward_mean", "phi_p95", "inflation_mean", "rank_reversals", "licensing_rate", "acc_arithmetic",
                   "acc_units", "acc_final", "acc_method")
OPTIONAL_COLUMNS = ("rank_reversals_oracle_r_tilde", "rank_reversals_oracle_r", "rank_reversals_oracle_tie")

COLUMN_NAMES = {"reward_mean": ("reward", "mean axis reward of the CASA arm"),
                "phi_p95": ("phi p95", "95th percentile of the abstention share phi"),
                "inflation_mean": ("r/r~", "mean inflation r / r~ (abstentions out of the denominator)"),
                "rank_reversals": ("reversals", "rank reversals inside groups (r vs r~)"),
                "licensing_rate": ("licensed", "share of failed criteria licensed by an expert"),
                "acc_arithmetic": ("acc arith", "oracle accuracy, arithmetic axis"),
                "acc_units": ("acc units", "oracle accuracy, units axis"),
                "acc_final": ("acc final", "oracle accuracy, final-answer axis"),
                "acc_method": ("acc method", "oracle accuracy, method axis"),
                "rank_reversals_oracle_r_tilde": ("rev r~ ok", "reversals where the oracle agrees with r~"),
                "rank_reversals_oracle_r": ("rev r ok", "reversals where the oracle agrees with r"),
                "rank_reversals_oracle_tie": ("rev tie", "reversals the oracle calls a tie")}
