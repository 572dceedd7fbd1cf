"""Verdict: the one value every verifier returns.

``value`` is 1 (pass), 0 (fail) or ``None`` (abstain).  An abstention is data, not an
exception: it always carries a non-empty ``reason`` (see ``REASONS``), because CASA
(CASA proposal §core idea) needs to know which criteria left the denominator and why.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

# Reasons a verifier abstains.  Free-form reasons are allowed, these are the ones the
# code emits; ``TRANSIENT_REASONS`` are not cached (a retry may succeed).
REASONS = (
    "timeout",            # the pool / sandbox / judge ran out of its time budget
    "unparsable",         # answer or reference could not be parsed by the checker
    "judge-unknown",      # the judge answered "unknown"
    "judge-unavailable",  # the judge endpoint failed after all retries (an error: ERROR_REASONS)
    "judge-not-configured",  # an llm_judge criterion without judge options (base_url, model)
    "resource-limit",     # memory / CPU / file-size / input-size limit reached
    "sandbox-error",      # the sandbox itself could not run the program
    "worker-crash",       # the pool worker died while checking this item
    "verifier-error",     # the checker raised; the traceback is in detail["error"]
    "undecidable",        # the checker ran but could not decide (e.g. sympy .equals -> None)
    "check-error",        # a sandbox_py check program failed or printed no verdict
)
TRANSIENT_REASONS = frozenset({"timeout", "judge-unavailable", "judge-not-configured", "worker-crash", "sandbox-error"})
# Reasons that are errors of an endpoint, not abstentions: counted apart from both (coevo.core.endpoints)
ERROR_REASONS = frozenset({"judge-unavailable"})


@dataclass
class Verdict:
    """A verifier's answer: value in {1, 0, None}; a reason for every None.

    ``criterion_id``: the criterion the verdict is about, where the caller has one (the
    run verifier carries it through so verdict rows can record it)."""

    value: Optional[int]
    reason: str = ""
    kind: str = ""
    version: str = ""
    elapsed_s: float = 0.0
    detail: dict = field(default_factory=dict)
    criterion_id: Optional[str] = None

    def __post_init__(self):
        if self.value is not None:
            if isinstance(self.value, bool):
                self.value = int(self.value)
            if self.value not in (0, 1):
                raise ValueError(f"Verdict.value must be 1, 0 or None, got {self.value!r}")
        elif not self.reason:
            raise ValueError("an abstaining Verdict (value=None) needs a reason")

    @property
    def abstained(self) -> bool:
        """No decision, for a reason of the checker's own (an endpoint error is not an abstention)."""
        return self.value is None and not self.errored

    @property
    def errored(self) -> bool:
        """No decision because the endpoint failed (``ERROR_REASONS``): an error, never an abstention."""
        return self.value is None and self.reason in ERROR_REASONS

    def to_row(self) -> dict:
        """Flat dict for the ledger's ``verdicts`` table (detail as JSON text)."""
        return {
            "value": self.value,
            "abstained": self.abstained,
            "reason": self.reason,
            "kind": self.kind,
            "version": self.version,
            "elapsed_s": float(self.elapsed_s),
            "detail": json.dumps(self.detail, default=str, sort_keys=True),
            "criterion_id": self.criterion_id,
        }

    @classmethod
    def from_row(cls, row: dict) -> "Verdict":
        detail = row.get("detail") or {}
        if isinstance(detail, str):
            detail = json.loads(detail) if detail else {}
        return cls(row.get("value"), row.get("reason") or "", row.get("kind") or "",
                   row.get("version") or "", float(row.get("elapsed_s") or 0.0), detail,
                   row.get("criterion_id") or None)


def abstain(reason: str, kind: str = "", version: str = "", elapsed_s: float = 0.0, **detail) -> Verdict:
    return Verdict(None, reason or "unknown", kind, version, elapsed_s, dict(detail))


def guarded(fn: Callable[..., Verdict], kind: str, version: str, *args: Any, **kwargs: Any) -> Verdict:
    """Call a checker and turn any exception into ``Verdict(None, "verifier-error")``.

    Also stamps kind / version / elapsed time on the result.  ``MemoryError`` and
    ``RecursionError`` become ``resource-limit``.
    """
    t0 = time.perf_counter()
    try:
        v = fn(*args, **kwargs)
        if not isinstance(v, Verdict):
            v = Verdict(None if v is None else int(bool(v)), "" if v is not None else "undecidable")
    except (MemoryError, RecursionError) as e:
        v = abstain("resource-limit", error=f"{type(e).__name__}: {str(e)[:200]}")
    except Exception as e:  # noqa: BLE001 - never an exception out of a verifier
        v = abstain("verifier-error", error=f"{type(e).__name__}: {str(e)[:500]}")
    v.kind = v.kind or kind
    v.version = v.version or version
    v.elapsed_s = time.perf_counter() - t0
    return v
