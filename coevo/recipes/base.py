"""What every recipe provides to the runner, and the stages recipes share."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from coevo.backends.base import LossConfig, SamplingParams
from coevo.config import RunConfig
from coevo.ledger.store import StepWriter
from coevo.stages.group import StepContext
from coevo.worlds.base import Task, World, role_sampling


@dataclass(frozen=True)
class StepSpec:
    step: int  # global step index (0 = initial evaluation)
    round: int
    phase: str  # eval | challenger | dataset | solver | ...
    phase_step: int


def round_plan(rounds: int, phases: Sequence[tuple[str, int]]) -> list[StepSpec]:
    """Numbered steps: an initial evaluation, then per round each phase's steps in order
    followed by an evaluation. ``phases``: [(phase name, steps per round), ...]."""
    specs = [(0, "eval", 0)]
    for r in range(1, rounds + 1):
        for phase, n in phases:
            specs += [(r, phase, i) for i in range(n)]
        specs.append((r, "eval", 0))
    return [StepSpec(i, r, phase, k) for i, (r, phase, k) in enumerate(specs)]


def loss_config(cfg: RunConfig) -> LossConfig:
    l = cfg.loss
    return LossConfig(clip_eps=l.clip_eps, clip_eps_high=l.clip_eps_high, aggregation=l.aggregation,
                      kl_coef=l.kl_coef, max_len=l.max_completion_length or cfg.sampling.max_new_tokens,
                      kl_bias_correction=l.kl_bias_correction)


def sampling_params(cfg: RunConfig, max_new_tokens: int | None = None) -> SamplingParams:
    s = cfg.sampling
    return SamplingParams(temperature=s.temperature, top_p=s.top_p,
                          max_new_tokens=max_new_tokens or s.max_new_tokens)


class RecipeBase:
    """What the runner calls on a recipe: ``plan()``, ``run_step(spec, writer)`` (dispatches to
    ``_<phase>``), ``state_dict()`` / ``load_state_dict()``.  Holds the run's world, policies by
    role, verifier, loss and sampling settings; every recipe evaluates its ``solver`` role on
    the world's held-out set in phase ``eval``."""

    name = "base"
    solver_role = "solver"

    def __init__(self, cfg: RunConfig, world: World, policies: dict, run_id: str, verifier) -> None:
        self.cfg, self.world, self.run_id, self.verifier = cfg, world, run_id, verifier
        self.policies = policies
        self.solver = policies[self.solver_role]
        self.loss = loss_config(cfg)
        self.sp = sampling_params(cfg)
        self.eval_tasks = list(world.eval_set())

    def plan(self) -> list[StepSpec]:  # pragma: no cover - every recipe defines it
        raise NotImplementedError

    def run_step(self, spec: StepSpec, w: StepWriter) -> dict:
        return getattr(self, f"_{spec.phase}")(spec, w)

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, st: dict) -> None:
        pass

    def ctx(self, spec: StepSpec) -> StepContext:
        return StepContext(self.run_id, spec.round, spec.step, self.world, self.verifier, self.loss,
                           self.cfg.loss.advantage_scale)

    def _eval(self, spec: StepSpec, w: StepWriter) -> dict:
        acc = evaluate_solver(self.solver, self.world, self.eval_tasks, self.run_id, spec.round, spec.step, w,
                              greedy=self.cfg.eval.greedy, samples=self.cfg.eval.samples, sampling=self.sp)
        return {"eval": acc}


def evaluate_solver(solver, world: World, tasks: Sequence[Task], run_id: str, round_: int, step: int,
                    writer: StepWriter, greedy: bool = True, samples: int = 0,
                    sampling: SamplingParams | None = None) -> dict:
    """Oracle accuracy of the solver on the held-out set, by difficulty; rows to ``evals``."""
    rows, acc = [], {}
    modes = []
    if greedy:
        modes.append(("greedy", 1, SamplingParams(greedy=True, max_new_tokens=(sampling.max_new_tokens if sampling else 24))))
    if samples > 0 and sampling is not None:
        modes.append((f"mean@{samples}", samples, sampling))
    for mode, n, sp in modes:
        outs = solver.sample([world.solver_prompt(t) for t in tasks], n, role_sampling(world, "solver", sp))
        by: dict[str, list[float]] = {}
        for t, comps in zip(tasks, outs):
            truth = t.reference if t.reference is not None else world.oracle(t)
            answers = [world.extract_answer(c.text) for c in comps]
            score = float(np.mean([world.equivalent(a, truth) for a in answers]))
            d = t.meta.get("difficulty", "all")
            by.setdefault(d, []).append(score)
            rows.append({"run_id": run_id, "round": round_, "step": step, "task_id": t.task_id, "difficulty": d,
                         "policy_version": comps[0].policy_version, "mode": mode, "answer": answers[0],
                         "correct": score})
        all_scores = [s for v in by.values() for s in v]
        acc[mode] = {"overall": float(np.mean(all_scores)),
                     "by_difficulty": {d: float(np.mean(v)) for d, v in sorted(by.items())}}
    writer.add("evals", rows)
    return acc


def dumps(obj: Any) -> str:
    return json.dumps(obj, default=float, sort_keys=True)
