"""The shared stages every recipe composes (ARCHITECTURE.md, "The one idea").

Each stage returns plain data plus ledger rows; none of them writes to the ledger
itself, so a recipe can commit a whole step atomically.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch

from coevo.verify.vote import Vote, majority_vote  # noqa: F401 (recipes import them from here)
from coevo.core.policy import Completion, LossConfig, Policy, SamplingParams, full_text
from coevo.timing import stage
from coevo.core.world import ANSWER, QUESTION, ParseResult, Task, World, role_sampling


@dataclass
class Proposal:
    completion: Completion
    parsed: ParseResult
    group: int  # index of the prompt (GRPO group) it came from

    @property
    def task(self) -> Task | None:
        return self.parsed.task


def sampling_error_reason(c: Completion) -> str:
    """Why a completion has no answer or task: the backend failed to sample it (its error,
    cut to 300 characters), or the text has none."""
    if c.finish_reason == "error":
        return f"sampling-error: {str(c.meta.get('error', ''))[:300]}"
    return "no-answer"


def propose(proposer: Policy, world: World, n_prompts: int, group: int, sampling: SamplingParams,
            id_prefix: str, seed: int = 0) -> list[Proposal]:
    """Sample ``group`` proposals for each of ``n_prompts`` proposer prompts and parse them."""
    prompts = world.proposer_prompts(n_prompts, seed)
    with stage("sample"):
        outs = proposer.sample(prompts, group, role_sampling(world, QUESTION, sampling))
    props = []
    for g, comps in enumerate(outs):
        for k, c in enumerate(comps):
            if c.finish_reason == "error":  # the backend failed to sample it (reason in meta)
                parsed = ParseResult(None, sampling_error_reason(c))
            else:
                parsed = world.parse_task(full_text(c), f"{id_prefix}-{g}-{k}")
            props.append(Proposal(c, parsed, g))
    return props


def solve(solver: Policy, world: World, tasks: Sequence[Task], n: int,
          sampling: SamplingParams) -> list[list[Completion]]:
    if not tasks:
        return []
    with stage("sample"):
        return solver.sample([world.solver_prompt(t) for t in tasks], n, role_sampling(world, ANSWER, sampling))


def grpo_update(policy: Policy, comps: Sequence[Completion], advantages: Sequence, loss: LossConfig,
                micro_batch: int = 512) -> dict:
    """One optimizer step on a batch, split into micro-batches of at most ``micro_batch``
    sequences whose gradients add up to the gradient of the unsplit batch.

    ``advantages``: one float per completion or one list per completion (a float per token
    of ``token_ids``).  Each micro-batch goes to ``policy.forward_backward(part, adv_part,
    loss, scale=..., num_active_tokens=...)`` with the arguments of
    ``coevo.rl.grpo.micro_batch_args``: grpo and dr_grpo scale by the part's share of
    sequences (dr_grpo's normaliser B x L then is the step's B x fixed L); dapo passes the
    step's active-token count (generated tokens only, ``token_mask`` respected); bnpo is
    per micro-batch by definition (as TRL's): each part's own token mean, weighted by its
    share of sequences.  A batch that fits in one micro-batch is one call with today's
    arguments (no ``scale`` / ``num_active_tokens``), so results stay bit-identical.
    Sequences with zero advantage still count in the denominators (as TRL does).
    """
    from coevo.rl.grpo import active_tokens, combine_metrics, micro_batch_args

    n = len(comps)
    if n == 0:
        return {"skipped": 1.0}
    if len(advantages) != n:
        raise ValueError(f"{n} completions but {len(advantages)} advantages")
    if micro_batch < 1:
        raise ValueError(f"micro_batch must be >= 1, got {micro_batch}")
    if n <= micro_batch:
        # 0.0 + v as before (turns -0.0 into 0.0 and ints into floats: ledger rows unchanged)
        metrics = {k: 0.0 + v for k, v in policy.forward_backward(comps, advantages, loss).items()}
    else:
        n_active = [active_tokens(c) for c in comps]
        total = sum(n_active)
        parts = []
        for i in range(0, n, micro_batch):
            part = comps[i:i + micro_batch]
            scale, n_tok = micro_batch_args(loss.aggregation, len(part), n, total)
            m = policy.forward_backward(part, advantages[i:i + micro_batch], loss, scale=scale,
                                        num_active_tokens=n_tok)
            parts.append((m, len(part), sum(n_active[i:i + micro_batch])))
        metrics = combine_metrics(parts, loss.aggregation)
    metrics.update(policy.optim_step())
    return metrics


def to_groups(values: Sequence[float], group_size: int) -> torch.Tensor:
    return torch.tensor(list(values), dtype=torch.float32).view(-1, group_size)
