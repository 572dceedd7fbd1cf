"""The pieces of the Dr. Zero / MSV / CrossFit loop (``recipe.py``): MSV labels,
the scoring group, the proposer reward and its hop-bucket advantages, a GRPO step of a
solver on accepted questions, and the round's audit.  Each reads the recipe's parts (``Parts``:
its world, policies, verifier, config and folds; it changes none of them) and returns plain
data; the state that moves between steps is passed in and returned (``train_on``: where the
role's pass over the bank stands); ledger rows go to the step writer.
"""
from __future__ import annotations

from typing import Any, Optional, Protocol, Sequence

import numpy as np

from coevo.audit.false_agreement import (false_agreement_from_flags, false_agreement_summary, group_agrees,
                                         solver_majority_columns)
from coevo.audit.instruments import pseudo_label_accuracy
from coevo.ledger.store import StepWriter
from coevo.core.world import ANSWER, Task, role_sampling
from coevo.recipes.drzero.crossfit import AUX_ROLES, retrieval_sources, scorer_fold, with_sources
from coevo.recipes.drzero.rewards import crossfit_reward, drzero_proposer_reward, hrpo_advantages, msv_accept
from coevo.stages.step import Draw, draw_group, update_role
from coevo.stages.rollout import rollout

MSV_REASONS = ("msv-no-source-answer", "msv-no-blind-answer", "msv-disagree")  # coevo.recipes.drzero.rewards.msv_accept


class Parts(Protocol):
    """What these functions read of the recipe (``DrZeroRecipe``); none of them assigns to it."""

    cfg: Any  # the run config: sections drzero (and crossfit)
    world: Any  # the facts world (solver_prompt_with_source, source_text, oracle)
    solver: Any  # the main solver's policy
    aux: list  # CrossFit: the auxiliary solver policy of each fold
    cf: Any  # the crossfit section (None outside CrossFit)
    crossfit: bool
    folds: Any  # CrossFit's source folds
    verifier: Any  # the run verifier
    max_turns: int
    auditor: Optional[Any]  # the auditor model, when audit.auditor names one
    run_id: str
    ctx: Any  # the recipe's StepContext (coevo.stages.step); ``ctx.at(spec)``: at a step

    def solve_sampler(self) -> Any: ...


# ---------------------------------------------------------------------- rewards
def proposer_reward(format_score, k, n: int = 5, format_weight: float = 0.5, outside: str = "zero") -> np.ndarray:
    """Proposer reward = format_weight x format score + f(k) (False Frontiers (CrossFit)).

    With the defaults (weight 0.5, f = 0 at k = 0 / k = n) this is Dr. Zero's reward,
    ``coevo.recipes.drzero.rewards.drzero_proposer_reward`` (its ``reward_function.py``: ``final = 0.5 *
    format + compute_difficulty_score``), which computes it; otherwise the format part plus CrossFit's
    f(k) (``coevo.recipes.drzero.rewards.crossfit_reward``, ``outside="extrapolate"``: the line at the ends).
    ``k`` < 0 marks a proposal with no scoring group (malformed, or rejected by MSV): its reward is
    the format part alone (d(0) = 0)."""
    fmt = np.asarray(format_score, dtype=float)
    k = np.asarray(k)
    scored = k >= 0
    if format_weight == 0.5 and outside == "zero":
        return np.asarray(drzero_proposer_reward(fmt, np.where(scored, k, 0), n), dtype=float).reshape(fmt.shape)
    diff = np.zeros(len(fmt))
    if scored.any():
        diff[scored] = crossfit_reward(k[scored], n, outside)
    return format_weight * fmt + diff


def hop_advantages(rewards: Sequence[float], hops: Sequence[int], variant: str = "paper") -> np.ndarray:
    """Dr. Zero's advantages, standardised within hop buckets (``coevo.recipes.drzero.rewards.hrpo_advantages``:
    ``paper`` = population std, False Frontiers (CrossFit); ``code`` = Dr. Zero's ``grpo_batch``)."""
    return np.asarray(hrpo_advantages(np.asarray(rewards, dtype=float), np.asarray(hops), variant), dtype=float)


# ---------------------------------------------------------------------- MSV
def source_aware_sampler(rec: Parts):
    """Sample with the world's source-aware prompt (the task's source document visible)."""
    def sample(pol, world, tasks, n, sp):
        return rollout(pol, world, [world.solver_prompt_with_source(t) for t in tasks], n,
                       role_sampling(world, ANSWER, sp), kind=ANSWER, contexts=list(tasks),
                       max_turns=rec.max_turns)
    return sample


def msv_labels(rec: Parts, ctx, tasks: list[Task], w: StepWriter, prefix: str = "",
               stream: str = "train") -> tuple[list, list[str], int]:
    """MSV over ``tasks``: (label per task = the source-aware consensus or None, rejection reason
    per task, rollouts drawn).  Both groups' verdicts against the draft go to the ledger (rollout
    purposes ``<prefix>msv_src`` / ``<prefix>msv_blind``; ``stream``: the policies' RNG stream)."""
    dz = rec.cfg.drzero
    if not tasks:
        return [], [], 0
    drafts = {"draft": [t.reference for t in tasks]}
    ga = draw_group(ctx, rec.solver, tasks, dz.msv_source_aware, f"{prefix}msv_src", drafts,
                    Draw(stream=stream, sampler=source_aware_sampler(rec)))
    gb = draw_group(ctx, rec.solver, tasks, dz.msv_blind, f"{prefix}msv_blind", drafts,
                    Draw(stream=stream, sampler=rec.solve_sampler()))
    w.extend(ga.rows)
    w.extend(gb.rows)
    labels, reasons = [], []
    for a, b in zip(ga.answers, gb.answers):  # each side's plurality answer; answers compared by the verifier
        ok, consensus, why = msv_accept(a, b, rec.verifier.equivalent)
        labels.append(consensus if ok else None)
        reasons.append("" if ok else f"msv-{why}")
    return labels, reasons, len(tasks) * (dz.msv_source_aware + dz.msv_blind)


# ---------------------------------------------------------------------- scoring
def score_group(rec: Parts, ctx, tasks: list[Task], labels: list, truths: list, folds: list, w: StepWriter) -> dict:
    """The scoring group of each accepted question: ``n_answers`` answers by the main solver
    (Dr. Zero) or by the auxiliary solver its fold strategy names (CrossFit), verified against
    the label and the oracle.  Returns per task k (answers equal to the label), mu = k / n, the
    scoring role, the group's plurality answer (``solver_majority_columns``) and whether the group
    agrees with the label under ``drzero.ff_agreement`` (``coevo.audit.false_agreement.group_agrees``:
    strict majority by default, k > n / 2)."""
    n = rec.cfg.drzero.n_answers
    out = {"k": [0] * len(tasks), "mu": [0.0] * len(tasks), "scorer": ["solver"] * len(tasks),
           "agrees": [None] * len(tasks), "majority": [None] * len(tasks)}
    if not tasks:
        return out
    if not rec.crossfit:
        groups = [(rec.solver, "solver", list(range(len(tasks))), None)]
    else:
        cf = rec.cf
        groups = []
        for sf in (0, 1):
            idx = [j for j, f in enumerate(folds) if scorer_fold(f, cf.fold_strategy) == sf]
            src = retrieval_sources(sf, cf.fold_strategy, rec.folds, cf.retrieve_in_fold)
            groups.append((rec.aux[sf], AUX_ROLES[sf], idx, src))
    own = bool(rec.crossfit and rec.cf.retrieve_own_source)
    for pol, role, idx, src in groups:
        if not idx:
            continue
        ts = [with_sources(tasks[j], src if src is None or not own else src | {tasks[j].meta.get("source_id")})
              for j in idx]
        g = draw_group(ctx, pol, ts, n, "score", {"label": [labels[j] for j in idx], "oracle": [truths[j] for j in idx]},
                       Draw(role=role, sampler=rec.solve_sampler()))
        w.extend(g.rows)
        agrees, maj = group_agreement(rec, g, [labels[j] for j in idx], majority=True)
        for jj, j in enumerate(idx):
            k = sum(1 for v in g.verdicts["label"][jj] if v.value == 1)
            out["k"][j], out["mu"][j], out["scorer"][j] = k, k / n, role
            out["agrees"][j], out["majority"][j] = agrees[jj], maj[jj]["solver_majority"]
    return out


def group_agreement(rec: Parts, g, labels: list, majority: bool = False):
    """Per task of a drawn group (``g.verdicts["label"]`` against ``labels``): does the group agree with its
    label under ``drzero.ff_agreement`` (``coevo.audit.false_agreement.group_agrees``)?  The one rule of the
    round audit and the post-hoc audit.  ``majority``: also the ``solver_majority_columns`` rows."""
    rule = rec.cfg.drzero.ff_agreement
    maj = solver_majority_columns(rec.verifier, g.answers, labels)
    agrees = [group_agrees(rule, [v.value for v in g.verdicts["label"][jj]], maj[jj]["solver_agrees"])
              for jj in range(len(labels))]
    return (agrees, maj) if majority else agrees


# ---------------------------------------------------------------------- solver updates
def train_on(rec: Parts, spec, w: StepWriter, policy, role: str, items: list[dict], fold: int | None,
             start: int) -> tuple[dict, int]:
    """One GRPO step of ``policy`` (main solver, or the auxiliary solver of ``fold``) on the next
    questions of ``items`` from position ``start`` (wrapping round); reward = 1 if the verifier judges
    the answer equal to the label.  Returns (the step's metrics, the position after the batch)."""
    main = fold is None
    n, group = ((rec.cfg.drzero.solver_prompts, rec.cfg.drzero.solver_group) if main
                else (rec.cf.aux_prompts, rec.cf.aux_group))
    if not items:
        return {"skipped": "no accepted questions", "n_rollouts": 0}, start
    batch = [items[(start + i) % len(items)] for i in range(min(n, len(items)))]
    src = None if main else retrieval_sources(fold, rec.cf.fold_strategy, rec.folds, rec.cf.retrieve_in_fold)
    tasks = [with_sources(Task(d["task_id"], d["question"], d["label"], meta=dict(d["meta"])), src) for d in batch]
    truths = [rec.world.oracle(t) for t in tasks]
    ctx = rec.ctx.at(spec)
    purpose = "train" if main else "aux_train"
    g = draw_group(ctx, policy, tasks, group, purpose, {"label": [d["label"] for d in batch], "oracle": truths},
                   Draw(role=role, rid="{task}-s{step}-{purpose}-{k}", sampler=rec.solve_sampler()))
    rewards = np.array([1.0 if v.value == 1 else 0.0 for vs in g.verdicts["label"] for v in vs])
    oracle = [v.value == 1 for vs in g.verdicts["oracle"] for v in vs]
    up = update_role(ctx, policy, role, g.scored(rewards))
    w.extend(g.rows)
    w.extend(up.rows)
    key = "solver_reward_mean" if main else "reward_mean"
    return ({key: float(rewards.mean()), "oracle_accuracy": float(np.mean(oracle)), "n_rollouts": len(rewards),
             "loss": up.metrics}, start + len(batch))


# ---------------------------------------------------------------------- audit
def round_audit(rec: Parts, spec, items: list[dict], w: StepWriter) -> dict:
    """The round's instruments over its accepted (question, label) pairs: false-agreement mass FF
    against the oracle (the scoring group's majority answer agrees with the label and the oracle
    rejects the label; ``coevo.audit.false_agreement``, y_P = the label: the draft, or the MSV
    consensus that replaced it), pseudo-label accuracy (the oracle's verdict on each label) and,
    when ``audit.auditor`` names an endpoint, FF against the auditor model reading the question's
    source document (``coevo.audit.auditor``) with its agreement with the oracle.
    ``scope: round`` tells the summary to keep an estimate whole ({value, se, n})."""
    label_ok = [it["label_correct"] for it in items]
    agrees = [it["agrees"] for it in items]
    ff = false_agreement_from_flags(agrees, label_ok)
    pl = pseudo_label_accuracy(label_ok)
    draft = pseudo_label_accuracy([it["draft_correct"] for it in items])
    agree = ff.extra.get("agreement_rate")
    out = {"false_agreement": {**false_agreement_summary(ff), "scope": "round"},
           "false_agreement_by_hop": false_agreement_by_hop(items), "agreement_by_truth": agreement_by_truth(items),
           "pseudo_label_accuracy": {**false_agreement_summary(pl), "scope": "round"},
           "agreement_rate": agree if agree is not None and np.isfinite(agree) else None,
           "n_false_agreement": ff.extra.get("n_false_agreement"),
           "draft_accuracy": false_agreement_summary(draft), "n_audited": len(items)}
    if rec.auditor is not None and items:
        out.update(auditor_audit(rec, spec, items, w))
    return out


def false_agreement_by_hop(items: list[dict]) -> dict:
    """The round's false agreements by the question's hop count: ``{"hop<h>": {"false_agreements": k, "n": n}}``
    (``n``: the pairs the oracle judged).  With at most one misreading per fact and every fact in >= 2
    sources, a scorer that never retrieves the question's source cannot agree with a wrong 1-hop label:
    source-id FF can come only from later hops (issue #30; the misread_shared world is the control)."""
    out: dict = {"scope": "round"}
    for h in sorted({it.get("hops") for it in items if it.get("hops")}):
        sub = [it for it in items if it.get("hops") == h]
        ff = false_agreement_from_flags([it["agrees"] for it in sub], [it["label_correct"] for it in sub])
        out[f"hop{h}"] = {"false_agreements": int(ff.extra["n_false_agreement"]), "n": int(ff.n)}
    return out


def agreement_by_truth(items: list[dict]) -> dict:
    """How often the scoring group agrees with a right label and with a wrong one: ``{"right": {"agree": k, "n": n},
    "wrong": {...}}`` (the oracle's verdict on the label; unjudged pairs left out).  ``wrong.agree`` is FF's
    numerator; ``right.agree / right.n`` tells a scorer that cannot read (it agrees with nothing) from one that
    reads a clean source (it agrees with right labels and not with wrong ones)."""
    out: dict = {"scope": "round"}
    for name, want in (("right", 1), ("wrong", 0)):
        sub = [it for it in items if it["label_correct"] is not None and int(it["label_correct"]) == want]
        out[name] = {"agree": sum(1 for it in sub if it["agrees"]), "n": len(sub)}
    return out


def auditor_audit(rec: Parts, spec, items: list[dict], w: StepWriter) -> dict:
    """FF against the auditor model (its verdict on each label, the source document in its prompt),
    the auditor's verdict rows (target ``auditor``) and its agreement with the oracle."""
    from coevo.audit.auditor import audit_agreement, auditor_false_agreement
    from coevo.ledger.store import verdict_row_of

    docs = [[rec.world.source_text(it["source_id"])] if it.get("source_id") else [] for it in items]
    vs = rec.auditor.audit_many([(it["question"], it["label"], d) for it, d in zip(items, docs)])
    w.add("verdicts", [verdict_row_of(rec.run_id, spec.step, f"{it['task_id']}-label", it["task_id"], "auditor", v,
                                      rec.auditor.judge.kind, rec.auditor.judge.version) for it, v in zip(items, vs)])
    ff = auditor_false_agreement([it["agrees"] for it in items], vs)
    return {"false_agreement_auditor": {**false_agreement_summary(ff), "scope": "round"},
            "auditor_abstentions": ff.extra.get("abstentions"),
            "auditor_vs_oracle": audit_agreement([it["label_correct"] for it in items], vs)}
