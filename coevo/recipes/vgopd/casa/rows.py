"""Ledger rows of CASA (tables ``criterion_scores``, ``casa_gates`` and ``probes`` in coevo/ledger/schema.py)."""
from __future__ import annotations

from typing import Optional, Sequence

from coevo.ledger.store import dumps
from coevo.recipes.vgopd.casa.gating import GateEntry, abstention_gate_set, failure_set
from coevo.recipes.vgopd.casa.scoring import AxisScore, Check, arm_reward, score_axis

__all__ = ["criterion_score_row", "gate_row", "probe_row", "rollout_rows"]


def criterion_score_row(run_id: str, step: int, rollout_id: str, task_id: str, group_idx: int, arm: str,
                        score: AxisScore, checks: Sequence[Check] = (), gates: Sequence[GateEntry] = (),
                        oracle: Sequence[Check] = ()) -> dict:
    """One (rollout, axis) row: the account of ``score`` plus the rollout's licences on that axis.
    ``checks`` / ``gates`` are the rollout's (any axis; filtered to ``score.axis`` here); ``oracle``: the
    rollout's checks as the world's oracle judges them (no abstention), giving ``oracle`` (the oracle's
    clipped axis score r~) and ``oracle_json`` (criterion id -> true verdict); NULL without an oracle."""
    ax = [c for c in checks if c.axis == score.axis]
    g = [e for e in gates if e.axis == score.axis]
    true = [c for c in oracle if c.axis == score.axis]
    fail = failure_set(ax)
    cand = abstention_gate_set(ax)
    return {"run_id": run_id, "step": step, "rollout_id": rollout_id, "task_id": task_id, "group_idx": group_idx,
            "arm": arm, "axis": score.axis, "reward": arm_reward(score, arm), "r": score.r, "r_tilde": score.r_tilde,
            "r_raw": score.r_raw, "r_tilde_raw": score.r_tilde_raw, "phi": score.phi, "numerator": score.numerator,
            "W": score.W, "W_A": score.W_A, "n_scored": score.n_scored, "n_abstained": score.n_abstained,
            "n_failed": len(fail), "n_failed_licensed": len({e.criterion_id for e in g if e.channel == "failure"}),
            "n_abstain_candidates": len(cand),
            "n_abstain_licensed": len({e.criterion_id for e in g if e.channel == "abstention"}),
            "w_licensed": float(sum(e.weight for e in g)), "w_licensed_raw": float(sum(e.raw_weight for e in g)),
            "scored_json": dumps(list(score.scored)), "abstained_json": dumps(dict(score.abstained)),
            "oracle": score_axis(true).r_tilde if true else None,
            "oracle_json": dumps({c.criterion_id: c.value for c in true}) if true else None}


def gate_row(run_id: str, step: int, rollout_id: str, task_id: str, e: GateEntry,
             recheck: Optional[int] = None) -> dict:
    """One licence; ``recheck`` = 1/0 when a deterministic recomputation confirms / refutes it (the student
    truly fails criterion j and expert k truly passes it), None when not recomputable."""
    return {"run_id": run_id, "step": step, "rollout_id": rollout_id, "task_id": task_id, "axis": e.axis,
            "criterion_id": e.criterion_id, "expert": e.expert, "channel": e.channel, "weight": float(e.weight),
            "raw_weight": float(e.raw_weight), "verifier_kind": e.kind, "recheck": recheck}


def probe_row(run_id: str, step: int, probe_id: str, kind: str, verifier_kind: str, value: Optional[int],
              reason: str) -> dict:
    """One probe verdict (table ``probes``): ``kind`` own_reference | mismatched_reference | vacuous."""
    return {"run_id": run_id, "step": step, "probe_id": probe_id, "kind": kind, "verifier_kind": verifier_kind,
            "value": value, "reason": reason}


def rollout_rows(run_id: str, step: int, rollout_id: str, task_id: str, group_idx: int, arm: str,
                 scores: dict, checks: Sequence[Check], gates: Sequence[GateEntry],
                 rechecks: Optional[dict] = None, oracle: Sequence[Check] = ()) -> dict:
    """All CASA rows of one rollout: ``{"criterion_scores": [...], "casa_gates": [...]}`` (a stage's rows).
    ``rechecks[(criterion_id, expert)]`` gives a licence's recomputation result; ``oracle`` the rollout's
    checks as the oracle judges them (``criterion_score_row``)."""
    cs = [criterion_score_row(run_id, step, rollout_id, task_id, group_idx, arm, s, checks, gates, oracle)
          for s in scores.values()]
    gs = [gate_row(run_id, step, rollout_id, task_id, e, (rechecks or {}).get((e.criterion_id, e.expert)))
          for e in gates]
    return {"criterion_scores": cs, "casa_gates": gs}
