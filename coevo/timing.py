"""Per-stage seconds of one step: where the loop's time goes (sample, verify, reward, update,
ledger, eval, state, other), recorded per step in the ledger (``steps.stage_seconds_json``).

The runner opens one ``record()`` per step; the shared stages mark their parts with
``stage(name)``.  Stages nest *exclusively*: a stage's seconds are its own time minus the
time of the stages opened inside it, so the stages of a step add up to its total (the
runner wraps the step function ``spec.run`` in ``stage("reward")``: what is left of it after sampling,
verification and updates is the recipe's own work: votes, filters, reward formulas, rows).
Two exceptions: a stage opened inside a stage of the same name adds nothing of its own
(``draw_group``'s "sample" around the backend's "sample"), and everything inside ``eval``
counts as eval.  ``model_compute()`` is a separate, overlapping counter: seconds of model
forward / backward passes wherever they happen (inside sample, update or eval).

Only the thread that opened the record is timed (the openai backend's request threads and
the verifier pool's workers are not: their time shows up in the stage that waits for
them).  Outside a record every call is a no-op, so library use costs nothing.
"""
from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Iterator

STAGES = ("sample", "verify", "reward", "update", "ledger", "eval", "state")
ABSORBING = ("eval",)  # stages that count everything opened inside them as their own
MODEL_KEY = "model_compute"  # overlapping counter (not one of the stages that add up)

_local = threading.local()


class StepTimes:
    """The seconds of one step: ``seconds[stage]``, ``model`` (overlapping) and the total."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.model = 0.0
        self.stack: list[list] = []  # open stages: [name, start, seconds of stages inside]
        self.t0 = time.perf_counter()
        self.total: float | None = None

    def as_dict(self) -> dict[str, float]:
        """``{stage: s, ..., "other": s, "total": s, "model_compute": s}``; "other" = total minus
        the named stages (the runner's own bookkeeping between them)."""
        total = self.total if self.total is not None else time.perf_counter() - self.t0
        out = {k: round(v, 6) for k, v in sorted(self.seconds.items())}
        out["other"] = round(max(0.0, total - sum(self.seconds.values())), 6)
        out["total"] = round(total, 6)
        out[MODEL_KEY] = round(self.model, 6)
        return out


def current() -> StepTimes | None:
    """The record open in this thread, or None."""
    return getattr(_local, "rec", None)


@contextmanager
def record() -> Iterator[StepTimes]:
    """Time one step (this thread): the ``StepTimes`` the stages inside add to."""
    prev = current()
    rec = StepTimes()
    _local.rec = rec
    try:
        yield rec
    finally:
        rec.total = time.perf_counter() - rec.t0
        _local.rec = prev


@contextmanager
def stage(name: str) -> Iterator[None]:
    """Count the time inside as ``name`` (minus the stages opened inside it; see the module doc)."""
    rec = current()
    if rec is None or any(f[0] == name or f[0] in ABSORBING for f in rec.stack):
        yield
        return
    frame = [name, time.perf_counter(), 0.0]
    rec.stack.append(frame)
    try:
        yield
    finally:
        rec.stack.pop()
        dt = time.perf_counter() - frame[1]
        rec.seconds[name] = rec.seconds.get(name, 0.0) + dt - frame[2]
        if rec.stack:
            rec.stack[-1][2] += dt


@contextmanager
def model_compute() -> Iterator[None]:
    """Count the time inside as model compute (forward / backward passes); overlaps the stages."""
    rec = current()
    if rec is None:
        yield
        return
    t = time.perf_counter()
    try:
        yield
    finally:
        rec.model += time.perf_counter() - t

