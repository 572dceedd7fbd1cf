"""SynCo's validator rho_t and consensus check (SynCo appendix B.2 and §3.2, as the RGBC proposal §background describes them).

Arithmetic world (``synthesis_style = "steps"``) below; free-form worlds (math) in
``validate_freeform``: same five checks, the world's own schema/well-posed/legality verdicts,
consistency through the run verifier.

Before any Reasoner rollout, every Synthesizer output
``<question>EXPR</question><solution>STEPS</solution><answer>N</answer>`` goes through five
rule-based checks, each with a verdict and a reason that the recipe writes to the ledger:

* ``schema``      exactly one non-empty question, solution and answer block, in that order;
* ``well_posed``  the question parses in the world (an expression of the accepted shape);
* ``consistency`` the solution's last step ends in the final answer (rule based, no solving:
                  recomputing the steps would be an oracle in this world, so it is not done);
* ``legality``    the answer is a legal integer, the output ended with <eos>, nothing outside tags;
* ``redundancy``  the question is not a verbatim repeat of one of the last N validated tasks.

Two scores feed SynCo's gates G_q and G_r (docs/rgbc.md): quality ``v_q`` = weighted mean of
(schema, well_posed, legality, novelty = 1 - max BLEU to the last N tasks); reliability ``v_r`` =
weighted mean of the rule checks of the solution (steps parse, steps chain, question operands
used, final value = answer). Then the consensus check: independent solves of each task; a task
whose solves do not support its reference (fewer than ``min_agree`` match it) is rejected.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from coevo.core.policy import full_text
from coevo.core.world import Task
from coevo.worlds.synthesis import blocks, schema_check

CHECKS = ("schema", "well_posed", "consistency", "legality", "redundancy")
VALIDATOR_KIND = "synco-validator"
_STEP_RE = re.compile(r"^\s*(-?\d{1,7})\s*([+\-*])\s*(\d{1,7})\s*=\s*(-?\d{1,7})\s*$")
_LEGAL_INT = re.compile(r"^-?\d{1,7}$")
_TAGS_ONLY = re.compile(r"^(?:<question>.*?</question>)(?:<solution>.*?</solution>)(?:<answer>.*?</answer>)$", re.S)
_SPECIAL = re.compile(r"<[^<>]*>")
_LEAD_INT = re.compile(r"^\s*(-?\d{1,7})(?!\d)")
_LAST_EQ_INT = re.compile(r"=\s*(-?\d{1,7})(?!\d)(?!.*=)", re.S)


@dataclass
class Validation:
    """Verdicts of rho_t on one Synthesizer output."""

    task: Task | None  # the parsed task (question, reference answer, solution) or None
    checks: dict[str, tuple[bool, str]] = field(default_factory=dict)  # name -> (passed, reason)
    ok: bool = False  # every hard check passed
    quality: float = 0.0  # v_q in [0, 1]
    reliability: float = 0.0  # v_r in [0, 1]
    novelty: float = 0.0  # 1 - max BLEU similarity to the recent window
    parts: dict[str, float] = field(default_factory=dict)  # score components


def parse_steps(solution: str) -> list[tuple[int, str, int, int]] | None:
    """``A op B = C`` steps separated by ';' (the format of the pretrained Synthesizer)."""
    out = []
    for part in solution.split(";"):
        m = _STEP_RE.match(part)
        if not m:
            return None
        out.append((int(m.group(1)), m.group(2), int(m.group(3)), int(m.group(4))))
    return out or None


def reliability_parts(question: str, solution: str, answer: str) -> dict[str, float]:
    """Rule-based consistency of a reference solution with its question and final answer.

    ``steps_parse``: every step reads ``A op B = C``; ``chain``: each step starts from the
    previous step's result (or a question operand); ``operands``: every operand of the
    question appears in the steps; ``final``: the last step's value equals the final answer.
    None of these recomputes arithmetic (that would be the oracle).
    """
    steps = parse_steps(solution)
    if steps is None:
        return {"steps_parse": 0.0, "chain": 0.0, "operands": 0.0, "final": 0.0}
    q_nums = [int(x) for x in re.findall(r"\d+", question)]
    results, chain_ok = [], True
    for i, (a, _, _, c) in enumerate(steps):
        if i > 0 and a not in results and a not in q_nums:
            chain_ok = False
        results.append(c)
    used = {a for a, _, _, _ in steps} | {b for _, _, b, _ in steps}
    operands = float(all(n in used or n in results for n in q_nums))
    final = 0.0
    if _LEGAL_INT.match(answer.strip() or "x"):
        final = float(steps[-1][3] == int(answer.strip()))
    return {"steps_parse": 1.0, "chain": float(chain_ok), "operands": operands, "final": final}


def _weighted(parts: dict[str, float], weights: dict[str, float]) -> float:
    tot = sum(w for k, w in weights.items() if k in parts)
    if tot <= 0:
        return 0.0
    return float(sum(parts[k] * w for k, w in weights.items() if k in parts) / tot)


def novelty_scores(world, questions: Sequence[str], recent: Sequence[str]) -> np.ndarray:
    """1 - max BLEU similarity of each question to the recent window and to earlier ones of the batch
    (a verbatim repeat counts as similarity 1: 4-gram BLEU of a 3-token question is below 1)."""
    from coevo.rewards.repetition import pairwise_bleu

    if not questions:
        return np.zeros(0)
    allq = [world.repetition_text(q) for q in list(recent) + list(questions)]
    sim = pairwise_bleu(allq)
    same = np.array([[a == b for b in allq] for a in allq])  # short questions: BLEU of a verbatim repeat < 1
    sim = np.where(same, 1.0, sim)
    r = len(recent)
    out = np.ones(len(questions))
    for j in range(len(questions)):
        cols = list(range(r + j))  # recent window and earlier questions of this batch
        if cols:
            out[j] = 1.0 - float(np.max(sim[r + j, cols]))
    return np.clip(out, 0.0, 1.0)


def validate_outputs(world, completions, task_ids: Sequence[str], recent: Sequence[str],
                     hard_checks: Sequence[str], quality_weights: dict, reliability_weights: dict,
                     verifier=None) -> list[Validation]:
    """Run rho_t on a batch of Synthesizer completions (``recent``: the last N validated questions).

    The world's ``synthesis_style`` picks the rules: ``steps`` (arithmetic, below) or ``freeform``
    (``validate_freeform``: the answer check goes through ``verifier``, the run verifier)."""
    if getattr(world, "synthesis_style", "steps") == "freeform":
        if verifier is None:
            raise ValueError("free-form validation needs the run verifier")
        return validate_freeform(world, completions, task_ids, recent, hard_checks, quality_weights,
                                 reliability_weights, verifier)
    vals: list[Validation] = []
    for c, tid in zip(completions, task_ids):
        text = c.text
        v = Validation(None)
        v.checks["schema"] = schema_check(text)
        parsed = world.parse_task(text, tid)
        v.checks["well_posed"] = (parsed.ok, parsed.reason)
        b = blocks(text)
        sol = b["solution"][0].strip() if b["solution"] else ""
        ans = b["answer"][-1].strip() if b["answer"] else ""
        q = parsed.task.question if parsed.ok else (b["question"][-1].strip() if b["question"] else "")
        rel = reliability_parts(q, sol, ans)
        if not sol:
            v.checks["consistency"] = (False, "no-solution")
        elif rel["steps_parse"] == 0:
            v.checks["consistency"] = (False, "step-unparsable")
        elif rel["final"] == 0:
            v.checks["consistency"] = (False, "final-value-mismatch")
        else:
            v.checks["consistency"] = (True, "")
        if not _LEGAL_INT.match(ans):
            v.checks["legality"] = (False, "answer-not-an-integer" if ans else "no-answer")
        elif c.finish_reason != "stop":
            v.checks["legality"] = (False, "no-eos")
        elif not _TAGS_ONLY.match(text.strip()):
            v.checks["legality"] = (False, "text-outside-tags")
        elif "<unk>" in text:
            v.checks["legality"] = (False, "unknown-token")
        else:
            v.checks["legality"] = (True, "")
        if parsed.ok:
            t = parsed.task
            t.reference = str(int(ans)) if _LEGAL_INT.match(ans) else None
            t.solution = sol
            v.task = t
        v.parts = {"schema": float(v.checks["schema"][0]), "well_posed": float(v.checks["well_posed"][0]),
                   "legality": float(v.checks["legality"][0]), **rel}
        v.reliability = _weighted(rel, reliability_weights)
        vals.append(v)
    return _redundancy(world, vals, recent, hard_checks, quality_weights)


def validate_freeform(world, completions, task_ids: Sequence[str], recent: Sequence[str],
                      hard_checks: Sequence[str], quality_weights: dict, reliability_weights: dict,
                      verifier) -> list[Validation]:
    """rho_t for free-form tasks (math world): ``schema``, ``well_posed`` and ``legality`` are the
    world's verdicts (``parse_synthesis``); ``consistency``: the answer the reference solution
    states equals the final answer, judged by the run verifier (one ``match_many`` call);
    ``redundancy`` as for every world.  Reliability parts: ``states_answer`` (the solution states
    an answer) and ``final`` (the verifier's consistency verdict)."""
    syn = [world.parse_synthesis(full_text(c), tid, c.finish_reason) for c, tid in zip(completions, task_ids)]
    need = [i for i, s in enumerate(syn) if s.solution_answer is not None and s.answer]
    judged = verifier.match_many([(syn[i].solution_answer, syn[i].answer) for i in need]) if need else []
    agree = {i: v for i, v in zip(need, judged)}
    vals: list[Validation] = []
    for i, s in enumerate(syn):
        v = Validation(None)
        v.checks.update({k: s.checks[k] for k in ("schema", "well_posed")})
        if not s.solution:
            v.checks["consistency"] = (False, "no-solution")
        elif s.solution_answer is None:
            v.checks["consistency"] = (False, "solution-states-no-answer")
        elif not s.answer:
            v.checks["consistency"] = (False, "no-answer")
        elif agree[i].value is None:
            v.checks["consistency"] = (False, f"verifier-abstained:{agree[i].reason or 'unknown'}")
        elif agree[i].value != 1:
            v.checks["consistency"] = (False, "final-value-mismatch")
        else:
            v.checks["consistency"] = (True, "")
        v.checks["legality"] = s.checks["legality"]
        rel = {"states_answer": float(s.solution_answer is not None), "final": float(v.checks["consistency"][0])}
        if s.task is not None:
            v.task = s.task
        v.parts = {"schema": float(v.checks["schema"][0]), "well_posed": float(v.checks["well_posed"][0]),
                   "legality": float(v.checks["legality"][0]), **rel}
        v.reliability = _weighted(rel, reliability_weights)
        vals.append(v)
    return _redundancy(world, vals, recent, hard_checks, quality_weights)


def _redundancy(world, vals: list[Validation], recent: Sequence[str], hard_checks: Sequence[str],
                quality_weights: dict) -> list[Validation]:
    """Redundancy and novelty against the window and earlier tasks of the batch; quality; ok."""
    seen = set(recent)
    cand = [i for i, v in enumerate(vals) if v.task is not None]
    nov = novelty_scores(world, [vals[i].task.question for i in cand], list(recent))
    for j, i in enumerate(cand):
        vals[i].novelty = float(nov[j])
    for i, v in enumerate(vals):
        if v.task is None:
            v.checks["redundancy"] = (False, "no-question")
        elif v.task.question in seen:
            v.checks["redundancy"] = (False, "duplicate-of-recent")
        else:
            v.checks["redundancy"] = (True, "")
        pre_ok = all(v.checks[h][0] for h in hard_checks if h != "redundancy")
        if v.task is not None and pre_ok:
            seen.add(v.task.question)
        v.parts["novelty"] = v.novelty
        v.quality = _weighted(v.parts, quality_weights)
        v.ok = v.task is not None and v.task.reference is not None and all(v.checks[h][0] for h in hard_checks)
    return vals


# ----------------------------------------------------------------------------- Reasoner answers
def reasoner_answer(world, completion) -> tuple[str | None, bool]:
    """(answer, well_formatted) of a Reasoner rollout, with the arithmetic format-recovery rule.

    Well formatted: the whole completion is one integer and it ended with <eos> (the world's
    ``extract_answer``). Otherwise *format recovery*: strip special tags, take the integer at the
    start of what is left if one stands there (``12 junk``, ``<answer>12``, ``12`` without
    <eos>), or, for a chain of steps, the integer after its last ``=`` with junk after it
    (``72-40=32;32-8=24 7+`` → ``24``); such an answer earns 0.9 instead of 1.0 when correct
    (SynCo's recovery tier).
    """
    fn = getattr(world, "answer_with_format", None)  # free-form worlds: boxed = formatted (math world)
    if fn is not None:
        return fn(full_text(completion), completion.finish_reason)
    text = completion.text
    a = world.extract_answer(text)
    if a is not None and completion.finish_reason == "stop":
        return a, True
    if a is not None:
        return a, False
    clean = _SPECIAL.sub("", text)
    m = _LAST_EQ_INT.search(clean) if "=" in clean else _LEAD_INT.match(clean)
    if m:
        return str(int(m.group(1))), False
    return None, False


def reasoner_rewards(match_values: Sequence[int | None], formatted: Sequence[bool],
                     formatted_reward: float = 1.0, recovered_reward: float = 0.9) -> np.ndarray:
    """SynCo Reasoner reward: 1.0 correct and formatted, 0.9 correct after recovery, else 0."""
    return np.array([(formatted_reward if f else recovered_reward) if v == 1 else 0.0
                     for v, f in zip(match_values, formatted)], dtype=float)


# ----------------------------------------------------------------------------- consensus
@dataclass
class Consensus:
    ok: bool
    support: int  # independent solves that match the reference
    n: int
    reason: str
    verdicts: list = field(default_factory=list)  # one Verdict per independent solve (vs the reference)

    @property
    def agreement(self) -> float:
        return self.support / self.n if self.n else float("nan")


def consensus_from_verdicts(verdicts: Sequence, min_agree: int = 1) -> Consensus:
    """The consensus verdict of one task from its independent solves' verdicts vs its reference:
    supported when at least ``min_agree`` match; an abstaining comparison counts as no support."""
    vs = list(verdicts)
    support = sum(1 for v in vs if v.value == 1)
    abst = sum(1 for v in vs if v.value is None)
    ok = support >= min_agree
    reason = f"support={support}/{len(vs)}" + (f" abstained={abst}" if abst else "")
    return Consensus(ok, support, len(vs), reason if ok else f"unsupported-reference {reason}", vs)


def consensus_check(verifier, answers: Sequence[Sequence[str | None]], references: Sequence[str | None],
                    min_agree: int = 1) -> list[Consensus]:
    """Reject a task whose independent solves do not support its reference (< ``min_agree`` match).

    All comparisons go through the verifier (one call for the batch).
    """
    pairs = [(a, ref) for ans, ref in zip(answers, references) for a in ans]
    verdicts = verifier.match_many(pairs)
    out, j = [], 0
    for ans in answers:
        out.append(consensus_from_verdicts(verdicts[j:j + len(ans)], min_agree))
        j += len(ans)
    return out
