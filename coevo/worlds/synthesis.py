"""The Synthesizer's output, parsed by a world (SynCo).

A Synthesizer writes ``<question>Q</question><solution>S</solution><answer>A</answer>``.  A world
that SynCo/RGBC can run in defines ``synthesizer_prompts(n, seed)`` and
``parse_synthesis(text, task_id) -> Synthesis``; the validator (``coevo.recipes.rgbc.validate``) runs
its checks on the ``Synthesis``, the recipe names no world.  ``synthesis_style`` says which
consistency rule the validator applies: ``steps`` (rule-based ``A op B = C`` steps, the
arithmetic world) or ``freeform`` (the answer the solution states vs the final answer, through
the run verifier: the math world).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from coevo.core.world import Task

BLOCK_RE = {tag: re.compile(rf"<{tag}>(.*?)</{tag}>", re.S) for tag in ("question", "solution", "answer")}
_TAGS_ONLY = re.compile(r"^\s*<question>.*?</question>\s*<solution>.*?</solution>\s*<answer>.*?</answer>\s*$", re.S)


@dataclass
class Synthesis:
    """One Synthesizer output as a world reads it.

    ``task``: the parsed task (question; ``reference`` = the final answer, ``solution`` = the
    reference solution) or None; ``checks``: the world-specific verdicts (``schema``,
    ``well_posed``, ``legality``: (passed, reason)); ``solution_answer``: the answer the
    solution itself states (free-form consistency), None where it states none."""

    question: str
    solution: str
    answer: str
    task: Task | None
    checks: dict
    solution_answer: str | None = None


def blocks(text: str) -> dict[str, list[str]]:
    """Every ``<question>``, ``<solution>``, ``<answer>`` block of a text."""
    return {tag: rx.findall(text or "") for tag, rx in BLOCK_RE.items()}


def schema_check(text: str) -> tuple[bool, str]:
    """Exactly one non-empty question, solution and answer block, in that order."""
    b = blocks(text)
    for tag in ("question", "solution", "answer"):
        if not b[tag]:
            return False, f"missing-{tag}"
        if len(b[tag]) > 1:
            return False, f"duplicate-{tag}"
        if not b[tag][0].strip():
            return False, f"empty-{tag}"
    if not (text.find("<question>") < text.find("<solution>") < text.find("<answer>")):
        return False, "tags-out-of-order"
    return True, ""


def tags_only(text: str) -> bool:
    """Nothing but whitespace outside the three blocks."""
    return bool(_TAGS_ONLY.match(text or ""))
