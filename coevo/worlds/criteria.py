"""Criteria world (VG-OPD; CASA proposal): multi-step unit problems with per-criterion truth.

Each prompt (``coevo.worlds.criteria_gen.Problem``) is a bank entry
(``coevo.criteria.bank.BankEntry``, ``world.entry(task)``) with eight criteria over four
capability axes and four verifier kinds::

    id           axis        weight  kind          reads    passes when
    dist         arithmetic   1      numeric_unit  step:1   rate x time in the source unit
    setup        method       0.5    sympy_equiv   expr:1   step 1's expression equals rate*time
    total        arithmetic   1      numeric_unit  step:2   distance +- extra
    convert      units        1      rule (regex)  expr:3   step 3 multiplies by the right factor
    final_value  final        2      numeric_unit  final    the answer's value (any length unit)
    final_unit   units        1      rule (regex)  final    the answer is in the asked unit
    wrong_unit   units       -1      rule (regex)  all      PENALTY: a quantity in a time unit
    order        method       0.5    sim_judge     all      product, then +-, then conversion
                                     (llm_judge when ``judge`` options are set)

The generator knows every true value, so ``oracle_verdict(task, criterion_id, answer)``
gives the true 1/0 of any criterion on any answer (pure Python: its own unit table and
integer evaluation, no pint / sympy), and every abstention can be checked against it.

**Abstention channels** (options, all 0 / None = the null check; ``coevo.criteria.verifier``):
``timeout_rate`` (hazard proportional to answer length, the rate at the reference
solution's length), ``length_budget`` (answers longer than this many characters always
time out), ``unparsable_rate`` (a simulated parser gap on parsing kinds; really
malformed steps are unparsable at any rate), ``judge_unknown_rate`` (the SIMULATED judge
says unknown), ``channel_seed``.  A real pool timeout comes from ``verify.timeout_s``.
Answer-dependent channels (off by default; docs/criteria.md "Abstention with consequences"):
``judge_unknown_wrong_rate`` (the simulated judge's unknown rate where the method is wrong),
``timeout_power`` (hazard ``timeout_rate * (len / ref_len) ** power``: 0 flat, > 1 strikes
long answers), ``unparsable_format`` / ``unparsable_format_rate`` (located parts in that
output format abstain unparsable).  Controls (off by default): ``phi_patterns`` (abstention
patterns per group of criteria, drawn whatever the answer says) and ``verdict_rates`` (an
abstention rate per criterion given the check's verdict 1 / 0).  ``train_exclude``: conversions
never drawn for training (a held-out criteria family).

Proposer side: the bank is the proposer — ``sample_tasks(n, seed)`` draws training
prompts (train split); ``eval_set()`` holds ``eval_n`` distinct held-out prompts (eval
split, never seen in pretraining).  ``scorer(pool, cache_store, timeout_s)`` returns the
``CriteriaScorer`` that checks criteria through the run verifier; ``verifier_pairs(task,
answer)`` lists the (criterion id, kind, locate, answer, reference) checks.
Tiny policies: ``coevo/assets/criteria_student.pt``, ``criteria_expert_units.pt``,
``criteria_expert_arith.pt`` (coevo/pretrain/criteria.py); docs/criteria.md.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from typing import ClassVar, Optional, Sequence

from coevo.criteria.bank import BankEntry, Criterion
from coevo.criteria.scoring import CriteriaScorer, criterion_pairs
from coevo.criteria.verifier import Channels, locate
from coevo.core.world import ParseResult, Task, last_question
from coevo.worlds.criteria_gen import (CONVERSIONS, LENGTH_UNITS, Problem, distinct_problems, parse_question,
                                       sample_problems, split_of)

SOLVE = "<solve>"
WRONG_UNIT_PATTERN = r"[0-9] ?(s|min|h)(;|$)"
ORDER_PATTERN = r"^[0-9]+\*[0-9]+=[^;]*;[^;]*[+-][^;]*;[^;]*\*"
ORDER_RUBRIC = ("The solution first multiplies rate by time, then adds or subtracts the extra distance, "
                "then converts to the asked unit.")
TIME_SECONDS = {"s": 1, "min": 60, "h": 3600}
AXES = ("arithmetic", "units", "final", "method")
VACUOUS_ANSWER = "the distance follows from the rate and the time;the answer is in the asked unit"
_QTY = re.compile(r"^\s*([-+]?\d+(?:\.\d+)?)\s*([a-z]*)\s*$")
_EXPR = re.compile(r"^\d+(?:[+\-*]\d+)*$")


def problem_criteria(p: Problem, judge: bool = False, total_setup: bool = False) -> list[Criterion]:
    """The eight criteria of one problem (``judge``: the order criterion is an llm_judge;
    ``total_setup``: a ninth, step 2's expression, on the arithmetic axis -- see ``CriteriaWorld``)."""
    word = "adding" if p.op == "+" else "subtracting"
    order = ({"rubric": ORDER_RUBRIC} if judge else
             {"rubric": ORDER_RUBRIC, "proxy": {"kind": "rule", "spec": {"pattern": ORDER_PATTERN}}})
    rows = [
        ("dist", f"distance = rate x time = {p.dist} {p.src}", 1.0, "arithmetic", "numeric_unit", "step:1",
         {"value": p.dist, "unit": p.src}),
        ("setup", f"the distance is set up as {p.rate}*{p.time}", 0.5, "method", "sympy_equiv", "expr:1",
         {"expr": f"{p.rate}*{p.time}"}),
        ("total", f"after {word} {p.extra} {p.src} the distance is {p.total} {p.src}", 1.0, "arithmetic",
         "numeric_unit", "step:2", {"value": p.total, "unit": p.src}),
        *([("total_setup", f"step 2 is set up as {p.dist}{p.op}{p.extra}", 0.5, "arithmetic", "sympy_equiv",
            "expr:2", {"expr": f"{p.dist}{p.op}{p.extra}"})] if total_setup else []),
        ("convert", f"the conversion {p.src} to {p.dst} multiplies by {p.factor}", 1.0, "units", "rule", "expr:3",
         {"mode": "regex", "pattern": f"(^|\\*) ?{p.factor} ?(\\*|$)"}),
        ("final_value", f"the answer is {p.final} {p.dst} (any length unit)", 2.0, "final", "numeric_unit", "final",
         {"value": p.final, "unit": p.dst}),
        ("final_unit", f"the answer is stated in {p.dst}", 1.0, "units", "rule", "final",
         {"mode": "regex", "pattern": f"^[0-9]+ ?{p.dst}$"}),
        ("wrong_unit", "a distance is stated in a time unit (penalty)", -1.0, "units", "rule", "all",
         {"mode": "regex", "pattern": WRONG_UNIT_PATTERN}),
        ("order", ORDER_RUBRIC, 0.5, "method", "llm_judge" if judge else "sim_judge", "all", order),
    ]
    return [Criterion(id=i, text=t, weight=w, axis=a, kind=k, locate=loc, spec=s) for i, t, w, a, k, loc, s in rows]


def _quantity(text: str) -> Optional[tuple[str, Fraction]]:
    """(dimension, value in m or s) of ``"56 km"``; None if not a number with a known unit."""
    m = _QTY.match(text or "")
    if not m:
        return None
    num, unit = Fraction(m.group(1)), m.group(2)
    if unit in LENGTH_UNITS:
        a, b = LENGTH_UNITS[unit]
        return "length", num * a / b
    if unit in TIME_SECONDS:
        return "time", num * TIME_SECONDS[unit]
    return None


def truth_of(c: Criterion, answer: Optional[str]) -> int:
    """The true verdict of criterion ``c`` on ``answer`` (the oracle; never abstains)."""
    part = locate(answer, c.locate)
    if not part:
        return 0
    kind, spec = (c.spec["proxy"]["kind"], c.spec["proxy"]["spec"]) if c.kind == "sim_judge" else (c.kind, c.spec)
    if c.kind == "llm_judge":
        kind, spec = "rule", {"pattern": ORDER_PATTERN}
    if kind == "numeric_unit":
        got, want = _quantity(part), _quantity(f"{spec['value']} {spec['unit']}")
        return int(got is not None and want is not None and got[0] == want[0] and got[1] == want[1])
    if kind == "sympy_equiv":
        from coevo.worlds.arithmetic import evaluate

        e = part.replace(" ", "")
        return int(bool(_EXPR.match(e)) and evaluate(e) == evaluate(spec["expr"]))
    if kind == "rule":
        hit = re.search(spec["pattern"], part, 0 if spec.get("case_sensitive") else re.IGNORECASE) is not None
        return int(hit != bool(spec.get("negate", False)))
    raise ValueError(f"no oracle for kind {kind!r}")


@dataclass
class CriteriaWorld:
    """World contract over generated unit problems, with criteria, channels and an oracle."""

    seed: int = 0
    eval_n: int = 200
    eval_seed: int = 0
    timeout_rate: float = 0.0
    unparsable_rate: float = 0.0
    judge_unknown_rate: float = 0.0
    length_budget: Optional[int] = None
    channel_seed: int = 0
    # abstention that depends on the answer (docs/criteria.md "Abstention with consequences"; off by default)
    judge_unknown_wrong_rate: Optional[float] = None
    timeout_power: float = 1.0
    unparsable_format: Optional[str] = None
    unparsable_format_rate: float = 0.0
    # the controls of coevo experiment casa-arms (docs/criteria.md "Abstention controls"; off by default):
    # abstention patterns drawn per (prompt, group, answer) independently of the answer, and abstention
    # rates per criterion given the check's own verdict (coevo.criteria.verifier.Channels)
    phi_patterns: Optional[dict] = None
    verdict_rates: Optional[dict] = None
    # a held-out criteria family: conversions (``Problem.conversion``, e.g. "cm-mm") never drawn for
    # training; the held-out set keeps them, so its by-difficulty accuracy on them is the family's
    train_exclude: tuple = ()
    judge: Optional[dict] = None   # llm_judge options (base_url, model, api_key_env ...): real judge
    # a third, lighter criterion on the arithmetic axis (step 2's expression, weight 0.5). With the
    # default layout every axis has at most two equally weighted positive criteria, and then no rank
    # reversal can happen (docs/casa.md); with this one it can, so the instrument can be checked.
    total_setup: bool = False
    max_answer_tokens: int = 56
    name: str = "criteria"
    prompt_version: str = "criteria-v1"
    has_oracle: bool = True
    # single answer checks (labels, majority votes) compare final values: ``equivalent``
    verifier_kind: ClassVar[Optional[str]] = None
    verifier_options: ClassVar[dict] = {}
    axes: ClassVar[tuple] = AXES
    _entries: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        self.channels = Channels(self.timeout_rate, self.unparsable_rate, self.judge_unknown_rate,
                                 self.length_budget, self.channel_seed, self.judge_unknown_wrong_rate,
                                 self.timeout_power, self.unparsable_format, self.unparsable_format_rate,
                                 phi_patterns=self.phi_patterns, verdict_rates=self.verdict_rates)
        self.train_exclude = tuple(self.train_exclude or ())
        known = {f"{a}-{b}" for a, b, _ in CONVERSIONS}
        bad = sorted(set(self.train_exclude) - known)
        if bad or len(set(self.train_exclude)) >= len(known):
            raise ValueError(f"world.options.train_exclude: {bad or 'every conversion'} (conversions: {sorted(known)})")

    @classmethod
    def option_names(cls) -> frozenset:
        """The ``world.options`` keys it takes (checked when the config loads: coevo.worlds.check_options)."""
        return frozenset(cls.__dataclass_fields__) - {"name", "prompt_version", "has_oracle", "_entries"}

    @classmethod
    def from_config(cls, cfg) -> "CriteriaWorld":
        """Options from ``cfg.world.options`` only (the held-out set is ``eval_n`` / ``eval_seed``
        there, so the shipped policies' measured accuracies hold for a run's evaluation)."""
        opts = dict(cfg.world.options or {})
        known = cls.option_names()
        bad = sorted(set(opts) - known)
        if bad:
            raise ValueError(f"world.options.{bad[0]}: not an option of the criteria world ({', '.join(sorted(known))})")
        return cls(**opts)

    # tasks ------------------------------------------------------------------
    def task_of(self, p: Problem) -> Task:
        return Task(task_id=task_id_of(p.question), question=p.question, reference=f"{p.final} {p.dst}",
                    solution=p.solution, meta={"difficulty": p.conversion, "split": split_of(p.question),
                                               "ref_len": len(p.solution)})

    def sample_tasks(self, n: int, seed: int = 0) -> list[Task]:
        """n training prompts (train split; the bank as the proposer)."""
        return [self.task_of(p) for p in sample_problems(n, self.seed * 100_003 + seed, "train", self.train_exclude)]

    def eval_set(self) -> Sequence[Task]:
        """``eval_n`` distinct held-out prompts (eval split), fixed by ``eval_seed``."""
        return [self.task_of(p) for p in distinct_problems(self.eval_n, self.eval_seed, "eval")]

    def problem(self, task: Task) -> Problem:
        p = parse_question(task.question)
        if p is None:
            raise ValueError(f"task {task.task_id!r} is not a criteria-world question: {task.question!r}")
        return p

    def entry(self, task: Task) -> BankEntry:
        """The prompt as a bank entry (id, prompt, reference solution, criteria)."""
        key = task.question
        if key not in self._entries:
            p = self.problem(task)
            self._entries[key] = BankEntry(id=task.task_id, prompt=p.question, reference=p.solution,
                                           criteria=problem_criteria(p, self.judge is not None, self.total_setup),
                                           meta={"source": "world:criteria", "ref_len": len(p.solution),
                                                 "final": f"{p.final} {p.dst}", "split": split_of(p.question)})
        return self._entries[key]

    def criteria(self, task: Task) -> list[Criterion]:
        return list(self.entry(task).criteria)

    # proposer side (a fixed prompt sampler) ----------------------------------
    def proposer_prompts(self, n: int, seed: int = 0) -> list[str]:
        return ["<propose>"] * n

    def parse_task(self, text: str, task_id: str) -> ParseResult:
        q, reason = last_question(text)
        q = q if q is not None else (text or "").strip()
        p = parse_question(q)
        if p is None:
            return ParseResult(None, reason or "not-a-problem")
        t = self.task_of(p)
        t.task_id = task_id
        return ParseResult(t)

    def repetition_text(self, question: str) -> str:
        return question

    # solver side -------------------------------------------------------------
    def solver_prompt(self, task: Task) -> str:
        return f"{SOLVE}{task.question};"

    def extract_answer(self, text: str) -> Optional[str]:
        """The whole solution (criteria read its steps), cut at ``<eos>``; None if empty."""
        s = (text or "").split("<eos>")[0].strip()
        return s or None

    def final_answer(self, answer: Optional[str]) -> Optional[str]:
        return locate(answer, "final")

    def equivalent(self, a: Optional[str], b: Optional[str]) -> bool:
        """Final values equal as quantities (numeric_unit check of the ``final`` parts)."""
        from coevo.verify.checks import check_numeric_unit

        fa, fb = self.final_answer(a), self.final_answer(b)
        return fa is not None and fb is not None and check_numeric_unit(fa, fb).value == 1

    def oracle(self, task: Task) -> Optional[str]:
        p = parse_question(task.question)
        return None if p is None else f"{p.final} {p.dst}"

    # criteria: truth and verification -----------------------------------------
    def oracle_verdict(self, task: Task, criterion_id: str, answer: Optional[str]) -> int:
        """The true 1/0 of one criterion on ``answer`` (penalties: 1 = the fault is present)."""
        return truth_of(self.entry(task).criterion(criterion_id), answer)

    def verifier_pairs(self, task: Task, answer: Optional[str]):
        """``coevo.criteria.scoring.CriterionPair`` per criterion of ``task`` for ``answer``."""
        return criterion_pairs(self.entry(task), answer)

    def scorer(self, pool=None, cache_store=None, timeout_s: Optional[float] = None) -> CriteriaScorer:
        """A ``CriteriaScorer`` with this world's channels (and judge endpoint, if any)."""
        return CriteriaScorer(self.channels, pool=pool, cache_store=cache_store, timeout_s=timeout_s,
                              judge_options=self.judge)

    def probe_answers(self, task: Task, other: Task) -> dict[str, str]:
        """Probe answers for ``task`` (the CASA proposal's per-step baseline): its own reference
        solution, the reference solution of another prompt, and a vacuous template."""
        return {"own": self.entry(task).reference, "mismatched": self.entry(other).reference,
                "vacuous": VACUOUS_ANSWER}

    def axis_accuracy(self, tasks: Sequence[Task], answers: Sequence[Optional[str]]) -> dict[str, float]:
        """Share of criteria in their desired state per axis (oracle verdicts: 1 for a reward
        criterion, 0 for a penalty), plus ``all`` (every criterion of the answer right)."""
        hits: dict[str, list[int]] = {a: [] for a in AXES}
        whole = []
        for t, ans in zip(tasks, answers):
            oks = []
            for c in self.criteria(t):
                ok = int(truth_of(c, ans) == (1 if c.weight > 0 else 0))
                hits.setdefault(c.axis, []).append(ok)
                oks.append(ok)
            whole.append(int(all(oks)))
        out = {a: round(sum(v) / len(v), 4) for a, v in hits.items() if v}
        out["all"] = round(sum(whole) / max(len(whole), 1), 4)
        return out


@lru_cache(maxsize=65536)
def task_id_of(question: str) -> str:
    import hashlib

    return "crit-" + hashlib.sha1(question.encode()).hexdigest()[:12]


def world_entries(world: CriteriaWorld, tasks: Sequence[Task]) -> list[BankEntry]:
    """Bank entries of tasks (the world's own criteria; ``coevo criteria derive`` builds
    entries from an annotator's checkpoints instead)."""
    return [world.entry(t) for t in tasks]
