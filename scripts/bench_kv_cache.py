#!/usr/bin/env python
"""Sampling speed of the tiny backend before / after a change, same process, same machine.

Loads the *before* ``TinyPolicy`` from a file (e.g. the version before the preallocated KV
cache: ``git show 3b41626:coevo/backends/tiny.py > /tmp/tiny_before.py``), gives it the
weights and RNG state of the current one (the default preset's solver), and times both on
the same sampling batch (the ``cpu`` preset's solver step: 32 held-out prompts x 5 samples,
its sampling parameters), alternating before / after ``--rounds`` times.  Prints JSON: the
best tokens/s of each (per wall second and per CPU second of the process: on a shared machine the
CPU seconds are the steadier measure), their ratio, and whether both drew the same tokens and
log-probs.  ``--role challenger``: the Challenger step's call (64 proposer prompts x 4).

    python scripts/bench_kv_cache.py --before /tmp/tiny_before.py --rounds 5
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from pathlib import Path

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
    from coevo.worlds.base import role_sampling

    rz = cfg.rzero
    if role == "solver":
        policy, prompts, sp = solver_batch(cfg, rz.solver_prompts, rz.solver_group)
        return policy, prompts, rz.solver_group, sp
    world = make_world(cfg)
    policy = make_policies(cfg)["challenger"]
    prompts = world.proposer_prompts(rz.challenger_prompts, cfg.seed)
    return policy, prompts, rz.challenger_group, role_sampling(world, "proposer", sampling_params(cfg))


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", required=True, help="a tiny.py of the version to compare with")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--preset", default="cpu")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: the preset's)")
    ap.add_argument("--role", choices=("solver", "challenger"), default="solver")
    a = ap.parse_args(argv)
    import torch

    from coevo.config import load_config

    cfg = load_config(a.preset, None, [])
    torch.set_num_threads(a.threads or cfg.backend.threads)
    after, prompts, n, sp = batch(cfg, a.role)
    old = load_before(a.before).TinyPolicy(after.name, after.cfg, seed=cfg.seed)
    old.load_state(after.state())
    state = after.gen.get_state()
    wall = {"before": [], "after": []}
    cpu = {"before": [], "after": []}
    same = True
    for _ in range(a.rounds):
        for name, pol in (("before", old), ("after", after)):
            dt, dc, tok, draws = timed(pol, prompts, n, sp, state)
            wall[name].append(round(dt, 4))
            cpu[name].append(round(dc, 4))
            if name == "before":
                ref = (tok, draws)
            else:
                same = same and ref == (tok, draws)
    best = (lambda v: min(v))  # noqa: E731
    res = {"preset": a.preset, "role": a.role, "threads": torch.get_num_threads(), "rows": len(prompts) * n,
           "tokens": tok, "max_new_tokens": sp.max_new_tokens, "wall_seconds": wall, "cpu_seconds": cpu,
           "tokens_per_wall_s": {k: round(tok / best(v), 1) for k, v in wall.items()},
           "tokens_per_cpu_s": {k: round(tok / best(v), 1) for k, v in cpu.items()},
           "speedup_wall_best": round(best(wall["before"]) / best(wall["after"]), 3),
           "speedup_cpu_best": round(best(cpu["before"]) / best(cpu["after"]), 3),
           "identical_tokens_and_logprobs": same}
    print(json.dumps(res, indent=1))
    return res


if __name__ == "__main__":
    main()
