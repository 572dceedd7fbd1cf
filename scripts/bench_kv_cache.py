#!/usr/bin/env python
"""Sampling speed of the tiny backend's two KV-cache modes (and optionally an older tiny.py),
same process, same machine, same draws.

Times ``TinyPolicy.sample`` on one sampling call of the default preset (``--role solver``: the
Solver step's 32 held-out prompts x 5; ``--role challenger``: the Challenger step's 64 proposer
prompts x 4) with the cache grown by ``torch.cat`` (the default) and preallocated
(``TinyGPT.preallocate_kv``), rotating the order each round.  ``--before FILE`` adds the
``TinyPolicy`` of another tiny.py (``git show 3b41626:coevo/backends/tiny.py > /tmp/tiny_before.py``)
given the same weights and RNG state.  Prints JSON: median tokens per CPU second of the process
(the steadier measure on a shared machine) and per wall second, and whether every mode drew the
same tokens and log-probs.

    python scripts/bench_kv_cache.py --role challenger --threads 1 --rounds 8
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from pathlib import Path
from coevo.core.world import QUESTION

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def load_before(path: str):
    spec = importlib.util.spec_from_file_location("tiny_before", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["tiny_before"] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


def timed(policy, prompts, n, sp, state):
    """(wall seconds, CPU seconds of this process, tokens, the draws) of one sampling call."""
    policy.gen.set_state(state)
    t, c = time.perf_counter(), time.process_time()
    outs = policy.sample(prompts, n, sp)
    dt, dc = time.perf_counter() - t, time.process_time() - c
    flat = [c for g in outs for c in g]
    return dt, dc, sum(len(c.token_ids) for c in flat), [(c.token_ids, c.logprobs) for c in flat]


def batch(cfg, role: str):
    """(policy, prompts, n, sampling) of one sampling call of the preset: the solver step's
    (held-out prompts x solver_group) or the Challenger step's (proposer prompts x challenger_group)."""
    from coevo.commands.bench_step import solver_batch
    from coevo.runner import make_policies, make_world
    from coevo.recipes.base import sampling_params
    from coevo.core.world import role_sampling

    rz = cfg.rzero
    if role == "solver":
        policy, prompts, sp = solver_batch(cfg, rz.solver_prompts, rz.solver_group)
        return policy, prompts, rz.solver_group, sp
    world = make_world(cfg)
    policy = make_policies(cfg)["challenger"]
    prompts = world.proposer_prompts(rz.challenger_prompts, cfg.seed)
    return policy, prompts, rz.challenger_group, role_sampling(world, QUESTION, sampling_params(cfg))


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", help="also time the TinyPolicy of this tiny.py (e.g. an older version)")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--preset", default="cpu")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: the preset's)")
    ap.add_argument("--role", choices=("solver", "challenger"), default="solver")
    a = ap.parse_args(argv)
    import statistics

    import torch

    from coevo.backends.tiny import TinyPolicy
    from coevo.config import load_config

    cfg = load_config(a.preset, None, [])
    torch.set_num_threads(a.threads or cfg.backend.threads)
    cat, prompts, n, sp = batch(cfg, a.role)
    pols = {"cat": cat}
    pre = TinyPolicy(cat.name, cat.cfg, seed=cfg.seed)
    pre.load_state(cat.state())
    pre.model.preallocate_kv = True
    pols["preallocated"] = pre
    if a.before:
        old = load_before(a.before).TinyPolicy(cat.name, cat.cfg, seed=cfg.seed)
        old.load_state(cat.state())
        pols["before"] = old
    state = cat.gen.get_state()
    wall = {k: [] for k in pols}
    cpu = {k: [] for k in pols}
    draws = {}
    for r in range(a.rounds):  # rotate the order every round (no mode always first)
        names = list(pols)[r % len(pols):] + list(pols)[:r % len(pols)]
        for name in names:
            dt, dc, tok, d = timed(pols[name], prompts, n, sp, state)
            wall[name].append(round(dt, 4))
            cpu[name].append(round(dc, 4))
            draws.setdefault(name, (tok, d))
    med = statistics.median
    res = {"preset": a.preset, "role": a.role, "threads": torch.get_num_threads(), "rows": len(prompts) * n,
           "tokens": tok, "max_new_tokens": sp.max_new_tokens, "rounds": a.rounds,
           "tokens_per_cpu_s_median": {k: round(tok / med(v), 1) for k, v in cpu.items()},
           "tokens_per_wall_s_median": {k: round(tok / med(v), 1) for k, v in wall.items()},
           "cpu_seconds": cpu, "wall_seconds": wall,
           "identical_tokens_and_logprobs": all(d == draws["cat"] for d in draws.values())}
    print(json.dumps(res, indent=1))
    return res


if __name__ == "__main__":
    main()
