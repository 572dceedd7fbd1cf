"""Majority vote over answers grouped by equivalence (R-Zero pseudo-labels, consensus, MSV)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np


@dataclass
class Vote:
    label: str | None  # majority answer (pseudo-label)
    p_hat: float  # share of the m answers equal to the label
    answers: list[str | None]
    agree: list[bool]  # each answer equivalent to the label
    n_distinct: int


def majority_vote(answers: Sequence[str | None], equivalent: Callable[[str, str], bool],
                  none_votes: bool = False) -> Vote:
    """Group answers by equivalence and take the largest group (ties: first seen).

    ``none_votes``: whether "no extractable answer" counts as a vote (R-Zero's code
    counts its no-\\boxed sentinel; default here: it does not, and p_hat keeps the
    full m in its denominator either way).
    """
    reps: list[str | None] = []
    counts: list[int] = []
    member: list[int] = []
    for a in answers:
        if a is None and not none_votes:
            member.append(-1)
            continue
        for i, r in enumerate(reps):
            if (a is None and r is None) or (a is not None and r is not None and equivalent(a, r)):
                counts[i] += 1
                member.append(i)
                break
        else:
            reps.append(a)
            counts.append(1)
            member.append(len(reps) - 1)
    if not counts:
        return Vote(None, 0.0, list(answers), [False] * len(answers), 0)
    best = int(np.argmax(counts))
    agree = [m == best for m in member]
    return Vote(reps[best], counts[best] / max(len(answers), 1), list(answers), agree, len(reps))
