"""Typed per-task state of a SynCo/RGBC step (``coevo.recipes.rgbc``): one ``Candidate`` per
Synthesizer output, one ``TaskState`` per accepted task (SynCo; RGBC proposal)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from coevo.core.policy import Completion
from coevo.recipes.rgbc.validate import Consensus, Validation
from coevo.core.world import Task

__all__ = ["TaskState", "Candidate", "match_share", "interim_tasks"]


@dataclass
class TaskState:
    """One accepted task through the step: its groups, statistics and audit values."""

    index: int  # position in the step's Synthesizer outputs
    task: Task
    truth: str | None
    outs: list = field(default_factory=list)  # screen group: completions, answers, formats, verdicts
    answers: list = field(default_factory=list)
    formatted: list = field(default_factory=list)
    verdicts: list = field(default_factory=list)  # screen answers vs the reference
    mu1: float = float("nan")
    true_p: float | None = None
    p_ref: float | None = None
    conf_answers: list | None = None  # confirm group (training or instrument)
    conf_verdicts: list | None = None
    conf_purpose: str = ""
    conf_timing: str = ""
    mode: str | None = None  # mode of the 2K answers, its share, nu, in the doubt bucket
    share: float | None = None
    nu: float | None = None
    in_doubt: bool | None = None
    anchor: str | None = None
    dropped: bool = False
    doubt_screen: bool | None = None  # rgbc.doubt_screen: in the bucket by the K screen answers (None: not decided)
    mu_post: float | None = None
    post_purpose: str = ""
    p_post: float | None = None
    p_ref_post: float | None = None
    mu_null: float | None = None  # independent pre-update group of the same task: the lag's zero-learning null
    null_source: str = ""  # confirm | confirm-instrument (pre-timing confirm group) | lag-null (audit draw)
    majority: dict | None = None  # solver_majority / _share / solver_agrees over all the task's solves (FF)

    @property
    def reference(self) -> str | None:
        return self.task.reference

    @property
    def bearing(self) -> bool:
        return 0 < self.mu1 < 1

    @property
    def mu_confirm(self) -> float | None:
        return match_share(self.conf_verdicts) if self.conf_verdicts is not None else None


@dataclass
class Candidate:
    """One Synthesizer output: validation, oracle facts, consensus, and (if accepted) its task."""

    task_id: str
    completion: Completion
    group: int  # the Synthesizer prompt (GRPO group) it came from
    validation: Validation
    truth: str | None = None
    reference_correct: bool | None = None
    consensus: Consensus | None = None
    state: TaskState | None = None


def match_share(verdicts) -> float:
    """Share of verdicts with value 1 (NaN for an empty group)."""
    return float(np.mean([v.value == 1 for v in verdicts])) if verdicts else float("nan")


def interim_tasks(tasks: list[Task], n: int) -> list[Task]:
    """The first n held-out tasks of each level (``meta["difficulty"]``), in the set's order
    (``synco.eval_interim_per_level``)."""
    seen: dict = {}
    out = []
    for t in tasks:
        d = t.meta.get("difficulty")
        if seen.get(d, 0) < n:
            seen[d] = seen.get(d, 0) + 1
            out.append(t)
    return out
