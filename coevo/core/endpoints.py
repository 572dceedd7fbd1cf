"""Failing closed on the parts a command reaches over the network: model servers, judges, retrievers.

An endpoint that cannot be reached, times out or answers with an error is an **error**: counted apart
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

from typing import Any, Iterable, Optional, Sequence

from coevo.core.policy import BackendError
from coevo.core.verdict import ERROR_REASONS

__all__ = ["ERROR_REASONS", "EndpointDown", "is_error", "first_cause", "raise_if_all_failed",
           "rate_exceeded", "partial_warning", "completion_errors"]


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
