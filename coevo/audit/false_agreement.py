"""False-agreement mass FF: the one definition every recipe, the audit and the report call.

False Frontiers (FF) (false-agreement mass): the share of audited (question, answer)
pairs where the proposer and the solver give *the same wrong answer* (Dr. Zero round 3: 6.1 %
at 4B, 8.8 % at 9B); issue #11 item 6. Per audited pair i

    FF_i = 1[y_P ≃ y_S] · 1[y_P is wrong]

with y_P the proposer's (draft / reference) answer, y_S the solver's answer over the task's
solves and "wrong" judged against the truth: the oracle's answer
(:func:`false_agreement`) or an auditor model's verdict on y_P (:func:`false_agreement_from_flags`,
``coevo.audit.auditor``). FF = mean of FF_i over the audited pairs.

* The agreement rule y_P ≃ y_S over a group of solves (:data:`AGREEMENT_RULES`,
  :func:`group_agrees`): ``strict_majority`` (the default of the Dr. Zero family,
  ``drzero.ff_agreement``) — more than half of the group's answers are equivalent to y_P, so the
  flag does not depend on the order of the rollouts and a 1-of-5 match never counts;
  ``plurality`` — the group's plurality answer (ties: first seen, ``coevo.verify.vote``) is
  equivalent to y_P (with five distinct answers the first one decides).
* ``equivalent(a, b) -> bool``: how answers compare (the arithmetic world's integers: plain
  equality of canonical strings, the default; the facts world: EM on SQuAD-normalised strings,
  ``world.equivalent``).
* A pair is *not audited* (left out, counted in ``extra["n_unaudited"]``) when its truth or its
  solver answer is unknown (None / NaN). A missing proposer answer is audited and never FF.
* A tuple (e.g. :data:`NOT_PROPOSER`, or ``("<not:", y)`` for "a truth known to differ from
  y") stands for "some answer known to differ"; it is equivalent only to itself and never passed
  to ``equivalent``.
* The μ₁ = 1 case (RGBC screen group all-correct): every solve agrees with the reference, so
  the solver majority IS the reference; a wrong reference there is the clearest false agreement.
  SynCo/RGBC record the majority of every screened task (``task_stats.solver_majority`` /
  ``solver_agrees``, :func:`solver_majority_columns`); older ledgers derive it with
  :func:`solver_majority`.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Optional, Sequence

import numpy as np

from coevo.audit.stats import Z95, Estimate, binomial_se, interval_estimate

__all__ = ["NOT_PROPOSER", "is_known", "answers_equivalent", "false_agreement_flags", "ff_indicators",
           "false_agreement", "false_agreement_from_flags", "false_agreement_summary",
           "false_agreement_mass", "solver_majority", "solver_majority_columns", "AGREEMENT_RULES",
           "strict_majority_agrees", "group_agrees"]

Equivalent = Optional[Callable[[Any, Any], Any]]
AGREEMENT_RULES = ("strict_majority", "plurality")  # how a group of solves agrees with the proposer's answer
NOT_PROPOSER = ("<not the proposer's answer>",)  # a solver majority known to differ from the proposer's answer


def is_known(x: Any) -> bool:
    """False for None and NaN (an unknown value), True otherwise."""
    if x is None:
        return False
    try:
        return not np.isnan(x)
    except TypeError:
        return True


def answers_equivalent(a: Any, b: Any, equivalent: Equivalent = None) -> bool:
    """a ≃ b: ``equivalent(a, b)`` (default ``==``); unknown answers are never equivalent; a tuple
    ("an answer known to differ from ...") is equivalent only to an equal tuple."""
    if not (is_known(a) and is_known(b)):
        return False
    if isinstance(a, tuple) or isinstance(b, tuple):
        return a == b
    if equivalent is None:
        return a == b
    return bool(equivalent(a, b))


def false_agreement_flags(pairs: Iterable[Sequence[Any]], equivalent: Equivalent = None
                          ) -> list[tuple[Optional[int], Optional[int]]]:
    """Per (proposer_answer, solver_answer, truth) triple: ``(agree, correct)`` with agree =
    1[y_P ≃ y_S] and correct = 1[y_P ≃ truth]; ``(None, None)`` when the pair is not audited
    (truth or solver answer unknown)."""
    out = []
    for p, s, t in pairs:
        if not (is_known(t) and is_known(s)):
            out.append((None, None))
            continue
        out.append((int(answers_equivalent(p, s, equivalent)), int(answers_equivalent(p, t, equivalent))))
    return out


def ff_indicators(agree: Sequence[Any], correct: Sequence[Any]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The definition on flags: audited mask (both flags known), FF_i = agree ∧ ¬correct and agree on it.

    ``agree``: 1 / True = the solver's answer is equivalent to the proposer's; ``correct``: 1 /
    True = the proposer's answer is right (oracle or auditor); None / NaN = unknown."""
    if len(agree) != len(correct):
        raise ValueError("agree and correct must have the same length")
    ok = np.array([is_known(a) and is_known(c) for a, c in zip(agree, correct)], dtype=bool)
    ag = np.array([bool(a) for a, k in zip(agree, ok) if k], dtype=float)
    co = np.array([bool(c) for c, k in zip(correct, ok) if k], dtype=float)
    return ok, ag * (1.0 - co), ag


def false_agreement_from_flags(agree: Sequence[Any], correct: Sequence[Any], batches=None, **extra) -> Estimate:
    """FF over per-pair flags (see :func:`ff_indicators`): the oracle audit and the auditor-model
    audit both end here. Value = mean FF_i over the audited pairs; ``se`` binomial and a Wald
    interval, or with ``batches`` (the step or round of each pair) the audit's interval rule
    (``coevo.audit.stats.interval_estimate``). Extras: ``n_unaudited``, ``agreement_rate`` (share of
    audited pairs where proposer and solver agree at all), ``n_false_agreement``."""
    ok, ff, ag = ff_indicators(agree, correct)
    ex = dict(extra)
    ex.update({"n_unaudited": int((~ok).sum()), "n_false_agreement": int(ff.sum()),
               "agreement_rate": float(ag.mean()) if ag.size else float("nan")})
    n = int(ff.size)
    if n == 0:
        return Estimate(float("nan"), n=0, extra=ex)
    if batches is not None:
        return interval_estimate(ff, np.asarray(batches)[ok], **ex)
    v = float(ff.mean())
    se = binomial_se(v, n)
    ex["se_binomial"] = se
    return Estimate(v, se, v - Z95 * se, v + Z95 * se, n, ex)


def false_agreement(pairs: Iterable[Sequence[Any]], equivalent: Equivalent = None, batches=None) -> Estimate:
    """FF against the oracle over (proposer_answer, solver_answer, truth) triples.

    ``equivalent``: the world's answer equivalence (None: ``==``). ``batches``: one label per triple
    (step / round) for the batch-bootstrap interval. See the module docstring for the rules."""
    flags = false_agreement_flags(list(pairs), equivalent)
    return false_agreement_from_flags([a for a, _ in flags], [c for _, c in flags], batches=batches)


def false_agreement_summary(est: Estimate) -> dict:
    """``{"value", "se", "n"}`` of an FF estimate, for ``summary.json`` rounds (NaN -> None)."""
    def fin(x):
        return float(x) if x is not None and np.isfinite(x) else None
    return {"value": fin(est.value), "se": fin(est.se), "n": int(est.n)}


def false_agreement_mass(proposer_answers: Sequence[Any], majority: Sequence[Any],
                         truth: Sequence[Any], batches=None) -> Estimate:
    """FF over three parallel columns (plain equality): :func:`false_agreement` on their triples."""
    if not (len(proposer_answers) == len(majority) == len(truth)):
        raise ValueError("inputs must have the same length")
    return false_agreement(zip(proposer_answers, majority, truth), batches=batches)


def solver_majority(mode_answer: Any, mu_screen: Any, proposer_answer: Any) -> Any:
    """The solver's majority answer to a task with a proposer (reference) answer, for ledgers written
    before ``task_stats.solver_majority`` existed.

    The 2K-answer mode where it was recorded; else from the screen group's share mu of answers matching
    the proposer's: mu > 1/2 (including the all-correct mu = 1) -> the proposer's answer is the majority;
    mu = 0 -> :data:`NOT_PROPOSER`; 0 < mu <= 1/2 without a recorded mode, or no screen group (rejected
    before any solve) -> None (unknown).
    """
    if is_known(mode_answer):
        return mode_answer
    if not is_known(mu_screen):
        return None
    if mu_screen > 0.5:
        return proposer_answer
    return NOT_PROPOSER if mu_screen == 0 else None


def solver_majority_columns(verifier: Any, answer_lists: Sequence[Sequence[Optional[str]]],
                            references: Sequence[Optional[str]]) -> list[dict]:
    """The solver-majority columns of ``task_stats`` for tasks that were solved, every one of them.

    ``verifier``: the run's verifier (``majority_votes`` and ``match_many``, as
    ``coevo.verify.run.RunVerifier``); ``answer_lists``: each task's solver answers (None = no
    answer); ``references``: each task's proposer answer. Returns per task ``{"solver_majority":
    label, "solver_majority_share": share of all answers, "solver_agrees": 1.0 / 0.0 / None}``:
    agrees = the run verifier's verdict on (majority, reference); 0.0 when no solve gave an answer;
    None when the check abstained.
    """
    votes = verifier.majority_votes([list(a) for a in answer_lists])
    checks = verifier.match_many([(v.label, r) for v, r in zip(votes, references)])
    out = []
    for v, c in zip(votes, checks):
        agrees = None if c.value is None else float(c.value)
        out.append({"solver_majority": v.label, "solver_majority_share": float(v.p_hat),
                    "solver_agrees": 0.0 if v.label is None else agrees})
    return out


def strict_majority_agrees(matches: Sequence[Any]) -> Optional[float]:
    """The strict-majority agreement of one group: ``matches`` holds, per answer of the group, the
    verdict "equivalent to the proposer's answer" (1 / True, 0 / False, None / NaN = the check
    abstained; a missing answer is a 0).  1.0 when more than half of the group's answers match;
    0.0 when they cannot (matches plus abstentions at most half, e.g. a 2-2-1 split or five distinct
    answers); None when the abstentions decide.  A count: the order of the answers does not matter."""
    n = len(matches)
    yes = sum(1 for m in matches if is_known(m) and bool(m))
    unknown = sum(1 for m in matches if not is_known(m))
    if n and 2 * yes > n:
        return 1.0
    if 2 * (yes + unknown) <= n:
        return 0.0
    return None


def group_agrees(rule: str, matches: Sequence[Any], plurality_agrees: Any = None) -> Optional[float]:
    """y_P ≃ y_S for one group under ``rule`` (:data:`AGREEMENT_RULES`): ``strict_majority`` from the
    per-answer ``matches`` (:func:`strict_majority_agrees`); ``plurality`` = ``plurality_agrees`` (the
    verdict on the group's plurality answer, ``solver_majority_columns``' ``solver_agrees``)."""
    if rule == "strict_majority":
        return strict_majority_agrees(matches)
    if rule == "plurality":
        return plurality_agrees
    raise ValueError(f"unknown agreement rule {rule!r}; known: {', '.join(AGREEMENT_RULES)}")
