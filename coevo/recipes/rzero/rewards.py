"""R-Zero's reward formulas and Solver-set filters: pure functions (R-Zero §2.2-§2.3, §3.1, and its code).

The Challenger's reward is ``challenger_reward(p_hat, r_rep)`` = max(0, r_unc - r_rep) with the
uncertainty reward of ``uncertainty_reward`` and the BLEU-cluster repetition penalty r_rep of
``coevo.rewards.repetition.repetition_penalty`` (shared: RGBC's novelty uses its pairwise BLEU, the
integrations its penalty); a candidate question enters the Solver's set by ``keep_for_solver``
(the paper) or ``keep_in_band`` (R-Zero's code).  Scalar in, float out; array in, array out.
See docs/formulas.md.
"""
from __future__ import annotations

import numpy as np

__all__ = ["uncertainty_reward", "challenger_reward", "keep_for_solver", "keep_in_band", "UNCERTAINTY_VARIANTS"]

UNCERTAINTY_VARIANTS = ("paper", "reference")


def uncertainty_reward(p_hat, variant: str = "paper"):
    """R-Zero challenger uncertainty reward.

    R-Zero §2.2. ``variant="paper"`` (default): r_unc = 1 - 2|p_hat - 1/2|;
    ``variant="reference"``: min(p_hat, 1 - p_hat), the formula of the reference code.
    The two differ by exactly a factor of 2 (paper = 2 * reference), which changes the
    balance against the repetition penalty lambda * |C| / B.
    """
    a = np.asarray(p_hat, dtype=float)
    if np.any((a < 0) | (a > 1)):
        raise ValueError("p_hat must lie in [0, 1]")
    if variant == "paper":
        r = 1.0 - 2.0 * np.abs(a - 0.5)
    elif variant == "reference":
        r = np.minimum(a, 1.0 - a)
    else:
        raise ValueError(f"variant must be one of {UNCERTAINTY_VARIANTS}, got {variant!r}")
    return float(r) if a.ndim == 0 else r


def challenger_reward(p_hat, r_rep, variant: str = "paper"):
    """R-Zero challenger reward r = max(0, r_unc - r_rep).

    R-Zero §2.2; ``variant`` as in :func:`uncertainty_reward`. A malformed
    challenger output (no ``<question>``) gets 0 before this is computed.
    """
    u = np.asarray(uncertainty_reward(p_hat, variant))
    r = np.maximum(0.0, u - np.asarray(r_rep, dtype=float))
    return float(r) if r.ndim == 0 else r


def keep_in_band(p_hat, low: float = 0.3, high: float = 0.8):
    """R-Zero's *code* solver-dataset filter: keep iff low <= p_hat <= high (both ends included).

    ``question_evaluate/upload.py`` in the R-Zero repository keeps ``min_score <= score <=
    max_score`` with ``--min_score 0.3 --max_score 0.8`` (``scripts/solver_train.sh``), where
    ``score`` is the majority share of ``--num_samples 9`` answers (``question_evaluate/evaluate.py``):
    3..7 of 9 are kept. The paper states |p_hat - 1/2| <= delta over m = 10 (:func:`keep_for_solver`).
    A 1e-9 tolerance absorbs float error.
    """
    if not 0 <= low <= high <= 1:
        raise ValueError(f"need 0 <= low <= high <= 1, got [{low}, {high}]")
    a = np.asarray(p_hat, dtype=float)
    keep = (a >= low - 1e-9) & (a <= high + 1e-9)
    return bool(keep) if a.ndim == 0 else keep


def keep_for_solver(p_hat, delta: float = 0.25):
    """R-Zero solver-dataset filter: keep iff |p_hat - 1/2| <= delta.

    R-Zero §2.3, §3.1: with m = 10 answers and delta = 0.25 this keeps
    3..7 of 10 agreeing with the majority. A 1e-9 tolerance absorbs float error.
    """
    a = np.asarray(p_hat, dtype=float)
    keep = np.abs(a - 0.5) <= delta + 1e-9
    return bool(keep) if a.ndim == 0 else keep
