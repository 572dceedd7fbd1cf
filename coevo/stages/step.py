"""The stages of one step, and the context they take.

A recipe's step function builds its step from four stages, each given one ``StepContext``
(whose rows: run, round, step; the world; the verifier; the loss; the sampling settings):

- ``propose``: a proposer's completions, each parsed by the world into a task (or a reason);
- ``sample_verify``: the one sample -> extract -> verify stage: n completions per task, each
  completion's answer through the world's response format (``answer_of``: every extraction of an
  answer in coevo goes through it), and the verifier's verdicts of every answer against each
  named target;
- ``draw_group``: a training group: ``sample_verify``, then its rollout and verdict rows;
- ``update_role``: advantages -> one GRPO update (``coevo.rl.grpo``) -> reward rows -> update row.

How a group is drawn and named is one ``Draw`` (defaults: the Solver's training rollouts); what a
role is updated on is one ``Scored`` (completions, rewards, ids).  Training groups, the held-out
evaluation (``coevo.stages.evaluate``), benchmark evaluation (``coevo.evaluate``) and the
zero-training certificate (``coevo.stages.certify``) all go through ``sample_verify``; they differ
only in what they build from its ``Answers``.  No stage writes to the ledger: each returns plain
data plus the rows it built ({table: [row, ...]}), and the recipe commits a whole step at once.

Sampling: the world's solver prompts and answer sampling (``solve``), or ``Draw.sampler(policy,
world, tasks, n, sampling)`` (e.g. multi-turn episodes), with the context's sampling on
``Draw.stream`` (which RNG moves; None: the context's own); ``Draw.chunk`` prompts per call (None:
one call for all), in task order, so the draws are those of one call per chunk.  Extraction: a
completion the backend failed to sample (``finish_reason == "error"``) has no answer, any other the
world's ``extract_answer(text)``; when every completion of the first chunk failed, the endpoint is
down and the stage raises ``coevo.core.verdict.EndpointDown`` (one line, the server and the cause)
instead of scoring a dead server's empty answers; ``Draw.extract(c) -> (answer, formatted)``
replaces it.  Verification: one ``verifier.match_many`` call per target (``Draw.match`` replaces
it, e.g. "correct against any of several references").
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

import numpy as np

from coevo.core.verdict import raise_if_all_failed
from coevo.core.policy import Completion, LossConfig, Policy, SamplingParams, full_text
from coevo.core.world import ANSWER, QUESTION, ParseResult, Task, World, role_sampling
from coevo.ledger.store import reward_row, rollout_row, update_row, verdict_row_of
from coevo.rl.grpo import group_advantages, grpo_update, to_groups
from coevo.timing import stage

Extract = Callable[[Completion], "tuple[str | None, bool]"]
Match = Callable[[object, Sequence[Sequence["str | None"]], Sequence], "list[list]"]


@dataclass(frozen=True, kw_only=True)
class StepContext:
    """What every stage of a step needs: whose rows (``run_id``, ``round``, ``step``), the world,
    the verifier (``match_many`` / ``majority_votes``: ``coevo.verify.run``), the loss and the
    sampling settings.  A recipe holds one for the run and places it at each step (``at``);
    stages outside a run (evaluation, the certificate) use ``StepContext.of(world, verifier,
    sampling)``."""

    run_id: str = ""
    world: World
    verifier: Any = None
    sampling: SamplingParams = field(default_factory=SamplingParams)
    loss: LossConfig = field(default_factory=LossConfig)
    advantage_scale: str = "group"
    round: int = 0
    step: int = 0

    @classmethod
    def of(cls, world: World, verifier: Any = None, sampling: SamplingParams | None = None) -> "StepContext":
        return cls(world=world, verifier=verifier, sampling=sampling or SamplingParams())

    def at(self, spec) -> "StepContext":
        """This context at a step of the plan (its ``round`` and ``step``)."""
        return replace(self, round=spec.round, step=spec.step)


@dataclass(frozen=True)
class Draw:
    """How a group is drawn and its rows named; the defaults draw the Solver's training rollouts.

    ``stream``: the RNG the draws come from (train / audit; None: the context's sampling's);
    ``sampler(policy, world, tasks, n, sampling)`` replaces single-turn sampling (e.g. multi-turn
    episodes); ``extract(c) -> (answer, formatted)`` replaces ``answer_of``; ``match(verifier,
    answers, targets)`` replaces ``match_grouped``; ``chunk`` prompts per sampling call (None: one
    call); ``progress(done, total)`` after each chunk.  Rows (``draw_group``): ``role``, and rollout
    ids formatted from ``rid`` with ``task``, ``purpose``, ``k`` (index + ``offset``) and ``step``."""

    role: str = "solver"
    stream: str | None = None
    rid: str = "{task}-{purpose}-{k}"
    offset: int = 0
    sampler: Callable | None = None
    extract: Extract | None = None
    match: Match | None = None
    chunk: int | None = None
    progress: Callable[[int, int], None] | None = None


DRAW = Draw()


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

    def scored(self, rewards, **kw) -> "Scored":
        """What a role is updated on from this group: its completions in order, ``rewards`` (one per
        completion), its rollout ids and task ids (``draw_group``'s rows), GRPO groups of its n."""
        rows = self.rows.get("rollouts", [])
        kw.setdefault("group_size", len(self.outs[0]) if self.outs else 1)
        return Scored(self.completions(), np.asarray(rewards, dtype=float), [r["rollout_id"] for r in rows],
                      [r["task_id"] for r in rows], **kw)


Group = Answers  # a training group: the stage's Answers with its rollout and verdict rows


@dataclass
class Scored:
    """What a role is updated on: completions, one reward each, the item (rollout / question) and
    task ids the reward rows record (None: the item ids), GRPO groups of ``group_size``
    consecutive completions, each reward's components (reward rows' ``components_json``), or
    ``advantages`` given instead of group advantages (per sequence, or per token as lists)."""

    completions: list[Completion]
    rewards: np.ndarray
    item_ids: list[str]
    task_ids: list[str] | None = None
    group_size: int = 1
    components: Sequence[dict | None] | None = None
    advantages: Any = None


@dataclass
class Proposal:
    completion: Completion
    parsed: ParseResult
    group: int  # index of the prompt (GRPO group) it came from

    @property
    def task(self) -> Task | None:
        return self.parsed.task


@dataclass
class Update:
    advantages: np.ndarray
    metrics: dict
    rows: dict[str, list[dict]]


def sampling_error_reason(c: Completion) -> str:
    """Why a completion has no answer or task: the backend failed to sample it (its error,
    cut to 300 characters), or the text has none."""
    if c.finish_reason == "error":
        return f"sampling-error: {str(c.meta.get('error', ''))[:300]}"
    return "no-answer"


def propose(ctx: StepContext, proposer: Policy, n_prompts: int, group: int, id_prefix: str,
            seed: int = 0) -> list[Proposal]:
    """Sample ``group`` proposals for each of ``n_prompts`` proposer prompts and parse them."""
    world = ctx.world
    prompts = world.proposer_prompts(n_prompts, seed)
    with stage("sample"):
        outs = proposer.sample(prompts, group, role_sampling(world, QUESTION, ctx.sampling))
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


def sample_verify(ctx: StepContext, policy: Policy, tasks: Sequence[Task], n: int,
                  targets: dict[str, Sequence | None] | None = None, draw: Draw = DRAW) -> Answers:
    """Sample ``n`` completions per task, extract their answers, verify them against each named
    target (``targets``: name -> one value per task; a None value skips that target) and return
    the ``Answers`` (see the module docstring)."""
    tasks = list(tasks)
    if not tasks:
        return Answers([], [], [], [], {name: [] for name in (targets or {})})
    sp = ctx.sampling if draw.stream in (None, ctx.sampling.stream) else replace(ctx.sampling, stream=draw.stream)
    step = draw.chunk or len(tasks)
    outs: list[list[Completion]] = []
    for a in range(0, len(tasks), step):
        with stage("sample"):
            got = (draw.sampler or solve)(policy, ctx.world, tasks[a:a + step], n, sp)
        if a == 0:  # every call of the first chunk failed after its retries: stop, one line (EndpointDown)
            raise_if_all_failed([c for comps in got for c in comps[:1]], "model server")  # one call per task
        outs.extend(got)
        if draw.progress is not None:
            draw.progress(min(a + step, len(tasks)), len(tasks))
    ex = draw.extract or default_extract(ctx.world)
    pairs = [[ex(c) for c in comps] for comps in outs]
    res = Answers(tasks, outs, [[a for a, _ in p] for p in pairs], [[f for _, f in p] for p in pairs])
    with stage("verify"):
        for name, values in (targets or {}).items():
            if values is not None:
                res.verdicts[name] = (draw.match or match_grouped)(ctx.verifier, res.answers, values)
    return res


def draw_group(ctx: StepContext, policy: Policy, tasks: Sequence[Task], n: int, purpose: str,
               targets: dict[str, Sequence[str | None] | None] | None = None, draw: Draw = DRAW) -> Group:
    """``sample_verify`` n rollouts per task, then their rollout rows and one verdict row per
    rollout and target (``rows``: {"rollouts": [...], "verdicts": [...]})."""
    g = sample_verify(ctx, policy, tasks, n, targets, draw)
    roll, verd = [], []
    for j, (t, comps) in enumerate(zip(g.tasks, g.outs)):
        for k, c in enumerate(comps):
            r_id = draw.rid.format(task=t.task_id, purpose=purpose, k=k + draw.offset, step=ctx.step)
            roll.append(rollout_row(ctx.run_id, ctx.round, ctx.step, r_id, t.task_id, draw.role, purpose,
                                    k + draw.offset, c, g.answers[j][k]))
            for name, vs in g.verdicts.items():
                verd.append(_verdict(ctx, r_id, t.task_id, name, vs[j][k], c))
    if g.tasks:
        g.rows = {"rollouts": roll, "verdicts": verd}
    return g


def _verdict(ctx: StepContext, rollout_id: str, task_id: str, target: str, v, c: Completion) -> dict:
    row = verdict_row_of(ctx.run_id, ctx.step, rollout_id, task_id, target, v, getattr(ctx.verifier, "kind", ""),
                         getattr(ctx.verifier, "version", ""))
    if c.finish_reason == "error":
        row["reason"] = sampling_error_reason(c)
    return row


def update_role(ctx: StepContext, policy: Policy, role: str, s: Scored) -> Update:
    """Advantages (GRPO groups of ``s.group_size`` unless ``s.advantages`` is given), one GRPO
    update (``coevo.rl.grpo.grpo_update``), the reward rows and the update row."""
    before, comps = policy.version, list(s.completions)
    if not comps:
        adv, metrics = np.zeros(0), {"skipped": 1.0}
    else:
        adv = s.advantages
        if adv is None:
            adv = group_advantages(to_groups(s.rewards, s.group_size), ctx.advantage_scale).flatten().numpy()
        with stage("update"):
            metrics = grpo_update(policy, comps, adv.tolist() if hasattr(adv, "tolist") else list(adv), ctx.loss)
    comp = s.components if s.components is not None else [None] * len(comps)
    task_ids = s.task_ids if s.task_ids is not None else s.item_ids
    rows = {"rewards": [reward_row(ctx.run_id, ctx.step, role, s.item_ids[i], task_ids[i], s.rewards[i],
                                   _adv_scalar(adv[i]), comp[i]) for i in range(len(comps))],
            "updates": [update_row(ctx.run_id, ctx.step, role, before, policy.version, len(comps), metrics)]}
    return Update(adv, metrics, rows)


def _adv_scalar(a) -> float:
    """The advantage a reward row records: the value, or the mean of per-token values."""
    if np.ndim(a) == 0:
        return float(a)
    return float(np.mean(a)) if len(a) else 0.0
