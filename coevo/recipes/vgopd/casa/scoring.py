"""CASA scoring per (prompt, answer, axis): S(y), A(y) with reasons, r, r~, phi, the arm's reward.

CASA proposal §corollary 1: numerator = sum_{j in S(y)} w_j V_j (a penalty w_j < 0 subtracts when
V_j = 1; a penalty that abstains drops its subtrahend), W = sum of positive weights, W_A = positive
weight abstained, phi = W_A / W, r = clip(numerator / (W - W_A), 0, 1) (VG-OPD's original: abstentions
out of numerator and denominator), r~ = clip(numerator / W, 0, 1) (CASA's fixed denominator).  Before
the clip r = r~ / (1 - phi) exactly.  The numbers come from
``coevo.recipes.vgopd.rewards.criteria_scores``; this module adds the sets, the reasons and the arms.

Arms (CASA proposal §method, three arms): A rewards r; B and C reward r~ (unknown -> 0).  A's r is undefined
when every positive criterion of the axis abstained (W_A = W): the ledger keeps NaN and the reward used
for the update is ``UNDEFINED_R_REWARD`` = 0 (:func:`arm_reward`), a TRAINING rule documented in docs/casa.md
(an update needs a number).  No instrument imputes it: ``casa.consequences.reward_bias`` counts undefined r
apart and measures r where it is defined.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence

from coevo.recipes.vgopd.rewards import criteria_scores, is_abstention

__all__ = ["Check", "AxisScore", "is_abstention", "score_axis", "score_answer", "arm_reward", "answer_reward",
           "has_abstention", "UNDEFINED_R_REWARD"]


@dataclass(frozen=True)
class Check:
    """One criterion's verdict on one answer: value 1 / 0, or None = abstention (``reason`` says why)."""

    criterion_id: str
    axis: str
    weight: float
    value: Optional[int]
    reason: str = ""
    kind: str = ""


@dataclass(frozen=True)
class AxisScore:
    """The CASA account of one (answer, axis)."""

    axis: str
    scored: List[str]                      # S(y): criteria with a verdict 1 / 0
    abstained: Dict[str, str]              # A(y): criterion id -> abstention reason (penalties included)
    numerator: float
    W: float
    W_A: float
    phi: float
    r: float                               # original protocol (NaN when W_A = W)
    r_tilde: float                         # fixed denominator
    r_raw: float
    r_tilde_raw: float
    failed: List[str] = field(default_factory=list)   # positive-weight criteria with V = 0

    @property
    def n_scored(self) -> int:
        return len(self.scored)

    @property
    def n_abstained(self) -> int:
        return len(self.abstained)

    @property
    def clipped(self) -> bool:
        """True when clip(., 0, 1) changed r or r~ (r / r~ = 1 / (1 - phi) then fails)."""
        return not (0.0 <= self.r_tilde_raw <= 1.0) or (math.isfinite(self.r_raw) and not 0.0 <= self.r_raw <= 1.0)


def score_axis(checks: Sequence[Check]) -> AxisScore:
    """S(y), A(y), numerator, W, W_A, phi, r, r~ of the checks of ONE axis (CASA proposal §corollary 1).

    ValueError when the checks span several axes or the axis has no positive-weight criterion."""
    axes = {c.axis for c in checks}
    if len(axes) != 1:
        raise ValueError(f"score_axis needs the checks of exactly one axis, got {sorted(axes)}")
    s = criteria_scores([c.weight for c in checks], [c.value for c in checks])
    scored = [c.criterion_id for c in checks if not is_abstention(c.value)]
    abstained = {c.criterion_id: (c.reason or "unknown") for c in checks if is_abstention(c.value)}
    failed = [c.criterion_id for c in checks if c.weight > 0 and not is_abstention(c.value) and int(c.value) == 0]
    return AxisScore(axis=axes.pop(), scored=scored, abstained=abstained, numerator=s["numerator"], W=s["W"],
                     W_A=s["W_A"], phi=s["phi"], r=s["r"], r_tilde=s["r_tilde"], r_raw=s["r_raw"],
                     r_tilde_raw=s["r_tilde_raw"], failed=failed)


def score_answer(checks: Iterable[Check]) -> Dict[str, AxisScore]:
    """One :class:`AxisScore` per axis of the answer's checks (axes in first-seen order)."""
    by_axis: Dict[str, List[Check]] = {}
    for c in checks:
        by_axis.setdefault(c.axis, []).append(c)
    return {a: score_axis(cs) for a, cs in by_axis.items()}


UNDEFINED_R_REWARD = 0.0  # arm A's training reward where r is undefined (W_A = W): a training rule, not a measurement


def arm_reward(score: AxisScore, arm: str) -> float:
    """The axis reward an arm trains on: A -> r (``UNDEFINED_R_REWARD`` when undefined, W_A = W); B, C -> r~."""
    if arm == "A":
        return score.r if math.isfinite(score.r) else UNDEFINED_R_REWARD
    if arm in ("B", "C"):
        return score.r_tilde
    raise ValueError(f"casa.arm must be A, B or C, got {arm!r}")


def answer_reward(scores: Mapping[str, AxisScore], arm: str, axis_weights: Optional[Mapping[str, float]] = None) -> float:
    """The answer's reward: the (weighted) mean over axes of :func:`arm_reward` (equal weights by default)."""
    if not scores:
        raise ValueError("no axis scored")
    ws = {a: float((axis_weights or {}).get(a, 1.0)) for a in scores}
    tot = sum(ws.values())
    if tot <= 0:
        raise ValueError("axis weights must sum to a positive number")
    return sum(ws[a] * arm_reward(s, arm) for a, s in scores.items()) / tot


def has_abstention(checks_per_rollout: Sequence[Sequence[Check]]) -> bool:
    """True when any check of any rollout of the group abstained (the self-check's domain is False)."""
    return any(is_abstention(c.value) for cs in checks_per_rollout for c in cs)
