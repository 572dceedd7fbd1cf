"""What every recipe provides to the runner, and the stages recipes share."""
from __future__ import annotations

from coevo.core.plan import StepSpec, renumber, round_plan  # noqa: F401 (recipes import them from here)
from coevo.core.policy import LossConfig, SamplingParams
from coevo.audit.truth import truth_from_config
from coevo.config import RunConfig
from coevo.ledger.store import StepWriter
from coevo.stages.evaluate import evaluate_solver
from coevo.stages.step import StepContext
from coevo.stages.rollout import solve_multiturn, tool_stops
from coevo.core.world import ANSWER, World


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
    """What the runner calls on a recipe: ``plan()`` (steps that hold their step functions: the loop
    calls ``spec.run(spec, writer)``), ``state_dict()`` / ``load_state_dict()``.  Holds the run's
    world, policies by role, verifier, loss and sampling settings, and ``ctx``: the ``StepContext``
    its stages take (``self.ctx.at(spec)``: at a step); every recipe evaluates its ``solver`` role
    on the world's held-out set in phase ``eval``."""

    name = "base"
    solver_role = "solver"
    max_turns = 4  # tool calls per episode when the world has tools (solve_sampler)

    def __init__(self, cfg: RunConfig, world: World, policies: dict, run_id: str, verifier) -> None:
        self.cfg, self.world, self.run_id, self.verifier = cfg, world, run_id, verifier
        self.policies = policies
        self.solver = policies[self.solver_role]
        self.loss = loss_config(cfg)
        self.sp = sampling_params(cfg)
        self.eval_tasks = list(world.eval_set())
        self.truth = truth_from_config(getattr(cfg, "truth", None), verifier)  # no-oracle truth (judge / file)
        self.ctx = StepContext(run_id=run_id, world=world, verifier=verifier, sampling=self.sp, loss=self.loss,
                               advantage_scale=cfg.loss.advantage_scale)

    def plan(self) -> list[StepSpec]:  # pragma: no cover - every recipe defines it
        raise NotImplementedError

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, st: dict) -> None:
        pass

    def solve_sampler(self):
        """How the solver samples: single-turn, or multi-turn episodes when the world has tools."""
        if tool_stops(self.world, ANSWER):
            return lambda pol, world, tasks, n, sp: solve_multiturn(pol, world, tasks, n, sp,
                                                                    max_turns=self.max_turns)
        return None

    def _eval(self, spec: StepSpec, w: StepWriter) -> dict:
        acc = evaluate_solver(self.ctx.at(spec), self.solver, self.eval_tasks, w, greedy=self.cfg.eval.greedy,
                              samples=self.cfg.eval.samples, sampler=self.solve_sampler())
        return {"eval": acc}
