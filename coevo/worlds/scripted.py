"""Scripted tool world: the solver must call a lookup tool, then answer (multi-turn tests, toy recipes).

A hidden table maps each key 0..99 to a value 0..99 (a permutation drawn from
``table_seed``).  A task is ``K`` ("L1": answer = value(K)) or ``K+N`` ("L2": answer =
value(K) + N); the answer cannot be computed from the question alone, so a solver that
answers right has used the tool (or memorised the table).  Everything fits the tiny
character tokenizer (``coevo.backends.tokenizer.CharTokenizer``: digits, ``+-*=() ;`` and a
few tags):

    proposer prompt   <propose>                 ->  <question>37+5</question>
    solver prompt     <solve>37+5;
    solver            (37)                      tool call; ")" is the tool stop string
    world (inserted)  =52;                      the looked-up value ("=;" for an unknown key)
    solver            <answer>57</answer>       "</answer>" is the answer stop string

Tool hooks read by ``coevo.stages.rollout`` (see its docstring): ``tool_stops(role)`` ->
``[")"]`` for the solver, none for the proposer; ``run_tool(task, text_so_far)`` -> the
observation for the call that ``text_so_far`` ends with (``=;`` for a malformed one), or
None when it does not end with ``)``.  ``demonstration(task)`` is a correct trace (for warm-up / supervised checks).
"""
from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass, field
from typing import ClassVar, Sequence

from coevo.core.world import ANSWER, ParseResult, ResponseFormat, Task, last_question

PROPOSER_PROMPT = "<propose>"
SOLVE_PREFIX = "<solve>"
TOOL_OPEN, TOOL_CLOSE = "(", ")"
ANSWER_OPEN, ANSWER_CLOSE = "<answer>", "</answer>"
N_KEYS = 100
_TASK_RE = re.compile(r"^(\d{1,2})(?:\+(\d{1,2}))?$")
_CALL_RE = re.compile(r"\((\d{1,2})\)$")
_ANSWER_RE = re.compile(r"<answer>\s*(-?\d{1,4})\s*(?:</answer>|$)")


def hidden_table(seed: int) -> list[int]:
    """value(k) for k in 0..99: a permutation of 0..99 drawn from ``seed``."""
    values = list(range(N_KEYS))
    random.Random(seed).shuffle(values)
    return values


@dataclass
class ScriptedToolWorld:
    """World contract plus the multi-turn tool hooks, with an exact oracle."""

    table_seed: int = 0
    eval_per_level: int = 50
    eval_seed: int = 4242
    name: str = "scripted"
    prompt_version: str = "scripted-v1"
    has_oracle: bool = True
    verifier_kind: ClassVar[str] = "integer"  # answer checks: integer equality (coevo.verify KINDS)
    table: list[int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.table = hidden_table(self.table_seed)

    # proposer side -------------------------------------------------------
    def proposer_prompts(self, n: int, seed: int = 0) -> list[str]:
        return [PROPOSER_PROMPT] * n

    def parse_task(self, text: str, task_id: str) -> ParseResult:
        """Last ``<question>K</question>`` or ``<question>K+N</question>`` block."""
        q, reason = last_question(text)
        if q is None:
            return ParseResult(None, reason)
        m = _TASK_RE.match(q)
        if not m:
            return ParseResult(None, "not-a-lookup")
        return ParseResult(Task(task_id=task_id, question=q, meta={"difficulty": "L2" if m.group(2) else "L1"}))

    def response_format(self, kind: str) -> ResponseFormat:
        """Answers end at ``</answer>``, proposals at ``</question>``."""
        return ResponseFormat(stop=(ANSWER_CLOSE,) if kind == ANSWER else ("</question>",))

    # solver side ---------------------------------------------------------
    def solver_prompt(self, task: Task) -> str:
        return f"{SOLVE_PREFIX}{task.question};"

    def tool_stops(self, kind: str) -> list[str]:
        """Stop strings that end a tool call in output ``kind`` (only answers use the tool)."""
        return [TOOL_CLOSE] if kind == ANSWER else []

    def run_tool(self, context: Task | str, text_so_far: str) -> str | None:
        """Look up the key of the call ``(K)`` that ``text_so_far`` ends with: ``=V;``; a
        malformed call (any other text closed by ``)``) gets ``=;``; None when the text does
        not end with the tool stop."""
        if not text_so_far.endswith(TOOL_CLOSE):
            return None
        m = _CALL_RE.search(text_so_far)
        return f"={self.table[int(m.group(1))]};" if m else "=;"

    def extract_answer(self, text: str) -> str | None:
        """The integer in the last ``<answer>…</answer>`` block (closing tag optional at the end)."""
        found = _ANSWER_RE.findall(text)
        return str(int(found[-1])) if found else None

    def equivalent(self, a: str | None, b: str | None) -> bool:
        """The ``integer`` verifier kind's check, as the arithmetic world's."""
        from coevo.verify.verifiers import check_integer

        return check_integer(a, b).value == 1

    def repetition_text(self, question: str) -> str:
        return " ".join(re.findall(r"\d+|\+", question))

    def oracle(self, task: Task) -> str | None:
        m = _TASK_RE.match(task.question.strip())
        if m is None:
            return None
        return str(self.table[int(m.group(1))] + int(m.group(2) or 0))

    def demonstration(self, task: Task) -> str:
        """A correct solver trace after the prompt: call, observation, answer."""
        key = _TASK_RE.match(task.question).group(1)
        return f"({key}){self.run_tool(task, f'({key})')}{ANSWER_OPEN}{self.oracle(task)}{ANSWER_CLOSE}"

    # evaluation ----------------------------------------------------------
    def eval_set(self) -> Sequence[Task]:
        """``eval_per_level`` distinct tasks per level (L1: ``K``, L2: ``K+N``), fixed by ``eval_seed``."""
        rng = random.Random(self.eval_seed)
        tasks: list[Task] = []
        for level in ("L1", "L2"):
            seen: set[str] = set()
            while len(seen) < min(self.eval_per_level, N_KEYS if level == "L1" else N_KEYS * N_KEYS):
                k = rng.randrange(N_KEYS)
                q = str(k) if level == "L1" else f"{k}+{rng.randrange(1, 100)}"
                if q in seen:
                    continue
                seen.add(q)
                t = Task(task_id=hashlib.sha1(f"eval|{q}".encode()).hexdigest()[:16], question=q,
                         meta={"difficulty": level})
                t.reference = self.oracle(t)
                tasks.append(t)
        return tasks


def format_question(question: str) -> str:
    return f"<question>{question}</question>"
