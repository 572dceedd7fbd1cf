"""Deterministic pretraining of the facts world's tiny search agents (codes surface).

* facts_solver: ``<solve>QUESTION`` -> one ``<search>…</search>`` per hop, the world's
  ``<information>…</information>`` after each (masked from the loss, as in RL), the object
  of the first passage carried into the next search, ``<answer>…</answer><eos>``.  Half
  of the prompts are the source-aware form (``solver_prompt_with_source``, for MSV).  The
  hop mix is skewed to short chains and training stops early, so the agent is reliable on
  1–2 hops and weaker on 3–4 (something left to learn).
* facts_proposer: ``<propose>N;passage;…`` (the chain's passages; a simplification of Dr.
  Zero's proposer, which is shown one document and searches n − 1 times) ->
  ``<question>…</question><answer>…</answer><eos>``, the draft answer read off the
  passages (a misread passage gives a wrong draft, as for any reader).

The traces come from ``FactsWorld`` with its default options (seed 0) and its BM25
retriever; single-threaded torch and seeded generators make the files bit-for-bit
reproducible (``coevo pretrain --role facts_solver|facts_proposer``).
"""
from __future__ import annotations

import random
import time

import torch

from coevo.core.policy import SamplingParams
from coevo.pretrain.sft import adamw, sft_batch, sft_step, warmup_cosine_lr
from coevo.backends.tiny import TinyConfig, TinyPolicy
from coevo.backends.tokenizer import FULL_VOCAB
from coevo.core.world import ANSWER, Task
from coevo.stages.step import answer_of

FACTS_ROLES = ("facts_solver", "facts_proposer")
FACTS_RECIPES = {
    "facts_solver": {"hop_mix": (0.35, 0.3, 0.2, 0.15), "source_aware": 0.5, "steps": 1200, "stop_after": 225,
                     "batch": 24, "lr": 3e-3, "eval_every": 80,
                     "arch": {"n_embd": 64, "n_layer": 2, "n_head": 4, "block_size": 224}},
    "facts_proposer": {"hop_mix": (0.4, 0.3, 0.2, 0.1), "steps": 700, "batch": 32, "lr": 3e-3,
                       "arch": {"n_embd": 64, "n_layer": 2, "n_head": 4, "block_size": 128}},
}


def facts_world():
    """The world the shipped facts assets are trained on (default options, codes surface)."""
    from coevo.worlds.facts import FactsWorld

    return FactsWorld()


def _segments(world, trace: str) -> list[tuple[str, int]]:
    """Split a solver trace into (text, in_loss) pieces: information blocks are 0."""
    out, rest = [], trace
    while "<information>" in rest:
        a = rest.index("<information>")
        b = rest.index("</information>", a) + len("</information>")
        out += [(rest[:a], 1), (rest[a:b], 0)]
        rest = rest[b:]
    return out + [(rest, 1)]


def facts_example(role: str, world, rng: random.Random, rec: dict, hops: int) -> tuple[str, list[tuple[str, int]]]:
    """(prompt, [(target piece, in_loss)]) for one training example of ``hops`` hops."""
    src = rng.choice(world.sources())
    anchor = rng.choice(world.enc.by_source[src])
    chain = world.build_chain(anchor, hops, rng)
    if role == "facts_proposer":
        prompt = world.proposer_prompt(anchor, hops, chain)
        return prompt, [(world.proposal_of_chain(chain) + "<eos>", 1)]
    task = Task("pre", world.question_of_chain(chain), meta={"source_id": src})
    aware = rng.random() < rec.get("source_aware", 0.0)
    prompt = world.solver_prompt_with_source(task) if aware else world.solver_prompt(task)
    return prompt, _segments(world, world.demonstration(task)) + [("<eos>", 1)]


def train_facts_role(role: str, seed: int = 0, steps: int | None = None, quiet: bool = True) -> TinyPolicy:
    rec = FACTS_RECIPES[role]
    total = rec["steps"] if steps is None else steps
    world = facts_world()
    torch.manual_seed(seed)
    rng = random.Random(f"{role}-{seed}")
    pol = TinyPolicy(role, TinyConfig(vocab_size=FULL_VOCAB, **rec["arch"]), seed=seed)
    opt = adamw(pol, rec["lr"])
    pol.model.train()
    t0 = time.time()
    for step in range(total):
        lr = warmup_cosine_lr(rec["lr"], step, total)
        hops = rng.choices([1, 2, 3, 4], weights=rec["hop_mix"])[0]  # one hop count per batch: short padding
        examples = [[(prompt, 0), *pieces] for prompt, pieces in
                    (facts_example(role, world, rng, rec, hops) for _ in range(rec["batch"]))]
        loss = sft_step(pol, opt, *sft_batch(pol, examples), lr)
        if not quiet and (step % 100 == 0 or step == total - 1):
            print(f"[{role}] step {step:5d} loss {loss.item():.4f} ({time.time() - t0:.0f}s)", flush=True)
        every = rec.get("eval_every")
        if not quiet and every and (step + 1) % every == 0 and role == "facts_solver":
            print(f"[{role}] step {step + 1}: {solver_accuracy_by_hop(pol, world, 20)}", flush=True)
            pol.model.train()
        if steps is None and step + 1 == rec.get("stop_after"):
            pol.stopped_at = step + 1
            break
    pol.base_tag = f"pretrained-{role}"
    return pol


def solver_accuracy_by_hop(pol: TinyPolicy, world=None, n_per_hop: int | None = None,
                           source_aware: bool = False) -> dict[str, float]:
    """Greedy accuracy (EM against the oracle) per hop count on the world's held-out set,
    through the multi-turn rollout driver; ``source_aware``: with the MSV source-aware prompt."""
    from coevo.stages.rollout import rollout
    from coevo.core.world import role_sampling

    world = world or facts_world()
    tasks = list(world.eval_set())
    if n_per_hop is not None:
        tasks = [t for h in (1, 2, 3, 4) for t in [x for x in tasks if x.meta["hops"] == h][:n_per_hop]]
    prompt = world.solver_prompt_with_source if source_aware else world.solver_prompt
    sp = role_sampling(world, ANSWER, SamplingParams(greedy=True, max_new_tokens=24))
    outs = rollout(pol, world, [prompt(t) for t in tasks], 1, sp, contexts=tasks, max_turns=world.max_turns)
    by: dict[str, list[int]] = {}
    for t, o in zip(tasks, outs):
        ok = world.equivalent(answer_of(world, o[0]), world.oracle(t))
        by.setdefault(t.meta["difficulty"], []).append(int(ok))
    return {d: round(sum(v) / len(v), 4) for d, v in sorted(by.items())}


def proposer_accuracy(pol: TinyPolicy, world=None, n: int = 200, seed: int = 999) -> dict[str, float]:
    """Greedy proposals on fresh contexts: share that parse, and share whose draft answer is
    what the passages shown state (the faithful reading)."""
    world = world or facts_world()
    ctxs = world.proposer_contexts(n, seed)
    outs = pol.sample([c.prompt for c in ctxs], 1, SamplingParams(greedy=True, max_new_tokens=64,
                                                                  stop=["</answer>"]))
    parsed = faithful = 0
    for c, o in zip(ctxs, outs):
        text = o[0].text + (o[0].meta.get("stop") or "")
        r = world.parse_task(text, "p", c)
        if r.ok:
            parsed += 1
            want = world.proposal_of_chain([world.enc.by_pid[p] for p in c.chain])
            faithful += int(text.strip() == want)
    return {"parsed": round(parsed / n, 4), "faithful": round(faithful / n, 4)}


def facts_diagnostics(role: str, pol: TinyPolicy) -> dict:
    """The pretrain_info.json numbers of a facts role (greedy, held-out)."""
    if role == "facts_solver":
        return {"greedy_accuracy_by_hop": solver_accuracy_by_hop(pol),
                "greedy_accuracy_by_hop_source_aware": solver_accuracy_by_hop(pol, source_aware=True)}
    return {"greedy_proposals": proposer_accuracy(pol)}
