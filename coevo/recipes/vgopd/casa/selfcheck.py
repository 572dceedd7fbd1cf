"""The zero-abstention self-check (CASA proposal §method, three arms: "the degenerate point is structural").

When A(y) is empty for every rollout of a group, the three arms are identical by construction:
r = r~ (phi = 0), and the low-confidence channel of C has nothing to gate.  Any difference there is
noise or a bug, so the run stops with :class:`CasaSelfCheckError`, whose message is ONE line naming
the step and the group.
"""
from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence

import numpy as np

from coevo.recipes.vgopd.casa.config import ARMS, CasaConfig
from coevo.recipes.vgopd.casa.gating import GateEntry, gate_weights
from coevo.recipes.vgopd.casa.scoring import Check, answer_reward, has_abstention, score_answer

__all__ = ["CasaSelfCheckError", "arm_outputs", "check_zero_abstention", "self_check_group"]


class CasaSelfCheckError(RuntimeError):
    """The three arms differ on a group where no rollout abstained (one-line message)."""


def _gate_key(entries: Sequence[GateEntry]) -> List[tuple]:
    return sorted((e.criterion_id, e.expert, e.channel, round(e.weight, 12)) for e in entries)


def arm_outputs(checks_per_rollout: Sequence[Sequence[Check]], expert_verdicts: Mapping[str, Mapping[str, Any]],
                cfg: CasaConfig, axis_weights: Optional[Mapping[str, float]] = None,
                arms: Sequence[str] = ARMS) -> Dict[str, Dict[str, Any]]:
    """Rewards, GRPO group advantages and gate entries of one group under each of ``arms``."""
    out: Dict[str, Dict[str, Any]] = {}
    for arm in arms:
        rewards, gates = [], []
        for checks in checks_per_rollout:
            rewards.append(answer_reward(score_answer(checks), arm, axis_weights))
            gates.append(gate_weights(arm, checks, expert_verdicts, cfg.delta, cfg.delta_abstain, cfg.discount,
                                      cfg.axis_precision))
        r = np.asarray(rewards, dtype=float)
        sd = r.std()
        out[arm] = {"rewards": rewards, "advantages": list((r - r.mean()) / (sd + 1e-6)), "gates": gates}
    return out


def _differs(a: Mapping[str, Any], b: Mapping[str, Any]) -> Optional[str]:
    for key in ("rewards", "advantages"):
        x, y = np.asarray(a.get(key, []), dtype=float), np.asarray(b.get(key, []), dtype=float)
        if x.shape != y.shape or not np.array_equal(x, y):
            i = next((i for i in range(min(x.size, y.size)) if x[i] != y[i]), min(x.size, y.size))
            return f"{key}[{i}]"
    ga, gb = a.get("gates", []), b.get("gates", [])
    if len(ga) != len(gb):
        return "gates (rollout count)"
    for i, (p, q) in enumerate(zip(ga, gb)):
        if _gate_key(p) != _gate_key(q):
            return f"gates[{i}]"
    return None


def check_zero_abstention(step: int, group: Any, outputs: Mapping[str, Mapping[str, Any]], abstained: bool) -> bool:
    """Compare the arms' outputs of a group; raise :class:`CasaSelfCheckError` (one line) when no rollout
    abstained and they differ.  Returns True when the check applied (no abstention), False otherwise."""
    if abstained:
        return False
    arms = sorted(outputs)
    for a in arms[1:]:
        what = _differs(outputs[arms[0]], outputs[a])
        if what is not None:
            raise CasaSelfCheckError(f"CASA self-check failed at step {step}, group {group}: arms {arms[0]} and {a} "
                                     f"differ in {what} although no rollout of the group abstained")
    return True


def self_check_group(step: int, group: Any, checks_per_rollout: Sequence[Sequence[Check]],
                     expert_verdicts: Mapping[str, Mapping[str, Any]], cfg: CasaConfig,
                     axis_weights: Optional[Mapping[str, float]] = None) -> Dict[str, Dict[str, Any]]:
    """The arms' outputs of one group, self-checked: all three arms when no rollout abstained (and they
    must agree), else only ``cfg.arm`` (C's discount may be unset in an A or B run).  The recipe uses
    ``outputs[cfg.arm]``."""
    if has_abstention(checks_per_rollout):
        return arm_outputs(checks_per_rollout, expert_verdicts, cfg, axis_weights, arms=(cfg.arm,))
    outputs = arm_outputs(checks_per_rollout, expert_verdicts, cfg, axis_weights)
    check_zero_abstention(step, group, outputs, False)
    return outputs
