"""Prompts of the facts world's ``text`` surface (real models), after Dr. Zero and Search-R1.

* Solver: Search-R1's instruction (PeterGriffinJin/Search-R1 @ a14dc3a,
  ``scripts/data_process/nq_search.py::make_prefix``, template ``base``), with its tags
  ``<search>`` / ``<information>`` / ``<answer>``.  Dr. Zero's ``DEFAULT_SOLVER_PREFIX``
  (facebookresearch/drzero @ 0591d53, ``verl/prompts.py``) is the same text with
  ``<tool_call>`` / ``<tool_response>`` in place of the search tags.
* Proposer: Dr. Zero's ``DEFAULT_CHALLENGER_PREFIX`` (same file), condensed, with the
  search tags of the solver in place of ``<tool_call>`` / ``<tool_response>`` so both roles
  speak one protocol; the document is rendered as Dr. Zero does (``(Title: t)\\ntext``,
  ``process_train.py``).
* Source-aware solver (MSV, False Frontiers): the solver instruction with the task's source
  document shown before the question.

Retrieved passages are rendered as Search-R1's ``_passages2string`` does
(``coevo.retrieval.base.format_passages``) and wrapped as its ``generation.py`` wraps them:
``\\n\\n<information>…</information>\\n\\n``.
"""
from __future__ import annotations

SOLVER_PREFIX = (
    "Answer the given question. You must conduct reasoning inside <think> and </think> first every time you "
    "get new information. After reasoning, if you find you lack some knowledge, you can call a search engine "
    "by <search> query </search> and it will return the top searched results between <information> and "
    "</information>. You can search as many times as your want. If you find no further external knowledge "
    "needed, you can directly provide the answer inside <answer> and </answer>, without detailed "
    "illustrations. For example, <answer> Beijing </answer>. Question: {question}\n"
)

SOURCE_AWARE_PREFIX = (
    "Answer the given question. The source document the question was written from is shown below; you may "
    "also search. You must conduct reasoning inside <think> and </think> first every time you get new "
    "information. If you lack some knowledge, you can call a search engine by <search> query </search> and it "
    "will return the top searched results between <information> and </information>. Provide the answer "
    "inside <answer> and </answer>, without detailed illustrations. For example, <answer> Beijing </answer>.\n"
    "Source document: {document}\nQuestion: {question}\n"
)

PROPOSER_PREFIX = """You are an expert in question generation. Craft one challenging, deterministic question and its single, unambiguous answer based on the provided source document. The logical path must start from the document and require exactly n hops (i.e., n-1 searches) to reach the final answer.

### Definitions
1. Hop: a node in the reasoning chain. Hop 1 is the starting entity found in the document. Hop n is the final answer.

### Process
1. Read the source document and select an entity explicitly mentioned in it: Hop 1.
2. From Hop i to Hop i+1: find a factual relation of Hop i via search. Continue until you have exactly n hops; Hop n must be a single, canonical final answer.
3. Reason inside <think> ... </think>. For each hop that needs external information, search with <search> query </search>; the results come back between <information> and </information>.
4. After exactly n-1 searches, output the question and the final answer:
<question> A question that gives Hop 1 and asks for Hop n </question>
<answer> The single, concise final answer (Hop n) </answer>

### Rules
1. Hop 1 must be in the source text; every later hop must be supported by search results.
2. Emit exactly n-1 searches.
3. No spoilers: the question mentions only Hop 1.
4. The question is self-contained; the answer is concise, with no commentary.

Now, generate a question and its answer with n = {hops} hops starting from the following source document: {document}
"""


def render_document(title: str, text: str) -> str:
    """Dr. Zero's document rendering (``process_train.py``): ``(Title: t)\\ntext\\n``."""
    return f"(Title: {title})\n{text}\n"
