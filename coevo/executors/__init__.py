"""Where a run's work happens: the executor that hands the runner its verifier pool and
its policies (``executor.kind`` in the config).

``local`` (default): a ``VerifierPool`` of killable processes on this machine, policies as
built.  ``ray``: verification on Ray actors across a cluster and sampling on policy
replicas held by Ray actors (``coevo.executors.ray_executor``); training steps and the
ledger stay on the driver.  Both give the same numbers for the same seed (docs/cluster.md).
"""
from __future__ import annotations


class ExecutorError(Exception):
    """An executor could not start (Ray missing, cluster unreachable): one line for the user."""


class LocalExecutor:
    """Everything in this process, verification in a local ``VerifierPool``."""

    kind = "local"

    def verifier_pool(self, verify):
        """A pool for ``verify.workers > 0`` (the config's ``verify`` section), else None (in-process)."""
        if verify.workers <= 0:
            return None
        from coevo.verify.pool import VerifierPool

        return VerifierPool(workers=verify.workers, timeout_s=verify.timeout_s)

    def wrap_policies(self, policies: dict) -> dict:
        return policies

    def close(self) -> None:
        """Nothing to release."""


def make_executor(cfg):
    """The executor ``cfg.executor`` names (``ExecutorError`` if it cannot start)."""
    ex = cfg.executor
    if ex.kind == "local":
        return LocalExecutor()
    from coevo.executors.ray_executor import RayExecutor

    return RayExecutor(ex, verify=cfg.verify, threads=cfg.backend.threads)
