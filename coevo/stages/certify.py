"""Drawing the zero-training certificate's groups (RGBC proposal §method step 1): screen groups of
K rollouts for every task, confirm groups for the screen-bearing ones, all through the one
sample -> extract -> verify stage (``coevo.stages.step.sample_verify``) on the audit stream, so no
training RNG moves.  The certificate's numbers are the audit's pure functions over these
groups (``coevo.audit.certify.certificate_from_groups``); ``coevo certify`` calls ``certify``.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Optional, Sequence

import numpy as np

from coevo.audit.certify import CertifyError, certificate_from_groups
from coevo.core.verdict import completion_errors, first_cause, is_error
from coevo.stages import step as sv
from coevo.stages.step import Draw, StepContext

CHUNK = 16  # prompts per sampling call
REF = "reference"  # the stage's target name: each task's reference answer

DrawFn = Callable[[list[int]], "tuple[list[list[Optional[str]]], Sequence[float]]"]


def screen_confirm(draw: DrawFn, n: int) -> dict:
    """Screen groups for all ``n`` tasks, confirm groups for the bearing ones (0 < mu_1 < 1).

    ``draw(task_indices)`` -> (per task its K extracted answers, per task the share judged
    correct).  Returns ``{"screen", "confirm", "mu_screen", "mu_confirm"}`` (confirm answers
    [] and mu NaN where no confirm group was drawn)."""
    screen, mu1 = draw(list(range(n)))
    mu1 = np.asarray(mu1, dtype=float)
    bearing = [i for i in range(n) if 0 < mu1[i] < 1]
    confirm_ans: list[list[Optional[str]]] = [[] for _ in range(n)]
    mu2 = np.full(n, np.nan)
    if bearing:
        drawn, vals = draw(bearing)
        for j, i in enumerate(bearing):
            confirm_ans[i], mu2[i] = drawn[j], vals[j]
    return {"screen": screen, "confirm": confirm_ans, "mu_screen": mu1, "mu_confirm": mu2}


def draw_groups(sample: Callable[[list[int]], list[list[Optional[str]]]],
                judge_many: Callable[[list[tuple[Optional[str], str]]], list[int]],
                references: Sequence[str], k: int) -> dict:
    """``screen_confirm`` for a scripted sampler (simulated pools, tests): ``sample(task_indices)``
    -> per task K answers (None = no answer); ``judge_many(pairs)`` -> 1/0 per (answer,
    reference) pair (an abstention is 0)."""
    def draw(idx: list[int]):
        groups = sample(idx)
        pairs = [(a, references[i]) for g, i in zip(groups, idx) for a in g]
        vals = judge_many(pairs) if pairs else []
        mu, pos = [], 0
        for g in groups:
            mu.append(float(np.mean(vals[pos:pos + len(g)])) if g else float("nan"))
            pos += len(g)
        return groups, mu

    return screen_confirm(draw, len(references))


def mode_flags(verifier, groups: dict, references: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per bearing task, whether the 2K-answer mode (grouped by the verifier) matches the reference,
    and the mode's share; NaN elsewhere."""
    n = len(references)
    agrees, share = np.full(n, np.nan), np.full(n, np.nan)
    idx = [i for i in range(n) if np.isfinite(groups["mu_confirm"][i])]
    if not idx:
        return agrees, share
    votes = verifier.majority_votes([list(groups["screen"][i]) + list(groups["confirm"][i]) for i in idx])
    checks = verifier.match_many([(v.label, references[i]) for v, i in zip(votes, idx)])
    for v, i, chk in zip(votes, idx, checks):
        agrees[i] = 1.0 if (v.label is not None and chk.value == 1) else 0.0
        share[i] = v.p_hat
    return agrees, share


def pass_rates(ctx: StepContext, policy, tasks: Sequence[Any], n: int) -> list[float]:
    """Plug-in pass rate per task from ``n`` samples (the stage, ``CHUNK`` prompts per call)."""
    got = sv.sample_verify(ctx, policy, tasks, n, {REF: [t.reference for t in tasks]}, Draw(chunk=CHUNK))
    return got.mus(REF)


def certify(ctx: StepContext, policy, tasks: Sequence[Any], k: int = 4, batch: int = 32,
            doubt_stable: float = 0.75, truth_p: Optional[Sequence[float]] = None, chunk: int = CHUNK,
            n_boot: int = 1000, seed: int = 0, progress: Optional[Callable[[str], None]] = None) -> dict:
    """The certificate of a frozen ``policy`` on ``tasks`` (the context's world: ``solver_prompt``
    prompts, ``extract_answer`` answers; its verifier: ``match_many`` judgements; its sampling, on the
    audit stream so no training RNG moves).  ``errors``: the model-server calls (one per task and group) that
    failed after their retries; a task one of whose groups a failed call touched is left out of every
    number (``errors["excluded_tasks"]``), so an error never counts as a wrong answer (a first batch that
    fails whole stops the certificate: ``EndpointDown``)."""
    if k < 2:
        raise CertifyError(f"k must be >= 2, got {k}")
    if not tasks:
        raise CertifyError("the task pool is empty")
    tasks = list(tasks)
    refs = [t.reference for t in tasks]
    if any(r is None for r in refs):
        raise CertifyError("every task needs a reference answer")
    world, verifier = ctx.world, ctx.verifier
    t0 = time.time()
    report = (lambda done, total: progress(f"sampled {done}/{total} tasks")) if progress else None

    errors = {"failed": 0, "calls": 0, "first": ""}  # model-server calls that failed after retries (openai)

    def draw(idx: list[int]):
        got = sv.sample_verify(ctx, policy, [tasks[i] for i in idx], k, {REF: [refs[i] for i in idx]},
                               Draw(stream="audit", chunk=chunk, progress=report))
        failed, calls = completion_errors(got.outs)
        errors["failed"] += failed
        errors["calls"] += calls
        errors["first"] = errors["first"] or next((first_cause(c) for g in got.outs for c in g if is_error(c)), "")
        lost.update(i for i, g in zip(idx, got.outs) if any(is_error(c) for c in g))
        return got.answers, got.mus(REF)

    lost: set[int] = set()  # tasks a failed call touched: left out of the certificate, never scored as wrong
    groups = screen_confirm(draw, len(tasks))
    if lost:
        keep = [i for i in range(len(tasks)) if i not in lost]
        if not keep:
            raise CertifyError(f"every task lost a group to a failed model-server call ({errors['first']})")
        groups = {key: [v[i] for i in keep] if isinstance(v, list) else np.asarray(v)[keep]
                  for key, v in groups.items()}
        tasks, refs = [tasks[i] for i in keep], [refs[i] for i in keep]
        truth_p = None if truth_p is None else [truth_p[i] for i in keep]
    errors["excluded_tasks"] = len(lost)
    agrees, share = mode_flags(verifier, groups, refs)
    out = certificate_from_groups(groups, k, batch=batch, mode_agrees=agrees, mode_share=share,
                                  doubt_stable=doubt_stable, truth_p=truth_p, n_boot=n_boot, seed=seed)
    out.update(policy_version=getattr(policy, "version", ""), world=world.name,
               verifier_kind=verifier.kind, seconds=round(time.time() - t0, 2), errors=errors,
               tasks=[{"task_id": t.task_id, "mu_screen": float(m1),
                       "mu_confirm": None if not np.isfinite(m2) else float(m2)}
                      for t, m1, m2 in zip(tasks, groups["mu_screen"], groups["mu_confirm"])])
    return out
