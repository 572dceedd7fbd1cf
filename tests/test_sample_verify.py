"""The one sample -> extract -> verify stage (``coevo.stages.step.sample_verify``, issue #20 item 5):
its numbers on the shipped tiny arithmetic solver, and that training groups, evaluation and the
certificate all go through it."""
from __future__ import annotations

import json
import random
from dataclasses import replace

import numpy as np
import pytest

from coevo.backends.tiny import TinyPolicy
from coevo.runner import ASSETS
from coevo.core.verdict import EndpointDown, completion_errors
from coevo.core.policy import Completion, LossConfig, SamplingParams
from coevo.core.world import ANSWER, Task, role_sampling
from coevo.stages import step as sv
from coevo.stages.step import Draw, StepContext
from coevo.verify.run import WorldEquivalence
from coevo.worlds.arithmetic import ArithmeticWorld, evaluate, generate, task_id_for

SP = SamplingParams(temperature=1.0, top_p=1.0, max_new_tokens=24)


def solver(seed: int = 0) -> TinyPolicy:
    return TinyPolicy.from_checkpoint("solver", ASSETS / "solver.pt", seed=seed)


def arithmetic_tasks(n: int, level: str = "L2", seed: int = 0) -> list[Task]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        q = generate(level, rng)
        out.append(Task(task_id=task_id_for(q, f"t{i}"), question=q, reference=str(evaluate(q)),
                        meta={"difficulty": level}))
    return out


def test_stage_numbers_on_the_tiny_solver():
    """K = 4 answers of the shipped solver on 12 L2 tasks: the draws are one ``policy.sample`` call
    with the world's answer sampling, each answer is the world's extraction, each mu the share
    equal to the reference as integers; the totals are pinned (deterministic tiny sampling)."""
    world, tasks = ArithmeticWorld(), arithmetic_tasks(12)
    got = sv.sample_verify(StepContext.of(world, WorldEquivalence(world), SP), solver(), tasks, 4,
                           {"ref": [t.reference for t in tasks]})
    direct = solver().sample([world.solver_prompt(t) for t in tasks], 4, role_sampling(world, ANSWER, SP))
    assert [[c.text for c in g] for g in got.outs] == [[c.text for c in g] for g in direct]
    assert got.answers == [[world.extract_answer(c.text) for c in g] for g in got.outs]
    assert got.formatted == [[a is not None for a in g] for g in got.answers]
    by_hand = [np.mean([a is not None and int(a) == int(t.reference) for a in g]) for g, t in zip(got.answers, tasks)]
    assert got.mus("ref") == pytest.approx(by_hand)
    n_correct = sum(v.value == 1 for vs in got.verdicts["ref"] for v in vs)
    n_answered = sum(f for g in got.formatted for f in g)
    assert (n_correct, n_answered) == (22, 48)  # pinned


def test_chunks_audit_stream_and_failed_samples():
    """``chunk`` splits the prompts into calls in task order (the draws of one call per chunk);
    the audit stream leaves the training generator where it was; a completion the backend failed
    to sample has no answer even when its text looks like one."""
    world, tasks = ArithmeticWorld(), arithmetic_tasks(7)
    a = solver()
    seen = []
    got = sv.sample_verify(StepContext.of(world, None, SP), a, tasks, 2,
                           draw=Draw(stream="audit", chunk=3, progress=lambda done, total: seen.append((done, total))))
    assert seen == [(3, 7), (6, 7), (7, 7)] and got.verdicts == {}
    b = solver()
    parts = [b.sample([world.solver_prompt(t) for t in tasks[i:i + 3]], 2,
                      role_sampling(world, ANSWER, replace(SP, stream="audit"))) for i in (0, 3, 6)]
    assert [c.text for g in got.outs for c in g] == [c.text for p in parts for g in p for c in g]
    assert torch_state_equal(a.gen, solver().gen)

    class Failing:
        def sample(self, prompts, n, sampling):
            return [[Completion(prompt=p, text="1+1=2", prompt_ids=[], token_ids=[], logprobs=[],
                                finish_reason="error", meta={"error": "down"}) for _ in range(n)] for p in prompts]

    with pytest.raises(EndpointDown, match=r"^model server: down \(2 of 2 calls failed after retries\)$"):
        sv.sample_verify(StepContext.of(world, WorldEquivalence(world), SP), Failing(), tasks[:2], 3, {"ref": ["2", "2"]})
    assert sv.sample_verify(StepContext.of(world, None, SP), Failing(), [], 3, {"ref": None}).verdicts == {"ref": []}

    class HalfFailing(Failing):  # the second task's call fails: no answer, the first is answered
        def sample(self, prompts, n, sampling):
            ok = [[replace(c, finish_reason="stop", meta={}) for c in g] for g in super().sample(prompts[:1], n, sampling)]
            return ok + super().sample(prompts[1:], n, sampling)

    got = sv.sample_verify(StepContext.of(world, WorldEquivalence(world), SP), HalfFailing(), tasks[:2], 3,
                           {"ref": ["2", "2"]})
    assert got.answers[1] == [None] * 3 and got.answers[0] != [None] * 3
    assert completion_errors(got.outs) == (1, 2)


def torch_state_equal(g1, g2) -> bool:
    return bool((g1.get_state() == g2.get_state()).all())


def test_groups_evaluation_and_certificate_go_through_the_stage(monkeypatch, tmp_path):
    """A spy on ``sample_verify``: a training group, the held-out evaluation, benchmark evaluation
    (``coevo eval``), the certificate and its pass-rate estimate each call it."""
    from coevo.evaluate import evaluate_jsonl
    from coevo.ledger.store import StepWriter  # noqa: F401 (the writer the evaluation is given)
    from coevo.stages.certify import certify, pass_rates
    from coevo.stages.evaluate import evaluate_solver
    from coevo.stages.step import draw_group

    calls = []
    real = sv.sample_verify

    def spy(ctx, policy, tasks, n, targets=None, draw=sv.DRAW):
        calls.append((len(list(tasks)), n, draw.stream or ctx.sampling.stream))
        return real(ctx, policy, tasks, n, targets, draw)

    monkeypatch.setattr(sv, "sample_verify", spy)
    world, tasks = ArithmeticWorld(), arithmetic_tasks(6)
    ver = WorldEquivalence(world)
    ctx = StepContext(run_id="r", step=1, world=world, verifier=ver, sampling=SP, loss=LossConfig())
    g = draw_group(ctx, solver(), tasks, 3, "train", {"oracle": [t.reference for t in tasks]})
    assert len(g.rows["rollouts"]) == 18 and len(g.rows["verdicts"]) == 18
    assert calls == [(6, 3, "train")]

    class Rows:
        def add(self, table, rows):
            self.table, self.rows = table, rows

    w = Rows()
    acc = evaluate_solver(ctx, solver(), tasks, w, greedy=True, samples=2)
    assert w.table == "evals" and len(w.rows) == 12 and set(acc) == {"greedy", "mean@2"}
    assert calls[1:] == [(6, 1, "train"), (6, 2, "train")]

    f = tmp_path / "b.jsonl"
    f.write_text("".join(json.dumps({"question": t.question, "answer": t.reference}) + "\n" for t in tasks))
    r = evaluate_jsonl(solver(), world, f, k=2, greedy=True, verifier=ver, batch_size=4)
    assert r["n"] == 6 and calls[3:] == [(6, 1, "train"), (6, 2, "train")]

    del calls[:]
    p = pass_rates(StepContext.of(world, ver, replace(SP, stream="audit")), solver(), tasks, 4)
    cert = certify(StepContext.of(world, ver, SP), solver(), tasks, k=4, n_boot=20)
    assert len(p) == 6 and cert["n_tasks"] == 6
    n_bearing = sum(0 < t["mu_screen"] < 1 for t in cert["tasks"])
    assert calls == [(6, 4, "audit"), (6, 4, "audit")] + ([(n_bearing, 4, "audit")] if n_bearing else [])


def test_certificate_leaves_out_tasks_a_failed_call_touched():
    """A model server that fails every call for two of 12 tasks: the certificate holds the other ten tasks
    only (its screen triple is theirs), the errors are counted, and no failed call is scored as wrong."""
    from coevo.stages.certify import certify

    world, tasks = ArithmeticWorld(), arithmetic_tasks(12)
    down = {world.solver_prompt(t) for t in (tasks[3], tasks[7])}

    class Flaky:  # the tiny solver, with the calls for the two tasks failed after their retries
        def __init__(self):
            self.inner, self.version = solver(), "v0"

        def sample(self, prompts, n, sampling, **kw):
            got = self.inner.sample(prompts, n, sampling)
            return [[replace(c, text="", finish_reason="error", meta={"error": "HTTP 500"}) for c in g]
                    if p in down else g for p, g in zip(prompts, got)]

    v = WorldEquivalence(world)
    got = certify(StepContext.of(world, v), Flaky(), tasks, k=4, n_boot=50)
    assert got["errors"]["failed"] >= 2 and got["errors"]["excluded_tasks"] == 2
    assert got["errors"]["first"] == "HTTP 500"
    assert [t["task_id"] for t in got["tasks"]] == [t.task_id for i, t in enumerate(tasks) if i not in (3, 7)]
    mus = np.array([t["mu_screen"] for t in got["tasks"]])  # the ten answered tasks' screen shares only
    assert len(mus) == 10 and np.isfinite(mus).all()
    triple = got["screen_triple"]
    assert [triple["all_correct"], triple["bearing"], triple["all_wrong"]] == pytest.approx(
        [np.mean(mus == 1), np.mean((mus > 0) & (mus < 1)), np.mean(mus == 0)])
