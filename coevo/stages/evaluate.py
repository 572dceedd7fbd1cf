"""Held-out evaluation of the solver, scored through the run's verifier (pool, cache).

Same rows and return value as the evaluation the recipes used before
(``coevo.recipes.base.evaluate_solver``), but every answer is checked with
``verifier.match_many`` against ``t.reference or world.oracle(t)`` instead of calling
``world.equivalent`` in the main process.  A verdict counts as correct only when its
value is 1: a missing answer (0), a task without a target (abstains ``no-target``) or
an abstaining check (timeout, unparsable ...) scores 0, as ``equivalent`` returned
False for them.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Sequence

import numpy as np

from coevo.core.policy import SamplingParams
from coevo.core.world import Task
from coevo.stages import step as sv
from coevo.stages.step import Draw, StepContext
from coevo.timing import stage


def _modes(greedy: bool, samples: int, sampling: SamplingParams | None) -> list:
    modes = []
    if greedy:
        modes.append(("greedy", 1, SamplingParams(greedy=True, max_new_tokens=(sampling.max_new_tokens if sampling else 24))))
    if samples > 0 and sampling is not None:
        modes.append((f"mean@{samples}", samples, sampling))
    return modes


def evaluate_solver(ctx: StepContext, solver, tasks: Sequence[Task], writer, greedy: bool = True,
                    samples: int = 0, sampler=None) -> dict:
    """Accuracy of the solver on the held-out set, by difficulty; rows to ``evals``.

    ``ctx``: the step's context (its run verifier: ``match_many``; its sampling for the sampled
    mode).  Returns ``{mode: {"overall": acc, "by_difficulty": {difficulty: acc}}}`` with modes
    ``greedy`` and ``mean@{samples}``; one ``evals`` row per task and mode (the first completion's
    answer, the task's score).  ``sampler(solver, world, tasks, n, sampling)`` replaces single-turn
    sampling (e.g. ``coevo.stages.rollout.solve_multiturn`` for a world with tools).
    """
    with stage("eval"):  # sampling and checks inside count as eval (coevo.timing)
        rows, acc = eval_rows(ctx, solver, tasks, greedy, samples, sampler)
    writer.add("evals", rows)
    return acc


def eval_rows(ctx: StepContext, solver, tasks: Sequence[Task], greedy: bool, samples: int,
              sampler=None) -> tuple[list[dict], dict]:
    """The ``evals`` rows and the accuracies of ``evaluate_solver``: per mode, one pass of the
    sample -> extract -> verify stage against ``t.reference or world.oracle(t)``."""
    rows, acc = [], {}
    world = ctx.world
    truths = [t.reference if t.reference is not None else world.oracle(t) for t in tasks]
    for mode, n, sp in _modes(greedy, samples, ctx.sampling):
        got = sv.sample_verify(replace(ctx, sampling=sp), solver, tasks, n, {"truth": truths}, Draw(sampler=sampler))
        by: dict[str, list[float]] = {}
        for t, comps, ans, score in zip(got.tasks, got.outs, got.answers, got.mus("truth")):
            d = t.meta.get("difficulty", "all")
            by.setdefault(d, []).append(score)
            rows.append({"run_id": ctx.run_id, "round": ctx.round, "step": ctx.step, "task_id": t.task_id,
                         "difficulty": d, "policy_version": comps[0].policy_version, "mode": mode, "answer": ans[0],
                         "correct": score})
        all_scores = [s for v in by.values() for s in v]
        acc[mode] = {"overall": float(np.mean(all_scores)),
                     "by_difficulty": {d: float(np.mean(v)) for d, v in sorted(by.items())}}
    return rows, acc
