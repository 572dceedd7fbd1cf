"""A run's plan: numbered steps, each a (round, phase, phase step)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence


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
