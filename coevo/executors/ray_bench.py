"""``coevo bench ray-verify``: verification throughput on a Ray cluster vs the local pool.

Both sides check the same ``n`` math answer pairs (``coevo.verify.bench.make_pairs``) with
``check_math`` and a 5 s per-item limit: the local ``VerifierPool`` with ``local_workers``
processes (default: as many as the cluster has verifier actors) and ``RayVerifierPool``
with one actor per CPU of the cluster.  The two alternate over ``blocks`` blocks so both
see the same background load; ``ratio`` = Ray / local throughput, measured in one run.
``measure_nodes`` starts a ``LocalCluster`` per node count (head with no CPUs, so every
actor is on a worker node) and runs the measurement as a driver inside it.
"""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time


def wait_for_cpus(ray, want: int, timeout_s: float = 120.0) -> int:
    """Cluster CPUs once at least ``want`` have joined (or whatever there is after the timeout)."""
    end = time.monotonic() + timeout_s
    while True:
        have = int(ray.cluster_resources().get("CPU", 0))
        if have >= want or time.monotonic() > end:
            return have
        time.sleep(0.5)


def bench_ray_verify(address: str, n: int = 2000, local_workers: int | None = None, blocks: int = 4,
                     seed: int = 0, expect_cpus: int = 0) -> dict:
    from coevo.config import ExecutorConfig
    from coevo.executors.ray_executor import RayExecutor
    from coevo.verify.bench import make_pairs
    from coevo.verify.checks import math_task
    from coevo.verify.pool import VerifierPool

    for name in ("math_verify", "math_verify.parser", "math_verify.grader"):
        logging.getLogger(name).setLevel(logging.ERROR)
    ex = RayExecutor(ExecutorConfig(kind="ray", address=address))
    cpus = wait_for_cpus(ex.ray, expect_cpus)
    t0 = time.perf_counter()
    rpool = ex.make_pool(timeout_s=5.0).start()
    workers = int(local_workers or rpool.n_actors)
    lpool = VerifierPool(workers=workers, timeout_s=5.0)
    pairs = make_pairs(n, seed)
    t = {"local": 0.0, "ray": 0.0}
    out: dict = {"local": [], "ray": []}
    try:
        rpool.map(math_task, [("1", "1")] * (4 * rpool.n_actors))  # warm: actors, their workers, imports
        ray_startup = time.perf_counter() - t0
        lpool.map(math_task, [("1", "1")] * workers)
        step = max(1, -(-n // blocks))
        for k, s0 in enumerate(range(0, n, step)):
            block = pairs[s0:s0 + step]
            for side in (("local", "ray") if k % 2 == 0 else ("ray", "local")):
                pool = lpool if side == "local" else rpool
                t1 = time.perf_counter()
                out[side] += pool.map(math_task, block)
                t[side] += time.perf_counter() - t1
    finally:
        lpool.close()
        ex.close()
    agree = sum(1 for a, b in zip(out["local"], out["ray"]) if (a.value, a.reason) == (b.value, b.reason))
    return {"n": n, "cluster_cpus": cpus, "ray_actors": rpool.n_actors, "ray_nodes_used": len(set(rpool.nodes)),
            "local_workers": workers, "local_items_per_s": round(n / t["local"], 1),
            "ray_items_per_s": round(n / t["ray"], 1), "ratio_ray_vs_local": round(t["local"] / t["ray"], 3),
            "ray_startup_s": round(ray_startup, 2), "same_verdicts": round(agree / n, 4),
            "ray_timeouts": sum(1 for v in out["ray"] if v.reason == "timeout"),
            "local_timeouts": sum(1 for v in out["local"] if v.reason == "timeout"),
            "cpu_count": os.cpu_count(), "loadavg_1min": round(os.getloadavg()[0], 2)}


def measure_nodes(node_counts: list[int], n: int, blocks: int, seed: int, isolate: bool = True) -> dict:
    """One local cluster per node count (each worker node 1 CPU); the measurement runs as a
    driver process inside it (``coevo bench ray-verify --address``)."""
    from coevo.executors.cluster import LocalCluster

    res: dict = {}
    for k in node_counts:
        with LocalCluster(workers=k, head_cpus=0, worker_cpus=1, isolate=isolate) as c:
            cmd = [*c.prefix, sys.executable, "-m", "coevo.cli", "bench", "ray-verify", "--address", c.address,
                   "--n", str(n), "--blocks", str(blocks), "--seed", str(seed), "--expect-cpus", str(k), "--json"]
            p = subprocess.run(cmd, capture_output=True, text=True, env=c.env, timeout=1800)
        if p.returncode != 0:
            raise RuntimeError(f"bench with {k} worker node(s) failed:\n{p.stderr[-2000:]}")
        res[f"{k}_worker_nodes"] = json.loads(p.stdout[p.stdout.index("{"):])
    if len(node_counts) > 1:
        a, b = res[f"{node_counts[0]}_worker_nodes"], res[f"{node_counts[-1]}_worker_nodes"]
        res["ray_throughput_ratio_last_vs_first"] = round(b["ray_items_per_s"] / a["ray_items_per_s"], 3)
    return res
