"""A Search-R1 search agent over any Retriever, as a world-like object for coevo.stages.rollout.

Protocol (Search-R1, PeterGriffinJin/Search-R1 @ a14dc3a): the solver writes
``<search> query </search>``; the tool answers ``\\n\\n<information>Doc 1(Title: t) text
...</information>\\n\\n`` (``search_r1/llm_agent/generation.py``: ``execute_predictions`` and
``_passages2string``; top-k passages, k = 3 in Search-R1's scripts); the episode ends at
``</answer>``.  A tool call without a query gets Search-R1's "My previous action is invalid"
text back.  The prompt is Search-R1's ``base`` template (``scripts/data_process/
nq_search.py::make_prefix``), with the question given a final ``?`` as that script does.
The answer is the last ``<answer>…</answer>`` block (``qa_em.py::extract_solution`` reads the
last one; it also needs two because its text includes the prompt's example, ours does not).
"""
from __future__ import annotations

import re
from typing import Any, Sequence

from coevo.retrieval.base import Retriever, format_passages
from coevo.worlds.base import ResponseFormat, Task
from coevo.core.world import ANSWER

SEARCH_R1_PROMPT = (
    "Answer the given question. "
    "You must conduct reasoning inside <think> and </think> first every time you get new information. "
    "After reasoning, if you find you lack some knowledge, you can call a search engine by <search> query "
    "</search> and it will return the top searched results between <information> and </information>. "
    "You can search as many times as your want. "
    "If you find no further external knowledge needed, you can directly provide the answer inside <answer> "
    "and </answer>, without detailed illustrations. For example, <answer> Beijing </answer>. "
    "Question: {question}\n")
INVALID_ACTION = ("\nMy previous action is invalid. If I want to search, I should put the query between <search> "
                  "and </search>. If I want to give the final answer, I should put the answer between <answer> and "
                  "</answer>. Let me try again.\n")
SEARCH_CLOSE = "</search>"
ANSWER_CLOSE = "</answer>"
_SEARCH = re.compile(r"<search>(.*?)</search>\s*$", re.S)
_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.S)


def search_r1_question(question: str) -> str:
    """The question as Search-R1's data script writes it: stripped, ending in ``?``."""
    q = question.strip()
    return q if q.endswith("?") else q + "?"


def extract_answer(text: str | None) -> str | None:
    """The last ``<answer>…</answer>`` block, stripped (None if there is none)."""
    found = _ANSWER.findall(text or "")
    return found[-1].strip() if found else None


def information_block(passages: Sequence) -> str:
    """Search-R1's observation: ``\\n\\n<information>{passages}</information>\\n\\n``."""
    return f"\n\n<information>{format_passages(passages).strip()}</information>\n\n"


class SearchQAWorld:
    """World-like object for multi-turn QA evaluation: Search-R1 prompt, ``</search>`` tool
    stop, ``run_tool`` querying ``retriever`` (restricted to ``task.meta["retrieve_sources"]``
    when set), ``</answer>`` answer stop, EM answer check (verifier kind ``em``)."""

    name = "search-qa"
    verifier_kind = "em"
    has_oracle = False

    def __init__(self, retriever: Retriever, topk: int = 3, prompt: str = SEARCH_R1_PROMPT):
        if topk < 1:
            raise ValueError(f"topk must be >= 1, got {topk}")
        self.retriever, self.topk, self.prompt = retriever, int(topk), prompt
        self.queries: list[str] = []  # every query sent, in order (for reports and tests)

    def solver_prompt(self, task: Task) -> str:
        return self.prompt.format(question=search_r1_question(task.question))

    def response_format(self, kind: str) -> ResponseFormat:
        return ResponseFormat(stop=(ANSWER_CLOSE,)) if kind == ANSWER else ResponseFormat()

    def tool_stops(self, kind: str) -> list[str]:
        return [SEARCH_CLOSE] if kind == ANSWER else []

    def run_tool(self, context: Any, text_so_far: str) -> str | None:
        m = _SEARCH.search(text_so_far or "")
        query = m.group(1).strip() if m else ""
        if not query:
            return INVALID_ACTION
        meta = getattr(context, "meta", None) or {}
        sources = meta.get("retrieve_sources")
        self.queries.append(query)
        hits = self.retriever.search([query], self.topk, sources=sources)[0]
        return information_block(hits)

    def extract_answer(self, text: str) -> str | None:
        return extract_answer(text)

    def equivalent(self, a: str | None, b: str | None) -> bool:
        from coevo.qa.metrics import check_em
        return check_em(a, b).value == 1

    def oracle(self, task: Task) -> str | None:
        return None

    def eval_set(self) -> list[Task]:
        return []
