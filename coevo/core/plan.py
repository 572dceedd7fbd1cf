"""A run's plan: numbered steps, each a (round, phase, phase step) and the step function that runs it."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

# a step function: (spec, writer) -> the step's metrics
StepFn = Callable[["StepSpec", Any], dict]


@dataclass(frozen=True)
class StepSpec:
    step: int  # global step index (0 = initial evaluation)
    round: int
    phase: str  # eval | challenger | dataset | solver | ... (the name the ledger records)
    phase_step: int
    run: StepFn | None = field(default=None, compare=False, repr=False)  # the recipe's function for the step


def round_plan(rounds: int, phases: Sequence[tuple[str, StepFn, int]], evaluate: StepFn) -> list[StepSpec]:
    """Numbered steps: an initial evaluation, then per round each phase's steps in order
    followed by an evaluation. ``phases``: [(phase name, step function, steps per round), ...];
    ``evaluate``: the evaluation's step function (phase ``eval``)."""
    specs = [(0, "eval", evaluate, 0)]
    for r in range(1, rounds + 1):
        for phase, fn, n in phases:
            specs += [(r, phase, fn, i) for i in range(n)]
        specs.append((r, "eval", evaluate, 0))
    return [StepSpec(i, r, phase, k, fn) for i, (r, phase, fn, k) in enumerate(specs)]


def renumber(specs: Sequence[StepSpec]) -> list[StepSpec]:
    """The same steps numbered 0, 1, ... in the given order (a plan with a step inserted)."""
    return [replace(s, step=i) for i, s in enumerate(specs)]
