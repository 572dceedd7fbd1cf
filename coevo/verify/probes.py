"""Tiny pool tasks for tests and benchmarks (top-level so workers can import them;
scripts/bench_pool.py uses them to compare VerifierPool with pebble)."""
from __future__ import annotations

import os
import time

from coevo.core.verdict import Verdict


def echo_item(x) -> Verdict:
    """Cheap item: value 1 if x is even, with x in detail (to check ordering)."""
    return Verdict(int(x % 2 == 0), detail={"x": x})


def sleep_item(x) -> Verdict:
    """x = seconds to sleep (a "hung" item when x exceeds the timeout)."""
    time.sleep(float(x))
    return Verdict(1, detail={"slept": x})


def spin_item(x) -> Verdict:
    """Busy loop in pure Python for x seconds (ignores signals only SIGKILL stops)."""
    end = time.monotonic() + float(x)
    while time.monotonic() < end:
        pass
    return Verdict(1)


def crash_item(x) -> Verdict:
    """x == "crash": the worker process dies without a word; else echo."""
    if x == "crash":
        os._exit(3)
    if x == "raise":
        raise ValueError("boom")
    return Verdict(1, detail={"x": x})


def pid_item(_x) -> int:
    return os.getpid()


def segv_item(x) -> Verdict:
    """x == "segv": the worker dies of SIGSEGV (a C-level crash, as a bad extension would); else echo."""
    if x == "segv":
        import ctypes
        ctypes.string_at(0)
    return Verdict(1, detail={"x": x})
