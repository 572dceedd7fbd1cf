"""Deterministic pretraining of the tiny CPU policies shipped in ``coevo/assets``.

* solver: ``<solve>EXPR=`` → value ``<eos>``, trained on a level mix skewed to easy
  levels, so that it is reliable on L1–L2 and unreliable on a harder band (a frontier).
* the assets the recipe folders declare (``RecipeInfo.pretrain``), each one task of the
  three: ``<propose>`` → ``<question>EXPR</question><eos>`` over all levels (R-Zero's
  Challenger); ``<synth>`` → question, a worked solution and a final answer, a fixed share
  of the training answers wrong in realistic ways (carry slip, off by ten, sign slip), so
  wrong references exist for the validators to catch (SynCo's Synthesizer); a mix of tasks
  in one model (R-Zero's "Single").

Single-threaded torch and seeded generators make the result bit-for-bit reproducible on one
build (``build_record``: torch build, ATen's CPU kernels, the CPU); across builds the weights
differ in their last bits and the greedy accuracies hold. ``coevo pretrain`` regenerates the
shipped files.
"""
from __future__ import annotations

import hashlib
import json
import random
import time
from pathlib import Path

import torch

from coevo.pretrain.sft import adamw, prompt_target, sft_batch, sft_step, warmup_cosine_lr
from coevo.backends.tiny import TinyConfig, TinyPolicy, n_params, write_tiny_checkpoint
from coevo.core.policy import SamplingParams
from coevo.stages.step import first_answers
from coevo.worlds.arithmetic import LEVELS, evaluate, generate, format_question
from coevo.checkpoint import atomic_dir

# What an asset learns from the arithmetic world (each a prompt tag of coevo/worlds/arithmetic.py):
# SOLVE = <solve>EXPR= -> a worked chain and the value; PROPOSE = <propose> -> <question>EXPR</question>;
# SYNTHESIZE = <synth> -> question, worked solution and final answer (a share of them wrong).
SOLVE, PROPOSE, SYNTHESIZE = "solve", "propose", "synthesize"

# the solver stops half-way through its 2400-step cosine schedule, while still learning:
# reliable on L1-L2, about 50 % on L3 (a real frontier that self-training can move)
SOLVER_SPEC = {"task": SOLVE, "mix": {"L1": 0.25, "L2": 0.20, "L3": 0.25, "L4": 0.15, "L5": 0.15}, "steps": 2400,
               "stop_after": 1200, "data_seed": 0, "pi": 3.14159, "batch": 64,
               "lr": 3e-3, "arch": {"n_embd": 96, "n_layer": 3, "n_head": 4, "block_size": 96},
               "diagnostics": "levels"}


def asset_specs() -> dict[str, dict]:
    """Every arithmetic asset and how it is trained (task, level mix, steps, batch, lr, arch): the
    solver (what every recipe's Solver starts from) and the assets each built-in recipe's folder
    declares (``RecipeInfo.pretrain``: R-Zero's Challenger and its "Single" policy, SynCo's
    Synthesizer), loaded through the registry.  An asset's name is the ``RoleSpec.asset`` that loads it."""
    from coevo.core.registry import installed_recipes, load

    specs = {"solver": SOLVER_SPEC}
    for info in installed_recipes():
        if info.pretrain:
            for asset, spec in load(info.pretrain).items():
                specs.setdefault(asset, spec)
    return specs


RECIPES = asset_specs()  # per asset: task, level mix, steps, batch, lr, arch
ROLES = tuple(RECIPES)  # the arithmetic assets (`coevo pretrain --role NAME`; `all` adds the facts roles)


class PretrainError(Exception):
    pass


def _pick_level(rng: random.Random, mix: dict[str, float]) -> str:
    return rng.choices(list(mix), weights=list(mix.values()))[0]


def solution_steps(expr: str) -> tuple[str, int]:
    """A worked solution (multiplications first, then left to right) and the value."""
    import re

    toks = re.findall(r"\d+|[+\-*]", expr)
    steps = []
    # fold multiplications
    out = [toks[0]]
    i = 1
    while i < len(toks):
        op, val = toks[i], toks[i + 1]
        if op == "*":
            res = int(out[-1]) * int(val)
            steps.append(f"{out[-1]}*{val}={res}")
            out[-1] = str(res)
        else:
            out += [op, val]
        i += 2
    acc = int(out[0])
    for j in range(1, len(out), 2):
        op, v = out[j], int(out[j + 1])
        new = acc + v if op == "+" else acc - v
        steps.append(f"{acc}{op}{v}={new}")
        acc = new
    return ";".join(steps), acc


def _pm_steps(x: int, op: str, y: int, rng: random.Random, p_direct: float) -> tuple[list[str], int]:
    """x op y, either directly or with y split into tens and units (in either order)."""
    z = x + y if op == "+" else x - y
    tens, units = (y // 10) * 10, y % 10
    if y < 10 or units == 0 or rng.random() < p_direct:
        return [f"{x}{op}{y}={z}"], z
    parts = [tens, units] if rng.random() < 0.5 else [units, tens]
    out, acc = [], x
    for part in parts:
        nxt = acc + part if op == "+" else acc - part
        out.append(f"{acc}{op}{part}={nxt}")
        acc = nxt
    return out, acc


def solver_path(expr: str, rng: random.Random, p_direct: float = 0.3) -> str:
    """One randomly chosen valid chain of steps for ``expr`` (the solver's scratchpad).

    Several paths reach the same value (split an operand into tens and units, in either
    order; for three terms, combine the first with the last first), so sampled chains
    make different mistakes and agree when right: majority voting has something to
    vote on, as with chain-of-thought in real models.
    """
    import re

    toks = re.findall(r"\d+|[+\-*]", expr)
    steps: list[str] = []
    terms, ops = [int(toks[0])], []
    i = 1
    while i < len(toks):
        op, val = toks[i], int(toks[i + 1])
        if op == "*":
            a, b = terms[-1], val
            tens, units = (b // 10) * 10, b % 10
            if b >= 10 and units and rng.random() >= p_direct:
                steps += [f"{a}*{tens}={a * tens}", f"{a}*{units}={a * units}", f"{a * tens}+{a * units}={a * b}"]
            else:
                steps.append(f"{a}*{b}={a * b}")
            terms[-1] = a * b
        else:
            ops.append(op)
            terms.append(val)
        i += 2
    order = list(range(len(ops)))
    if len(ops) == 2 and rng.random() < 0.5:
        order = [1, 0]
    acc = terms[0]
    for j in order:
        st, acc = _pm_steps(acc, ops[j], terms[j + 1], rng, p_direct)
        steps += st
    if not steps:
        steps = [f"{acc}"]
    return ";".join(steps)


def corrupt(value: int, rng: random.Random) -> int:
    """A realistic wrong answer: carry slip (±10), off by one, or sign slip."""
    kind = rng.choice(["carry", "carry", "one", "sign"])
    if kind == "carry":
        return value + rng.choice([-10, 10])
    if kind == "one":
        return value + rng.choice([-1, 1])
    return -value if value != 0 else 1


def example(task: str, rng: random.Random, mix: dict[str, float], wrong_rate: float = 0.0) -> tuple[str, str]:
    """(prompt, target) for one training example of a task (SOLVE, PROPOSE or SYNTHESIZE)."""
    expr = generate(_pick_level(rng, mix), rng)
    if task == SOLVE:
        return f"<solve>{expr}=", f"{solver_path(expr, rng)}<eos>"
    if task == PROPOSE:
        return "<propose>", f"{format_question(expr)}<eos>"
    sol, val = solution_steps(expr)
    ans = val
    if rng.random() < wrong_rate:
        ans = corrupt(val, rng)
        # the slip happens in the last step, so the solution still "ends" in the wrong value
        head, _, _ = sol.rpartition("=")
        sol = f"{head}={ans}"
    return "<synth>", f"{format_question(expr)}<solution>{sol}</solution><answer>{ans}</answer><eos>"


def train_role(role: str, seed: int = 0, steps: int | None = None, quiet: bool = True) -> TinyPolicy:
    rec = RECIPES[role]
    steps = rec["steps"] if steps is None else steps
    torch.manual_seed(seed)
    rng = random.Random(rec["data_seed"] + seed if "data_seed" in rec else f"{role}-{seed}")
    pol = TinyPolicy(role, TinyConfig(vocab_size=31, **rec["arch"]), seed=seed)
    opt = adamw(pol, rec["lr"])
    pol.model.train()
    t0 = time.time()
    for step in range(steps):
        lr = warmup_cosine_lr(rec["lr"], step, steps, rec.get("pi"))
        if "tasks" in rec:  # a mix of tasks in one model: each with its level mix
            sub = rng.choices(list(rec["tasks"]), weights=list(rec["tasks"].values()), k=rec["batch"])
            pairs = [example(t, rng, rec["mix"] if t == rec["task"] else rec["task_mix"][t]) for t in sub]
        else:
            pairs = [example(rec["task"], rng, rec["mix"], rec.get("wrong_rate", 0.0)) for _ in range(rec["batch"])]
        loss = sft_step(pol, opt, *sft_batch(pol, [prompt_target(p, t) for p, t in pairs]), lr)
        if not quiet and (step % 200 == 0 or step == steps - 1):
            print(f"[{role}] step {step:5d} loss {loss.item():.4f} ({time.time() - t0:.0f}s)", flush=True)
        if steps == rec["steps"] and step + 1 == rec.get("stop_after"):
            pol.stopped_at = step + 1
            break
        stop = rec.get("stop_at")
        if stop and (step + 1) % stop["every"] == 0:
            acc = level_accuracy(pol, stop["level"], stop["n"])
            pol.model.train()
            if not quiet:
                print(f"[{role}] step {step + 1}: greedy {stop['level']} accuracy {acc:.3f}", flush=True)
            if acc >= stop["accuracy"]:
                pol.stopped_at = step + 1
                break
    pol.base_tag = f"pretrained-{role}"
    return pol


def level_accuracy(pol: TinyPolicy, level: str, n: int, seed: int = 4242) -> float:
    """Greedy accuracy on n fresh questions of one level (a dev set apart from the eval set)."""
    from coevo.worlds.arithmetic import ArithmeticWorld

    w, rng = ArithmeticWorld(), random.Random(f"dev-{level}-{seed}")
    exprs = [generate(level, rng) for _ in range(n)]
    outs = pol.sample([f"<solve>{e}=" for e in exprs], 1, SamplingParams(greedy=True, max_new_tokens=64))
    return sum(a == str(evaluate(e)) for a, e in zip(first_answers(w, outs), exprs)) / n


def solver_accuracy(pol: TinyPolicy, n_per_level: int = 200, seed: int = 999) -> dict[str, float]:
    """Greedy accuracy per level on fresh expressions (pretraining diagnostics)."""
    from coevo.worlds.arithmetic import ArithmeticWorld

    w = ArithmeticWorld()
    rng = random.Random(seed)
    acc = {}
    for lv in LEVELS:
        exprs = [generate(lv, rng) for _ in range(n_per_level)]
        outs = pol.sample([f"<solve>{e}=" for e in exprs], 1, SamplingParams(greedy=True, max_new_tokens=64))
        acc[lv] = sum(a == str(evaluate(e)) for a, e in zip(first_answers(w, outs), exprs)) / n_per_level
    return acc


def build_record() -> dict:
    """What the weights' bits depend on besides the code and the seeds (measured 2026-12-06, torch
    2.13.0+cpu, 20 criteria_student steps: four digests under ATEN_CPU_CAPABILITY avx512 / avx2 and
    MKL_CBWR unset / AVX2 / COMPATIBLE): the torch build, the CPU kernels ATen dispatches to, and the CPU
    (MKL picks its code path by vendor and instruction set). A digest is reproducible only where all
    three match; the greedy accuracies are the tolerance that holds across them (tests/test_pretrain.py)."""
    import platform

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")), cpu)
    except OSError:
        pass
    return {"torch": torch.__version__, "cpu_capability": torch.backends.cpu.get_cpu_capability(), "cpu": cpu}


def same_build(entry: dict) -> bool:
    """True where a pretrain_info.json entry was made on this build (``build_record``): its digest must
    then be reproduced bit for bit. Entries made before the record existed name no build (False)."""
    rec = build_record()
    return all(entry.get(k) == v for k, v in rec.items())


def state_digest(pol: TinyPolicy) -> str:
    h = hashlib.sha256()
    for k, v in sorted(pol.model.state_dict().items()):
        h.update(k.encode())
        h.update(v.detach().float().numpy().tobytes())
    return h.hexdigest()


def pretrain_roles(role: str, out: Path, steps: int | None = None, seed: int = 0, quiet: bool = False) -> dict:
    from coevo.pretrain import facts as PF  # the facts world's search agents
    from coevo.pretrain import criteria as PC  # the criteria world's student and experts (not in "all")

    roles = ROLES + PF.FACTS_ROLES if role == "all" else PC.expand_roles(role)
    for r in roles:
        if r not in ROLES + PF.FACTS_ROLES + PC.CRITERIA_ROLES:
            known = ROLES + PF.FACTS_ROLES + PC.CRITERIA_ROLES + tuple(PC.CRITERIA_GROUPS)
            raise PretrainError(f"unknown role {r!r}; expected one of {', '.join(known)} or all")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    prev = torch.get_num_threads()
    torch.set_num_threads(1)  # bit-for-bit reproducible across machines
    info = {}
    try:
        for r in roles:
            t0 = time.time()
            train = (PF.train_facts_role if r in PF.FACTS_ROLES else
                     PC.train_criteria_role if r in PC.CRITERIA_ROLES else train_role)
            pol = train(r, seed=seed, steps=steps, quiet=quiet)
            path = out / f"{r}.pt"  # a directory: model.safetensors + config.json (coevo.backends.tiny)
            atomic_dir(path, lambda d, p=pol: write_tiny_checkpoint(d, p.cfg, p.model.state_dict(), p.name,
                                                                    p.base_tag, p.updates))
            entry = {"path": str(path), "params": n_params(pol.model), "sha256_state": state_digest(pol),
                     "seconds": round(time.time() - t0, 1), "steps": steps or {**RECIPES, **PF.FACTS_RECIPES, **PC.RECIPES}[r]["steps"],
                     "stopped_at": getattr(pol, "stopped_at", None),
                     **build_record()}  # the weights are bit-for-bit only on the same build (build_record)
            if r in RECIPES and RECIPES[r].get("diagnostics") == "levels":
                entry["greedy_accuracy_by_level"] = solver_accuracy(pol)
            elif r in PF.FACTS_ROLES:
                entry.update(PF.facts_diagnostics(r, pol))
            elif r in PC.CRITERIA_ROLES:
                entry.update(PC.criteria_diagnostics(r, pol))
            info[r] = entry
            info_path = out / "pretrain_info.json"
            prev_info = json.loads(info_path.read_text()) if info_path.is_file() else {}
            prev_info.update({r: entry})
            info_path.write_text(json.dumps(prev_info, indent=2))
    finally:
        torch.set_num_threads(prev)
    return info
