"""The executor contract and the local executor (``executor.kind=local``)."""
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
