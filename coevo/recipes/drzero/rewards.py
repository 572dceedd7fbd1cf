"""Dr. Zero proposer reward, hop-bucket advantages and MSV acceptance: pure functions (Dr. Zero; False Frontiers: FF, MSV, CrossFit).

Sources (read, not guessed):

* Dr. Zero's code, facebookresearch/drzero @ 0591d533e3fa, ``verl/custom_reward/reward_function.py``:
  ``compute_difficulty_score`` (l. 77-84), ``compute_challenger_format_scores`` (l. 87-149) and the end
  of ``compute_challenger_score_batch`` (``final_scores = [0.5 * x for x in format_scores]``, then
  ``final_scores[idx] += score`` for the questions that were sent to the solver). The ``n`` of the
  difficulty is ``len(binary_list)`` = the number of solver samples (``reward_rollout_n`` =
  ``reward_group_size=5`` in ``iter*_challenger.sh``), *not* the hop count; k = 0 and k = n give 0.
  The advantage estimator ``grpo_batch`` (``verl/trainer/ppo/core_algos.py``,
  ``compute_grpo_batch_outcome_advantage``) groups by hop and uses ``torch.std`` (unbiased); a group
  of one gets mean 0 and std 1.
* ANCHORS "Dr. Zero" (the paper as this project reads it): reward = 0.5 × format score +
  difficulty, difficulty = (n − k)/(n − 1) for 0 < k < n, k of 5 frozen-solver answers matching by
  EM; advantages normalised within each hop bucket, A = (r − μ_g)/(σ_g + 1e-6) (False Frontiers (CrossFit)).
* False Frontiers (MSV) (MSV): 3 source-aware + 3 source-blind answers, accept iff
  y^src ≠ ∅ ∧ y^blind ≠ ∅ ∧ y^src ≃ y^blind; the verified consensus replaces the draft answer.

Where the paper and the code differ the function takes ``variant="paper" | "code"`` (default paper).
The difficulty equals CrossFit's f(k) (``crossfit_reward`` below, outside = 0) and
is computed by it: CrossFit is Dr. Zero's reward with the answers of an auxiliary solver of the other
fold. See docs/audit.md "False-agreement audit" for the table.
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

import numpy as np
import torch

from coevo.rl.grpo import bucket_advantages
from coevo.verify.vote import majority_vote

__all__ = ["CROSSFIT_OUTSIDE", "crossfit_reward", "DRZERO_VARIANTS", "drzero_difficulty", "drzero_format_score",
           "drzero_tool_score", "drzero_answer_score", "drzero_integrity", "drzero_proposer_reward", "hrpo_advantages",
           "msv_side_answer", "msv_accept"]

DRZERO_VARIANTS = ("paper", "code")
CROSSFIT_OUTSIDE = ("zero", "extrapolate")


def crossfit_reward(k, n: int = 5, outside: str = "zero"):
    """CrossFit proposer reward f(k) = (n - k) / (n - 1) for 0 < k < n.

    False Frontiers (CrossFit): f(k) = (5 - k)/4 over n = 5 auxiliary answers, k of which match the
    proposer's answer. False Frontiers does not define k = 0 or k = n: ``outside="zero"``
    (default) gives 0 there; ``outside="extrapolate"`` applies the same line
    (f(0) = n/(n-1) = 1.25, f(n) = 0). A scalar in gives a Python float, an array an array.
    """
    if outside not in CROSSFIT_OUTSIDE:
        raise ValueError(f"outside must be one of {CROSSFIT_OUTSIDE}, got {outside!r}")
    if n < 2:
        raise ValueError("n must be >= 2")
    a = np.asarray(k, dtype=float)
    if np.any((a < 0) | (a > n)):
        raise ValueError(f"k must lie in [0, {n}]")
    f = (n - a) / (n - 1.0)
    if outside == "zero":
        f = np.where((a > 0) & (a < n), f, 0.0)
    return float(f) if a.ndim == 0 else f


def _check_variant(variant: str) -> None:
    if variant not in DRZERO_VARIANTS:
        raise ValueError(f"variant must be one of {DRZERO_VARIANTS}, got {variant!r}")


def drzero_difficulty(k, n: int = 5):
    """Dr. Zero difficulty d(k) = (n − k)/(n − 1) for 0 < k < n, else 0, with n = solver samples.

    drzero ``compute_difficulty_score``: ``n = len(binary_list)`` (the 5 solver answers' EM flags),
    ``if num_ones == 0 or num_ones == n: return 0.0``. Paper and code agree; the same line as
    CrossFit's f(k) (False Frontiers (CrossFit)), so this is ``crossfit_reward(k, n, outside="zero")``.
    """
    return crossfit_reward(k, n, outside="zero")


def drzero_tool_score(hops: int, n_tool_calls: int, n_tool_responses: int) -> float:
    """The tool part of Dr. Zero's format score (``compute_challenger_format_scores``).

    1.0 for a 1-hop question, else 0.0; when the valid search calls all got a response
    (``tool_calls == len(doc_matches) and tool_calls > 0``): min((1 + calls)/hops, 1)."""
    if hops < 1:
        raise ValueError("hops must be >= 1")
    score = 1.0 if hops == 1 else 0.0
    if n_tool_calls == n_tool_responses and n_tool_calls > 0:
        score = min((1 + n_tool_calls) / hops, 1.0)
    return score


def drzero_answer_score(answer: str, documents: str, normalize: Callable[[str], str]) -> float:
    """The answer part of Dr. Zero's format score: the normalised answer is yes/no or appears in the
    source document plus the retrieved passages; then 1.0 for 1-5 words, 0.5 for 6-10, else 0."""
    norm = normalize(answer or "")
    if not (norm in ("yes", "no") or norm in normalize(documents or "")):
        return 0.0
    words = len(norm.split())
    if len(norm) > 0 and words <= 5:
        return 1.0
    if len(norm) > 0 and words <= 10:
        return 0.5
    return 0.0


def drzero_integrity(question: str, answer: str, normalize: Callable[[str], str]) -> bool:
    """Dr. Zero's integrity gate: a non-empty question and answer, the answer not inside the question."""
    return bool(question) and bool(answer) and normalize(answer) not in normalize(question)


def drzero_format_score(integrity: bool, think_share: float, tool_score: float, answer_score: float) -> float:
    """Dr. Zero format score ``sum([1, f, t, a]) / 4 if integrity else 0`` (``compute_challenger_format_scores``).

    ``think_share``: share of the proposer's turns that start with ``<think>``; ``tool_score``:
    :func:`drzero_tool_score`; ``answer_score``: :func:`drzero_answer_score`. In [0.25, 1] when the
    integrity gate passes, else 0."""
    for name, v in (("think_share", think_share), ("tool_score", tool_score), ("answer_score", answer_score)):
        if not 0.0 <= v <= 1.0:
            raise ValueError(f"{name} must lie in [0, 1]")
    return (1.0 + think_share + tool_score + answer_score) / 4.0 if integrity else 0.0


def drzero_proposer_reward(format_score, k, n: int = 5, variant: str = "paper"):
    """Dr. Zero proposer reward r = 0.5 × format + d(k) (:func:`drzero_difficulty`).

    ``variant="paper"`` (ANCHORS): the sum for every question. ``variant="code"``: a question with
    format score 0 is never sent to the solver and gets 0 (``if s > 0: gen_batch_ids.append(idx)``);
    the two differ only there. ``k`` of ``n`` solver answers match the proposer's by EM. Scalar or
    array in, same shape out."""
    _check_variant(variant)
    f = np.asarray(format_score, dtype=float)
    if np.any((f < 0) | (f > 1)):
        raise ValueError("format_score must lie in [0, 1]")
    d = np.asarray(drzero_difficulty(k, n), dtype=float)
    r = 0.5 * f + d
    if variant == "code":
        r = np.where(f > 0, r, 0.0)
    return float(r) if r.ndim == 0 else r


def hrpo_advantages(rewards, hops, variant: str = "paper", eps: float = 1e-6) -> np.ndarray:
    """Hop-grouped advantages A_e = (r_e − μ_g(e))/(σ_g(e) + eps), g = the hop bucket (False Frontiers (CrossFit)).

    ``variant="paper"``: ``coevo.rl.grpo.bucket_advantages`` (population σ; a bucket of one item, or
    of equal rewards, gives 0). ``variant="code"``: Dr. Zero's ``grpo_batch``: σ is ``torch.std``
    (unbiased, n − 1) and a bucket of one item gets μ = 0, σ = 1, i.e. A = r/(1 + eps)."""
    _check_variant(variant)
    if variant == "paper":
        return np.asarray(bucket_advantages(np.asarray(rewards, dtype=float), np.asarray(hops), eps))
    r = np.asarray(rewards, dtype=float)
    h = np.asarray(hops)
    if r.shape != h.shape or r.ndim != 1:
        raise ValueError("rewards and hops must be 1-D of the same length")
    out = np.empty_like(r)
    for g in np.unique(h):
        sel = h == g
        x = r[sel]
        if x.size == 1:
            mu, sd = 0.0, 1.0
        else:
            mu, sd = float(x.mean()), float(torch.tensor(x).std())  # torch.std: unbiased, as the code
        out[sel] = (x - mu) / (sd + eps)
    return out


def _empty(a: Any) -> bool:
    return a is None or (isinstance(a, str) and not a.strip())


def msv_side_answer(answers: Sequence[Optional[str]], equivalent: Callable[[str, str], bool],
                    min_support: int = 1) -> tuple[Optional[str], int]:
    """One side's answer y^side of MSV: the largest class of equivalent answers among the non-empty
    ones (ties: the first seen; ``coevo.verify.vote.majority_vote``), with its support; ∅ (None, 0)
    when no answer is non-empty or the class has fewer than ``min_support`` answers.

    False Frontiers (MSV) writes y^src ≠ ∅ without defining a side's answer over its 3 samples; we take
    the plurality among the side's non-empty answers (an empty / unparsable answer does not vote)."""
    votes = [a for a in answers if not _empty(a)]
    if not votes:
        return None, 0
    v = majority_vote(votes, equivalent)
    support = sum(v.agree)
    return (v.label, support) if support >= min_support else (None, support)


def msv_accept(src_answers: Sequence[Optional[str]], blind_answers: Sequence[Optional[str]],
               equivalent: Callable[[str, str], bool], min_support: int = 1
               ) -> tuple[bool, Optional[str], str]:
    """MSV acceptance (False Frontiers (MSV)): accept iff y^src ≠ ∅ ∧ y^blind ≠ ∅ ∧ y^src ≃ y^blind.

    ``src_answers``: the source-aware answers (3 in the seed), ``blind_answers``: the source-blind
    ones (3); each side's answer is :func:`msv_side_answer`. Returns ``(accepted, consensus, reason)``:
    consensus = y^src (the source-aware side's answer, which replaces the draft answer) when accepted,
    else None; reason one of ``accepted``, ``no-source-answer``, ``no-blind-answer``, ``disagree``."""
    y_src, _ = msv_side_answer(src_answers, equivalent, min_support)
    y_blind, _ = msv_side_answer(blind_answers, equivalent, min_support)
    if y_src is None:
        return False, None, "no-source-answer"
    if y_blind is None:
        return False, None, "no-blind-answer"
    if not equivalent(y_src, y_blind):
        return False, None, "disagree"
    return True, y_src, "accepted"
