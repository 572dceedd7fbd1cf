"""Dr. Zero, MSV and CrossFit on a corpus world with sources (Dr. Zero; False Frontiers: FF, MSV, CrossFit).

One loop, three recipe names (``RECIPES`` in ``__init__.py``): ``drzero``, ``crossfit``, ``msv+crossfit``.
Per round: ``proposer_steps`` proposer steps, then (CrossFit) ``crossfit.aux_steps``
auxiliary-solver steps, ``solver_steps`` main-solver steps, one ``audit`` step and the
held-out evaluation.

Proposer step (Dr. Zero, facebookresearch/drzero ``iter1_challenger.sh``: one sample per
prompt, ``grpo_group_size=1``, ``reward_group_size=5``, ``algorithm=grpo_batch``):

1. the world's proposer contexts (a passage and a hop count n, ratio 4:3:2:1); one
   proposal each: a question with a draft answer (``world.parse_task(..., context=)``);
2. MSV (``drzero.msv``, on in ``msv+crossfit``): 3 source-aware (``solver_prompt_with_source``)
   and 3 source-blind answers of the main solver; accept iff both sides have a majority
   answer and the two agree; the consensus replaces the draft (rejections keep their reason);
3. the scoring group: ``n_answers`` = 5 answers to each accepted question, by the main solver
   (Dr. Zero: the solver of the previous phase, frozen while the proposer trains — here the
   main solver, which no proposer step updates) or, in CrossFit, by the auxiliary solver that
   ``crossfit.py`` assigns; k = answers the verifier judges equal to the label;
4. reward = format weight x format score + f(k) (``rewards.py``); advantages standardised
   within hop buckets (``coevo.rl.grpo.bucket_advantages``); one GRPO step.

Solver steps: GRPO on the round's accepted questions, reward = EM against the label (draft or
MSV consensus) through the run's verifier; the loss normalisation is ``loss.aggregation``
(the presets set ``grpo``: each sequence's token mean, i.e. normalised by sequence length).
Audit step: the round's false-agreement mass of the *scoring group* against the oracle (the arm's
internal agreement: the main solver's in Dr. Zero / MSV, the auxiliary scorer's in CrossFit) and
pseudo-label accuracy (``coevo.audit``).  Post-hoc audit (``drzero.audit_prompts`` > 0; ``posthoc.py``):
after the last round's solver steps, one FF instrument for every arm (the final proposer on common
contexts, the arm's acceptance filter, the final main solver's answers, the oracle).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from coevo.core.policy import full_text
from coevo.core.world import QUESTION, ParseResult, Task, role_sampling
from coevo.ledger.store import StepWriter, dumps, task_row, verdict_row_of
from coevo.recipes.base import RecipeBase, StepSpec, renumber, round_plan
from coevo.recipes.drzero import posthoc, steps
from coevo.recipes.drzero.crossfit import AUX_ROLES, question_fold, source_folds
from coevo.recipes.drzero.rewards import crossfit_reward
from coevo.stages.step import Scored, sampling_error_reason, update_role
from coevo.stages.rollout import rollout


class DrZeroRecipe(RecipeBase):
    name = "drzero"
    crossfit = False
    force_msv = False

    def __init__(self, cfg, world, policies: dict, run_id: str, verifier) -> None:
        super().__init__(cfg, world, policies, run_id, verifier)
        dz = cfg.drzero
        self.proposer = policies["proposer"]
        self.aux = [policies[r] for r in AUX_ROLES] if self.crossfit else []
        self.msv = dz.msv or self.force_msv
        self.max_turns = dz.max_turns
        self.psp = replace(self.sp, max_new_tokens=dz.proposer_max_tokens or self.sp.max_new_tokens)
        self.cf = cfg.crossfit if self.crossfit else None
        self.folds = source_folds(world.sources(), self.cf.fold_seed) if self.crossfit else {}
        self.dataset: list[dict] = []  # the round's accepted questions
        self.audit_items: list[dict] = []  # the round's audited (question, label) pairs
        self.cursor = {"solver": 0, "aux_a": 0, "aux_b": 0}
        self.auditor = None
        if cfg.audit.auditor:
            from coevo.audit.auditor import Auditor

            self.auditor = Auditor.from_options(cfg.audit.auditor)

    def plan(self) -> list[StepSpec]:
        dz = self.cfg.drzero
        if self.crossfit and self.cf.replay:  # False Frontiers (the fold ablation): the fixed question-bank replay
            return round_plan(1, [("bank", self._bank, 1), ("aux", self._aux, self.cf.aux_steps),
                                  ("score", self._score, 1), ("audit", self._audit, 1)], self._eval)
        phases = [("proposer", self._proposer, dz.proposer_steps)]
        if self.crossfit:
            phases.append(("aux", self._aux, self.cf.aux_steps))
        phases += [("solver", self._solver, dz.solver_steps), ("audit", self._audit, 1)]
        specs = round_plan(dz.rounds, phases, self._eval)
        if not dz.audit_prompts:
            return specs
        # the post-hoc audit before the last evaluation
        return renumber([*specs[:-1], StepSpec(0, dz.rounds, "posthoc", 0, self._posthoc), specs[-1]])

    def state_dict(self) -> dict:
        return {"dataset": self.dataset, "audit_items": self.audit_items, "cursor": self.cursor}

    def load_state_dict(self, st: dict) -> None:
        self.dataset, self.audit_items, self.cursor = st["dataset"], st["audit_items"], st["cursor"]

    # ------------------------------------------------------------------ proposer
    def _propose(self, spec: StepSpec):
        """One proposal per proposer context: (contexts, completions, task ids, parse results)."""
        contexts = list(self.world.proposer_contexts(self.cfg.drzero.prompts, self.cfg.seed + spec.step))
        outs = rollout(self.proposer, self.world, [c.prompt for c in contexts], 1,
                       role_sampling(self.world, QUESTION, self.psp), kind=QUESTION, contexts=contexts)
        comps = [g[0] for g in outs]
        ids = [f"s{spec.step}-{i}-0" for i in range(len(comps))]
        parsed = []
        for c, tid, cx in zip(comps, ids, contexts):
            if c.finish_reason == "error":
                parsed.append(ParseResult(None, sampling_error_reason(c)))
            else:
                parsed.append(self.world.parse_task(full_text(c), tid, context=cx))
        return contexts, comps, ids, parsed

    def _fold(self, task) -> int | None:
        if not self.crossfit:
            return None
        return question_fold(task.task_id, task.meta["source_id"], self.cf.fold_strategy, self.folds,
                             self.cf.fold_seed)

    def _proposer(self, spec: StepSpec, w: StepWriter) -> dict:
        if spec.phase_step == 0:  # a new round: a new dataset and a new audit
            self.dataset, self.audit_items = [], []
            self.cursor = {k: 0 for k in self.cursor}
        ctx, dz = self.ctx.at(spec), self.cfg.drzero
        contexts, comps, ids, parsed = self._propose(spec)
        valid = [i for i, p in enumerate(parsed) if p.ok]
        tasks = [parsed[i].task for i in valid]
        truths = [self.world.oracle(t) for t in tasks]
        labels, rejects, msv_n = (steps.msv_labels(self, ctx, tasks, w) if self.msv
                                  else ([t.reference for t in tasks], [""] * len(tasks), 0))
        acc = [j for j, lab in enumerate(labels) if lab is not None]
        folds = [self._fold(tasks[j]) for j in acc]
        score = steps.score_group(self, ctx, [tasks[j] for j in acc], [labels[j] for j in acc],
                                  [truths[j] for j in acc], folds, w)
        checks = self._oracle_checks(ctx, tasks, labels, truths, w)
        rewards, comp = self._proposer_rewards(parsed, valid, acc, score, rejects)
        hops = [int(cx.hops) for cx in contexts]
        adv = steps.hop_advantages(rewards, hops, dz.advantage_variant)
        up = update_role(ctx, self.proposer, "proposer", Scored(comps, rewards, ids, components=comp, advantages=adv))
        w.extend(up.rows)
        self._record(spec, tasks, labels, acc, folds, score, checks)
        w.add("tasks", self._task_rows(spec, comps, ids, parsed, valid, labels, rejects, acc, folds, score,
                                       truths, hops))
        n_valid = len(valid)
        return {"proposer_reward_mean": float(np.mean(rewards)), "n_proposals": len(comps), "n_valid": n_valid,
                "n_accepted": len(acc), "accept_rate": len(acc) / max(n_valid, 1),
                "format_failure_rate": 1 - n_valid / max(len(comps), 1),
                "scoring_agreement": float(np.mean(score["mu"])) if acc else None,
                "hop_mix": {f"hop{h}": hops.count(h) for h in sorted(set(hops))},  # asked (4:3:2:1)
                "hop_mix_accepted": _mix([tasks[j].meta.get("difficulty") for j in acc]),  # as written
                "rollouts": {"proposer": len(comps), "msv": msv_n, "score": len(acc) * dz.n_answers},
                "loss": up.metrics}

    def _oracle_checks(self, ctx, tasks, labels, truths, w: StepWriter) -> dict[str, list]:
        """The oracle's verdicts on each valid task's draft and on its label (through the run's
        verifier), as verdict rows with target ``oracle`` on ``<task>-draft`` / ``<task>-label``."""
        pairs = [(t.reference, tr) for t, tr in zip(tasks, truths)]
        pairs += [(lab, tr) for lab, tr in zip(labels, truths) if lab is not None]
        vs = self.verifier.match_many(pairs) if pairs else []
        n = len(tasks)
        draft, lab_vs = vs[:n], iter(vs[n:])
        label = [next(lab_vs) if lab is not None else None for lab in labels]
        rows = []
        for t, vd, vl in zip(tasks, draft, label):
            rows.append(self._vrow(ctx, f"{t.task_id}-draft", t.task_id, vd))
            if vl is not None:
                rows.append(self._vrow(ctx, f"{t.task_id}-label", t.task_id, vl))
        w.add("verdicts", rows)
        return {"draft": [v.value for v in draft], "label": [None if v is None else v.value for v in label]}

    def _vrow(self, ctx, rid: str, tid: str, v) -> dict:
        return verdict_row_of(ctx.run_id, ctx.step, rid, tid, "oracle", v, getattr(self.verifier, "kind", ""),
                              getattr(self.verifier, "version", ""))

    def _proposer_rewards(self, parsed, valid, acc, score, rejects) -> tuple[np.ndarray, list[dict]]:
        """Per proposal: format part (1 if it parsed, else 0) x weight + f(k) of its scoring group."""
        dz = self.cfg.drzero
        outside = self.cf.outside if self.crossfit else "zero"
        fmt = np.array([1.0 if p.ok else 0.0 for p in parsed])
        k = np.full(len(parsed), -1)
        for jj, j in enumerate(acc):
            k[valid[j]] = score["k"][jj]
        rewards = steps.proposer_reward(fmt, k, dz.n_answers, dz.format_weight, outside)
        comp = []
        for i, p in enumerate(parsed):
            c: dict[str, Any] = {"format": float(fmt[i]), "k": None if k[i] < 0 else int(k[i])}
            if not p.ok:
                c["reason"] = p.reason
            comp.append(c)
        for j, i in enumerate(valid):
            if rejects[j]:
                comp[i]["reason"] = rejects[j]
        return rewards, comp

    def _record(self, spec, tasks, labels, acc, folds, score, checks) -> None:
        for jj, j in enumerate(acc):
            t = tasks[j]
            self.dataset.append(_bank_item(t, labels[j], folds[jj]))
            self.audit_items.append(_audit_item(spec, t, labels[j], score, jj, checks["label"][j],
                                                checks["draft"][j]))

    # ------------------------------------------------------------------ replay (crossfit.replay)
    def _bank(self, spec: StepSpec, w: StepWriter) -> dict:
        """The replay's question bank: one proposal per context by the proposer (no update), every
        valid one kept with its draft as the label and its fold under the strategy."""
        self.dataset, self.audit_items = [], []
        self.cursor = {k: 0 for k in self.cursor}
        contexts, comps, ids, parsed = self._propose(spec)
        valid = [i for i, p in enumerate(parsed) if p.ok]
        tasks = [parsed[i].task for i in valid]
        self.dataset = [_bank_item(t, t.reference, self._fold(t)) for t in tasks]
        truths = [self.world.oracle(t) for t in tasks]
        w.add("tasks", self._task_rows(spec, comps, ids, parsed, valid, [t.reference for t in tasks],
                                       [""] * len(tasks), [], [], {}, truths, [int(cx.hops) for cx in contexts]))
        return {"n_proposals": len(comps), "n_valid": len(valid), "rollouts": {"proposer": len(comps)}}

    def _score(self, spec: StepSpec, w: StepWriter) -> dict:
        """The replay's scoring: n_answers answers per bank question by the auxiliary solver its
        strategy names (after the aux steps), the oracle's verdicts, and the audit items."""
        ctx, n = self.ctx.at(spec), self.cfg.drzero.n_answers
        tasks = [Task(d["task_id"], d["question"], d["label"], meta=dict(d["meta"])) for d in self.dataset]
        labels, folds = [t.reference for t in tasks], [d["fold"] for d in self.dataset]
        truths = [self.world.oracle(t) for t in tasks]
        score = steps.score_group(self, ctx, tasks, labels, truths, folds, w)
        checks = self._oracle_checks(ctx, tasks, labels, truths, w)
        self.audit_items = [_audit_item(spec, t, labels[j], score, j, checks["label"][j], checks["draft"][j])
                            for j, t in enumerate(tasks)]
        r_p = crossfit_reward(np.array(score["k"]), n, self.cf.outside) if tasks else np.zeros(0)
        return {"proposer_reward_mean": float(np.mean(r_p)) if len(r_p) else None, "n_scored": len(tasks),
                "scoring_agreement": float(np.mean(score["mu"])) if tasks else None,
                "rollouts": {"score": len(tasks) * n}}

    def _task_rows(self, spec, comps, ids, parsed, valid, labels, rejects, acc, folds, score, truths,
                   hops) -> list[dict]:
        info = {valid[j]: (j, labels[j], rejects[j], truths[j]) for j in range(len(valid))}
        sc = {acc[jj]: (folds[jj], score["mu"][jj], score["k"][jj], score["scorer"][jj]) for jj in range(len(acc))}
        rows = []
        for i, (c, tid, p) in enumerate(zip(comps, ids, parsed)):
            j, label, reject, truth = info.get(i, (None, None, "", None))
            fold, mu, k, scorer = sc.get(j, (None, None, None, None))
            meta = {"hops": hops[i], "fold": fold, "k": k, "scorer": scorer, "reject_reason": reject or None}
            if p.task is not None:
                meta.update(source_id=p.task.meta.get("source_id"), passage_id=p.task.meta.get("passage_id"))
            rows.append(task_row(self.run_id, spec.round, spec.step, tid, "proposer", c, self.world.prompt_version,
                                 p.task, p.reason, truth, pseudo_label=label, p_hat=mu,
                                 kept=bool(p.ok and label is not None), meta_json=dumps(meta)))
        return rows

    # ------------------------------------------------------------------ solvers
    def _solver(self, spec: StepSpec, w: StepWriter) -> dict:
        out, self.cursor["solver"] = steps.train_on(self, spec, w, self.solver, "solver", self.dataset, None,
                                                    self.cursor["solver"])
        return out

    def _aux(self, spec: StepSpec, w: StepWriter) -> dict:
        out = {}
        for f, role in enumerate(AUX_ROLES):
            items = [d for d in self.dataset if d["fold"] == f]
            out[role], self.cursor[role] = steps.train_on(self, spec, w, self.aux[f], role, items, f, self.cursor[role])
        return {"aux": out, "rollouts": {r: out[r].get("n_rollouts", 0) for r in AUX_ROLES}}

    def _audit(self, spec: StepSpec, w: StepWriter) -> dict:
        return steps.round_audit(self, spec, self.audit_items, w)

    def _posthoc(self, spec: StepSpec, w: StepWriter) -> dict:
        return posthoc.post_hoc_audit(self, spec, w)


def _bank_item(t, label, fold) -> dict:
    """An accepted question as the solvers train on it (the dataset's record)."""
    return {"task_id": t.task_id, "question": t.question, "label": label,
            "meta": {k: v for k, v in t.meta.items() if k != "retrieve_sources"}, "fold": fold}


def _audit_item(spec, t, label, score, j: int, label_correct, draft_correct) -> dict:
    """One audited (question, label) pair: its scoring group's agreement and the oracle's verdicts."""
    return {"task_id": t.task_id, "step": spec.step, "mu": score["mu"][j], "question": t.question, "label": label,
            "source_id": t.meta.get("source_id"), "hops": t.meta.get("hops"), "agrees": score["agrees"][j],
            "majority": score["majority"][j],
            "label_correct": label_correct, "draft_correct": draft_correct}


def _mix(labels) -> dict[str, int]:
    return {d: labels.count(d) for d in sorted({x for x in labels if x})}


class CrossFitRecipe(DrZeroRecipe):
    name = "crossfit"
    crossfit = True


class MSVCrossFitRecipe(CrossFitRecipe):
    name = "msv+crossfit"
    force_msv = True
