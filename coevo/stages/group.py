"""The two stages every recipe uses: draw a group (the sample -> extract -> verify stage of
``coevo.stages.sample_verify``, then rollout and verdict rows) and update a role (advantages
-> GRPO -> reward rows -> update row).

Both return plain data plus the ledger rows they produced (``rows``: {table: [row, ...]});
neither writes to the ledger, so a recipe commits a whole step atomically.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Sequence

import numpy as np

from coevo.core.policy import Completion, LossConfig, Policy, SamplingParams
from coevo.ledger.rows import reward_row, rollout_row, update_row, verdict_row_of
from coevo.rl.grpo import group_advantages, grpo_update, to_groups
from coevo.stages import sample_verify as sv
from coevo.stages.sample_verify import Answers, default_extract, match_grouped, sampling_error_reason  # noqa: F401 (old names)
from coevo.timing import stage
from coevo.core.world import Task, World


@dataclass
class StepContext:
    """What every stage of one step needs: where rows go and how answers are judged."""

    run_id: str
    round: int
    step: int
    world: World
    verifier: object  # match_many / majority_votes (coevo.verify.run)
    loss: LossConfig
    advantage_scale: str = "group"


Group = Answers  # a training group: the stage's Answers with its rollout and verdict rows


def draw_group(ctx: StepContext, policy: Policy, tasks: Sequence[Task], n: int, sampling: SamplingParams,
               purpose: str, targets: dict[str, Sequence[str | None] | None] | None = None, role: str = "solver",
               offset: int = 0, stream: str = "train", rid: str = "{task}-{purpose}-{k}",
               extract: Callable[[Completion], tuple[str | None, bool]] | None = None,
               sampler: Callable | None = None) -> Group:
    """Sample n rollouts per task (``stream``: train or audit RNG), extract answers, verify them
    against each named target (``targets``: name -> one value per task; None skips it) through
    the one stage (``coevo.stages.sample_verify``) and build the rollout and verdict rows.
    ``sampler(policy, world, tasks, n, sampling)`` replaces single-turn sampling (e.g.
    multi-turn episodes); ``rid`` formats rollout ids from ``task``, ``purpose``, ``k`` (index
    + offset) and ``step``."""
    sp = replace(sampling, stream=stream) if stream != sampling.stream else sampling
    g = sv.sample_verify(policy, ctx.world, tasks, n, sp, ctx.verifier, targets, sampler=sampler, extract=extract)
    roll, verd = [], []
    for j, (t, comps) in enumerate(zip(g.tasks, g.outs)):
        for k, c in enumerate(comps):
            r_id = rid.format(task=t.task_id, purpose=purpose, k=k + offset, step=ctx.step)
            roll.append(rollout_row(ctx.run_id, ctx.round, ctx.step, r_id, t.task_id, role, purpose, k + offset, c,
                                    g.answers[j][k]))
            for name, vs in g.verdicts.items():
                verd.append(_verdict(ctx, r_id, t.task_id, name, vs[j][k], c))
    if g.tasks:
        g.rows = {"rollouts": roll, "verdicts": verd}
    return g


def _verdict(ctx: StepContext, rollout_id: str, task_id: str, target: str, v, c: Completion) -> dict:
    row = verdict_row_of(ctx.run_id, ctx.step, rollout_id, task_id, target, v, getattr(ctx.verifier, "kind", ""),
                         getattr(ctx.verifier, "version", ""))
    if c.finish_reason == "error":
        row["reason"] = sampling_error_reason(c)
    return row


@dataclass
class Update:
    advantages: np.ndarray
    metrics: dict
    rows: dict[str, list[dict]]


def update_role(ctx: StepContext, policy: Policy, role: str, comps: Sequence[Completion], rewards: np.ndarray,
                group_size: int, item_ids: Sequence[str], task_ids: Sequence[str],
                components: Sequence[dict | None] | None = None, advantages=None) -> Update:
    """Advantages (GRPO groups of ``group_size`` unless ``advantages`` is given: per sequence, or
    per token as lists), one GRPO step, the reward rows and the update row."""
    before = policy.version
    if len(comps) == 0:
        adv = np.zeros(0)
        metrics = {"skipped": 1.0}
    else:
        if advantages is None:
            adv = group_advantages(to_groups(rewards, group_size), ctx.advantage_scale).flatten().numpy()
        else:
            adv = advantages
        with stage("update"):
            metrics = grpo_update(policy, list(comps), adv.tolist() if hasattr(adv, "tolist") else list(adv),
                                  ctx.loss)
    comp = components if components is not None else [None] * len(comps)
    rows = {"rewards": [reward_row(ctx.run_id, ctx.step, role, item_ids[i], task_ids[i], rewards[i],
                                   _adv_scalar(adv[i]), comp[i]) for i in range(len(comps))],
            "updates": [update_row(ctx.run_id, ctx.step, role, before, policy.version, len(comps), metrics)]}
    return Update(adv, metrics, rows)


def _adv_scalar(a) -> float:
    """The advantage a reward row records: the value, or the mean of per-token values."""
    if np.ndim(a) == 0:
        return float(a)
    return float(np.mean(a)) if len(a) else 0.0
