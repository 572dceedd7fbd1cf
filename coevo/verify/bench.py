"""``coevo bench verify``: the verifier pool vs math-verify called in-process.

Both sides score the same ``n`` generated answer pairs (fractions, decimals, LaTeX,
boxed answers, polynomials; about half equivalent).  The in-process reference is
math-verify's ``parse``/``verify`` with its own default (SIGALRM) timeouts, called one
pair after the other, as most training code does.  The pool runs ``check_math`` (the
``math`` verifier) in ``workers`` processes with a hard 5 s per-item timeout.  Prints
throughput of each, ``speedup`` = pool / in-process throughput (pool start-up
reported separately as ``pool_startup_s``; the two sides alternate over ``blocks``
blocks of pairs so both see the same background load), ``hangs`` (pool items that hit the
timeout) and p50 / p99 per-item latency.
"""
from __future__ import annotations

import logging
import os
import random
import time

import numpy as np


def make_pairs(n: int, seed: int = 0) -> list:
    """Distinct (answer, reference) pairs; about half are equivalent."""
    rng = random.Random(seed)
    pairs = []
    for i in range(n):
        a, b = rng.randint(1, 99), rng.randint(2, 99)
        same = rng.random() < 0.5
        kind = i % 5
        if kind == 0:
            ref, ans = f"\\frac{{{a}}}{{{b}}}", (f"$\\frac{{{a * 2}}}{{{b * 2}}}$" if same else f"$\\frac{{{a + 1}}}{{{b}}}$")
        elif kind == 1:
            ref = f"{a / b:.6f}"
            ans = f"The answer is $\\boxed{{\\frac{{{a}}}{{{b}}}}}$" if same else f"$\\boxed{{{(a + 1) / b:.4f}}}$"
        elif kind == 2:
            ref = f"{a * b + i}"
            ans = f"\\boxed{{{a * b + i}}}" if same else f"\\boxed{{{a * b + i + 1}}}"
        elif kind == 3:
            ref = f"$x^2 + {a + b}x + {a * b}$"
            ans = f"$(x+{a})(x+{b})$" if same else f"$(x+{a})(x+{b + 1})$"
        else:
            ref = f"\\sqrt{{{a * a * b}}}"
            ans = f"${a}\\sqrt{{{b}}}$" if same else f"${a + 1}\\sqrt{{{b}}}$"
        pairs.append((ans, ref))
    return pairs


def _inprocess(pairs) -> tuple:
    from math_verify import parse, verify
    lat, vals = [], []
    for ans, ref in pairs:
        t = time.perf_counter()
        try:
            v = int(bool(verify(parse(ref), parse(ans))))
        except Exception:  # noqa: BLE001
            v = None
        lat.append(time.perf_counter() - t)
        vals.append(v)
    return lat, vals


def bench_verify(n: int = 2000, workers: int | None = None, seed: int = 0, blocks: int = 8) -> dict:
    from coevo.verify.checks import math_task
    from coevo.verify.pool import VerifierPool

    for name in ("math_verify", "math_verify.parser", "math_verify.grader"):
        logging.getLogger(name).setLevel(logging.ERROR)
    workers = int(workers or os.cpu_count() or 1)
    pairs = make_pairs(n, seed)

    t0 = time.perf_counter()
    pool = VerifierPool(workers=workers, timeout_s=5.0)
    t_in = t_pool = 0.0
    lat_in, vals_in, out = [], [], []
    try:
        pool.map(math_task, [("1", "1")] * workers)  # start the workers
        startup = time.perf_counter() - t0
        _inprocess(pairs[:5])  # warm the in-process imports too
        # interleave blocks (alternating which side goes first) so both see the same
        # background load on a shared machine
        step = max(1, -(-n // blocks))
        for k, s0 in enumerate(range(0, n, step)):
            block = pairs[s0:s0 + step]
            for side in ((0, 1) if k % 2 == 0 else (1, 0)):
                t0 = time.perf_counter()
                if side == 0:
                    lat, vals = _inprocess(block)
                    t_in += time.perf_counter() - t0
                    lat_in += lat
                    vals_in += vals
                else:
                    out += pool.map(math_task, block)
                    t_pool += time.perf_counter() - t0
        stats = dict(pool.stats)
    finally:
        pool.close()
    hangs = sum(1 for v in out if v.value is None and v.reason == "timeout")
    crashes = sum(1 for v in out if v.value is None and v.reason == "worker-crash")
    lat_pool = np.array([v.elapsed_s for v in out])
    agree = sum(1 for v, w in zip(out, vals_in) if v.value == w)
    return {
        "n": n,
        "workers": workers,
        "cpu_count": os.cpu_count(),
        "inprocess_items_per_s": round(n / t_in, 1),
        "pool_items_per_s": round(n / t_pool, 1),
        "speedup": round(t_in / t_pool, 3),
        "pool_startup_s": round(startup, 3),
        "hangs": hangs,
        "worker_crashes": crashes,
        "pool_timeouts_total": stats["timeouts"],
        "agreement_with_inprocess": round(agree / n, 4),
        "abstentions": sum(1 for v in out if v.value is None),
        "p50_ms_pool_item": round(float(np.percentile(lat_pool, 50)) * 1e3, 3),
        "p99_ms_pool_item": round(float(np.percentile(lat_pool, 99)) * 1e3, 3),
        "p99_ms_inprocess": round(float(np.percentile(lat_in, 99)) * 1e3, 3),
        "loadavg_1min": round(os.getloadavg()[0], 2),
    }
