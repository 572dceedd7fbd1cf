"""What a check or a call comes back with: a Verdict (pass, fail, abstain) or an endpoint error.

**Verdict**, the one value every verifier returns: ``value`` is 1 (pass), 0 (fail) or ``None`` (abstain).  An abstention is data, not an
exception: it always carries a non-empty ``reason`` (see ``REASONS``), because CASA
(CASA proposal §core idea) needs to know which criteria left the denominator and why.

**Endpoint errors** (the second half of this module): failing closed on the parts a command reaches
over the network: model servers, judges, retrievers.  An endpoint that cannot be reached, times out or answers with an error is an **error**: counted apart
from wrong answers and from abstentions (a verdict whose ``reason`` is in ``ERROR_REASONS``, a
completion whose ``finish_reason`` is ``"error"``), never scored as either.  The rule every command
follows (issue #31 item 1):

* each call is retried by its client (the backend's or the judge's retry policy);
* when every call made so far has failed after its retries (checked after the first batch, so a dead
  endpoint costs one batch of retries, not a whole run), the command stops with ``EndpointDown``: one
  line naming the endpoint and the cause, exit status 2;
* some calls failing is a warning with the count (``partial_warning``), and the result carries the
  count; ``eval``, ``stress``, ``certify`` and ``run`` exit non-zero when the share of failed calls is
  above ``--max-error-rate`` (default 0: any error; ``rate_exceeded``).
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Optional, Sequence

from coevo.core.policy import BackendError

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
# Reasons that are errors of an endpoint, not abstentions: counted apart from both (below: EndpointDown, is_error)
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


# ---------------------------------------------------------------------- endpoint errors
class EndpointDown(BackendError):
    """Every call to an endpoint failed after its retries (one line: the endpoint and the cause)."""


def is_error(x: Any) -> bool:
    """A failed call: a Completion with ``finish_reason == "error"`` or a Verdict whose reason is an
    endpoint error (``judge-unavailable``)."""
    if getattr(x, "finish_reason", None) == "error":
        return True
    return getattr(x, "value", 0) is None and getattr(x, "reason", "") in ERROR_REASONS


def first_cause(x: Any) -> str:
    """The cause a failed Completion or Verdict records (the last one its retries met), one line."""
    meta = getattr(x, "meta", None) or {}
    if meta.get("error"):
        return str(meta["error"]).split(" | ")[-1].splitlines()[0]
    errs = (getattr(x, "detail", None) or {}).get("errors") or []
    return str(errs[-1]).splitlines()[0] if errs else str(getattr(x, "reason", "") or "failed")


def completion_errors(outs: Iterable[Sequence[Any]]) -> tuple[int, int]:
    """(failed, total) over the requests of a ``sample`` answer: one request per prompt, whose
    completions all carry ``finish_reason == "error"`` when it failed."""
    groups = [g for g in outs if g]
    return sum(all(is_error(c) for c in g) for g in groups), len(groups)


def raise_if_all_failed(items: Sequence[Any], what: str, endpoint: Optional[str] = None) -> None:
    """``EndpointDown`` when ``items`` (completions or verdicts) are all failed calls. ``what`` names the
    part (``model server``, ``judge``); ``endpoint`` its URL where the cause does not name it."""
    if not items or not all(is_error(x) for x in items):
        return
    cause = first_cause(items[0])
    head, sep, rest = cause.partition(": ")
    if sep and head.startswith(("http://", "https://")):  # the backend's reasons start with the server
        endpoint, cause = head, rest
    where = f"{what} {endpoint}" if endpoint else what
    raise EndpointDown(f"{where}: {cause} ({len(items)} of {len(items)} calls failed after retries)")


def rate_exceeded(n_errors: int, n_calls: int, max_rate: float) -> Optional[str]:
    """The refusal line when ``n_errors`` of ``n_calls`` is a share above ``max_rate``; else None."""
    if n_errors <= 0 or n_calls <= 0 or n_errors / n_calls <= max_rate:
        return None
    return (f"{n_errors} of {n_calls} calls failed ({100 * n_errors / n_calls:.1f}%), above --max-error-rate "
            f"{max_rate:g}")


def partial_warning(n_errors: int, n_calls: int, what: str, cause: str = "", where: str = "") -> str:
    """The one warning line for some failed calls (the caller prints it to stderr)."""
    return (f"warning: {where + ': ' if where else ''}{n_errors} of {n_calls} {what} calls failed after retries"
            + (f" (first: {cause})" if cause else "") + "; they are counted as errors, not as wrong or abstained")
