"""VG-OPD's gate under the CASA arms: failure set, licensing, gate weights, gated-KL token advantages.

CASA proposal §background (VG-OPD, arXiv:2609.15404) and §corollary 3:

* F(y) = {j : w_j > 0, V_j(x, y) = 0}; abstentions never gate (arms A and B);
* arm C adds the low-confidence channel: abstained positive criteria may gate, with the threshold
  delta_A > delta and the weight discounted by the axis precision; unknown is read as 0 for the student
  (CASA proposal §limitation 7: the same assignment as B, so C stays comparable with B);
* licensing by counterfactual gain Delta'_{j,k} = V_j(x, y_k) - V_j(x, y) > delta, with ONE cached
  verdict V_j(x, y_k) per (prompt, expert) for the whole group; since V_j(x, y) = 0 on F(y) this is
  1[V_j(x, y_k) > delta] (corollary 3).  An expert whose own verdict abstained is never licensed;
* the gated KL enters GRPO as a token-level advantage (:func:`gated_kl_advantages`), weighted by the
  criterion weight and localised by student/expert disagreement (rule in its docstring).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Dict, List, Mapping, Optional, Sequence

import numpy as np

from coevo.recipes.vgopd.casa.scoring import Check, is_abstention

__all__ = ["GateEntry", "failure_set", "abstention_gate_set", "counterfactual_gain", "licensed_experts",
           "discount_factor", "gate_weights", "expert_gate_totals", "gated_kl_advantages", "combine_advantages"]


@dataclass(frozen=True)
class GateEntry:
    """One licence: expert ``expert`` may teach criterion ``criterion_id`` to this rollout."""

    criterion_id: str
    axis: str
    expert: str
    channel: str            # "failure" (V_j = 0) or "abstention" (arm C's low-confidence channel)
    weight: float           # effective weight (discounted in the abstention channel)
    raw_weight: float       # the criterion weight w_j, undiscounted
    kind: str = ""


def failure_set(checks: Sequence[Check]) -> List[str]:
    """F(y) = {j : w_j > 0, V_j = 0}: abstentions and penalties never enter (CASA proposal §background, gating)."""
    return [c.criterion_id for c in checks if c.weight > 0 and not is_abstention(c.value) and int(c.value) == 0]


def abstention_gate_set(checks: Sequence[Check]) -> List[str]:
    """Arm C's extra candidates: positive-weight criteria whose verdict abstained."""
    return [c.criterion_id for c in checks if c.weight > 0 and is_abstention(c.value)]


def counterfactual_gain(expert_value, student_value) -> Optional[float]:
    """Delta' = V(x, y_k) - V(x, y); the student's unknown reads 0 (arm C), the expert's unknown -> None."""
    if is_abstention(expert_value):
        return None
    s = 0.0 if is_abstention(student_value) else float(student_value)
    return float(expert_value) - s


def licensed_experts(criteria: Sequence[str], expert_verdicts: Mapping[str, Mapping[str, object]],
                     delta: float, student_values: Optional[Mapping[str, object]] = None) -> Dict[str, List[str]]:
    """For each criterion, the experts k with Delta'_{j,k} > delta (sorted by name).

    ``expert_verdicts[k][j]`` is the one cached verdict of expert k's greedy answer on criterion j
    (shared by the group); ``student_values[j]`` defaults to 0 (j in F(y))."""
    out: Dict[str, List[str]] = {}
    for j in criteria:
        sv = (student_values or {}).get(j, 0)
        lic = []
        for k in sorted(expert_verdicts):
            if j not in expert_verdicts[k]:
                continue
            g = counterfactual_gain(expert_verdicts[k][j], sv)
            if g is not None and g > delta:
                lic.append(k)
        out[j] = lic
    return out


def discount_factor(discount: Optional[str], precision: float) -> float:
    """Arm C's weight multiplier: ``one_minus_precision`` -> 1 - p, ``precision`` -> p (no default)."""
    if not 0.0 <= precision <= 1.0:
        raise ValueError(f"precision must lie in [0, 1], got {precision}")
    if discount == "one_minus_precision":
        return 1.0 - precision
    if discount == "precision":
        return precision
    raise ValueError(f"casa.discount: must be one_minus_precision or precision (no default), got {discount!r}")


def gate_weights(arm: str, checks: Sequence[Check], expert_verdicts: Mapping[str, Mapping[str, object]],
                 delta: float, delta_abstain: Optional[float] = None, discount: Optional[str] = None,
                 precision: Optional[Callable[[str], float]] = None) -> List[GateEntry]:
    """Per (criterion, expert) gate weights of one rollout under arm A, B or C.

    A and B: licences on F(y) at threshold ``delta``, weight w_j.  C: the same, plus abstained positive
    criteria at threshold ``delta_abstain`` (> delta) with weight w_j x discount_factor(discount,
    precision(axis)).  A and B gate identically (they differ in the reward only)."""
    if arm not in ("A", "B", "C"):
        raise ValueError(f"casa.arm must be A, B or C, got {arm!r}")
    by_id = {c.criterion_id: c for c in checks}
    out = [GateEntry(j, by_id[j].axis, k, "failure", by_id[j].weight, by_id[j].weight, by_id[j].kind)
           for j, ks in licensed_experts(failure_set(checks), expert_verdicts, delta).items() for k in ks]
    if arm != "C":
        return out
    if delta_abstain is None or delta_abstain <= delta:
        raise ValueError(f"arm C needs delta_abstain > delta = {delta:g}, got {delta_abstain!r}")
    if precision is None:
        raise ValueError("arm C needs the axis precision")
    for j, ks in licensed_experts(abstention_gate_set(checks), expert_verdicts, delta_abstain).items():
        c = by_id[j]
        f = discount_factor(discount, precision(c.axis))
        out += [GateEntry(j, c.axis, k, "abstention", c.weight * f, c.weight, c.kind) for k in ks]
    return out


def expert_gate_totals(entries: Sequence[GateEntry]) -> Dict[str, float]:
    """G_k = sum of the effective weights of the criteria that license expert k for this rollout."""
    out: Dict[str, float] = {}
    for e in entries:
        out[e.expert] = out.get(e.expert, 0.0) + e.weight
    return out


def gated_kl_advantages(student_logprobs: Sequence[float], expert_logprobs: Mapping[str, Sequence[float]],
                        gate_totals: Mapping[str, float], kl_coef: float, tau: float = float(np.log(2.0)),
                        clip: float = 10.0, mask: Optional[Sequence[int]] = None) -> np.ndarray:
    """Token-level advantage term of the gated KL for one rollout (CASA proposal §background, VG-OPD).

    Inputs are per-token log-probs of the rollout's own tokens y_t: log pi_s(y_t | x, y_<t) under the
    student and log pi_k(y_t | x, y_<t) under each licensed expert k.  With l_{k,t} = clip(log pi_s -
    log pi_k, -clip, clip) (the per-token reverse-KL estimate, whose on-policy gradient is the policy
    gradient of reward -l):

        a_t = -kl_coef * sum_k G_k * 1[|l_{k,t}| >= tau] * l_{k,t}

    Localisation rule: a token is taught by expert k only where the two disagree about it by at least
    ``tau`` in log-probability (default log 2: one model gives the token at least twice the other's
    probability).  Why: the licence says the expert passes a criterion the student fails, not that every
    token differs; tokens both models agree on carry (near-)zero KL signal but, summed over a long answer,
    add variance and teach style instead of the failed criterion.  The threshold keeps the teaching on the
    tokens where the student's choice departs from the expert's (both signs: tokens the expert prefers are
    pushed up, tokens it rejects pushed down), and ``tau = 0`` recovers the dense, unlocalised KL.
    Masked tokens (``mask`` 0: environment output) get 0.  Experts with G_k = 0 contribute nothing."""
    s = np.asarray(student_logprobs, dtype=float)
    out = np.zeros_like(s)
    for k, g in gate_totals.items():
        if g == 0.0:
            continue
        if k not in expert_logprobs:
            raise ValueError(f"no log-probs for licensed expert {k!r}")
        e = np.asarray(expert_logprobs[k], dtype=float)
        if e.shape != s.shape:
            raise ValueError(f"expert {k!r} log-probs have shape {e.shape}, student {s.shape}")
        lr = np.clip(s - e, -clip, clip)
        out -= kl_coef * g * np.where(np.abs(lr) >= tau, lr, 0.0)
    if mask is not None:
        m = np.asarray(mask, dtype=float)
        if m.shape != s.shape:
            raise ValueError("mask must have one entry per token")
        out = out * m
    return out


def combine_advantages(sequence_advantage: float, token_term: Sequence[float]) -> List[float]:
    """Per-token advantages for ``Policy.forward_backward``: the GRPO sequence advantage on every token
    plus the gated-KL term."""
    return [float(sequence_advantage) + float(t) for t in token_term]
