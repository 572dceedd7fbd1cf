"""Arithmetic world whose Reasoner pass rates follow a known law: the instrument control of RGBC's P1 / P2
(issue 30 item 3; RGBC proposal §predictions, §core idea).

The Synthesizer still writes arithmetic tasks (``ArithmeticWorld``), but the Reasoner's answers are scripted:
each accepted task gets a true solve probability p drawn from ``law`` (from a hash of the world seed, the run
seed and the task id, so the Synthesizer cannot steer it), and each rollout is the task's reference answer with
probability p, else a wrong integer (from a hash of the task, the draw's key and the rollout's index: runs are
deterministic and resume to the same answers). A recipe uses the scripted answers through
``scripted_sampler(key)`` (the ``sampler`` of ``coevo.stages.step.draw_group``); no model samples them, so
there is nothing to train the Reasoner on (the RGBC recipe refuses it unless ``synco.reasoner_updates=false``).
Held-out evaluation is the real (frozen) Reasoner's, on the arithmetic world's set.

Laws (both symmetric about 0.5, so the mean pass rate is 0.5 in both; B ~ Beta(2, 2), the median of three
uniforms; the proposal's bounds: frontier pools, p in [.25, .75], give kappa-bar 0.68-0.875, pools with p
outside [.1, .9] give <= 0.344):

- ``unimodal``: p = 0.25 + 0.5 B, one mode at 0.5, support [0.25, 0.75] (a frontier pool);
- ``bimodal``: p = 0.1 B or 1 - 0.1 B with probability 1/2 each, modes 0.05 and 0.95, support [0, .1] u [.9, 1].

``law_truth(law, k)`` gives each law's kappa-bar E[m(p)^2] / E[m(p)] and its (all-correct, bearing, all-wrong)
triple at group size k (quadrature): unimodal 0.839, (0.082, 0.837, 0.082); bimodal 0.215, (0.409, 0.183,
0.409) at k = 4. Both triples are reproduced by a two-point pool within 0.02 points (``null_fit_error``), as
every pool's triple is (the proposal's existence inversion): P2 is expected not to tell the laws apart.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Callable, ClassVar

import numpy as np

from coevo.core.policy import Completion
from coevo.core.world import Task
from coevo.worlds.arithmetic import ArithmeticWorld

__all__ = ["ArithmeticLawWorld", "LAWS", "law_truth", "draw_pass_rate", "WORLD_REF"]

LAWS = ("unimodal", "bimodal")
WORLD_REF = "coevo.worlds.arithmetic_law:ArithmeticLawWorld"  # its world.name ('module:Class')


def _uniforms(*parts, n: int = 1) -> list[float]:
    """n uniforms in [0, 1) from a hash of ``parts`` (8 bytes each)."""
    h = hashlib.blake2b("|".join(str(p) for p in parts).encode(), digest_size=8 * n).digest()
    return [int.from_bytes(h[8 * i:8 * i + 8], "big") / 2.0 ** 64 for i in range(n)]


def draw_pass_rate(law: str, u: list[float]) -> float:
    """p of one task from four uniforms: B = the median of the first three (Beta(2, 2)), the fourth picks the
    bimodal law's mode."""
    b = sorted(u[:3])[1]
    if law == "unimodal":
        return 0.25 + 0.5 * b
    if law == "bimodal":
        return 0.1 * b if u[3] < 0.5 else 1.0 - 0.1 * b
    raise ValueError(f"unknown pass-rate law {law!r}; known: {', '.join(LAWS)}")


def law_truth(law: str, k: int = 4, grid: int = 20001) -> dict:
    """The law's kappa-bar = E[m_k(p)^2] / E[m_k(p)] and its triple (E p^k, E m_k(p), E (1 - p)^k) (midpoint
    quadrature over B's density 6 b (1 - b))."""
    if law not in LAWS:
        raise ValueError(f"unknown pass-rate law {law!r}; known: {', '.join(LAWS)}")
    b = (np.arange(grid) + 0.5) / grid
    dens = 6 * b * (1 - b)
    ps = 0.25 + 0.5 * b if law == "unimodal" else np.concatenate([0.1 * b, 1 - 0.1 * b])
    w = dens if law == "unimodal" else np.concatenate([dens, dens])
    m = 1 - ps ** k - (1 - ps) ** k
    mean = lambda f: float((f * w).sum() / w.sum())  # noqa: E731
    return {"kappa_bar": mean(m * m) / mean(m), "all_correct": mean(ps ** k), "bearing": mean(m),
            "all_wrong": mean((1 - ps) ** k), "p_mean": mean(ps)}


@dataclass
class ArithmeticLawWorld(ArithmeticWorld):
    """``ArithmeticWorld`` with scripted Reasoner answers whose per-task pass rate follows ``law``."""

    law: str = "unimodal"
    seed: int = 0  # with the run seed, decides every draw
    name: str = "arithmetic-law"
    scripted: ClassVar[bool] = True

    def __post_init__(self) -> None:
        if self.law not in LAWS:
            raise ValueError(f"world.options.law: unknown pass-rate law {self.law!r}; known: {', '.join(LAWS)}")

    @classmethod
    def option_names(cls) -> frozenset:
        return frozenset({"law", "seed"})

    @classmethod
    def from_config(cls, cfg) -> "ArithmeticLawWorld":
        opts = dict(cfg.world.options or {})
        return cls(eval_per_level=cfg.world.eval_per_level, eval_seed=cfg.world.eval_seed,
                   law=str(opts.get("law", "unimodal")), seed=int(opts.get("seed", 0)) * 1_000_003 + int(cfg.seed))

    def pass_rate(self, task: Task) -> float:
        """The task's true solve probability (a function of the task id, not of its text)."""
        return draw_pass_rate(self.law, _uniforms("p", self.seed, task.task_id, n=4))

    def scripted_answer(self, task: Task, key: str) -> str:
        """One rollout's text: the reference with probability p, else the reference + d, d in +-{1..9}."""
        u, v = _uniforms("a", self.seed, task.task_id, key, n=2)
        ref = task.reference
        if ref is None:
            return ""
        if u < self.pass_rate(task):
            return ref
        d = 1 + int(v * 18)
        return str(int(ref) + (d if d <= 9 else 9 - d))

    def scripted_sampler(self, key: str) -> Callable:
        """``sampler(policy, world, tasks, n, sampling)`` of one draw (``key``: step, purpose, offset): n scripted
        completions per task, no model call."""
        def sample(policy, world, tasks, n, sampling) -> list[list[Completion]]:
            version = getattr(policy, "version", "")
            return [[Completion(prompt=self.solver_prompt(t), text=self.scripted_answer(t, f"{key}:{k}"),
                                prompt_ids=[], token_ids=[], logprobs=[], finish_reason="stop",
                                policy_version=version, meta={"scripted": self.law}) for k in range(n)]
                    for t in tasks]
        return sample
