"""R-Zero (seed 002, SPEC §1): a Challenger and a Solver co-evolve from zero data.

Per round: ``challenger_steps`` Challenger GRPO steps (uncertainty reward minus the
BLEU-cluster repetition penalty, format gate), one dataset step (N candidates × m
answers, keep |p̂−½| ≤ δ, majority-vote pseudo-labels), ``solver_steps`` Solver GRPO
steps (reward = answer matches the pseudo-label), then a held-out evaluation.
"""
from __future__ import annotations

import json
import random
from typing import Any, Literal

import numpy as np
from pydantic import Field

from coevo.backends.base import full_text, sampler_info
from coevo.config import RunConfig, Strict
from coevo.ledger.store import StepWriter
from coevo.recipes.registry import RecipeInfo, RoleSpec
from coevo.recipes.base import StepSpec, dumps, evaluate_solver, loss_config, round_plan, sampling_params
from coevo.rewards import challenger_reward, keep_for_solver, uncertainty_reward
from coevo.rewards.repetition import repetition_penalty
from coevo.rl.grpo import group_advantages
from coevo.stages.core import grpo_update, propose, solve, to_groups
from coevo.worlds.base import Task, World


class RZeroConfig(Strict):
    rounds: int = Field(3, ge=1)
    challenger_steps: int = Field(5, ge=0)
    solver_steps: int = Field(15, ge=0)
    challenger_prompts: int = Field(64, ge=1, description="prompts per Challenger step")
    challenger_group: int = Field(4, ge=1, description="Challenger rollouts per prompt (GRPO group)")
    m: int = Field(10, ge=1, description="solver answers per question for p_hat / majority vote")
    uncertainty_variant: Literal["paper", "reference"] = "paper"
    rep_lambda: float = Field(1.0, ge=0)
    rep_threshold: float = Field(0.5, gt=0, le=1)
    rep_linkage: Literal["average", "complete", "single"] = "average"
    bleu_direction: Literal["symmetric", "reference"] = Field("symmetric", description="symmetric = mean of both BLEU directions (paper: undirected similarity); reference = R-Zero code (earlier question is the hypothesis, upper triangle mirrored)")
    format_failure_reward: float = Field(0.0, description="reward of a malformed question (paper 0, code -1)")
    n_candidates: int = Field(512, ge=1, description="N candidate questions per round for the solver dataset")
    delta: float = Field(0.25, ge=0, le=0.5, description="keep |p_hat - 1/2| <= delta")
    solver_prompts: int = Field(32, ge=1, description="questions per Solver step")
    solver_group: int = Field(5, ge=1, description="Solver rollouts per question (GRPO group)")


RECIPES = {"rzero": RecipeInfo(
    name="rzero", factory="coevo.recipes.rzero:RZeroRecipe",
    roles=(RoleSpec("solver", asset="solver", seed_offset=0, lr="lr_solver"),
           RoleSpec("challenger", asset="challenger", seed_offset=1, lr="lr_challenger")),
    sections={"rzero": RZeroConfig}, worlds=("arithmetic", "math"),
    summary_columns=("pseudo_label_accuracy", "kept_fraction", "challenger_reward_mean", "format_failure_rate"),
    report_sections=("coevo.report.rzero:section",),
    description="R-Zero: Challenger (uncertainty - repetition) and Solver (majority-vote pseudo-labels)")}


class RZeroRecipe:
    name = "rzero"

    def __init__(self, cfg: RunConfig, world: World, policies: dict, run_id: str, verifier) -> None:
        self.cfg, self.world, self.run_id = cfg, world, run_id
        self.challenger = policies["challenger"]
        self.solver = policies["solver"]
        self.verifier = verifier
        self.loss = loss_config(cfg)
        self.sp = sampling_params(cfg)
        self.eval_tasks = list(world.eval_set())
        self.dataset: list[dict] = []  # solver dataset of the current round
        self.cursor = 0
        self.rng = random.Random(cfg.seed)

    # ------------------------------------------------------------------ schedule
    def plan(self) -> list[StepSpec]:
        rz = self.cfg.rzero
        return round_plan(rz.rounds, [("challenger", rz.challenger_steps), ("dataset", 1), ("solver", rz.solver_steps)])

    def run_step(self, spec: StepSpec, w: StepWriter) -> dict:
        return getattr(self, f"_{spec.phase}")(spec, w)

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict:
        return {"dataset": self.dataset, "cursor": self.cursor, "rng": self.rng.getstate()}

    def load_state_dict(self, st: dict) -> None:
        self.dataset, self.cursor = st["dataset"], st["cursor"]
        self.rng.setstate(st["rng"])

    # ------------------------------------------------------------------ shared pieces
    def _vote(self, spec: StepSpec, tasks: list[Task], purpose: str, w: StepWriter):
        """m solver answers per task, majority vote, verdict rows vs pseudo-label and oracle."""
        m = self.cfg.rzero.m
        outs = solve(self.solver, self.world, tasks, m, self.sp)
        answers = [[self.world.extract_answer(c.text) for c in comps] for comps in outs]
        votes = self.verifier.majority_votes(answers)
        roll, verd = [], []
        truths = [self.world.oracle(t) if self.world.has_oracle else None for t in tasks]
        oracle_v = self.verifier.match_many([(a, tr) for ans, tr in zip(answers, truths) for a in ans]) \
            if self.world.has_oracle else None
        j = 0
        for t, comps, ans, vote in zip(tasks, outs, answers, votes):
            for k, (c, a) in enumerate(zip(comps, ans)):
                rid = f"{t.task_id}-{purpose}-{k}"
                roll.append(self._rollout_row(spec, rid, t.task_id, "solver", purpose, k, c, a))
                verd.append(self._verdict_row(spec, rid, t.task_id, "pseudo_label", 1 if vote.agree[k] else 0,
                                              "" if a is not None else _no_answer_reason(c)))
                if oracle_v is not None:
                    v = oracle_v[j]
                    verd.append(self._verdict_row(spec, rid, t.task_id, "oracle", v.value, v.reason, v.elapsed_s))
                j += 1
        w.add("rollouts", roll)
        w.add("verdicts", verd)
        return votes

    def _rollout_row(self, spec, rid, task_id, role, purpose, k, c, answer) -> dict:
        return {"run_id": self.run_id, "rollout_id": rid, "task_id": task_id, "round": spec.round, "step": spec.step,
                "role": role, "purpose": purpose, "group_idx": k, "policy_version": c.policy_version,
                "text": c.text, "answer": answer, "n_tokens": len(c.token_ids), "finish_reason": c.finish_reason,
                "sampler_json": sampler_info(c)}

    def _verdict_row(self, spec, rid, task_id, target, value, reason, elapsed_s: float = 0.0) -> dict:
        return {"run_id": self.run_id, "rollout_id": rid, "task_id": task_id, "step": spec.step, "target": target,
                "verifier_kind": self.verifier.kind, "verifier_version": self.verifier.version,
                "criterion_id": None, "value": value, "reason": reason, "elapsed_s": elapsed_s}

    # ------------------------------------------------------------------ phases
    def _eval(self, spec: StepSpec, w: StepWriter) -> dict:
        acc = evaluate_solver(self.solver, self.world, self.eval_tasks, self.run_id, spec.round, spec.step, w,
                              greedy=self.cfg.eval.greedy, samples=self.cfg.eval.samples, sampling=self.sp)
        return {"eval": acc}

    def _challenger(self, spec: StepSpec, w: StepWriter) -> dict:
        rz = self.cfg.rzero
        props = propose(self.challenger, self.world, rz.challenger_prompts, rz.challenger_group, self.sp,
                        id_prefix=f"s{spec.step}", seed=self.cfg.seed + spec.step)
        valid = [i for i, p in enumerate(props) if p.parsed.ok]
        rewards = np.full(len(props), rz.format_failure_reward, dtype=float)
        comp: list[dict[str, Any]] = [{"format_ok": False, "reason": p.parsed.reason} for p in props]
        if valid:
            tasks = [props[i].task for i in valid]
            votes = self._vote(spec, tasks, "p_hat", w)
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
        adv = group_advantages(to_groups(rewards, rz.challenger_group), self.cfg.loss.advantage_scale).flatten()
        before = self.challenger.version
        metrics = grpo_update(self.challenger, [p.completion for p in props], adv.tolist(), self.loss)
        task_rows, reward_rows = [], []
        for i, p in enumerate(props):
            c = comp[i]
            task_id = p.task.task_id if p.task else f"s{spec.step}-{p.group}-{i % rz.challenger_group}"
            row = self._task_row_from(spec, p, task_id, "challenger", pseudo_label=c.get("pseudo_label"),
                                      p_hat=c.get("p_hat"), kept=None, meta_json=dumps({"group": p.group}))
            task_rows.append(row)
            reward_rows.append({"run_id": self.run_id, "step": spec.step, "role": "challenger",
                                "item_id": task_id, "task_id": task_id, "reward": float(rewards[i]),
                                "advantage": float(adv[i]), "components_json": dumps(c)})
        w.add("tasks", task_rows)
        w.add("rewards", reward_rows)
        w.add("updates", [{"run_id": self.run_id, "step": spec.step, "role": "challenger", "version_before": before,
                           "version_after": self.challenger.version, "n_sequences": len(props),
                           "metrics_json": dumps(metrics)}])
        n_valid = len(valid)
        return {"challenger_reward_mean": float(rewards.mean()), "format_failure_rate": 1 - n_valid / len(props),
                "n_questions": len(props), "loss": metrics}

    def _task_row_from(self, spec, p, task_id, source, **extra) -> dict:
        t = p.task
        row = {"run_id": self.run_id, "task_id": task_id, "round": spec.round, "step": spec.step, "source": source,
               "proposer_version": p.completion.policy_version, "prompt_version": self.world.prompt_version,
               "raw_text": full_text(p.completion), "question": t.question if t else None, "parse_ok": t is not None,
               "parse_reason": p.parsed.reason, "difficulty": t.meta.get("difficulty") if t else None,
               "reference": t.reference if t else None,
               "oracle_answer": self.world.oracle(t) if (t is not None and self.world.has_oracle) else None}
        row.update(extra)
        sampler = sampler_info(p.completion)
        if sampler is not None:  # served by an inference server: which one, which adapter
            meta = json.loads(row.get("meta_json") or "{}")
            meta["sampler"] = sampler
            row["meta_json"] = dumps(meta)
        return row

    def _dataset(self, spec: StepSpec, w: StepWriter) -> dict:
        rz = self.cfg.rzero
        props = propose(self.challenger, self.world, rz.n_candidates, 1, self.sp, id_prefix=f"s{spec.step}",
                        seed=self.cfg.seed + spec.step)
        valid = [p for p in props if p.parsed.ok]
        votes = self._vote(spec, [p.task for p in valid], "candidate", w) if valid else []
        rows, dataset, correct = [], [], []
        vote_of = {id(p): v for p, v in zip(valid, votes)}
        for i, p in enumerate(props):
            v = vote_of.get(id(p))
            task_id = p.task.task_id if p.task else f"s{spec.step}-{i}-0"
            kept = bool(v is not None and v.label is not None and keep_for_solver(v.p_hat, rz.delta))
            rows.append(self._task_row_from(spec, p, task_id, "candidate", pseudo_label=v.label if v else None,
                                            p_hat=v.p_hat if v else None, kept=kept, meta_json=None))
            if kept:
                t = p.task
                dataset.append({"task_id": t.task_id, "question": t.question, "label": v.label,
                                "difficulty": t.meta.get("difficulty")})
                if self.world.has_oracle:
                    correct.append(self.world.equivalent(v.label, self.world.oracle(t)))
        w.add("tasks", rows)
        self.rng.shuffle(dataset)
        self.dataset, self.cursor = dataset, 0
        return {"n_candidates": len(props), "n_valid": len(valid), "n_kept": len(dataset),
                "kept_fraction": len(dataset) / max(len(valid), 1),
                "pseudo_label_accuracy": float(np.mean(correct)) if correct else None}

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
        outs = solve(self.solver, self.world, tasks, rz.solver_group, self.sp)
        answers = [self.world.extract_answer(c.text) for comps in outs for c in comps]
        labels = [d["label"] for d in batch for _ in range(rz.solver_group)]
        match = self.verifier.match_many(list(zip(answers, labels)))
        rewards = np.array([1.0 if v.value == 1 else 0.0 for v in match])
        adv = group_advantages(to_groups(rewards, rz.solver_group), self.cfg.loss.advantage_scale).flatten()
        comps = [c for cs in outs for c in cs]
        before = self.solver.version
        metrics = grpo_update(self.solver, comps, adv.tolist(), self.loss)
        roll, verd, rew = [], [], []
        truths = [self.world.oracle(t) if self.world.has_oracle else None for t in tasks for _ in range(rz.solver_group)]
        oracle = self.verifier.match_many(list(zip(answers, truths))) if self.world.has_oracle else None
        for i, c in enumerate(comps):
            t = tasks[i // rz.solver_group]
            k = i % rz.solver_group
            rid = f"{t.task_id}-s{spec.step}-train-{k}"
            roll.append(self._rollout_row(spec, rid, t.task_id, "solver", "train", k, c, answers[i]))
            reason = _no_answer_reason(c) if c.finish_reason == "error" else match[i].reason
            verd.append(self._verdict_row(spec, rid, t.task_id, "pseudo_label", match[i].value, reason,
                                          match[i].elapsed_s))
            if oracle is not None:
                verd.append(self._verdict_row(spec, rid, t.task_id, "oracle", oracle[i].value, oracle[i].reason,
                                              oracle[i].elapsed_s))
            rew.append({"run_id": self.run_id, "step": spec.step, "role": "solver", "item_id": rid,
                        "task_id": t.task_id, "reward": float(rewards[i]), "advantage": float(adv[i]),
                        "components_json": None})
        w.add("rollouts", roll)
        w.add("verdicts", verd)
        w.add("rewards", rew)
        w.add("updates", [{"run_id": self.run_id, "step": spec.step, "role": "solver", "version_before": before,
                           "version_after": self.solver.version, "n_sequences": len(comps),
                           "metrics_json": dumps(metrics)}])
        return {"solver_reward_mean": float(rewards.mean()), "loss": metrics}


def _no_answer_reason(c) -> str:
    """Why a rollout has no answer: the backend failed to sample it, or the text has none."""
    if c.finish_reason == "error":
        return f"sampling-error: {str(c.meta.get('error', ''))[:300]}"
    return "no-answer"
