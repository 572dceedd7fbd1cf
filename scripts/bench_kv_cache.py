#!/usr/bin/env python
"""Sampling speed of the tiny backend before / after a change, same process, same machine.

Loads the *before* ``TinyPolicy`` from a file (e.g. the version before the preallocated KV
cache: ``git show 3b41626:coevo/backends/tiny.py > /tmp/tiny_before.py``), gives it the
weights and RNG state of the current one (the default preset's solver), and times both on
the same sampling batch (the ``cpu`` preset's solver step: 32 held-out prompts x 5 samples,
its sampling parameters), alternating before / after ``--rounds`` times.  Prints JSON: the
best tokens/s of each, their ratio, and whether both drew the same tokens and log-probs.

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
    spec.loader.exec_module(mod)
    return mod


def timed(policy, prompts, n, sp, state):
    policy.gen.set_state(state)
    t = time.perf_counter()
    outs = policy.sample(prompts, n, sp)
    dt = time.perf_counter() - t
    flat = [c for g in outs for c in g]
    return dt, sum(len(c.token_ids) for c in flat), [(c.token_ids, c.logprobs) for c in flat]


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--before", required=True, help="a tiny.py of the version to compare with")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--preset", default="cpu")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: the preset's)")
    a = ap.parse_args(argv)
    import torch

    from coevo.commands.bench_step import solver_batch
    from coevo.config import load_config

    cfg = load_config(a.preset, None, [])
    torch.set_num_threads(a.threads or cfg.backend.threads)
    after, prompts, sp = solver_batch(cfg, cfg.rzero.solver_prompts, cfg.rzero.solver_group)
    n = cfg.rzero.solver_group
    old = load_before(a.before).TinyPolicy("solver", after.cfg, seed=cfg.seed)
    old.load_state(after.state())
    state = after.gen.get_state()
    times = {"before": [], "after": []}
    same = True
    for _ in range(a.rounds):
        tb, nb, ob = timed(old, prompts, n, sp, state)
        ta, na, oa = timed(after, prompts, n, sp, state)
        times["before"].append(round(tb, 4))
        times["after"].append(round(ta, 4))
        same = same and ob == oa and nb == na
    tok = na
    res = {"preset": a.preset, "threads": torch.get_num_threads(), "rows": len(prompts) * n, "tokens": tok,
           "max_new_tokens": sp.max_new_tokens, "seconds": times,
           "tokens_per_s": {k: round(tok / min(v), 1) for k, v in times.items()},
           "speedup_best": round(min(times["before"]) / min(times["after"]), 3),
           "identical_tokens_and_logprobs": same}
    print(json.dumps(res, indent=1))
    return res


if __name__ == "__main__":
    main()
