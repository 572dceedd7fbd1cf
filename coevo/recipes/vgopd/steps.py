"""Helpers of the VG-OPD recipe (coevo/recipes/vgopd/recipe.py): criterion checks through the run verifier,
verdict rows, the expert's one cached verdict per group, deterministic re-checks of licences, the
gated-KL token advantages and the per-step CASA metrics.

Every formula lives in ``coevo.recipes.vgopd.casa`` / ``coevo.recipes.vgopd.instruments``; this module
only wires them to the world, the policies and the ledger rows.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from coevo.audit.instruments import abstention_share
from coevo.ledger.store import verdict_row_of
from coevo.recipes.vgopd.casa.gating import combine_advantages, expert_gate_totals, gated_kl_advantages
from coevo.recipes.vgopd.casa.scoring import Check, is_abstention
from coevo.recipes.vgopd.instruments import inflation_ratios, rank_reversals

__all__ = ["criteria_scorer", "score_items", "verdict_rows", "expert_values", "rechecks_for", "oracle_checks",
           "token_advantages", "step_metrics", "finite_or_none"]


def criteria_scorer(world: Any, verifier: Any):
    """The world's ``CriteriaScorer`` on the run verifier's pool, verdict cache and time limit, so every
    criterion verdict goes through ``coevo.verify`` (pool, cache) with its criterion id."""
    cache = getattr(verifier, "cache", None)
    return world.scorer(pool=getattr(verifier, "pool", None), cache_store=getattr(cache, "store", None),
                        timeout_s=getattr(verifier, "timeout_s", None))


def score_items(world: Any, scorer: Any, items: Sequence[tuple]) -> tuple[list, list]:
    """(checks, verdicts) per (task, answer) item: one ``Check`` and one ``Verdict`` per criterion of the
    task, in its criteria order.  An abstention stays a check with value None and its reason."""
    entries = [(world.entry(t), a) for t, a in items]
    verdicts = scorer.score(entries) if entries else []
    checks = []
    for (entry, _), vs in zip(entries, verdicts):
        checks.append([Check(c.id, c.axis, float(c.weight), None if is_abstention(v.value) else int(v.value),
                             v.reason or "", c.kind) for c, v in zip(entry.criteria, vs)])
    return checks, verdicts


def verdict_rows(run_id: str, step: int, rollout_id: str, task_id: str, verdicts: Sequence[Any]) -> list:
    """``verdicts`` rows of one answer, one per criterion (target ``criterion``; abstentions with reasons)."""
    return [verdict_row_of(run_id, step, rollout_id, task_id, "criterion", v) for v in verdicts]


def expert_values(checks: Sequence[Check]) -> dict:
    """criterion id -> the expert's verdict value (None = abstained): its ONE cached verdict for the group."""
    return {c.criterion_id: c.value for c in checks}


def oracle_checks(world: Any, task: Any, answer: Optional[str], checks: Sequence[Check]) -> list:
    """The answer's checks with every criterion judged by ``world.oracle_verdict`` (no abstention);
    [] without an oracle."""
    oracle = getattr(world, "oracle_verdict", None)
    if oracle is None:
        return []
    return [replace(c, value=oracle(task, c.criterion_id, answer), reason="") for c in checks]


def rechecks_for(world: Any, task: Any, answer: Optional[str], expert_answers: Mapping[str, Optional[str]],
                 gates: Sequence[Any]) -> dict:
    """(criterion, expert) -> 1 when the world's deterministic oracle confirms the licence (the student truly
    fails the criterion and the expert truly passes it), 0 when it refutes it; {} without an oracle."""
    oracle = getattr(world, "oracle_verdict", None)
    if oracle is None:
        return {}
    out = {}
    for e in gates:
        key = (e.criterion_id, e.expert)
        if key not in out:
            ok = oracle(task, e.criterion_id, answer) == 0 and oracle(task, e.criterion_id, expert_answers[e.expert]) == 1
            out[key] = int(ok)
    return out


def token_advantages(student: Any, experts: Mapping[str, Any], comps: Sequence[Any], seq_adv: Sequence[float],
                     gates: Sequence[Sequence[Any]], kl_coef: float, tau: float, clip: float) -> tuple[list, list]:
    """Per-rollout advantages for ``update_role``: the GRPO sequence advantage (a float) where no expert is
    licensed, else per-token advantages = sequence advantage + the gated-KL term (``gated_kl_advantages``),
    with teacher log-probs of the student's own tokens (``Policy.completion_logprobs``).  Also returns the
    number of taught tokens per rollout (tokens with a non-zero gated-KL term)."""
    totals = [expert_gate_totals(g) for g in gates]
    todo = [i for i, t in enumerate(totals) if any(v != 0.0 for v in t.values()) and comps[i].token_ids]
    out: list = [float(a) for a in seq_adv]
    taught = [0] * len(comps)
    if not todo or kl_coef == 0.0:
        return out, taught
    s_lp = logprobs_of(student, [comps[i] for i in todo])
    need = sorted({k for i in todo for k, v in totals[i].items() if v != 0.0})
    e_lp = {}
    for k in need:
        idx = [i for i in todo if totals[i].get(k, 0.0) != 0.0]
        e_lp[k] = dict(zip(idx, logprobs_of(experts[k], [comps[i] for i in idx])))
    for n, i in enumerate(todo):
        mine = {k: e_lp[k][i] for k in need if i in e_lp[k]}
        term = gated_kl_advantages(s_lp[n], mine, {k: totals[i][k] for k in mine}, kl_coef, tau, clip,
                                   comps[i].token_mask)
        out[i] = combine_advantages(seq_adv[i], term)
        taught[i] = int(np.count_nonzero(term))
    return out, taught


def logprobs_of(policy: Any, comps: Sequence[Any]) -> list:
    fn = getattr(policy, "completion_logprobs", None)
    if fn is None:
        raise RuntimeError(f"policy {getattr(policy, 'name', policy)!r} has no completion_logprobs (VG-OPD needs the "
                           f"teacher's log-probs of the student's tokens; the tiny backend has it)")
    return fn(list(comps))


def finite_or_none(x) -> Optional[float]:
    try:
        x = float(x)
    except (TypeError, ValueError):
        return None
    return x if np.isfinite(x) else None


def _col(rows: Sequence[dict], key: str) -> np.ndarray:
    return np.array([np.nan if r[key] is None else float(r[key]) for r in rows], dtype=float)


def step_metrics(score_rows: Sequence[dict], rank_delta: float, truth: Optional[Sequence[float]] = None) -> dict:
    """The step's CASA summary from its ``criterion_scores`` rows (instruments of ``coevo.audit``): phi mean
    and p95, the inflation r / r~ (rows with r~ > 0, no clip) and its largest deviation from 1 / (1 - phi),
    rank reversals (exact condition, true gap > ``rank_delta``; with ``truth``, the oracle's axis score per
    row, which of r~ and r the oracle sides with on each reversal), licensing rates per channel, per-axis phi."""
    if not score_rows:
        return {}
    phi_est = abstention_share(_col(score_rows, "W_A"), _col(score_rows, "W"), _col(score_rows, "r_tilde"),
                               _col(score_rows, "r"))
    infl = inflation_ratios(_col(score_rows, "r_raw"), _col(score_rows, "r_tilde_raw"), _col(score_rows, "phi"))
    groups = [(r["task_id"], r["group_idx"], r["axis"]) for r in score_rows]
    rev = rank_reversals(groups, _col(score_rows, "r_tilde_raw"), _col(score_rows, "phi"), min_gap=rank_delta,
                         truth=truth)
    nf, nfl = sum(r["n_failed"] for r in score_rows), sum(r["n_failed_licensed"] for r in score_rows)
    na, nal = sum(r["n_abstain_candidates"] for r in score_rows), sum(r["n_abstain_licensed"] for r in score_rows)
    out = {"phi_mean": finite_or_none(phi_est.value), "phi_p95": finite_or_none(phi_est.extra.get("phi_p95")),
           "inflation_mean": finite_or_none(np.mean(infl["measured"])) if infl["n"] else None,
           "inflation_max_error": finite_or_none(infl["max_abs_error"]), "inflation_rows": infl["n"],
           "rank_reversals": rev["n_exact"], "rank_reversals_approx": rev["n_approx"], "rank_pairs": rev["n_pairs"],
           **({f"rank_reversals_oracle_{k}": v for k, v in rev["oracle"].items()} if "oracle" in rev else {}),
           "licensing_rate": nfl / nf if nf else None, "abstention_licensing_rate": nal / na if na else None,
           "reward_mean": finite_or_none(np.mean(_col(score_rows, "reward")))}
    for a in sorted({r["axis"] for r in score_rows}):
        out[f"phi_{a}"] = finite_or_none(np.mean([r["phi"] for r in score_rows if r["axis"] == a]))
    return out
