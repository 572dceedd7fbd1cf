"""The Policy contract (Tinker-like) shared by every backend.

A Policy samples completions and learns from advantages. Backends: ``tiny`` (CPU,
from-scratch transformer), ``hf`` (transformers + peft), ``openai`` (remote
sampling), later ``ray``.  Two roles may be two policies, two adapters on one base,
or one shared policy (the R-Zero "Single" ablation).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence, runtime_checkable


@dataclass
class SamplingParams:
    temperature: float = 1.0
    top_p: float = 1.0
    max_new_tokens: int = 32
    stop: list[str] | None = None
    greedy: bool = False
    # "assistant prefill": the completion continues this text (after the chat template's
    # generation prompt).  ``Completion.text`` holds only what the model wrote; the prefix
    # is in ``Completion.meta["response_prefix"]`` (see ``full_text``).
    response_prefix: str = ""


@dataclass
class Completion:
    """One sampled completion: what was asked, what came back, and how likely it was."""

    prompt: str
    text: str
    prompt_ids: list[int]
    token_ids: list[int]
    logprobs: list[float]
    finish_reason: str = "stop"  # stop | length | error
    policy_version: str = ""
    meta: dict[str, Any] = field(default_factory=dict)


class BackendError(RuntimeError):
    """A backend could not produce what was asked (e.g. every inference server failed).
    The runner turns it into a one-line error; the step is not committed, so the run
    resumes from the last completed step."""


def full_text(c: "Completion") -> str:
    """What the reader of a completion sees: prefill + generated text + the stop string
    that ended it (``text`` alone is what the logprobs cover)."""
    return f"{c.meta.get('response_prefix', '')}{c.text}{c.meta.get('stop') or ''}"


SAMPLER_KEYS = ("served_model", "server", "endpoint", "system_fingerprint", "attempts", "retried_after", "error")


def sampler_info(c: "Completion") -> dict[str, Any] | None:
    """Who served a completion (model/adapter name, server, retries, error), for the ledger
    (which stores it as JSON); None for in-process backends, which record nothing beyond
    ``policy_version``."""
    info = {k: c.meta[k] for k in SAMPLER_KEYS if c.meta.get(k) is not None}
    return info or None


@dataclass
class LossConfig:
    """How a batch of completions and advantages becomes a loss (see coevo.rl.grpo)."""

    clip_eps: float = 0.2
    clip_eps_high: float | None = None  # DAPO clip-higher; None = symmetric
    aggregation: str = "grpo"  # grpo | dr_grpo | dapo | bnpo
    kl_coef: float = 0.0
    max_len: int | None = None  # dr_grpo normaliser; None = longest in batch


@runtime_checkable
class Policy(Protocol):
    name: str

    @property
    def version(self) -> str:  # checkpoint version stamped on every ledger row
        ...

    def sample(self, prompts: Sequence[str], n: int, sampling: SamplingParams) -> list[list[Completion]]:
        """For each prompt, n completions (outer list follows prompts)."""

    def forward_backward(
        self, batch: Sequence[Completion], advantages: Sequence[float], loss: LossConfig
    ) -> dict[str, float]:
        """Accumulate gradients of the policy loss on ``batch``; return metrics."""

    def optim_step(self) -> dict[str, float]:
        """Apply accumulated gradients; bumps ``version``."""

    def save(self, path: str) -> None: ...

    def load(self, path: str) -> None: ...
