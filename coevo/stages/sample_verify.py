"""The one sample -> extract -> verify stage: K completions per task from a policy, each
completion's answer through the world's response format, and the verifier's verdicts of
every answer against each named target.

Training groups (``coevo.stages.group.draw_group``), the held-out evaluation
(``coevo.stages.evaluate``), benchmark evaluation (``coevo.evaluate``) and the zero-training
certificate (``coevo.stages.certify``) all go through ``sample_verify``; they differ only in
what they build from its ``Answers`` (rollout and verdict rows, ``evals`` rows, accuracies,
screen / confirm groups).  The stage writes nothing: the caller builds its rows and commits
them through its own writer.

Sampling: the world's solver prompts and answer sampling (``solve``), or
``sampler(policy, world, tasks, n, sampling)`` (e.g. multi-turn episodes), with ``sampling``
as given (its ``stream`` decides which RNG moves); ``chunk`` prompts per call (None: one
call for all), in task order, so the draws are those of one call per chunk.  Extraction: a
completion the backend failed to sample (``finish_reason == "error"``) has no answer, any
other the world's ``extract_answer(text)``; when every completion of the first chunk failed, the
endpoint is down and the stage raises ``coevo.core.endpoints.EndpointDown`` (one line, the server and
the cause) instead of scoring a dead server's empty answers; ``extract(c) -> (answer, formatted)`` replaces
it.  Verification: one ``verifier.match_many`` call per target (``match`` replaces it, e.g.
"correct against any of several references").
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from coevo.core.endpoints import raise_if_all_failed
from coevo.core.policy import Completion, Policy, SamplingParams, full_text
from coevo.core.world import ANSWER, QUESTION, ParseResult, Task, World, role_sampling
from coevo.timing import stage

Extract = Callable[[Completion], "tuple[str | None, bool]"]
Match = Callable[[object, Sequence[Sequence["str | None"]], Sequence], "list[list]"]


@dataclass
class Answers:
    """n rollouts of each task, their answers and their verdicts against each target;
    ``rows``: the ledger rows a caller built from them ({table: [row, ...]})."""

    tasks: list[Task]
    outs: list[list[Completion]]
    answers: list[list[str | None]]
    formatted: list[list[bool]]
    verdicts: dict[str, list[list]] = field(default_factory=dict)  # target -> per task -> per rollout
    rows: dict[str, list[dict]] = field(default_factory=dict)

    def mu(self, target: str, j: int) -> float:
        """Share of task j's rollouts that the verifier judged equal to ``target`` (NaN: none)."""
        vs = self.verdicts[target][j]
        return float(np.mean([v.value == 1 for v in vs])) if vs else float("nan")

    def mus(self, target: str) -> list[float]:
        """``mu(target, j)`` of every task."""
        return [self.mu(target, j) for j in range(len(self.tasks))]

    def completions(self, js: Sequence[int] | None = None) -> list[Completion]:
        return [c for j in (range(len(self.tasks)) if js is None else js) for c in self.outs[j]]


@dataclass
class Proposal:
    completion: Completion
    parsed: ParseResult
    group: int  # index of the prompt (GRPO group) it came from

    @property
    def task(self) -> Task | None:
        return self.parsed.task


def sampling_error_reason(c: Completion) -> str:
    """Why a completion has no answer or task: the backend failed to sample it (its error,
    cut to 300 characters), or the text has none."""
    if c.finish_reason == "error":
        return f"sampling-error: {str(c.meta.get('error', ''))[:300]}"
    return "no-answer"


def propose(proposer: Policy, world: World, n_prompts: int, group: int, sampling: SamplingParams,
            id_prefix: str, seed: int = 0) -> list[Proposal]:
    """Sample ``group`` proposals for each of ``n_prompts`` proposer prompts and parse them."""
    prompts = world.proposer_prompts(n_prompts, seed)
    with stage("sample"):
        outs = proposer.sample(prompts, group, role_sampling(world, QUESTION, sampling))
    props = []
    for g, comps in enumerate(outs):
        for k, c in enumerate(comps):
            if c.finish_reason == "error":  # the backend failed to sample it (reason in meta)
                parsed = ParseResult(None, sampling_error_reason(c))
            else:
                parsed = world.parse_task(full_text(c), f"{id_prefix}-{g}-{k}")
            props.append(Proposal(c, parsed, g))
    return props


def solve(solver: Policy, world: World, tasks: Sequence[Task], n: int,
          sampling: SamplingParams) -> list[list[Completion]]:
    if not tasks:
        return []
    with stage("sample"):
        return solver.sample([world.solver_prompt(t) for t in tasks], n, role_sampling(world, ANSWER, sampling))


def answer_of(world: World, c: Completion, full: bool = False) -> str | None:
    """The answer in a completion: None when the backend failed to sample it, else the world's
    ``extract_answer`` of its text (``full``: of prefill + text + stop, ``full_text``).  Every
    extraction of an answer from a completion in coevo goes through here."""
    if c.finish_reason == "error":
        return None
    return world.extract_answer(full_text(c) if full else c.text)


def first_answers(world: World, outs: Sequence[Sequence[Completion]]) -> list[str | None]:
    """``answer_of`` the first completion of each prompt (greedy evaluations: one sample each)."""
    return [answer_of(world, comps[0]) for comps in outs]


def default_extract(world: World) -> Extract:
    """``(answer, formatted)``: ``answer_of`` and whether there is one."""
    def extract(c: Completion) -> tuple[str | None, bool]:
        a = answer_of(world, c)
        return a, a is not None
    return extract


def match_grouped(verifier, answers: Sequence[Sequence[str | None]], targets: Sequence[str | None]) -> list[list]:
    """Verdicts of every answer against its task's target, in one verifier call."""
    flat = verifier.match_many([(a, t) for ans, t in zip(answers, targets) for a in ans])
    out, j = [], 0
    for ans in answers:
        out.append(flat[j:j + len(ans)])
        j += len(ans)
    return out


def sample_verify(policy: Policy, world: World, tasks: Sequence[Task], n: int, sampling: SamplingParams,
                  verifier=None, targets: dict[str, Sequence | None] | None = None, *,
                  sampler: Callable | None = None, extract: Extract | None = None, match: Match | None = None,
                  chunk: int | None = None, progress: Callable[[int, int], None] | None = None) -> Answers:
    """Sample ``n`` completions per task, extract their answers, verify them against each named
    target (``targets``: name -> one value per task; a None value skips that target) and return
    the ``Answers`` (see the module docstring).  ``progress(done, total)`` after each chunk."""
    tasks = list(tasks)
    if not tasks:
        return Answers([], [], [], [], {name: [] for name in (targets or {})})
    step = chunk or len(tasks)
    outs: list[list[Completion]] = []
    for a in range(0, len(tasks), step):
        with stage("sample"):
            got = (sampler or solve)(policy, world, tasks[a:a + step], n, sampling)
        if a == 0:  # every call of the first chunk failed after its retries: stop, one line (EndpointDown)
            raise_if_all_failed([c for comps in got for c in comps[:1]], "model server")  # one call per task
        outs.extend(got)
        if progress is not None:
            progress(min(a + step, len(tasks)), len(tasks))
    ex = extract or default_extract(world)
    pairs = [[ex(c) for c in comps] for comps in outs]
    res = Answers(tasks, outs, [[a for a, _ in p] for p in pairs], [[f for _, f in p] for p in pairs])
    with stage("verify"):
        for name, values in (targets or {}).items():
            if values is not None:
                res.verdicts[name] = (match or match_grouped)(verifier, res.answers, values)
    return res
