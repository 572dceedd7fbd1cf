"""GRPO core as pure tensor functions: advantages, clipped token-level loss, log-probs.

Every backend that learns (``Policy.forward_backward``) composes these; nothing here
holds state.  Formulas and the options that choose between published variants:

- :func:`group_advantages` — GRPO (centre on the group mean, divide by the group std),
  TRL ``scale_rewards="batch"`` (divide by the std of the whole batch) and Dr. GRPO
  (``"none"``: centre only).
- :func:`bucket_advantages` — Dr. Zero; False Frontiers (CrossFit): A_e = (r_e - mu_g(e)) / (sigma_g(e) + 1e-6)
  within task buckets (hop count), population std.
- :func:`policy_loss` — PPO/GRPO clipped surrogate per token, optional k3 KL to a
  reference policy, and the four TRL aggregation modes (grpo, dr_grpo, dapo, bnpo).
- :func:`token_logprobs` — log_softmax(logits) gathered at the targets.
- :func:`grpo_update` — one optimizer step of a policy on a batch (the one GRPO update every
  recipe's ``update_role`` makes), split by :func:`active_tokens`, :func:`micro_batch_args`,
  :func:`combine_metrics` into micro-batches with the gradient of the unsplit batch.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch

from coevo.core.policy import Completion, LossConfig, Policy

SCALES = ("group", "batch", "none")
AGGREGATIONS = ("grpo", "dr_grpo", "dapo", "bnpo")


def group_advantages(
    rewards: torch.Tensor, scale: str = "group", eps: float = 1e-6, unbiased: bool = False
) -> torch.Tensor:
    """Advantages of G groups of K rollouts: A[g, k] = (r[g, k] - mean_k r[g]) / (s + eps).

    ``scale="group"``: s = std of the group (GRPO); ``"batch"``: s = std of all G*K
    rewards (TRL ``scale_rewards="batch"``; still centred on the group mean);
    ``"none"``: no division (Dr. GRPO).  ``unbiased=False`` (default) is the population
    std (divide by K), matching :func:`bucket_advantages` and False Frontiers (CrossFit); TRL uses
    ``torch.std`` i.e. ``unbiased=True`` (divide by K - 1) and eps = 1e-4.  A group of
    equal rewards gives 0, never NaN (also with ``unbiased=True`` and K = 1).
    """
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {SCALES}, got {scale!r}")
    if rewards.dim() != 2:
        raise ValueError(f"rewards must be [G, K], got shape {tuple(rewards.shape)}")
    r = rewards if rewards.is_floating_point() else rewards.to(torch.get_default_dtype())
    centred = r - r.mean(dim=1, keepdim=True)
    if scale == "none":
        return centred
    correction = 1 if unbiased else 0
    if scale == "group":
        if r.shape[1] > correction:
            std = r.std(dim=1, keepdim=True, correction=correction)
        else:
            std = torch.zeros_like(r[:, :1])
    else:
        std = r.std(correction=correction) if r.numel() > correction else r.new_zeros(())
    return centred / (std + eps)


def bucket_advantages(rewards, buckets, eps: float = 1e-6):
    """Dr. Zero bucketed advantages (False Frontiers (CrossFit)): A_e = (r_e - mu_g(e)) / (sigma_g(e) + eps).

    ``buckets`` labels each reward (e.g. the hop count); mu and sigma are the mean and
    the population std (divide by the bucket size) of the rewards in that bucket.
    Accepts numpy or torch rewards and returns the same kind (torch: same device,
    floating dtype).  A bucket of one item, or of equal rewards, gives 0.
    """
    is_torch = isinstance(rewards, torch.Tensor)
    labels = buckets.detach().cpu().numpy() if isinstance(buckets, torch.Tensor) else np.asarray(buckets)
    if labels.ndim != 1:
        raise ValueError("buckets must be 1-D")
    n = rewards.shape[0] if is_torch else np.asarray(rewards).shape[0]
    if labels.shape[0] != n:
        raise ValueError(f"rewards and buckets differ in length: {n} vs {labels.shape[0]}")
    _, inv_np = np.unique(labels, return_inverse=True)
    inv_np = inv_np.reshape(-1)
    n_buckets = int(inv_np.max()) + 1 if n else 0
    if is_torch:
        r = rewards if rewards.is_floating_point() else rewards.to(torch.get_default_dtype())
        if r.dim() != 1:
            raise ValueError("rewards must be 1-D")
        inv = torch.as_tensor(inv_np, device=r.device, dtype=torch.long)
        cnt = torch.zeros(n_buckets, dtype=r.dtype, device=r.device).index_add_(0, inv, torch.ones_like(r))
        mu = torch.zeros(n_buckets, dtype=r.dtype, device=r.device).index_add_(0, inv, r) / cnt
        dev = r - mu[inv]
        var = torch.zeros(n_buckets, dtype=r.dtype, device=r.device).index_add_(0, inv, dev * dev) / cnt
        return dev / (var.sqrt()[inv] + eps)
    r = np.asarray(rewards)
    if r.ndim != 1:
        raise ValueError("rewards must be 1-D")
    r = r.astype(r.dtype if np.issubdtype(r.dtype, np.floating) else np.float64)
    cnt = np.bincount(inv_np, minlength=n_buckets).astype(r.dtype)
    mu = (np.bincount(inv_np, weights=r, minlength=n_buckets) / cnt).astype(r.dtype)
    dev = r - mu[inv_np]
    var = np.bincount(inv_np, weights=dev * dev, minlength=n_buckets) / cnt
    return (dev / (np.sqrt(var)[inv_np] + eps)).astype(r.dtype)


def token_logprobs(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """log p(target) per position: log_softmax(logits)[b, t, targets[b, t]] -> [B, T].

    Computed as gathered logit minus logsumexp (no [B, T, V] log-softmax tensor is
    kept); half-precision logits are upcast to float32 first.
    """
    if logits.dtype in (torch.float16, torch.bfloat16):
        logits = logits.float()
    picked = logits.gather(-1, targets.long().unsqueeze(-1)).squeeze(-1)
    return picked - torch.logsumexp(logits, dim=-1)


def _checked_advantages(logprobs, old_logprobs, advantages, mask, cfg: LossConfig) -> torch.Tensor:
    """Validate :func:`policy_loss`'s arguments; advantages as [B, 1] or [B, T] in the
    dtype of ``logprobs``."""
    if cfg.aggregation not in AGGREGATIONS:
        raise ValueError(f"LossConfig.aggregation must be one of {AGGREGATIONS}, got {cfg.aggregation!r}")
    if cfg.aggregation == "dr_grpo" and cfg.max_len is None:
        raise ValueError("dr_grpo needs LossConfig.max_len, the fixed L of sum / (B * L) "
                         "(loss.max_completion_length)")
    if logprobs.shape != old_logprobs.shape or logprobs.shape != mask.shape or logprobs.dim() != 2:
        raise ValueError(
            f"logprobs, old_logprobs and mask must share a [B, T] shape, got "
            f"{tuple(logprobs.shape)}, {tuple(old_logprobs.shape)}, {tuple(mask.shape)}"
        )
    b = logprobs.shape[0]
    adv = advantages.to(logprobs.dtype)
    if adv.dim() == 1:
        if adv.shape[0] != b:
            raise ValueError(f"advantages [B] must have B={b}, got {adv.shape[0]}")
        adv = adv.unsqueeze(1)
    elif adv.shape != logprobs.shape:
        raise ValueError(f"advantages must be [B] or [B, T], got {tuple(advantages.shape)}")
    return adv


def policy_loss(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    cfg: LossConfig,
    ref_logprobs: torch.Tensor | None = None,
    num_active_tokens: float | int | torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Clipped GRPO/PPO objective over a [B, T] batch of completion tokens.

    Per token: ratio = exp(logprobs - old_logprobs),
    l = -min(ratio * A, clip(ratio, 1 - eps, 1 + eps_high) * A) with eps = cfg.clip_eps,
    eps_high = cfg.clip_eps_high or cfg.clip_eps (DAPO clip-higher); A is per sequence
    ([B], broadcast over tokens) or per token ([B, T]).  With ``ref_logprobs`` the k3 KL
    estimate kl = exp(ref - lp) - (ref - lp) - 1; ``cfg.kl_bias_correction`` multiplies it
    by the importance ratio (not detached: TRL ``use_bias_correction_kl``); with
    cfg.kl_coef > 0, l += kl_coef * kl.

    Aggregation over the active tokens (``mask``), as TRL's ``GRPOTrainer._compute_loss``:

    - ``grpo``: mean over each sequence's tokens, then mean over sequences;
    - ``dr_grpo``: sum / (B * L) with the fixed L = ``cfg.max_len`` (Dr. GRPO; TRL's
      ``max_completion_length``).  ``cfg.max_len=None`` raises: a batch-dependent L would
      make the gradient depend on padding and on the micro-batch split;
    - ``dapo``: sum / ``num_active_tokens``, the active-token count of the whole optimiser
      step (all micro-batches); None = this batch's own count (then equal to bnpo);
    - ``bnpo``: sum / active tokens of this (micro-)batch.

    TRL divides grpo/bnpo/dr_grpo by the gradient-accumulation steps in the trainer; here
    the caller weights micro-batches (:func:`grpo_update`).  Metrics (masked
    token means): ``clip_frac`` (tokens whose gradient is cut by the clip),
    ``clip_frac_low``, ``clip_frac_high``, ``ratio_mean``, ``kl`` (the KL term as it
    enters the loss, bias-corrected when asked; reported whenever ``ref_logprobs`` is
    given, 0.0 otherwise), ``loss``.
    """
    adv = _checked_advantages(logprobs, old_logprobs, advantages, mask, cfg)
    m = mask.to(logprobs.dtype)
    eps_low = cfg.clip_eps
    eps_high = cfg.clip_eps_high if cfg.clip_eps_high is not None else cfg.clip_eps

    ratio = torch.exp(logprobs - old_logprobs.detach())
    clipped = torch.clamp(ratio, 1.0 - eps_low, 1.0 + eps_high)
    per_token = -torch.min(ratio * adv, clipped * adv)

    kl = None
    if ref_logprobs is not None:
        delta = ref_logprobs.detach() - logprobs
        kl = torch.exp(delta) - delta - 1.0
        if cfg.kl_bias_correction:  # TRL: per_token_kl * coef_1, the ratio not detached
            kl = kl * ratio
        if cfg.kl_coef > 0:
            per_token = per_token + cfg.kl_coef * kl

    loss = aggregate(per_token, m, cfg, num_active_tokens)
    with torch.no_grad():
        denom = m.sum().clamp(min=1.0)
        low = ((ratio < 1.0 - eps_low) & (adv < 0)).to(m.dtype)
        high = ((ratio > 1.0 + eps_high) & (adv > 0)).to(m.dtype)
        metrics: dict[str, Any] = {
            "loss": float(loss.detach()),
            "clip_frac": float(((low + high) * m).sum() / denom),
            "clip_frac_low": float((low * m).sum() / denom),
            "clip_frac_high": float((high * m).sum() / denom),
            "ratio_mean": float((ratio * m).sum() / denom),
            "kl": float((kl * m).sum() / denom) if kl is not None else 0.0,
        }
    return loss, metrics


def aggregate(per_token: torch.Tensor, m: torch.Tensor, cfg: LossConfig,
              num_active_tokens: float | int | torch.Tensor | None = None) -> torch.Tensor:
    """The loss of per-token losses [B, T] over the active tokens (``m``, float 0/1) for
    ``cfg.aggregation`` (see :func:`policy_loss`; TRL ``_compute_loss``)."""
    b = per_token.shape[0]
    masked_sum = (per_token * m).sum()
    active = m.sum()
    if cfg.aggregation == "grpo":
        return ((per_token * m).sum(-1) / m.sum(-1).clamp(min=1.0)).mean()
    if cfg.aggregation == "dr_grpo":
        return masked_sum / (b * cfg.max_len)
    if cfg.aggregation == "dapo":
        norm = active if num_active_tokens is None else torch.as_tensor(
            num_active_tokens, dtype=per_token.dtype, device=per_token.device)
        return masked_sum / norm.clamp(min=1.0)
    return masked_sum / active.clamp(min=1.0)  # bnpo


# metrics that policy_loss reports as means over active tokens (logprob_mismatch: hf backend)
TOKEN_MEAN_METRICS = ("clip_frac", "clip_frac_low", "clip_frac_high", "ratio_mean", "kl", "logprob_mismatch")
COUNT_METRICS = ("n_seqs", "n_tokens")


def active_tokens(c: Completion) -> int:
    """Tokens of a completion the loss trains on: the generated ones (``token_mask`` = 1)
    when the completion has a mask, else every token of ``token_ids``."""
    if c.token_mask is not None:
        return int(sum(1 for x in c.token_mask if x))
    return len(c.token_ids)


def micro_batch_args(aggregation: str, n_part: int, n_total: int, n_active_total: int) -> tuple[float, int | None]:
    """``(scale, num_active_tokens)`` for ``forward_backward`` on a micro-batch of
    ``n_part`` of the step's ``n_total`` sequences, so that the micro-batch gradients sum
    to the gradient of the unsplit step.

    - grpo (mean of per-sequence means) and dr_grpo (sum / (B * L), L fixed): the
      micro-batch's loss is normalised by its own B, so scale = n_part / n_total;
    - dapo (sum / active tokens of the step): scale 1, num_active_tokens = the step's count;
    - bnpo (sum / active tokens of the micro-batch, by definition per micro-batch as in
      TRL): scale = n_part / n_total (TRL's 1 / gradient-accumulation steps for equal
      micro-batches; an uneven last one weighs by its share of sequences).
    """
    if aggregation not in AGGREGATIONS:
        raise ValueError(f"LossConfig.aggregation must be one of {AGGREGATIONS}, got {aggregation!r}")
    if aggregation == "dapo":
        return 1.0, n_active_total
    return n_part / n_total, None


def combine_metrics(parts: list[tuple[dict[str, float], int, int]], aggregation: str) -> dict[str, float]:
    """One step's metrics from its micro-batches' ``(metrics, n_seqs, n_active_tokens)``.

    Token means (:data:`TOKEN_MEAN_METRICS`) weigh by active tokens, counts
    (:data:`COUNT_METRICS`) add up, ``loss`` adds up for dapo (each micro-batch's loss is
    already divided by the step's token count) and weighs by sequences otherwise, as does
    every other metric.  ``forward_backward`` reports the loss before ``scale``.
    """
    n_seq = sum(p[1] for p in parts)
    n_tok = sum(p[2] for p in parts)
    out: dict[str, float] = {}
    for m, k_seq, k_tok in parts:
        for key, v in m.items():
            if key in COUNT_METRICS or (key == "loss" and aggregation == "dapo"):
                w = 1.0
            elif key in TOKEN_MEAN_METRICS and n_tok > 0:
                w = k_tok / n_tok
            else:
                w = k_seq / n_seq
            out[key] = out.get(key, 0.0) + w * float(v)
    return out


def grpo_update(policy: Policy, comps: Sequence[Completion], advantages: Sequence, loss: LossConfig,
                micro_batch: int = 512) -> dict:
    """One optimizer step on a batch, split into micro-batches of at most ``micro_batch``
    sequences whose gradients add up to the gradient of the unsplit batch.

    ``advantages``: one float per completion or one list per completion (a float per token
    of ``token_ids``).  Each micro-batch goes to ``policy.forward_backward(part, adv_part,
    loss, scale=..., num_active_tokens=...)`` with the arguments of
    ``micro_batch_args``: grpo and dr_grpo scale by the part's share of
    sequences (dr_grpo's normaliser B x L then is the step's B x fixed L); dapo passes the
    step's active-token count (generated tokens only, ``token_mask`` respected); bnpo is
    per micro-batch by definition (as TRL's): each part's own token mean, weighted by its
    share of sequences.  A batch that fits in one micro-batch is one call with today's
    arguments (no ``scale`` / ``num_active_tokens``), so results stay bit-identical.
    Sequences with zero advantage still count in the denominators (as TRL does).
    """
    n = len(comps)
    if n == 0:
        return {"skipped": 1.0}
    if len(advantages) != n:
        raise ValueError(f"{n} completions but {len(advantages)} advantages")
    if micro_batch < 1:
        raise ValueError(f"micro_batch must be >= 1, got {micro_batch}")
    if n <= micro_batch:
        # 0.0 + v as before (turns -0.0 into 0.0 and ints into floats: ledger rows unchanged)
        metrics = {k: 0.0 + v for k, v in policy.forward_backward(comps, advantages, loss).items()}
    else:
        n_active = [active_tokens(c) for c in comps]
        total = sum(n_active)
        parts = []
        for i in range(0, n, micro_batch):
            part = comps[i:i + micro_batch]
            scale, n_tok = micro_batch_args(loss.aggregation, len(part), n, total)
            m = policy.forward_backward(part, advantages[i:i + micro_batch], loss, scale=scale,
                                        num_active_tokens=n_tok)
            parts.append((m, len(part), sum(n_active[i:i + micro_batch])))
        metrics = combine_metrics(parts, loss.aggregation)
    metrics.update(policy.optim_step())
    return metrics


def to_groups(values: Sequence[float], group_size: int) -> torch.Tensor:
    return torch.tensor(list(values), dtype=torch.float32).view(-1, group_size)
