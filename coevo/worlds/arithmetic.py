"""Arithmetic world: integer expressions with a difficulty knob and an exact oracle.

The proposer writes ``<question>EXPR</question>``; the solver writes a chain of steps
ending in the value (``72-48=`` → ``72-40=32;32-8=24``); the answer is the integer after
the last ``=``.
Difficulty levels (the knob: digits, operators, terms):

  L1  a±b              one-digit operands
  L2  a*b              one-digit × two-digit
  L3  a±b              two-digit operands
  L4  a±b±c            two-digit operands
  L5  a*b±c            one-digit × two-digit, then ± two-digit

(Ordered by how hard the tiny pretrained solver finds them: carries across two-digit
sums are harder for it than a one-digit multiplication table.)

Any well-formed expression (digits, + - *, no parentheses) is accepted from the
proposer; its level is inferred from its shape (``level_of``), so a Challenger that
drifts toward harder shapes is measured, not forced.
"""
from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass
from typing import ClassVar, Sequence

from coevo.core.world import ParseResult, last_question, Task
from coevo.worlds.synthesis import Synthesis, blocks, schema_check

LEVELS = ("L1", "L2", "L3", "L4", "L5")
PROPOSER_PROMPT = "<propose>"
SYNTH_PROMPT = "<synth>"
SOLVE_PREFIX = "<solve>"
MAX_EXPR_CHARS = 24
_EXPR_RE = re.compile(r"^\d{1,3}(?:[+\-*]\d{1,3}){1,3}$")
_FINAL_RE = re.compile(r"(?:^|=)\s*(-?\d{1,7})\s*$")


def evaluate(expr: str) -> int:
    """Exact integer value of a +,-,* expression with normal precedence (no eval())."""
    tokens = re.findall(r"\d+|[+\-*]", expr)
    # multiplication first
    terms: list[int] = [int(tokens[0])]
    ops: list[str] = []
    i = 1
    while i < len(tokens):
        op, val = tokens[i], int(tokens[i + 1])
        if op == "*":
            terms[-1] *= val
        else:
            ops.append(op)
            terms.append(val)
        i += 2
    total = terms[0]
    for op, t in zip(ops, terms[1:]):
        total = total + t if op == "+" else total - t
    return total


def level_of(expr: str) -> str:
    """Infer the difficulty level of a well-formed expression from its shape."""
    nums = re.findall(r"\d+", expr)
    ops = re.findall(r"[+\-*]", expr)
    digits = max(len(n.lstrip("0") or "0") for n in nums)
    if "*" in ops:
        return "L5" if len(ops) >= 2 else "L2"
    if len(ops) >= 2:
        return "L4"
    return "L3" if digits >= 2 else "L1"


def generate(level: str, rng: random.Random) -> str:
    """One expression of the given level."""
    d1 = lambda: rng.randint(0, 9)  # noqa: E731
    d2 = lambda: rng.randint(10, 99)  # noqa: E731
    pm = lambda: rng.choice("+-")  # noqa: E731
    if level == "L1":
        return f"{d1()}{pm()}{d1()}"
    if level == "L2":
        return f"{rng.randint(2, 9)}*{d2()}"
    if level == "L3":
        return f"{d2()}{pm()}{d2()}"
    if level == "L4":
        return f"{d2()}{pm()}{d2()}{pm()}{d2()}"
    if level == "L5":
        return f"{rng.randint(2, 9)}*{d2()}{pm()}{d2()}"
    raise ValueError(f"unknown level {level!r}; expected one of {LEVELS}")


def task_id_for(question: str, salt: str = "") -> str:
    return hashlib.sha1(f"{salt}|{question}".encode()).hexdigest()[:16]


@dataclass
class ArithmeticWorld:
    """World contract implementation with an exact oracle."""

    eval_per_level: int = 200
    eval_seed: int = 12345
    name: str = "arithmetic"
    prompt_version: str = "arith-v1"
    has_oracle: bool = True
    # the default verifier kind of answer checks (coevo.verify KINDS): integer equality
    verifier_kind: ClassVar[str] = "integer"
    verifier_options: ClassVar[dict] = {}

    @classmethod
    def option_names(cls) -> frozenset:
        """None: its settings are ``world.eval_per_level`` / ``world.eval_seed`` (coevo.worlds.make_world)."""
        return frozenset()

    # proposer side -------------------------------------------------------
    def proposer_prompts(self, n: int, seed: int = 0) -> list[str]:
        return [PROPOSER_PROMPT] * n

    def parse_task(self, text: str, task_id: str) -> ParseResult:
        """Last ``<question>…</question>`` block (as R-Zero), then a shape check."""
        q, reason = last_question(text)
        if q is None:
            return ParseResult(None, reason)
        if len(q) > MAX_EXPR_CHARS or not _EXPR_RE.match(q):
            return ParseResult(None, "not-an-expression")
        return ParseResult(Task(task_id=task_id, question=q, meta={"difficulty": level_of(q)}))

    # synthesizer side (SynCo / RGBC; the validator's rules for ``steps`` are coevo.recipes.rgbc.validate) ------
    synthesis_style: ClassVar[str] = "steps"

    def synthesizer_prompts(self, n: int, seed: int = 0) -> list[str]:
        """The pretrained tiny Synthesizer's control prompt, n times."""
        return [SYNTH_PROMPT] * n

    def parse_synthesis(self, text: str, task_id: str, finish_reason: str = "stop") -> Synthesis:
        """Question (an expression of the accepted shape), solution and final answer blocks."""
        b = blocks(text)
        parsed = self.parse_task(text, task_id)
        sol = b["solution"][0].strip() if b["solution"] else ""
        ans = b["answer"][-1].strip() if b["answer"] else ""
        checks = {"schema": schema_check(text), "well_posed": (parsed.ok, parsed.reason)}
        task = parsed.task
        if task is not None:
            task.reference = str(int(ans)) if re.match(r"^-?\d{1,7}$", ans) else None
            task.solution = sol
        return Synthesis(task.question if task else "", sol, ans, task, checks, None)

    # solver side ---------------------------------------------------------
    def solver_prompt(self, task: Task) -> str:
        return f"{SOLVE_PREFIX}{task.question}="

    def extract_answer(self, text: str) -> str | None:
        """The final value: the integer after the last ``=`` of the chain of steps
        (``12+30=42;42-5=37`` → ``37``), or a bare integer."""
        m = _FINAL_RE.search(text)
        return str(int(m.group(1))) if m else None

    def repetition_text(self, question: str) -> str:
        """Whitespace-tokenisable form for BLEU: numbers and operators as words."""
        return " ".join(re.findall(r"\d+|[+\-*]", question))

    def equivalent(self, a: str | None, b: str | None) -> bool:
        """The ``integer`` verifier kind's check (``check_integer``): ``int(a) == int(b)``."""
        from coevo.verify.verifiers import check_integer

        return check_integer(a, b).value == 1

    def oracle(self, task: Task) -> str | None:
        try:
            return str(evaluate(task.question))
        except (ValueError, IndexError):
            return None

    # evaluation ----------------------------------------------------------
    def eval_set(self) -> Sequence[Task]:
        """Fixed held-out set, ``eval_per_level`` per level, disjoint from nothing on
        purpose: it is drawn from a separate seed; overlap with training questions is
        measured and reported by the runner, not assumed away."""
        rng = random.Random(self.eval_seed)
        tasks, seen = [], set()
        for level in LEVELS:
            count, misses = 0, 0
            while count < self.eval_per_level and misses < 10_000:  # L1 has only 200 distinct questions
                q = generate(level, rng)
                if q in seen:
                    misses += 1
                    continue
                seen.add(q)
                tasks.append(Task(task_id=task_id_for(q, "eval"), question=q,
                                  reference=str(evaluate(q)), meta={"difficulty": level}))
                count += 1
        return tasks


def format_question(expr: str) -> str:
    return f"<question>{expr}</question>"
