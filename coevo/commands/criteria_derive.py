"""Derive-then-verify construction of a criteria bank (CASA proposal §background, third channel; VG-OPD's rule).

An annotator policy solves each prompt.  Only when its final answer passes the endpoint
check do its intermediate checkpoints become criteria; every candidate that does not make
it into the bank is kept, with its reason, as a rejection row.

``derive_bank(world, tasks, answers, annotator="name")`` -> ``(entries, rejections)``:

* endpoint check: the world's ``final_value`` and ``final_unit`` criteria on the
  annotator's answer, through ``CriteriaScorer`` (no abstention channels: construction is
  offline); both 1 -> pass.  Fail -> every step becomes a rejection
  ``endpoint-failed``; an abstaining check -> ``endpoint-abstained:<reason>``; no answer ->
  one rejection ``no-answer``.
* on a pass, each step but the last (the endpoint itself) is a candidate: ``LHS=value
  unit`` gives ``step{k}`` (numeric_unit on ``step:k``; axis ``units`` when its unit differs
  from the step before, else ``arithmetic``) and ``expr{k}`` (sympy_equiv on ``expr:k``,
  axis ``method``).  A step without ``=`` or with an unparsable value is a rejection
  ``unparsable-step``; a step whose value has no unit ``no-unit``.
* an accepted entry holds the derived checkpoints plus the world's fixed ``final_value``,
  ``final_unit`` and ``wrong_unit`` (penalty) criteria.  ``meta["truth"]`` records, per
  derived checkpoint, whether it matches the generator's true intermediate value (a
  checkpoint can be wrong although the endpoint passed: compensating mistakes).

Rejection rows: ``{"prompt_id", "prompt", "annotator", "answer", "candidate", "reason"}``.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

from coevo.criteria.bank import BankEntry, Criterion
from coevo.criteria.scoring import CriteriaScorer
from coevo.criteria.verifier import split_steps
from coevo.stages.step import first_answers

ENDPOINT_IDS = ("final_value", "final_unit")
FIXED_IDS = ("final_value", "final_unit", "wrong_unit")


def _checkpoint(step: str, prev_unit: Optional[str], k: int) -> tuple[list[Criterion], Optional[str], str]:
    """(criteria, unit, reason) of step k: criteria empty and reason set when rejected."""
    from coevo.verify.checks import parse_quantity

    lhs, eq, rhs = step.partition("=")
    q = parse_quantity(rhs.strip()) if eq else None
    if not eq or q is None or not lhs.strip():
        return [], None, "unparsable-step"
    value, unit = q
    if not unit:
        return [], None, "no-unit"
    value = int(value) if float(value).is_integer() else value
    axis = "units" if prev_unit is not None and unit != prev_unit else "arithmetic"
    return [Criterion(id=f"step{k}", text=f"step {k} states {value} {unit}", weight=1.0, axis=axis,
                      kind="numeric_unit", locate=f"step:{k}", spec={"value": value, "unit": unit}),
            Criterion(id=f"expr{k}", text=f"step {k} computes {lhs.strip()}", weight=0.5, axis="method",
                      kind="sympy_equiv", locate=f"expr:{k}", spec={"expr": lhs.strip()})], unit, ""


def _reject(entry: BankEntry, annotator: str, answer: Optional[str], candidate: Any, reason: str) -> dict:
    return {"prompt_id": entry.id, "prompt": entry.prompt, "annotator": annotator, "answer": answer,
            "candidate": candidate, "reason": reason}


def _truths(world: Any, task: Any, crits: list[Criterion]) -> dict[str, bool]:
    """Derived numeric checkpoint -> does it hold on the generator's reference solution?"""
    from coevo.worlds.criteria import truth_of

    ref = world.entry(task).reference
    return {c.id: bool(truth_of(c, ref)) for c in crits if c.kind == "numeric_unit"}


def endpoint_verdicts(world: Any, tasks: Sequence[Any], answers: Sequence[Optional[str]],
                      scorer: Optional[CriteriaScorer] = None) -> list[list]:
    """The endpoint check's verdicts (``ENDPOINT_IDS``) per answer, through the scorer."""
    scorer = scorer or CriteriaScorer()
    items = []
    for t, a in zip(tasks, answers):
        full = world.entry(t)
        items.append((full.model_copy(update={"criteria": [full.criterion(i) for i in ENDPOINT_IDS]}), a))
    return scorer.score(items)


def derive_entry(world: Any, task: Any, answer: Optional[str], endpoint: list, annotator: str):
    """(entry or None, rejection rows) for one prompt given its endpoint verdicts."""
    full = world.entry(task)
    if answer is None:
        return None, [_reject(full, annotator, None, None, "no-answer")]
    steps = split_steps(answer)
    abst = [v for v in endpoint if v.value is None]
    if abst or not all(v.value == 1 for v in endpoint):
        reason = f"endpoint-abstained:{abst[0].reason}" if abst else "endpoint-failed"
        return None, [_reject(full, annotator, answer, s, reason) for s in steps[:-1] or steps]
    derived, rejected, prev = [], [], None
    for k, step in enumerate(steps[:-1], 1):
        crits, unit, reason = _checkpoint(step, prev, k)
        if reason:
            rejected.append(_reject(full, annotator, answer, step, reason))
            continue
        derived += crits
        prev = unit
    if not derived:
        rejected.append(_reject(full, annotator, answer, None, "no-checkpoints"))
        return None, rejected
    fixed = [full.criterion(i) for i in FIXED_IDS]
    entry = BankEntry(id=full.id, prompt=full.prompt, reference=answer, criteria=derived + fixed,
                      meta={"source": "derive", "annotator": annotator, "world": world.name,
                            "ref_len": len(answer), "truth": _truths(world, task, derived)})
    return entry, rejected


def derive_bank(world: Any, tasks: Sequence[Any], answers: Sequence[Optional[str]], annotator: str = "annotator",
                scorer: Optional[CriteriaScorer] = None) -> tuple[list[BankEntry], list[dict]]:
    """Derive-then-verify over ``tasks`` with the annotator's ``answers`` (same order)."""
    if len(tasks) != len(answers):
        raise ValueError(f"{len(tasks)} tasks but {len(answers)} answers")
    entries, rejections = [], []
    for t, a, ev in zip(tasks, answers, endpoint_verdicts(world, tasks, answers, scorer)):
        e, rej = derive_entry(world, t, a, ev, annotator)
        rejections += rej
        if e is not None:
            entries.append(e)
    return entries, rejections


def annotate(world: Any, tasks: Sequence[Any], annotator: str) -> list[Optional[str]]:
    """The annotator's answers: ``oracle`` (the generator's reference solutions), a shipped
    asset name (``criteria_expert_units`` ...: coevo/assets/NAME.pt) or a tiny checkpoint
    directory; greedy decoding."""
    from pathlib import Path

    if annotator == "oracle":
        return [world.entry(t).reference for t in tasks]
    from coevo.core.policy import SamplingParams
    from coevo.backends.tiny import TinyPolicy

    path = Path(annotator)
    if not path.exists():
        path = Path(__file__).resolve().parents[1] / "assets" / f"{annotator}.pt"
    if not path.exists():
        raise ValueError(f"annotator {annotator!r}: not 'oracle', a shipped asset or a checkpoint directory")
    pol = TinyPolicy.from_checkpoint(Path(annotator).name, path)
    outs = pol.sample([world.solver_prompt(t) for t in tasks], 1,
                      SamplingParams(greedy=True, max_new_tokens=world.max_answer_tokens))
    return first_answers(world, outs)
