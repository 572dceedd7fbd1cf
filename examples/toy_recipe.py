"""A three-role toy recipe on a multi-turn tool world: how to add a recipe to coevo.

Adding a recipe is this module plus one preset file (``examples/toy_recipe.yaml``); nothing in
the runner, CLI, config or report changes.  Run it from the repository root (the module must
be importable, here as ``examples.toy_recipe``):

    coevo run --preset examples/toy_recipe.yaml

Roles (``RECIPES["toy"].roles``): a **proposer** writes lookup questions (``<question>37+5
</question>``); a **solver** answers with the world's tool, multi-turn (``coevo.stages.rollout``):
its calls end at ``;`` and the world inserts the looked-up value (masked from the loss); a
frozen **helper** (a second solver, never updated) answers the same tasks as a second opinion.
Rewards: solver = its answer matches the oracle (a toy: the world knows the truth); proposer =
1 - |p_solver - p_helper| where the two solvers' pass rates differ most it scores least (a
made-up rule, for the example only).  The report gets this recipe's own section (``section``).
"""
from __future__ import annotations

import html
import json
from pathlib import Path

import numpy as np
from pydantic import Field

from coevo.config import Strict
from coevo.ledger import views
from coevo.ledger.store import StepWriter, task_row
from coevo.recipes.base import RecipeBase, StepSpec, round_plan
from coevo.core.registry import RecipeInfo, RoleSpec
from coevo.stages.step import Draw, Scored, draw_group, propose, update_role
from coevo.worlds.scripted import ScriptedToolWorld
from coevo.core.world import ANSWER


class ToyConfig(Strict):
    rounds: int = Field(1, ge=1)
    steps_per_round: int = Field(2, ge=1)
    prompts: int = Field(4, ge=1, description="proposer prompts per step")
    group: int = Field(2, ge=1, description="proposals per prompt (the proposer's GRPO group)")
    k: int = Field(4, ge=2, description="rollouts per task and solver role")
    max_turns: int = Field(2, ge=0, description="tool calls per episode")


class ToyToolWorld(ScriptedToolWorld):
    """The scripted lookup world with ``;`` as the tool stop, a character the tiny solvers write."""

    name = "toy-tools"

    def tool_stops(self, kind: str) -> list[str]:
        return [";"] if kind == ANSWER else []

    def run_tool(self, context, text_so_far: str) -> str | None:
        if not text_so_far.endswith(";"):
            return None
        digits = "".join(ch for ch in text_so_far[-4:-1] if ch.isdigit())
        return f"={self.table[int(digits) % len(self.table)]};" if digits else "=;"

    @classmethod
    def from_config(cls, cfg) -> "ToyToolWorld":
        return cls(**cfg.world.options)


class ToyRecipe(RecipeBase):
    name = "toy"

    def __init__(self, cfg, world, policies: dict, run_id: str, verifier) -> None:
        super().__init__(cfg, world, policies, run_id, verifier)
        self.proposer, self.helper = policies["proposer"], policies["helper"]
        self.max_turns = cfg.toy.max_turns  # tool calls per episode (training and evaluation)

    def plan(self) -> list[StepSpec]:
        return round_plan(self.cfg.toy.rounds, [("train", self._train, self.cfg.toy.steps_per_round)], self._eval)

    def proposer_reward(self, mu_solver: float, mu_helper: float) -> float:
        """The proposer's reward for a task from the two solvers' pass rates (a made-up rule)."""
        return 1.0 - abs(mu_solver - mu_helper)

    def _train(self, spec: StepSpec, w: StepWriter) -> dict:
        tc, ctx = self.cfg.toy, self.ctx.at(spec)
        props = propose(ctx, self.proposer, tc.prompts, tc.group, id_prefix=f"s{spec.step}",
                        seed=self.cfg.seed + spec.step)
        ids = [p.task.task_id if p.task else f"s{spec.step}-{p.group}-{i % tc.group}" for i, p in enumerate(props)]
        valid = [i for i, p in enumerate(props) if p.parsed.ok]
        tasks = [props[i].task for i in valid]
        truths = {"oracle": [self.world.oracle(t) for t in tasks]}
        solved = draw_group(ctx, self.solver, tasks, tc.k, "solve", truths, Draw(sampler=self.solve_sampler()))
        helped = draw_group(ctx, self.helper, tasks, tc.k, "helper", truths,
                            Draw(role="helper", sampler=self.solve_sampler()))
        w.extend(solved.rows)
        w.extend(helped.rows)
        s_rewards = np.array([1.0 if v.value == 1 else 0.0 for vs in solved.verdicts.get("oracle", []) for v in vs])
        up_s = update_role(ctx, self.solver, "solver", solved.scored(s_rewards))
        p_rewards = np.zeros(len(props))
        for j, i in enumerate(valid):
            p_rewards[i] = self.proposer_reward(solved.mu("oracle", j), helped.mu("oracle", j))
        up_p = update_role(ctx, self.proposer, "proposer",
                           Scored([p.completion for p in props], p_rewards, ids, group_size=tc.group))
        w.extend(up_s.rows)
        w.extend(up_p.rows)
        w.add("tasks", [task_row(self.run_id, spec.round, spec.step, ids[i], "proposer", p.completion,
                                 self.world.prompt_version, p.task, p.parsed.reason,
                                 self.world.oracle(p.task) if p.task else None) for i, p in enumerate(props)])
        comps = solved.completions()
        return {"n_tasks": len(tasks), "solver_reward_mean": float(s_rewards.mean()) if len(s_rewards) else None,
                "proposer_reward_mean": float(p_rewards.mean()),
                "tool_calls_per_rollout": float(np.mean([c.meta.get("tool_calls", 0) for c in comps])) if comps else None}


def section(led, run_id: str, run_dir: Path) -> str:
    """This recipe's report section: per step, rollouts, tool segments, masked tokens, versions."""
    rows = views.rollout_segment_counts(led, run_id)
    versions = views.step_versions(led, run_id)
    body = "".join(f"<tr><td>{r['step']}</td><td>{html.escape(r['role'])}</td><td>{r['rollouts']}</td>"
                   f"<td>{r['env_segments']}</td><td>{r['masked_tokens']}</td>"
                   f"<td>{html.escape(json.dumps(versions.get(r['step'], {}), sort_keys=True))}</td></tr>"
                   for r in rows)
    return ("<h2>Toy recipe: multi-turn rollouts</h2><table><tr><th>step</th><th>role</th><th>rollouts</th>"
            "<th>tool (env) segments</th><th>masked tokens</th><th>role versions after the step</th></tr>"
            f"{body}</table>")


RECIPES = {"toy": RecipeInfo(
    name="toy", factory=ToyRecipe,
    roles=(RoleSpec("solver", asset="solver"), RoleSpec("proposer", asset="challenger", seed_offset=1,
                                                         lr="lr_challenger"),
           RoleSpec("helper", asset="solver", seed_offset=2, trainable=False)),
    sections={"toy": ToyConfig}, worlds=("examples.toy_recipe:ToyToolWorld",),
    summary_columns=("solver_reward_mean", "proposer_reward_mean"),
    report_sections=(section,),
    description="three roles, multi-turn tool rollouts (an example of adding a recipe)")}
