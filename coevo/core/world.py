"""The World contract: a task domain the loop can propose in, solve in and verify in.

Worlds: ``arithmetic`` (integer expressions, exact oracle), ``math`` (free-form,
no oracle), later ``facts`` (corpus with source ids + retriever) and criteria banks.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Optional, Protocol, Sequence, runtime_checkable

from coevo.core.policy import SamplingParams


@dataclass
class Task:
    task_id: str
    question: str
    reference: str | None = None  # proposer's own answer where the recipe asks for one
    solution: str | None = None  # proposer's reference solution (SynCo)
    meta: dict[str, Any] = field(default_factory=dict)  # difficulty, source id, ...


@dataclass
class ParseResult:
    task: Task | None
    reason: str = ""  # why parsing failed: "no-question-tag", "empty", "unparsable", ...

    @property
    def ok(self) -> bool:
        return self.task is not None


_QUESTION_BLOCK = re.compile(r"<question>(.*?)</question>", re.S)


def last_question(text: str) -> tuple[str | None, str]:
    """The last ``<question>…</question>`` block of a proposal, stripped (R-Zero's rule), or
    (None, reason): ``no-question-tag`` or ``empty-question``."""
    blocks = _QUESTION_BLOCK.findall(text or "")
    if not blocks:
        return None, "no-question-tag"
    q = blocks[-1].strip()
    return (q, "") if q else (None, "empty-question")


# What a world is asked to format: the kind of output a role writes, passed by the recipe (a
# world names no role).  ``QUESTION``: a proposed task (R-Zero's Challenger, Dr. Zero's proposer);
# ``SYNTHESIS``: a task with its reference solution (SynCo's Synthesizer); ``ANSWER``: an answer
# to a task (every solver).
QUESTION, SYNTHESIS, ANSWER = "question", "synthesis", "answer"


@dataclass(frozen=True)
class ResponseFormat:
    """How a role's answer starts and ends: an assistant prefill and stop strings.

    Worlds that want them define ``response_format(kind)`` (kind: ``QUESTION``, ``SYNTHESIS`` or
    ``ANSWER``); the stages merge them into the sampling parameters (``role_sampling``).
    The parser/extractor then reads prefix + generated text + stop (``full_text``)."""

    prefix: str = ""
    stop: tuple[str, ...] = ()


def role_sampling(world: Any, kind: str, sp: SamplingParams) -> SamplingParams:
    """``sp`` with the world's prefill and stop strings for output ``kind`` (QUESTION, SYNTHESIS,
    ANSWER; unchanged if it has none)."""
    fmt = world.response_format(kind) if isinstance(world, HasResponseFormat) else None
    if fmt is None or (not fmt.prefix and not fmt.stop):
        return sp
    stop = list(sp.stop or []) + [s for s in fmt.stop if s not in (sp.stop or [])]
    return replace(sp, response_prefix=fmt.prefix, stop=stop or None)


class World(Protocol):
    name: str
    prompt_version: str
    has_oracle: bool

    def proposer_prompts(self, n: int, seed: int) -> list[str]:
        """n proposer prompts (a fixed instruction, or a context such as a source doc)."""

    def parse_task(self, text: str, task_id: str) -> ParseResult: ...

    def solver_prompt(self, task: Task) -> str: ...

    def extract_answer(self, text: str) -> str | None:
        """The final answer in a solver completion, or None if it has none."""

    def equivalent(self, a: str | None, b: str | None) -> bool: ...

    def repetition_text(self, question: str) -> str:
        """The text BLEU sees for the repetition penalty (whitespace-tokenised)."""

    def oracle(self, task: Task) -> str | None:
        """The true answer, where the world knows it (else None)."""

    def eval_set(self) -> Sequence[Task]:
        """Fixed held-out evaluation tasks; ``meta['difficulty']`` labels strata."""

    # optional, each a capability protocol below: HasResponseFormat (prefill + stop strings per kind:
    # QUESTION | SYNTHESIS | ANSWER), HasTools (tool_stops, run_tool), HasVerifierKind / HasVerifierOptions


# ---------------------------------------------------------------------- capabilities
# What some worlds offer beyond the contract; a recipe that needs one checks it with isinstance
# (the protocols are runtime-checkable) and refuses with coevo.core.errors.CannotRun otherwise.
@runtime_checkable
class SynthesizesTasks(Protocol):
    """Tasks written with a reference solution (SynCo's Synthesizer format)."""

    def synthesizer_prompts(self, n: int, seed: int = 0) -> list[str]: ...

    def parse_synthesis(self, text: str, task_id: str, finish_reason: str = "stop") -> Any: ...


@runtime_checkable
class HasSources(Protocol):
    """A corpus of source documents the tasks are drawn from (the facts world: CrossFit folds, MSV)."""

    def passages(self) -> list: ...

    def sources(self) -> list[str]: ...


@runtime_checkable
class HasCriteria(Protocol):
    """Per-task criteria with their bank entries (the criteria world: VG-OPD / CASA)."""

    def entry(self, task: Task) -> Any: ...

    def criteria(self, task: Task) -> list: ...


@runtime_checkable
class HasTools(Protocol):
    """A tool the policy calls inside a rollout (multi-turn: coevo.stages.rollout)."""

    def tool_stops(self, kind: str) -> list[str]: ...

    def run_tool(self, context: Any, text_so_far: str) -> str | None: ...


@runtime_checkable
class HasResponseFormat(Protocol):
    """An assistant prefill and stop strings per kind of output (``role_sampling`` merges them in)."""

    def response_format(self, kind: str) -> ResponseFormat | None: ...


@runtime_checkable
class HasVerifierKind(Protocol):
    """The verifier kind of the world's answer checks when ``verify.kind`` names none
    (``coevo.verify.run.checker_for``; None = the world's own ``equivalent``)."""

    verifier_kind: Optional[str]


@runtime_checkable
class HasVerifierOptions(Protocol):
    """Options of the world's default verifier kind (``verify.options`` override them)."""

    verifier_options: dict
