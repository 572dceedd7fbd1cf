"""The supervised loop every tiny asset is pretrained with (arithmetic, facts and criteria roles):
a warm-up + cosine learning rate, a batch of sequences with a loss mask, and one AdamW step on the
masked next-token cross-entropy. One definition (``coevo.pretrain``,
``pretrain_facts`` and ``pretrain_criteria`` call it); the shipped checkpoints were made with
exactly these float operations, so a change here changes what ``coevo pretrain`` reproduces.
"""
from __future__ import annotations

import math
from typing import Optional, Sequence

import torch
import torch.nn.functional as F

from coevo.backends.tiny import TinyPolicy

__all__ = ["Segments", "prompt_target", "sft_batch", "sft_step", "warmup_cosine_lr", "adamw"]

# one training sequence: (text, learn) pieces; learn = 1 where the model is taught the text
Segments = Sequence[tuple[str, int]]


def warmup_cosine_lr(base: float, step: int, total: int, pi: Optional[float] = None) -> float:
    """100 warm-up steps, then cosine from ``base`` down to 10 %. ``pi``: the arithmetic solver's
    recipe wrote pi as 3.14159 and computed step / total * pi (its shipped file needs that float
    order); None = math.pi * step / total."""
    frac = math.cos(step / max(total, 1) * pi) if pi is not None else math.cos(math.pi * step / max(total, 1))
    return base * min(1.0, (step + 1) / 100) * (0.1 + 0.45 * (1 + frac))


def adamw(pol: TinyPolicy, lr: float) -> torch.optim.Optimizer:
    return torch.optim.AdamW(pol.model.parameters(), lr=lr, weight_decay=0.01, betas=(0.9, 0.99))


def prompt_target(prompt: str, target: str) -> list[tuple[str, int]]:
    """A prompt the model reads and a target it is taught."""
    return [(prompt, 0), (target, 1)]


def sft_batch(pol: TinyPolicy, examples: Sequence[Segments]) -> tuple[torch.Tensor, torch.Tensor]:
    """Token ids (padded, cut at the block size) and the loss mask over next-token positions:
    position t is counted when token t+1 belongs to a learned piece."""
    tok = pol.tok
    seqs, masks = [], []
    for pieces in examples:
        ids, m = [], []
        for text, keep in pieces:
            t = tok.encode(text)
            ids += t
            m += [keep] * len(t)
        seqs.append(ids)
        masks.append(m)
    T = min(max(len(s) for s in seqs), pol.cfg.block_size)
    idx = torch.full((len(seqs), T), tok.pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), T - 1))
    for r, (s, m) in enumerate(zip(seqs, masks)):
        s, m = s[:T], m[:T]
        idx[r, :len(s)] = torch.tensor(s)
        mask[r, :len(s) - 1] = torch.tensor(m[1:], dtype=torch.float32)  # position t predicts token t+1
    return idx, mask


def sft_step(pol: TinyPolicy, opt: torch.optim.Optimizer, idx: torch.Tensor, mask: torch.Tensor,
             lr: float) -> torch.Tensor:
    """One optimiser step at ``lr`` on the masked mean next-token cross-entropy (grad-norm clip 1)."""
    for g in opt.param_groups:
        g["lr"] = lr
    logits = pol.model(idx, idx != pol.tok.pad_id)[:, :-1]
    loss = (F.cross_entropy(logits.reshape(-1, logits.shape[-1]), idx[:, 1:].reshape(-1), reduction="none")
            .view(mask.shape) * mask).sum() / mask.sum()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(pol.model.parameters(), 1.0)
    opt.step()
    return loss
