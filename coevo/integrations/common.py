"""What the framework adapters and the importers share: answer extraction, the verifier, the rows of
rollouts and tasks another framework produced. The ledger parts they write are
``coevo.integrations.ledger_writer`` (re-exported here); the reward core is ``coevo.integrations.scoring``.
"""
from __future__ import annotations

import importlib
import re
from typing import Any, Callable, Optional

from coevo.integrations.ledger_writer import PartWriter, close_parts, part_writer  # noqa: F401 (re-exported)
from coevo.verify.run import shared_run_verifier as build_verifier  # noqa: F401 (re-exported)

__all__ = ["LEDGER_ENV", "EXTRACT_MODES", "extract_answer", "build_verifier", "PartWriter", "part_writer",
           "close_parts", "as_reference", "import_function"]

LEDGER_ENV = "COEVO_LEDGER"
EXTRACT_MODES = ("auto", "boxed", "gsm8k", "raw")
_GSM8K_RE = re.compile(r"####\s*([^\n]+)")


def extract_answer(text: Optional[str], mode: str = "auto") -> Optional[str]:
    """The answer in a model output: ``boxed`` = the last brace-balanced ``\\boxed{}`` (R-Zero,
    coevo's math world), ``gsm8k`` = after the last ``####`` (verl's GSM8K reward), ``auto`` =
    boxed, else ``####``; ``raw`` = the stripped text. None when there is none."""
    from coevo.verify.latex import last_boxed

    if mode not in EXTRACT_MODES:
        raise ValueError(f"extract must be one of {EXTRACT_MODES}, got {mode!r}")
    if text is None:
        return None
    if mode == "raw":
        return text.strip() or None
    if mode in ("auto", "boxed"):
        a = last_boxed(text)
        if a is not None or mode == "boxed":
            return a
    hits = _GSM8K_RE.findall(text)
    return hits[-1].strip().replace(",", "") if hits else None


def import_function(ref: str, name: str = "solver_fn") -> Callable:
    """``"package.module:function"`` -> the function (a Solver sampler named in a framework's settings);
    ValueError naming the setting ``name`` when ``ref`` is not of that form."""
    mod, _, attr = ref.partition(":")
    if not mod or not attr:
        raise ValueError(f"{name} must be 'package.module:function', got {ref!r}")
    return getattr(importlib.import_module(mod), attr)


def as_reference(gts: Any) -> Optional[str]:
    """A ground truth as the verifier's reference string: str as is, a number as text; None for
    anything else (None, lists, dicts: no single reference)."""
    if isinstance(gts, bool):
        return None
    if isinstance(gts, str):
        return gts
    if isinstance(gts, (int, float)):
        return str(gts)
    return None




def rollout_row_of(run_id: str, round_: int, step: int, rollout_id: str, task_id: str, role: str, purpose: str,
                   group_idx: int, text: Optional[str], answer: Optional[str], version: str = "",
                   finish_reason: Optional[str] = None) -> dict:
    """A ``rollouts`` row (``coevo.ledger.store.rollout_row``) for a rollout another framework
    sampled: its text as given (None when the source kept only the answer), tokens unknown."""
    from coevo.backends.base import Completion
    from coevo.ledger.store import rollout_row

    c = Completion(prompt="", text=text or "", prompt_ids=[], token_ids=[], logprobs=[],
                   finish_reason=finish_reason or "stop", policy_version=version)
    row = rollout_row(run_id, round_, step, rollout_id, task_id, role, purpose, group_idx, c, answer)
    row.update({"text": text, "n_tokens": None, "finish_reason": finish_reason, "n_masked_tokens": None})
    return row


def task_row_of(run_id: str, round_: int, step: int, task_id: str, source: str, question: Optional[str],
                reference: Optional[str] = None, raw_text: Optional[str] = None, parse_reason: str = "",
                parse_ok: Optional[bool] = None, prompt_version: str = "", **extra) -> dict:
    """A ``tasks`` row (``coevo.ledger.store.task_row``) for a task another framework posed."""
    from coevo.ledger.store import task_row
    from coevo.worlds.base import Task

    task = Task(task_id=task_id, question=question, reference=reference) if question is not None else None
    row = task_row(run_id, round_, step, task_id, source, None, prompt_version, task, parse_reason, **extra)
    row["raw_text"] = raw_text
    if parse_ok is not None:
        row["parse_ok"] = parse_ok
    return row
