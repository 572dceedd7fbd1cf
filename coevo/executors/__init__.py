"""Where a run's work happens: the executor that hands the runner its verifier pool and
its policies (``executor.kind`` in the config).

``local`` (default): a ``VerifierPool`` of killable processes on this machine, policies as
built.  ``ray``: verification on Ray actors across a cluster and sampling on policy
replicas held by Ray actors (``coevo.executors.ray_executor``); training steps and the
ledger stay on the driver.  Both give the same numbers for the same seed (docs/cluster.md).
"""
from __future__ import annotations

from coevo.executors.base import ExecutorError, LocalExecutor

__all__ = ["ExecutorError", "LocalExecutor", "make_executor"]


def make_executor(cfg):
    """The executor ``cfg.executor`` names (``ExecutorError`` if it cannot start)."""
    ex = cfg.executor
    if ex.kind == "local":
        return LocalExecutor()
    from coevo.executors.ray_executor import RayExecutor

    return RayExecutor(ex, verify=cfg.verify, threads=cfg.backend.threads)
