"""Deterministic pretraining of the criteria world's tiny policies (a student, two experts).

All map ``<solve>QUESTION;`` (``CriteriaWorld.solver_prompt``) to a three-step solution
``7*8=56 km;56+30=86 km;86*1000=86000 m<eos>``.  Each role learns from solutions with
*systematic* mistakes — a function of the problem's features, so greedy decoding repeats
them on held-out problems (``PROFILES``) — plus a share of random slips:

* ``criteria_student``: slips in several axes (products when rate and time are large, the
  km→m factor, no conversion for cm→mm, the time unit on the distance when time is in s)
  and stopped at 750 of 1000 steps, so it also makes untaught arithmetic slips;
* ``criteria_expert_units``: units always right; products of two digits >= 6 and sums
  past 100 off by ten (weak on arithmetic);
* ``criteria_expert_arith``: arithmetic always right; the m→cm / m→mm factor and cm→mm
  conversion wrong (weak on units).

Single-threaded torch and seeded generators make the files bit-for-bit reproducible
(``coevo pretrain --role criteria_student|criteria_experts|criteria``, or one expert by
name; ``--role all`` does not include them).
Measured per-axis accuracy: docs/criteria.md.
"""
from __future__ import annotations

import random
import time

import torch

from coevo.pretrain.sft import adamw, prompt_target, sft_batch, sft_step, warmup_cosine_lr
from coevo.backends.tiny import TinyConfig, TinyPolicy
from coevo.backends.tokenizer import FULL_VOCAB
from coevo.stages.step import first_answers
from coevo.worlds.criteria_gen import ERRORS, Problem, perturbed_solution, random_problem, split_of

CRITERIA_EXPERTS = ("criteria_expert_units", "criteria_expert_arith")
CRITERIA_ROLES = ("criteria_student",) + CRITERIA_EXPERTS
CRITERIA_GROUPS = {"criteria_experts": CRITERIA_EXPERTS, "criteria": CRITERIA_ROLES}  # role names that expand to several
SOLVE = "<solve>"


def _student(p: Problem) -> tuple[str, ...]:
    e = []
    if p.time >= 7 and p.rate >= 5:
        e.append("product")
    if p.conversion == "km-m":
        e.append("factor")
    if p.conversion == "cm-mm":
        e.append("no_convert")
    if p.tunit == "s":
        e.append("time_unit")
    return tuple(e)


def _expert_units(p: Problem) -> tuple[str, ...]:
    e = []
    if p.rate >= 6 and p.time >= 6:
        e.append("product")
    if p.op == "+" and p.dist + p.extra >= 100:  # a carry into the hundreds
        e.append("sum")
    return tuple(e)


def _expert_arith(p: Problem) -> tuple[str, ...]:
    if p.conversion in ("m-cm", "m-mm"):
        return ("factor",)
    return ("no_convert",) if p.conversion == "cm-mm" else ()


PROFILES = {"criteria_student": _student, "criteria_expert_units": _expert_units,
            "criteria_expert_arith": _expert_arith}
RECIPES = {
    "criteria_student": {"noise": 0.15, "steps": 1000, "stop_after": 750, "batch": 32, "lr": 3e-3},
    "criteria_expert_units": {"noise": 0.03, "steps": 1200, "batch": 32, "lr": 3e-3},
    "criteria_expert_arith": {"noise": 0.03, "steps": 1200, "batch": 32, "lr": 3e-3},
}
ARCH = {"n_embd": 64, "n_layer": 2, "n_head": 4, "block_size": 96}


def expand_roles(role: str) -> tuple[str, ...]:
    """``criteria_experts`` -> both experts; a single criteria role -> itself."""
    return CRITERIA_GROUPS.get(role, (role,))


def training_solution(role: str, p: Problem, rng: random.Random) -> str:
    """The solution a role is taught for ``p``: its profile's mistakes, plus with
    probability ``noise`` one random slip (not ``skip`` / ``malformed``: those stay rare)."""
    errs = PROFILES[role](p)
    if rng.random() < RECIPES[role]["noise"]:
        errs = errs + (rng.choice([e for e in ERRORS if e not in ("skip", "malformed")]),)
    return perturbed_solution(p, tuple(dict.fromkeys(errs)))


def _train_problem(rng: random.Random) -> Problem:
    while True:
        p = random_problem(rng)
        if split_of(p.question) == "train":
            return p


def train_criteria_role(role: str, seed: int = 0, steps: int | None = None, quiet: bool = True) -> TinyPolicy:
    rec = RECIPES[role]
    total = rec["steps"] if steps is None else steps
    torch.manual_seed(seed)
    rng = random.Random(f"{role}-{seed}")
    pol = TinyPolicy(role, TinyConfig(vocab_size=FULL_VOCAB, **ARCH), seed=seed)
    opt = adamw(pol, rec["lr"])
    pol.model.train()
    t0 = time.time()
    for step in range(total):
        probs = [_train_problem(rng) for _ in range(rec["batch"])]
        pairs = [prompt_target(f"{SOLVE}{p.question};", training_solution(role, p, rng) + "<eos>") for p in probs]
        loss = sft_step(pol, opt, *sft_batch(pol, pairs), warmup_cosine_lr(rec["lr"], step, total))
        if not quiet and (step % 100 == 0 or step == total - 1):
            print(f"[{role}] step {step:5d} loss {loss.item():.4f} ({time.time() - t0:.0f}s)", flush=True)
        if steps is None and step + 1 == rec.get("stop_after"):
            pol.stopped_at = step + 1
            break
    pol.base_tag = f"pretrained-{role}"
    return pol


def criteria_diagnostics(role: str, pol: TinyPolicy, n: int = 200) -> dict:
    """The pretrain_info.json numbers of a criteria role: greedy per-axis accuracy on the
    world's held-out set (``CriteriaWorld.axis_accuracy``, oracle verdicts)."""
    from coevo.core.policy import SamplingParams
    from coevo.worlds.criteria import CriteriaWorld

    world = CriteriaWorld(eval_n=n)
    tasks = list(world.eval_set())
    outs = pol.sample([world.solver_prompt(t) for t in tasks], 1,
                      SamplingParams(greedy=True, max_new_tokens=world.max_answer_tokens))
    answers = first_answers(world, outs)
    return {"greedy_axis_accuracy": world.axis_accuracy(tasks, answers)}
