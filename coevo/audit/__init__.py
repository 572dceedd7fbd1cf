"""Audit: statistics, the bimodal null model, and instruments on arrays (SynCo; RGBC proposal §background, §core idea, §limitation 2).

The CLI entry points (``reanalyze``, ``simulate``) live in their own modules and are not
imported here, so ``import coevo.audit`` stays light.
"""
from coevo.audit.false_agreement import false_agreement_from_flags, false_agreement_summary
from coevo.audit.instruments import (
    answer_mode,
    abstention_share,
    bearing_indicator,
    bearing_rate,
    enrichment_se,
    estimate_dict,
    false_agreement_mass,
    kappa_bar,
    kappa_indicator,
    lag_bar,
    lag_values,
    nu_bar,
    nu_indicators,
    pseudo_label_accuracy,
    seed_range,
    solver_majority,
    top_quartile_enrichment,
)
from coevo.audit.nullmodel import (
    bearing_probability,
    expected_kappa,
    expected_teachability,
    invert_null_model,
    mid_share_given_bearing,
    null_model_shares,
)
from coevo.audit.screen_confirm import screen_confirm_metrics, screen_confirm_truth
from coevo.audit.stats import (
    Estimate,
    abstention_inflation,
    batch_bootstrap_ci,
    binomial_se,
    clustered_se,
    difference_se,
)

__all__ = [
    "bearing_probability", "null_model_shares", "invert_null_model", "expected_kappa",
    "expected_teachability", "mid_share_given_bearing",
    "binomial_se", "difference_se", "abstention_inflation", "clustered_se", "batch_bootstrap_ci",
    "Estimate",
    "bearing_indicator", "bearing_rate", "kappa_indicator", "kappa_bar", "answer_mode", "nu_indicators", "nu_bar",
    "lag_values", "lag_bar", "estimate_dict", "pseudo_label_accuracy", "false_agreement_mass", "abstention_share",
    "solver_majority", "screen_confirm_metrics", "screen_confirm_truth",
    "false_agreement_from_flags", "false_agreement_summary",  # false_agreement(): import it from the module
    "top_quartile_enrichment", "enrichment_se", "seed_range",
]
