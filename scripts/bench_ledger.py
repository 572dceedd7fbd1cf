"""The ledger's cost on a reward hot path: coevo's TRL Solver reward (``coevo.integrations.trl.SolverReward``)
called with ``--completions`` completions per call (one TRL step), with no ledger, with the buffered ledger
writer (the TRL default) and with a commit per call (the verl adapter's default), in the same run.

    python scripts/bench_ledger.py [--completions 128] [--steps 60] [--verifier integer]

Calls alternate in blocks of ``--block`` steps (no ledger, buffered, committed, ...) so all three see the
same background load. A buffered block ends with a synchronous commit of what it queued, timed inside
the block, so the buffered figure includes the commit the background thread would otherwise make.
Prints one JSON object: ms per call (median of the blocks' per-call means) for each mode, the ledger's
ms per call above the no-ledger call, and the ratios against no ledger. Wall time depends on the
machine's load; the ratio and the difference are the numbers to compare.
"""
from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace


def calls(f, n: int, step0: int, completions: int) -> None:
    prompts = [f"What is {k} + {k}?" for k in range(completions // 8) for _ in range(8)]
    comps = [f"The sum is \\boxed{{{(j % 8) + 2 * (i // 8)}}}" for i, j in enumerate(range(completions))]
    sols = [str(2 * (i // 8)) for i in range(completions)]
    for s in range(step0, step0 + n):
        f(prompts, comps, solution=sols, trainer_state=SimpleNamespace(global_step=s))


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--completions", type=int, default=128)
    ap.add_argument("--steps", type=int, default=60, help="calls per mode")
    ap.add_argument("--block", type=int, default=10)
    ap.add_argument("--verifier", default="integer")
    ap.add_argument("--workers", type=int, default=0, help="verifier pool workers (0: in process)")
    a = ap.parse_args(argv)

    from coevo.integrations.ledger_writer import close_parts, flush_parts
    from coevo.integrations.trl import SolverReward

    tmp = Path(tempfile.mkdtemp(prefix="coevo-bench-ledger-"))
    kw = dict(verifier=a.verifier, verify_workers=a.workers)
    modes = {"none": SolverReward(**kw), "buffered": SolverReward(ledger=str(tmp / "buffered"), **kw),
             "committed": SolverReward(ledger=str(tmp / "committed"), flush_rows=1, **kw)}
    for f in modes.values():  # warm-up: imports, the verifier, each ledger part opened (once per process)
        calls(f, 1, -1, a.completions)
    flush_parts()
    per: dict[str, list] = {m: [] for m in [*modes, "buffered+commit"]}
    cpu: dict[str, list] = {m: [] for m in modes}
    step = 0
    while step < a.steps:
        n = min(a.block, a.steps - step)
        for m, f in modes.items():
            t, c = time.perf_counter(), time.process_time()
            calls(f, n, step, a.completions)
            per[m].append((time.perf_counter() - t) / n * 1e3)
            if m == "buffered":  # what the background thread has not committed yet, amortised over the block
                t2 = time.perf_counter()
                flush_parts()
                per["buffered+commit"].append(per[m][-1] + (time.perf_counter() - t2) / n * 1e3)
            cpu[m].append((time.process_time() - c) / n * 1e3)
        step += n
    close_parts()
    out = {"completions_per_call": a.completions, "calls_per_mode": a.steps, "verifier": a.verifier,
           "rows_per_call": 4 * a.completions}
    # wall: what the caller waits for per call ("buffered+commit" adds the commits amortised per call, as a
    # trainer that never overlaps them would see); cpu: process time of every thread, commits included
    for name, d in (("wall", per), ("cpu", cpu)):
        ms = {m: statistics.median(v) for m, v in d.items()}
        others = [m for m in ms if m != "none"]
        out[name] = {"ms_per_call": {m: round(v, 3) for m, v in ms.items()},
                     "ledger_ms_per_call": {m: round(ms[m] - ms["none"], 3) for m in others},
                     "ratio_vs_no_ledger": {m: round(ms[m] / max(ms["none"], 1e-9), 2) for m in others}}
    print(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
