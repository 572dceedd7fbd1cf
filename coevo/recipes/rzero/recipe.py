"""R-Zero (R-Zero §2.1–§2.4, §3.1): a Challenger and a Solver co-evolve from zero data.

Per round: ``challenger_steps`` Challenger GRPO steps (uncertainty reward minus the
BLEU-cluster repetition penalty, format gate), one dataset step (N candidates × m
answers, keep |p̂−½| ≤ δ, majority-vote pseudo-labels), ``solver_steps`` Solver GRPO
steps (reward = answer matches the pseudo-label), then a held-out evaluation.
"""
from __future__ import annotations

import random
from typing import Any

import numpy as np
from coevo.audit.instruments import pseudo_label_accuracy
from coevo.audit.truth import truth_metrics
from coevo.ledger.store import StepWriter, dumps, task_row, verdict_row
from coevo.recipes.base import RecipeBase, StepSpec, round_plan
from coevo.recipes.rzero.rewards import challenger_reward, keep_for_solver, keep_in_band, uncertainty_reward
from coevo.rewards.repetition import repetition_penalty
from coevo.stages.step import Draw, Scored, draw_group, propose, sampling_error_reason, update_role
from coevo.core.world import Task


class RZeroRecipe(RecipeBase):
    name = "rzero"
    proposer_role = "challenger"

    def __init__(self, cfg, world, policies: dict, run_id: str, verifier) -> None:
        super().__init__(cfg, world, policies, run_id, verifier)
        self.challenger = policies["challenger"]
        self.dataset: list[dict] = []  # solver dataset of the current round
        self.cursor = 0
        self.rng = random.Random(cfg.seed)

    # ------------------------------------------------------------------ schedule
    def plan(self) -> list[StepSpec]:
        rz = self.cfg.rzero
        return round_plan(rz.rounds, [("challenger", self._challenger, rz.challenger_steps), ("dataset", self._dataset, 1),
                                      ("solver", self._solver, rz.solver_steps)], self._eval)

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict:
        return {"dataset": self.dataset, "cursor": self.cursor, "rng": self.rng.getstate()}

    def load_state_dict(self, st: dict) -> None:
        self.dataset, self.cursor = st["dataset"], st["cursor"]
        self.rng.setstate(st["rng"])

    # ------------------------------------------------------------------ shared pieces
    def _keep(self, p_hat: float) -> bool:
        rz = self.cfg.rzero
        if rz.solver_filter == "reference":
            return bool(keep_in_band(p_hat, *rz.filter_band))
        return bool(keep_for_solver(p_hat, rz.delta))

    def _vote(self, spec: StepSpec, tasks: list[Task], purpose: str, w: StepWriter, m: int | None = None):
        """m solver answers per task, majority vote, verdict rows vs pseudo-label and oracle.
        Returns the votes and, per task, the oracle's verdict value on its label (the verdict of
        an answer equal to the label: the label is one of the answers; None without an oracle)."""
        truths = [self.world.oracle(t) for t in tasks] if self.world.has_oracle else None
        g = draw_group(self.ctx.at(spec), self.solver, tasks, m or self.cfg.rzero.m, purpose, {"oracle": truths})
        votes = self.verifier.majority_votes(g.answers)
        label_rows = []
        for j, (t, vote) in enumerate(zip(tasks, votes)):
            for k, (c, a) in enumerate(zip(g.outs[j], g.answers[j])):
                reason = "" if a is not None else sampling_error_reason(c)
                label_rows.append(verdict_row(self.run_id, spec.step, f"{t.task_id}-{purpose}-{k}", t.task_id,
                                              "pseudo_label", 1 if vote.agree[k] else 0, reason,
                                              self.verifier.kind, self.verifier.version))
        w.extend(g.rows)
        w.add("verdicts", label_rows)
        label_verdicts = [None] * len(tasks)
        if "oracle" in g.verdicts:
            for j, vote in enumerate(votes):
                label_verdicts[j] = next((v.value for a, v in zip(g.answers[j], g.verdicts["oracle"][j])
                                          if vote.label is not None and a == vote.label), None)
        return votes, label_verdicts

    def _task_row(self, spec, p, task_id, source, **extra) -> dict:
        t = p.task
        oracle = self.world.oracle(t) if (t is not None and self.world.has_oracle) else None
        return task_row(self.run_id, spec.round, spec.step, task_id, source, p.completion, self.world.prompt_version,
                        t, p.parsed.reason, oracle, **extra)

    # ------------------------------------------------------------------ phases
    def _challenger(self, spec: StepSpec, w: StepWriter) -> dict:
        rz = self.cfg.rzero
        ctx = self.ctx.at(spec)
        props = propose(ctx, self.challenger, rz.challenger_prompts, rz.challenger_group, id_prefix=f"s{spec.step}",
                        seed=self.cfg.seed + spec.step)
        valid = [i for i, p in enumerate(props) if p.parsed.ok]
        rewards = np.full(len(props), rz.format_failure_reward, dtype=float)
        comp: list[dict[str, Any]] = [{"format_ok": False, "reason": p.parsed.reason} for p in props]
        if valid:
            tasks = [props[i].task for i in valid]
            votes, _ = self._vote(spec, tasks, "p_hat", w)
            p_hat = np.array([v.p_hat for v in votes])
            qs = [self.world.repetition_text(t.question) for t in tasks]
            r_rep = repetition_penalty(qs, lam=rz.rep_lambda, threshold=rz.rep_threshold, linkage=rz.rep_linkage,
                                       direction=rz.bleu_direction) * (len(qs) / len(props))  # B = whole batch
            r_unc = uncertainty_reward(p_hat, rz.uncertainty_variant)
            r = challenger_reward(p_hat, r_rep, rz.uncertainty_variant)
            for j, i in enumerate(valid):
                rewards[i] = r[j]
                comp[i] = {"format_ok": True, "p_hat": float(p_hat[j]), "r_unc": float(r_unc[j]),
                           "r_rep": float(r_rep[j]), "pseudo_label": votes[j].label}
        ids = [p.task.task_id if p.task else f"s{spec.step}-{p.group}-{i % rz.challenger_group}"
               for i, p in enumerate(props)]
        up = update_role(ctx, self.challenger, "challenger",
                         Scored([p.completion for p in props], rewards, ids, group_size=rz.challenger_group,
                                components=comp))
        w.add("tasks", [self._task_row(spec, p, ids[i], "challenger", pseudo_label=comp[i].get("pseudo_label"),
                                       p_hat=comp[i].get("p_hat"), kept=None, meta_json=dumps({"group": p.group}))
                        for i, p in enumerate(props)])
        w.extend(up.rows)
        return {"challenger_reward_mean": float(rewards.mean()), "format_failure_rate": 1 - len(valid) / len(props),
                "n_questions": len(props), "loss": up.metrics}

    def _dataset(self, spec: StepSpec, w: StepWriter) -> dict:
        rz = self.cfg.rzero
        props = propose(self.ctx.at(spec), self.challenger, rz.n_candidates, 1, id_prefix=f"s{spec.step}",
                        seed=self.cfg.seed + spec.step)
        valid = [p for p in props if p.parsed.ok]
        m = rz.filter_samples if rz.solver_filter == "reference" else rz.m
        votes, label_verdicts = self._vote(spec, [p.task for p in valid], "candidate", w, m) if valid else ([], [])
        rows, dataset, kept_verdicts = [], [], []
        vote_of = {id(p): (v, lv) for p, v, lv in zip(valid, votes, label_verdicts)}
        for i, p in enumerate(props):
            v, label_verdict = vote_of.get(id(p), (None, None))
            task_id = p.task.task_id if p.task else f"s{spec.step}-{i}-0"
            kept = bool(v is not None and v.label is not None and self._keep(v.p_hat))
            rows.append(self._task_row(spec, p, task_id, "candidate", pseudo_label=v.label if v else None,
                                       p_hat=v.p_hat if v else None, kept=kept, meta_json=None))
            if kept:
                t = p.task
                dataset.append({"task_id": t.task_id, "question": t.question, "label": v.label,
                                "difficulty": t.meta.get("difficulty")})
                kept_verdicts.append(label_verdict)
        w.add("tasks", rows)
        est = pseudo_label_accuracy(kept_verdicts)  # the oracle's verdicts on the kept labels
        truth = self._truth_metrics(spec, dataset, kept_verdicts, w)
        self.rng.shuffle(dataset)
        self.dataset, self.cursor = dataset, 0
        return {"n_candidates": len(props), "n_valid": len(valid), "n_kept": len(dataset),
                "kept_fraction": len(dataset) / max(len(valid), 1),
                "pseudo_label_accuracy": est.value if est.n else None, **truth}

    def _truth_metrics(self, spec: StepSpec, kept: list[dict], oracle_verdicts: list, w: StepWriter) -> dict:
        """Pseudo-label accuracy by the configured truth source (``truth.judge`` / ``truth.references``)
        and, where the world has an oracle too, that source's agreement with it (coevo.audit.truth)."""
        if self.truth is None or not kept:
            return {}
        vs, out = truth_metrics(self.truth, [d["question"] for d in kept], [d["label"] for d in kept],
                                oracle_verdicts)
        w.add("verdicts", [verdict_row(self.run_id, spec.step, f"{d['task_id']}-label", d["task_id"],
                                       f"truth:{self.truth.kind}", v.value, v.reason, self.truth.kind, v.version or "")
                           for d, v in zip(kept, vs)])
        return out

    def _solver(self, spec: StepSpec, w: StepWriter) -> dict:
        rz = self.cfg.rzero
        if not self.dataset:
            return {"skipped": "empty solver dataset (no candidate passed the |p_hat - 1/2| <= delta filter)"}
        batch = []
        for _ in range(min(rz.solver_prompts, len(self.dataset))):
            batch.append(self.dataset[self.cursor % len(self.dataset)])
            self.cursor += 1
        tasks = [Task(task_id=d["task_id"], question=d["question"], reference=d["label"],
                      meta={"difficulty": d["difficulty"]}) for d in batch]
        truths = [self.world.oracle(t) for t in tasks] if self.world.has_oracle else None
        ctx = self.ctx.at(spec)
        g = draw_group(ctx, self.solver, tasks, rz.solver_group, "train",
                       {"pseudo_label": [d["label"] for d in batch], "oracle": truths},
                       Draw(rid="{task}-s{step}-train-{k}"))
        rewards = np.array([1.0 if v.value == 1 else 0.0 for vs in g.verdicts["pseudo_label"] for v in vs])
        up = update_role(ctx, self.solver, "solver", g.scored(rewards))
        w.extend(g.rows)
        w.extend(up.rows)
        return {"solver_reward_mean": float(rewards.mean()), "loss": up.metrics}
