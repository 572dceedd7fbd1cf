"""CrossFit folds (False Frontiers (CrossFit)): which auxiliary solver scores which question.

The corpus is split by source id into two folds A and B; one auxiliary solver per fold
(roles ``aux_a``, ``aux_b``) trains only on its fold's accepted questions and, with
``retrieve_in_fold``, retrieves only from its fold's sources; a fold-A question is scored
by the fold-B auxiliary solver and vice versa.  The fold *strategy* is False Frontiers' ablation
(the fold ablation, fixed question-bank replay):

- ``source-id`` (the method): questions fold by their source's fold; the scorer is the other
  fold's solver and never retrieves the question's source;
- ``random-question``: questions fold by a hash of their id (no source isolation: the scorer
  may have trained on, and retrieves from, the question's source);
- ``same-source``: questions fold by source, but the scorer is the *same* fold's solver
  (no isolation at all: False Frontiers' "auxiliary solver with the question's source").

Everything here is a pure function of ids and a seed, so the loop and the ablation
(``crossfit.replay``, the fold ablation of ``experiments.py``) assign folds identically.
"""
from __future__ import annotations

import hashlib
import random
from dataclasses import replace
from typing import Collection, Sequence

from coevo.core.world import Task

FOLD_STRATEGIES = ("same-source", "random-question", "source-id")
AUX_ROLES = ("aux_a", "aux_b")  # the auxiliary solver of fold 0 (A) and fold 1 (B)


def source_folds(sources: Collection[str], seed: int = 0) -> dict[str, int]:
    """Source id -> fold 0 / 1: a seeded shuffle of the sorted ids, alternately assigned
    (fold sizes differ by at most one)."""
    order = sorted(sources)
    random.Random(seed).shuffle(order)
    return {s: i % 2 for i, s in enumerate(order)}


def question_fold(task_id: str, source_id: str, strategy: str, folds: dict[str, int], seed: int = 0) -> int:
    """The fold of a question: its source's fold, or (``random-question``) a seeded hash of its id."""
    if strategy not in FOLD_STRATEGIES:
        raise ValueError(f"fold strategy must be one of {FOLD_STRATEGIES}, got {strategy!r}")
    if strategy == "random-question":
        return int(hashlib.sha256(f"{seed}:{task_id}".encode()).hexdigest(), 16) % 2
    return folds[source_id]


def scorer_fold(fold: int, strategy: str) -> int:
    """Whose auxiliary solver scores a question of ``fold``: the other fold's, or (``same-source``) its own."""
    return fold if strategy == "same-source" else 1 - fold


def retrieval_sources(fold: int, strategy: str, folds: dict[str, int], retrieve_in_fold: bool) -> frozenset | None:
    """The sources fold ``fold``'s auxiliary solver may retrieve from (None = all): its fold's
    sources when ``retrieve_in_fold`` and the folds are source folds; ``random-question`` folds
    are not source sets, so that strategy retrieves from everything."""
    if not retrieve_in_fold or strategy == "random-question":
        return None
    return frozenset(s for s, f in folds.items() if f == fold)


def with_sources(task: Task, sources: Collection[str] | None) -> Task:
    """A copy of ``task`` whose tool calls retrieve only from ``sources`` (the world reads
    ``task.meta["retrieve_sources"]``); the task itself is unchanged."""
    if sources is None:
        return task
    return replace(task, meta={**task.meta, "retrieve_sources": frozenset(sources)})


def split_by_fold(items: Sequence[dict]) -> tuple[list[dict], list[dict]]:
    """Accepted-question records (each with ``fold``) of fold A and of fold B."""
    return [d for d in items if d["fold"] == 0], [d for d in items if d["fold"] == 1]
