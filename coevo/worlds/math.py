"""Math world: free-form competition-style questions and answers, no oracle (R-Zero §2).

* Proposer and Solver prompts come from the prompt style (``prompt_style``): an
  ``InstructionPrompts``, the world's own ``instruct`` (R-Zero's Challenger prompt, word for word
  from its code: ``coevo/worlds/math_prompts.py``, the default style) or one a recipe folder
  registers (``RecipeInfo.prompt_styles``), with the difficulty line as a configurable option; the
  system part and the user message are joined into one prompt string by default
  (``system_in_prompt=True``).
* ``parse_task``: the last ``<question>...</question>`` block (as R-Zero); the
  Challenger's own ``\\boxed{}`` after it is kept as ``Task.reference`` (R-Zero does not
  reward it; SynCo-style recipes may).
* ``extract_answer``: the last brace-balanced ``\\boxed{...}`` (R-Zero / mathruler).
* Answer checks: the world's default verifier kind is ``math`` (``verifier_kind``);
  the one definition is ``coevo.verify.checks.check_math_answer`` (cheap normalised
  string equality first, then math-verify on ``\\boxed{}``-wrapped forms, sympy
  fallback).  A run checks answers through its run verifier
  (``coevo.verify.run.make_run_verifier``: pool + cache).  ``equivalent`` runs
  the same check *inline* (callers outside a pool worker should not use it on model
  output); ``verdicts`` runs it through a ``VerifierPool`` and returns Verdicts with
  their reasons (timeout, unparsable, ...); ``group_answers`` is R-Zero's majority-vote
  clustering on top of it.
* Prompt styles (``prompt_style``): an instruction style (default: ``instruct``, R-Zero's prompts
  and strict formats, for instruction-following models) or the world's own ``fewshot`` for small models that cannot
  follow R-Zero's instructions (SmolLM2-135M writes neither ``<question>`` tags nor
  ``\\boxed{}`` under them: 100 % format failures, measured).  ``fewshot`` shows one
  worked example in the prompt, *prefills* the Challenger's answer with ``<question>``
  and stops it at ``</question>`` (``response_format``), and gives the Solver a one-shot
  "Problem / Solution ... The answer is \\boxed{}" pattern, stopped at the next
  ``Problem:``.  A fewshot question ends at the first of ``FEWSHOT_QUESTION_ENDS`` (the
  closing tag, a blank line, an answer marker; a sample cut by length has none and is a
  format failure) and must contain a question mark.
* ``answer_extraction``: ``boxed`` (default, R-Zero) or ``lenient`` -- the last
  ``\\boxed{}``, else the number after the last "answer is" / "answer:".  Lenient
  extraction changes what counts as an answer; the run records the choice in
  ``prompt_version``.
* No oracle: ``oracle`` returns None for generated questions, so pseudo-label accuracy
  (R-Zero §4.4) needs a judge or a reference set; ``eval_set`` is a small shipped reference
  set (``coevo/data/eval_sample_math.jsonl``) used by ``coevo eval``.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Sequence

from coevo.verify.latex import boxed, last_boxed, normalize_math  # noqa: F401 (re-exported)
from coevo.core.world import QUESTION, SYNTHESIS, ParseResult, ResponseFormat, Task, last_question
from coevo.worlds.math_prompts import INSTRUCT, INSTRUCT_PROMPTS, InstructionPrompts  # noqa: F401 (re-exported)
from coevo.worlds.synthesis import Synthesis, blocks, schema_check, tags_only

FEWSHOT = "fewshot"  # the world's own prompt style, for small models


def prompt_style_names() -> tuple[str, ...]:
    """The instruction styles (the world's ``instruct`` first, then those recipe folders register) and
    ``fewshot``."""
    from coevo.core.registry import prompt_styles

    return (INSTRUCT, *sorted(n for n in prompt_styles() if n not in (INSTRUCT, FEWSHOT)), FEWSHOT)


def instruction_prompts(style: str) -> InstructionPrompts | None:
    """The InstructionPrompts of a style (None for ``fewshot``); ValueError naming the styles.  Only a
    style other than the world's own asks the registry for the ones recipe folders register."""
    from coevo.core.registry import load, prompt_styles

    if style == FEWSHOT:
        return None
    if style == INSTRUCT:
        return INSTRUCT_PROMPTS
    refs = prompt_styles()
    if style not in refs:
        raise ValueError(f"prompt_style must be one of {', '.join(prompt_style_names())}, got {style!r}")
    return load(refs[style])


# prompt_style="fewshot": one worked example per prompt (rotated for variety)
FEWSHOT_EXAMPLES = (
    ("A baker makes 14 muffins and sells 9 of them. How many muffins are left?", "5"),
    ("A train travels 60 miles per hour for 3 hours. How many miles does it travel?", "180"),
    ("Anna has 3 boxes with 8 pencils in each box. How many pencils does she have?", "24"),
    ("A shirt costs 25 dollars. Tom pays with 40 dollars. How much change does he get?", "15"),
    ("There are 36 students split equally into 4 teams. How many students are in each team?", "9"),
    ("Lily saves 7 dollars every week. How much has she saved after 6 weeks?", "42"),
)
FEWSHOT_CHALLENGER = (
    "Write one new math word problem whose answer is a whole number. Put the problem between "
    "<question> and </question>, then its answer in \\boxed{{}}.\n\nExample:\n<question>\n{q}\n</question>\n\\boxed{{{a}}}"
)
FEWSHOT_SOLVER = (
    "Solve the problem. Show a short calculation, then write the final answer as \\boxed{{number}}.\n\n"
    "Example:\nProblem: Tom has 5 apples and eats 2. How many apples are left?\n"
    "Solution: 5 - 2 = 3. The answer is \\boxed{{3}}.\n\nProblem: {q}"
)
# SynCo's Synthesizer (SynCo appendix B.2): question, reference solution, final answer (coevo.worlds.synthesis)
SYNTH_INSTRUCTION = (
    "You are an expert competition-math problem setter. Write one new, self-contained math problem "
    "with a single final answer, a complete step-by-step reference solution, and the final answer. "
    "{difficulty_line}Output exactly the following three blocks and nothing else:\n\n"
    "<question>\n{{the full problem statement}}\n</question>\n"
    "<solution>\n{{the step-by-step solution, ending with \\boxed{{final answer}}}}\n</solution>\n"
    "<answer>\n{{the final answer only}}\n</answer>"
)
FEWSHOT_SOLUTIONS = ("14 - 9 = 5.", "60 * 3 = 180.", "3 * 8 = 24.", "40 - 25 = 15.", "36 / 4 = 9.", "7 * 6 = 42.")
# fewshot: the Solver's Problem / Solution pattern (a 135M model does not write three tagged blocks:
# 0 of 8 SmolLM2-135M outputs did, measured); the answer is prefilled with "Problem:"
FEWSHOT_SYNTH = (
    "Write a new math word problem whose answer is a whole number, then solve it.\n\n"
    "Example:\nProblem: {q}\nSolution: {s} The answer is \\boxed{{{a}}}.\n\nNow write a new problem and its solution in the same format."
)
FEWSHOT_SYNTH_STOPS = ("\nProblem:", "\nExample")
_ANSWER_SAYS = re.compile(r"(?i)(?:the\s+)?(?:final\s+)?answer\s*(?:is|:|=)")
_LAST_EQ_NUM = re.compile(r"=\s*\$?\s*(-?\d[\d,]*(?:\.\d+)?)")
_ASKS_RE = re.compile(r"\b(find|compute|calculate|determine|evaluate|how many|how much|what|which|simplify|solve)\b",
                      re.IGNORECASE)
_PROOF_RE = re.compile(r"\b(prove|show that)\b", re.IGNORECASE)
# fewshot: where a prefilled question ends (the Challenger is stopped at the first of these;
# 135M models rarely close the tag but do start an answer or a blank line)
FEWSHOT_QUESTION_ENDS = ("</question>", "\n\n", "<answer>", "Answer:", "\\boxed")
_ANSWER_IS_RE = re.compile(r"answer\s*(?:is|:|=)\s*\$?\s*(-?\d[\d,]*(?:\.\d+)?)", re.IGNORECASE)

SAMPLE_EVAL = Path(__file__).resolve().parent.parent / "data" / "eval_sample_math.jsonl"


class MathWorld:
    """World contract for free-form math (no oracle)."""

    name: str = "math"
    has_oracle: bool = False
    verifier_kind: str = "math"  # default verifier kind of answer checks (coevo.verify KINDS)
    verifier_options: dict = {}

    def __init__(self, difficulty_line: str | None = ..., system_in_prompt: bool = True,
                 pool: Any = None, timeout_s: float = 5.0, eval_path: str | Path | None = None,
                 prompt_style: str = INSTRUCT, answer_extraction: str = "boxed") -> None:
        """``difficulty_line``: ``...`` = the style's own line; None or "" = none."""
        self._prompts = instruction_prompts(prompt_style)  # None: fewshot
        if answer_extraction not in ("boxed", "lenient"):
            raise ValueError(f"answer_extraction must be boxed or lenient, got {answer_extraction!r}")
        style_line = self._prompts.difficulty_line if self._prompts else ""
        self.difficulty_line = style_line if difficulty_line is ... else (difficulty_line or "")
        self.system_in_prompt = system_in_prompt
        self.prompt_style = prompt_style
        self.answer_extraction = answer_extraction
        self._pool = pool
        self.timeout_s = timeout_s
        self.eval_path = Path(eval_path) if eval_path else SAMPLE_EVAL
        self._cache: dict[tuple[str, str], Any] = {}
        if self._prompts is not None:
            self.prompt_version = self._prompts.version + ("" if self.difficulty_line == style_line else "-custom")
        else:
            self.prompt_version = "math-fewshot-v1"
        if answer_extraction != "boxed":
            self.prompt_version += "+lenient"

    # proposer side -------------------------------------------------------
    @property
    def challenger_system(self) -> str:
        """The proposer's system prompt of an instruction style, with the difficulty line."""
        return self._prompts.proposer_system.format(difficulty_line=self.difficulty_line) if self._prompts else ""

    def proposer_prompts(self, n: int, seed: int = 0) -> list[str]:
        if self._prompts is None:
            ex = FEWSHOT_EXAMPLES
            return [FEWSHOT_CHALLENGER.format(q=ex[(seed + i) % len(ex)][0], a=ex[(seed + i) % len(ex)][1])
                    for i in range(n)]
        user = self._prompts.proposer_user
        p = f"{self.challenger_system}\n\n{user}" if self.system_in_prompt else user
        return [p] * n

    def response_format(self, kind: str) -> ResponseFormat | None:
        """fewshot: the Challenger's answer is prefilled with ``<question>`` and stopped at
        ``</question>``; the Solver's starts with ``Solution:`` and stops at a new ``Problem:``."""
        if self._prompts is not None:
            return None
        if kind == SYNTHESIS:
            return ResponseFormat(prefix="Problem:", stop=FEWSHOT_SYNTH_STOPS)
        if kind == QUESTION:
            return ResponseFormat(prefix="<question>\n", stop=FEWSHOT_QUESTION_ENDS)
        return ResponseFormat(prefix="Solution:", stop=("\nProblem:",))

    def parse_task(self, text: str, task_id: str) -> ParseResult:
        if self._prompts is None:
            return self._parse_fewshot(text or "", task_id)
        q, reason = last_question(text)
        if q is None:
            return ParseResult(None, reason)
        tail = text[text.rfind("</question>"):]
        return ParseResult(Task(task_id=task_id, question=q, reference=last_boxed(tail), meta={"difficulty": "generated"}))

    def _parse_fewshot(self, text: str, task_id: str) -> ParseResult:
        """``<question>`` then the question, ended by the first of FEWSHOT_QUESTION_ENDS
        (text cut by length has none: rejected); the question must ask something ('?')."""
        start = text.find("<question>")
        if start < 0:
            return ParseResult(None, "no-question-tag")
        body = text[start + len("<question>"):]
        ends = [i for i in (body.find(e) for e in FEWSHOT_QUESTION_ENDS) if i >= 0]
        if not ends:
            return ParseResult(None, "no-question-end")
        q = body[:min(ends)].strip()
        if not q:
            return ParseResult(None, "empty-question")
        if "?" not in q:
            return ParseResult(None, "no-question-mark")
        return ParseResult(Task(task_id=task_id, question=q, reference=None, meta={"difficulty": "generated"}))

    # synthesizer side (SynCo / RGBC) -------------------------------------
    synthesis_style: str = "freeform"

    def synthesizer_prompts(self, n: int, seed: int = 0) -> list[str]:
        """n Synthesizer prompts: the instruction (rzero style) or one worked example, rotated (fewshot)."""
        if self._prompts is None:
            ex, sol = FEWSHOT_EXAMPLES, FEWSHOT_SOLUTIONS
            return [FEWSHOT_SYNTH.format(q=ex[(seed + i) % len(ex)][0], s=sol[(seed + i) % len(ex)],
                                         a=ex[(seed + i) % len(ex)][1]) for i in range(n)]
        return [SYNTH_INSTRUCTION.format(difficulty_line=self.difficulty_line)] * n

    def parse_synthesis(self, text: str, task_id: str, finish_reason: str = "stop") -> Synthesis:
        """Question, reference solution and final answer of a free-form Synthesizer output, with the
        world's verdicts: ``schema``, ``well_posed`` (``question_problem``), ``legality``
        (``answer_problem``, ended with <eos>/stop, nothing outside the blocks).  ``fewshot``:
        the Problem / Solution pattern instead (``_parse_synthesis_fewshot``)."""
        if self._prompts is None:
            return self._parse_synthesis_fewshot(text, task_id, finish_reason)
        b = blocks(text)
        q = b["question"][0].strip() if len(b["question"]) == 1 else ""
        sol = b["solution"][0].strip() if len(b["solution"]) == 1 else ""
        raw = b["answer"][-1].strip() if b["answer"] else ""
        ans = unwrap_answer(raw)
        checks = {"schema": schema_check(text)}
        why = question_problem(q) if b["question"] else "no-question-tag"
        checks["well_posed"] = (not why, why)
        why = answer_problem(ans) if raw else "no-answer"
        if not why and finish_reason != "stop":
            why = "no-eos"
        if not why and not tags_only(text):
            why = "text-outside-tags"
        checks["legality"] = (not why, why)
        task = None
        if checks["well_posed"][0]:
            task = Task(task_id=task_id, question=q, reference=ans or None, solution=sol,
                        meta={"difficulty": "generated"})
        return Synthesis(q, sol, ans, task, checks, self.stated_answer(sol))

    def _parse_synthesis_fewshot(self, text: str, task_id: str, finish_reason: str) -> Synthesis:
        """``Problem: Q\nSolution: S ... The answer is \\boxed{A}.``: question = Q; final answer = the last
        ``\\boxed{}`` (else "the answer is N"); reference solution = S before that statement; the answer the
        solution states = the number after its last ``=``.  Schema: all three present.  Legality: a legal
        answer, and the output stopped -- or was cut after its final answer (small models ramble on)."""
        body = text[len("Problem:"):] if text.startswith("Problem:") else text
        for stop in FEWSHOT_SYNTH_STOPS:
            body = body[:-len(stop)] if body.endswith(stop) else body
        i = body.find("Solution:")
        q = body[:i].strip() if i >= 0 else ""
        rest = body[i + len("Solution:"):] if i >= 0 else ""
        ans = self.stated_answer(rest) or ""
        said = list(_ANSWER_SAYS.finditer(rest))
        cut = [k for k in (rest.rfind("\\boxed"), said[-1].start() if said else -1) if k >= 0]
        sol = rest[:min(cut)].strip() if cut else rest.strip()
        why = "missing-solution" if i < 0 else ("empty-question" if not q else (
            "empty-solution" if not sol else ("missing-answer" if not ans else "")))
        checks = {"schema": (not why, why)}
        why = question_problem(q) if i >= 0 else "no-question-end"
        checks["well_posed"] = (not why, why)
        why = answer_problem(unwrap_answer(ans)) if ans else "no-answer"  # a cut output with a final answer is legal
        checks["legality"] = (not why, why)
        hits = _LAST_EQ_NUM.findall(sol)
        task = None
        if checks["well_posed"][0]:
            task = Task(task_id=task_id, question=q, reference=unwrap_answer(ans) or None, solution=sol,
                        meta={"difficulty": "generated"})
        return Synthesis(q, sol, unwrap_answer(ans), task, checks, hits[-1].replace(",", "") if hits else None)

    def stated_answer(self, solution: str) -> str | None:
        """The answer a solution states: its last ``\\boxed{}``, else the number after the last "answer is"."""
        a = last_boxed(solution or "")
        if a is None:
            hits = _ANSWER_IS_RE.findall(solution or "")
            a = hits[-1].replace(",", "") if hits else None
        return a

    def answer_with_format(self, text: str, finish_reason: str) -> tuple[str | None, bool]:
        """(answer, well formatted) of a Reasoner rollout (SynCo's 1.0 / 0.9 tiers): formatted = a
        ``\\boxed{}`` answer in a rollout that stopped; recovered = a boxed answer in a rollout cut
        by length, or the number after the last "answer is" / "answer:"."""
        a = last_boxed(text or "")
        if a is not None:
            return a, finish_reason == "stop"
        hits = _ANSWER_IS_RE.findall(text or "")
        return (hits[-1].replace(",", ""), False) if hits else (None, False)

    def repetition_text(self, question: str) -> str:
        """The question as is: R-Zero's BLEU splits it on whitespace."""
        return question

    # solver side ---------------------------------------------------------
    def solver_prompt(self, task: Task) -> str:
        if self._prompts is None:
            return FEWSHOT_SOLVER.format(q=task.question)
        return f"{task.question}\n\n{self._prompts.solver_suffix}"

    def extract_answer(self, text: str) -> str | None:
        a = last_boxed(text)
        if a is None and self.answer_extraction == "lenient" and text:
            hits = _ANSWER_IS_RE.findall(text)
            a = hits[-1].replace(",", "") if hits else None
        return a

    def _get_pool(self):
        if self._pool is None:
            from coevo.verify.pool import default_pool

            self._pool = default_pool()
        return self._pool

    def verdicts(self, pairs: Sequence[tuple[str | None, str | None]]) -> list:
        """Verdict for each (answer, reference) pair: fast path, cache, then the pool
        (``check_math_answer``, the ``math`` kind)."""
        from coevo.verify.checks import MATH_ANSWER_VERSION, math_answer_task
        from coevo.core.verdict import Verdict

        out: list[Any] = [None] * len(pairs)
        todo: list[int] = []
        for i, (a, b) in enumerate(pairs):
            if a is None or b is None:
                out[i] = Verdict(None, "unparsable", "math", MATH_ANSWER_VERSION, detail={"note": "no answer"})
            elif normalize_math(a) == normalize_math(b):
                out[i] = Verdict(1, "", "math", MATH_ANSWER_VERSION, detail={"via": "normalized-equal"})
            elif (a, b) in self._cache:
                out[i] = self._cache[(a, b)]
            else:
                todo.append(i)
        if todo:
            res = self._get_pool().map(math_answer_task, [pairs[i] for i in todo], timeout_s=self.timeout_s)
            for i, v in zip(todo, res):
                v.kind, v.version = "math", MATH_ANSWER_VERSION
                out[i] = v
                if getattr(v, "reason", "") not in ("timeout", "worker-crash"):
                    self._cache[(pairs[i][0], pairs[i][1])] = v
        return out

    def equivalent(self, a: str | None, b: str | None) -> bool:
        """The ``math`` kind's check, inline: ``check_math_answer(a, b).value == 1``.

        Runs math-verify in *this* process: fine inside a pool worker or on trusted
        text; for model output outside a worker use the run verifier or ``verdicts``."""
        if a is None or b is None:
            return False
        from coevo.verify.checks import check_math_answer

        return check_math_answer(a, b).value == 1

    def __getstate__(self) -> dict:  # picklable into pool workers: no pool, no cache
        st = dict(self.__dict__)
        st["_pool"], st["_cache"] = None, {}
        return st

    @classmethod
    def option_names(cls) -> frozenset:
        """None: its settings are fields of the world section (``prompt_style``, ``answer_extraction``,
        ``challenger_prompt_line``)."""
        return frozenset()

    @classmethod
    def from_config(cls, cfg) -> "MathWorld":
        """From the run config: ``world.challenger_prompt_line`` is the difficulty phrase (the style's
        own phrase, spaces aside, means the style's own line)."""
        w = cfg.world
        world = cls(timeout_s=float(cfg.verify.timeout_s), prompt_style=w.prompt_style,
                    answer_extraction=w.answer_extraction)
        phrase, own = w.challenger_prompt_line, world._prompts
        if own is not None and phrase.replace(" ", "") != own.difficulty_phrase.replace(" ", ""):
            line = f"Aim for a difficulty such that {phrase.strip().rstrip('.')}. " if phrase.strip() else ""
            world = cls(difficulty_line=line, timeout_s=world.timeout_s, prompt_style=w.prompt_style,
                        answer_extraction=w.answer_extraction)
        return world

    def group_answers(self, answers: Sequence[str | None]) -> list[int]:
        """Cluster id per answer (pairwise equivalence against cluster representatives, as
        R-Zero's majority vote); None answers share one cluster, as R-Zero's sentinel vote."""
        reps: list[str | None] = []
        ids: list[int] = []
        for a in answers:
            found = -1
            if a is None:
                found = next((j for j, r in enumerate(reps) if r is None), -1)
            else:
                cand = [j for j, r in enumerate(reps) if r is not None]
                vs = self.verdicts([(a, reps[j]) for j in cand]) if cand else []
                found = next((j for j, v in zip(cand, vs) if v.value == 1), -1)
            if found < 0:
                reps.append(a)
                found = len(reps) - 1
            ids.append(found)
        return ids

    def oracle(self, task: Task) -> str | None:
        return None

    # evaluation ----------------------------------------------------------
    def eval_set(self) -> Sequence[Task]:
        return load_jsonl_tasks(self.eval_path)


def question_problem(q: str) -> str:
    """Why a free-form question is not well posed ("" when it is): non-empty, 10-2000 characters,
    no markup or answer inside, asks for something (a '?' or an imperative such as "find"), not a proof."""
    if not q:
        return "empty-question"
    if len(q) < 10:
        return "question-too-short"
    if len(q) > 2000:
        return "question-too-long"
    if re.search(r"</?(question|solution|answer)>", q) or "\\boxed" in q:
        return "answer-in-question"
    if _PROOF_RE.search(q):
        return "proof-question"
    if "?" not in q and not _ASKS_RE.search(q):
        return "no-question-asked"
    return ""


def unwrap_answer(raw: str) -> str:
    """A final-answer block without surrounding ``$`` or a whole-answer ``\\boxed{}``."""
    a = raw.strip().strip("$").strip()
    inner = last_boxed(a)
    if inner is not None and a.startswith("\\boxed") and a.endswith("}"):
        a = inner.strip()
    return a


def answer_problem(a: str) -> str:
    """Why a final answer is not legal ("" when it is): one short line, no markup."""
    if not a:
        return "empty-answer"
    if "\n" in a or len(a) > 64:
        return "answer-not-final"
    if "<" in a and re.search(r"</?\w+>", a):
        return "markup-in-answer"
    if not normalize_math(a):
        return "answer-unparsable"
    return ""


def load_jsonl_tasks(path: str | Path) -> list[Task]:
    """JSONL rows with ``question`` and ``answer`` (a string) or ``answers`` (a list)."""
    tasks: list[Task] = []
    path = Path(path)
    for ln, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}:{ln}: not JSON ({e.msg})") from None
        q = row.get("question") or row.get("problem")
        ans = row.get("answers", row.get("answer", row.get("golden_answers")))
        if not q or ans is None:
            raise ValueError(f"{path}:{ln}: needs 'question' and 'answer' or 'answers'")
        answers = [str(a) for a in ans] if isinstance(ans, list) else [str(ans)]
        tid = str(row.get("id", f"{path.stem}-{ln}"))
        meta = {"difficulty": row.get("level", row.get("difficulty", "all")), "answers": answers}
        tasks.append(Task(task_id=tid, question=str(q), reference=answers[0], meta=meta))
    return tasks
