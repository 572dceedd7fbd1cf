"""The post-hoc FF audit: one instrument for every arm of the Dr. Zero family (False Frontiers (FF), issue #30).

False Frontiers (FF) audits the loop after the fact: FF is the share of audited (question, answer) pairs where
the proposer and the solver give the same wrong answer.  The round audit (``steps.round_audit``) measures the
agreement of each arm's own *scoring group*: the main solver in Dr. Zero and MSV, the auxiliary solver of the
other fold in CrossFit, whose retrieval never reaches the question's source, so that its FF says how the
proposer was rewarded (its *internal agreement*), not what the solver learns.  This audit is the same
procedure for every arm, run once after the last round's solver steps (``drzero.audit_prompts`` > 0):

1. contexts: ``world.proposer_contexts(audit_prompts, AUDIT_CONTEXT_SEED + run seed)``: the same passages
   and hop counts for every arm of a run seed (the world is a function of ``world.options.seed``), never
   the training contexts (those use ``run seed + step``);
2. the arm's final proposer writes one question with a draft per context (the "audit" RNG stream: the
   training stream is left as it was);
3. the arm's own acceptance filter decides which pairs it would train on: MSV (``drzero.msv`` or recipe
   ``msv+crossfit``: 3 source-aware + 3 source-blind answers of the main solver, the consensus replaces the
   draft) or none (every valid proposal, its draft as the label);
4. the arm's final main solver answers each accepted question ``n_answers`` times (blind, retrieving from
   every source, as it is trained and evaluated); it agrees with the label under ``drzero.ff_agreement``
   (``coevo.audit.false_agreement.group_agrees``);
5. the oracle judges each label (through the run verifier).

Counts, not only rates, go to summary.json (``post_hoc_audit`` of the last round): ``false_agreements``
(label wrong and the group agrees) of ``accepted``; ``labels_right`` of ``labels_judged``: a claim over
seeds pools them (``sum k / sum n``).
"""
from __future__ import annotations

from dataclasses import replace

from coevo.audit.false_agreement import false_agreement_from_flags, false_agreement_summary
from coevo.core.policy import full_text
from coevo.core.world import QUESTION, ParseResult, role_sampling
from coevo.ledger.store import StepWriter, dumps, task_row, verdict_row_of
from coevo.recipes.drzero import steps
from coevo.stages.step import Draw, draw_group, sampling_error_reason
from coevo.stages.rollout import rollout

AUDIT_CONTEXT_SEED = 1_000_000  # audit contexts: run seed + this; training contexts: run seed + step (< 10^6)
STREAM = "audit"  # every draw of the audit comes from the policies' audit RNG stream


def audit_proposals(rec, n: int) -> tuple[list, list, list[ParseResult]]:
    """The final proposer's proposals on the audit contexts: (contexts, completions, parse results)."""
    contexts = list(rec.world.proposer_contexts(n, AUDIT_CONTEXT_SEED + rec.cfg.seed))
    sp = role_sampling(rec.world, QUESTION, replace(rec.psp, stream=STREAM))
    comps = [g[0] for g in rollout(rec.proposer, rec.world, [c.prompt for c in contexts], 1, sp, kind=QUESTION,
                                   contexts=contexts)]
    parsed = []
    for i, (c, cx) in enumerate(zip(comps, contexts)):
        tid = f"audit-{i}"
        parsed.append(ParseResult(None, sampling_error_reason(c)) if c.finish_reason == "error"
                      else rec.world.parse_task(full_text(c), tid, context=cx))
    return contexts, comps, parsed


def audit_counts(agrees: list, label_ok: list, n_contexts: int, n_valid: int) -> dict:
    """The audit's numbers from per-pair flags of the accepted pairs (pure): FF = false agreements / accepted
    (``coevo.audit.false_agreement``: a pair whose label the oracle did not judge is left out), the
    labels' accuracy against the oracle and the agreements with right labels, each with its counts."""
    ff = false_agreement_from_flags(agrees, label_ok)
    judged = [v for v in label_ok if v is not None]
    right = sum(1 for v in judged if v)
    right_agree = sum(1 for a, v in zip(agrees, label_ok) if v and a)
    out = {**false_agreement_summary(ff), "scope": "round", "false_agreements": int(ff.extra["n_false_agreement"]),
           "accepted": len(agrees), "audited": int(ff.n), "contexts": n_contexts, "valid": n_valid,
           "labels_right": right, "labels_judged": len(judged), "right_agreements": right_agree,
           "label_accuracy": right / len(judged) if judged else None}
    if out["audited"] == 0:
        out.update(value=None, se=None)
    return out


def post_hoc_audit(rec, spec, w: StepWriter) -> dict:
    """The audit step (module docstring): ledger rows (tasks of source ``audit``, rollouts of purposes
    ``audit_*``, the oracle's verdicts on the labels) and ``{"post_hoc_audit": audit_counts(...)}``."""
    dz, world = rec.cfg.drzero, rec.world
    ctx = rec.ctx.at(spec)
    contexts, comps, parsed = audit_proposals(rec, dz.audit_prompts)
    valid = [i for i, p in enumerate(parsed) if p.ok]
    tasks = [parsed[i].task for i in valid]
    truths = [world.oracle(t) for t in tasks]
    labels, rejects, msv_n = (steps.msv_labels(rec, ctx, tasks, w, prefix="audit_", stream=STREAM) if rec.msv
                              else ([t.reference for t in tasks], [""] * len(tasks), 0))
    acc = [j for j, lab in enumerate(labels) if lab is not None]
    agrees = [None] * len(tasks)
    if acc:
        g = draw_group(ctx, rec.solver, [tasks[j] for j in acc], dz.n_answers, "audit_score",
                       {"label": [labels[j] for j in acc], "oracle": [truths[j] for j in acc]},
                       Draw(stream=STREAM, sampler=rec.solve_sampler()))
        w.extend(g.rows)
        for jj, a in enumerate(steps.group_agreement(rec, g, [labels[j] for j in acc])):
            agrees[acc[jj]] = a
    checks = rec.verifier.match_many([(labels[j], truths[j]) for j in acc]) if acc else []
    label_ok = {j: v.value for j, v in zip(acc, checks)}
    w.add("verdicts", [verdict_row_of(ctx.run_id, ctx.step, f"{tasks[j].task_id}-label", tasks[j].task_id, "oracle",
                                      v, getattr(rec.verifier, "kind", ""), getattr(rec.verifier, "version", ""))
                       for j, v in zip(acc, checks)])
    w.add("tasks", _rows(rec, spec, comps, parsed, valid, labels, rejects, truths, agrees, contexts))
    out = audit_counts([agrees[j] for j in acc], [_flag(label_ok[j]) for j in acc], len(contexts), len(valid))
    return {"post_hoc_audit": out, "rollouts": {"audit_proposer": len(comps), "audit_msv": msv_n,
                                                "audit_score": len(acc) * dz.n_answers}}


def _flag(v):
    """The oracle's verdict value as the FF flag: 1 right, 0 wrong, None not judged."""
    return None if v is None else bool(v == 1)


def _rows(rec, spec, comps, parsed, valid, labels, rejects, truths, agrees, contexts) -> list[dict]:
    info = {i: j for j, i in enumerate(valid)}
    rows = []
    for i, (c, p, cx) in enumerate(zip(comps, parsed, contexts)):
        j = info.get(i)
        label = labels[j] if j is not None else None
        meta = {"hops": cx.hops, "agrees": agrees[j] if j is not None else None,
                "reject_reason": (rejects[j] or None) if j is not None else None,
                "source_id": cx.source_id, "passage_id": cx.passage_id}
        rows.append(task_row(rec.run_id, spec.round, spec.step, f"audit-{i}", "audit", c, rec.world.prompt_version,
                             p.task, p.reason, truths[j] if j is not None else None, pseudo_label=label,
                             kept=label is not None, meta_json=dumps(meta)))
    return rows

