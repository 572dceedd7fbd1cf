"""Tiny from-scratch transformer policy for CPU (nanoGPT-style), implementing Policy.

A few hundred thousand parameters, a character tokenizer, left-padded batched
sampling, and GRPO updates through ``coevo.rl.grpo``. Deterministic: every random
draw comes from one of the policy's own ``torch.Generator`` streams (``SamplingParams.stream``):
``gen`` ("train", seeded with ``seed``) and ``audit_gen`` ("audit", seeded with
``seed + 7919``, the generator the RGBC recipe used to swap in for audit draws), whose
states are saved with the weights and optimizer so a resumed run continues bit-for-bit.

Multi-turn support (``coevo.core.policy.Policy``): ``sample(..., token_prefixes=...)``
continues after given token ids, stop strings end a row (the tokens that produced the
stop stay in ``token_ids``, the text is cut before it, as in the HF backend), and
``forward_backward`` honours ``Completion.token_mask`` and per-token advantages.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

import torch
import torch.nn as nn
import torch.nn.functional as F

from coevo.core.policy import STREAMS, Completion, LossConfig, SamplingParams
from coevo.backends.tokenizer import CharTokenizer
from coevo.checkpoint import CheckpointError, atomic_dir, load_legacy_pickle, load_tree, save_tree
from coevo.timing import model_compute, stage


@dataclass
class TinyConfig:
    vocab_size: int = 31
    block_size: int = 64
    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 128


class KVCache:
    """Keys and values of one block, extended each decoding step: grown by ``torch.cat``
    (``capacity=None``, the default) or written into a buffer preallocated for ``capacity``
    positions (``TinyGPT.preallocate_kv``).  Bit-identical; on CPU the buffer's strided views
    make attention slower than the copy saved (docs/speed.md)."""

    def __init__(self, capacity: int | None = None) -> None:
        self.capacity, self.n = capacity, 0
        self.k: torch.Tensor | None = None
        self.v: torch.Tensor | None = None

    def extend(self, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if self.capacity is None:
            if self.k is not None:
                k, v = torch.cat([self.k, k], 2), torch.cat([self.v, v], 2)
            self.k, self.v, self.n = k, v, k.shape[2]
            return k, v
        B, H, T, D = k.shape
        if self.k is None:
            self.k, self.v = k.new_empty((B, H, self.capacity, D)), v.new_empty((B, H, self.capacity, D))
        self.k[:, :, self.n:self.n + T], self.v[:, :, self.n:self.n + T] = k, v
        self.n += T
        return self.k[:, :, :self.n], self.v[:, :, :self.n]


class Block(nn.Module):
    def __init__(self, cfg: TinyConfig) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(cfg.n_embd)
        self.attn = nn.Linear(cfg.n_embd, 3 * cfg.n_embd)
        self.proj = nn.Linear(cfg.n_embd, cfg.n_embd)
        self.ln2 = nn.LayerNorm(cfg.n_embd)
        self.mlp = nn.Sequential(nn.Linear(cfg.n_embd, 4 * cfg.n_embd), nn.GELU(), nn.Linear(4 * cfg.n_embd, cfg.n_embd))
        self.n_head = cfg.n_head

    def forward(self, x: torch.Tensor, mask: torch.Tensor, cache: "KVCache | None" = None) -> torch.Tensor:
        """``cache``: keys and values of earlier positions, extended in place (incremental decoding)."""
        B, T, C = x.shape
        q, k, v = self.attn(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        if cache is not None:
            k, v = cache.extend(k, v)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
        return x + self.mlp(self.ln2(x))


class TinyGPT(nn.Module):
    preallocate_kv = False  # KVCache mode of sampling (see KVCache: cat is faster on CPU)

    def __init__(self, cfg: TinyConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.wte = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.wpe = nn.Embedding(cfg.block_size, cfg.n_embd)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.ln_f = nn.LayerNorm(cfg.n_embd)
        self.head = nn.Linear(cfg.n_embd, cfg.vocab_size, bias=False)

    def forward(self, idx: torch.Tensor, attn: torch.Tensor | None = None) -> torch.Tensor:
        """idx [B,T]; attn [B,T] bool (True = real token; left padding allowed)."""
        B, T = idx.shape
        if attn is None:
            attn = torch.ones_like(idx, dtype=torch.bool)
        pos = (attn.long().cumsum(1) - 1).clamp(min=0)
        x = self.wte(idx) + self.wpe(pos)
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        mask = causal[None, None] & attn[:, None, None, :]
        mask = mask | torch.eye(T, dtype=torch.bool)[None, None]  # pad rows attend to themselves
        for blk in self.blocks:
            x = blk(x, mask)
        return self.head(self.ln_f(x))

    def prefill(self, idx: torch.Tensor, attn: torch.Tensor, max_new: int = 0) -> tuple[torch.Tensor, list]:
        """Logits of the last position and a KV cache (room for ``max_new`` more positions)."""
        B, T = idx.shape
        pos = (attn.long().cumsum(1) - 1).clamp(min=0)
        x = self.wte(idx) + self.wpe(pos)
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        mask = (causal[None, None] & attn[:, None, None, :]) | torch.eye(T, dtype=torch.bool)[None, None]
        caches = [KVCache(T + max_new if self.preallocate_kv else None) for _ in self.blocks]
        for blk, c in zip(self.blocks, caches):
            x = blk(x, mask, c)
        return self.head(self.ln_f(x[:, -1:]))[:, 0], caches

    def decode_step(self, tok: torch.Tensor, pos: torch.Tensor, attn: torch.Tensor, caches: list) -> torch.Tensor:
        """One new token per row (tok [B], pos [B]); attn [B, T_total] covers cache + new token."""
        x = self.wte(tok[:, None]) + self.wpe(pos[:, None])
        mask = attn[:, None, None, :]
        for blk, c in zip(self.blocks, caches):
            x = blk(x, mask, c)
        return self.head(self.ln_f(x))[:, 0]


def n_params(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


AUDIT_SEED_OFFSET = 7919  # audit stream seed = seed + 7919 (what the RGBC recipe's audit generator used)


def is_per_token(a: Any) -> bool:
    """An advantage given per token (a list / 1-D array) rather than one float per sequence."""
    return isinstance(a, (list, tuple)) or getattr(a, "ndim", 0) == 1


def completion_rows(batch: Sequence[Completion], advantages: Sequence[Any] | None, width: int,
                    offset: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """Per-token loss inputs of a batch laid out on ``width`` target columns, completion token
    i of row r at column ``len(prompt_ids) + i - offset`` (offset 1: targets shifted by one).

    Returns (mask, old logprobs, advantages): mask is ``Completion.token_mask`` (1 = generated,
    0 = inserted by the world) or 1 over every completion token; the advantages are ``[B]``
    when every element of ``advantages`` is a float (sequence level, as before), else
    ``[B, width]`` (a float element is broadcast over its completion's tokens), and 0 on masked
    tokens so that no value there can reach the loss.  ``advantages=None``: not built.
    """
    B = len(batch)
    mask = torch.zeros((B, width))
    old = torch.zeros((B, width))
    per_token = advantages is not None and any(is_per_token(a) for a in advantages)
    adv = torch.zeros((B, width)) if per_token else None
    for r, c in enumerate(batch):
        L = len(c.token_ids)
        s = len(c.prompt_ids) - offset
        if c.token_mask is not None:
            if len(c.token_mask) != L:
                raise ValueError(f"token_mask has {len(c.token_mask)} entries for {L} tokens")
            mask[r, s:s + L] = torch.tensor(c.token_mask, dtype=torch.float32)
        else:
            mask[r, s:s + L] = 1.0
        lps = list(c.logprobs)[:L]
        old[r, s:s + L] = torch.tensor(lps + [0.0] * (L - len(lps)), dtype=torch.float32)
        if adv is not None:
            v = advantages[r]
            if is_per_token(v):
                v = [float(x) for x in v]
                if len(v) != L:
                    raise ValueError(f"per-token advantages: {len(v)} values for {L} tokens of completion {r}")
                adv[r, s:s + L] = torch.tensor(v, dtype=torch.float32)
            else:
                adv[r, s:s + L] = float(v)
    if adv is not None:
        adv = adv * mask
    elif advantages is not None:
        adv = torch.tensor([float(a) for a in advantages], dtype=torch.float32)
    return mask, old, adv


class TinyPolicy:
    """Policy contract over TinyGPT."""

    def __init__(self, name: str, cfg: TinyConfig | None = None, lr: float = 1e-4, seed: int = 0,
                 weight_decay: float = 0.0, grad_clip: float = 1.0) -> None:
        self.name = name
        self.tok = CharTokenizer(cfg.vocab_size if cfg else None)  # ids follow the model's vocabulary
        self.cfg = cfg or TinyConfig(vocab_size=self.tok.vocab_size)
        torch.manual_seed(seed)
        self.model = TinyGPT(self.cfg)
        self.lr, self.weight_decay, self.grad_clip = lr, weight_decay, grad_clip
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=lr, weight_decay=weight_decay, betas=(0.9, 0.99))
        self.gen = torch.Generator().manual_seed(seed)  # the "train" stream
        self.audit_gen = torch.Generator().manual_seed(seed + AUDIT_SEED_OFFSET)  # the "audit" stream
        self.updates = 0
        self.base_tag = "init"
        self.ref_model: TinyGPT | None = None

    # ------------------------------------------------------------------ contract
    @property
    def version(self) -> str:
        return f"{self.name}:{self.base_tag}+{self.updates}"

    @torch.no_grad()
    def sample(self, prompts: Sequence[str], n: int, sampling: SamplingParams,
               token_prefixes: Sequence[Sequence[int]] | None = None) -> list[list[Completion]]:
        """n completions per prompt, drawn from the generator of ``sampling.stream``;
        ``token_prefixes[j]`` (ids) continue prompt j after its ``response_prefix``."""
        gen = self._stream(sampling.stream)
        if token_prefixes is not None and len(token_prefixes) != len(prompts):
            raise ValueError(f"{len(prompts)} prompts but {len(token_prefixes)} token_prefixes")
        flat = [p for p in prompts for _ in range(n)]
        pre = [list(token_prefixes[j]) for j in range(len(prompts)) for _ in range(n)] if token_prefixes else None
        outs: list[Completion] = []
        bs = 1024
        with stage("sample"):  # a recipe's direct call counts as sampling too (coevo.timing)
            for i in range(0, len(flat), bs):
                outs.extend(self._sample_batch(flat[i:i + bs], sampling, gen, pre[i:i + bs] if pre else None))
        return [outs[j * n:(j + 1) * n] for j in range(len(prompts))]

    def _stream(self, stream: str) -> torch.Generator:
        if stream not in STREAMS:
            raise ValueError(f"SamplingParams.stream must be one of {STREAMS}, got {stream!r}")
        return self.gen if stream == "train" else self.audit_gen

    def tokenize(self, text: str) -> list[int]:
        """Ids of ``text`` inside a completion (the character tokenizer adds no special tokens)."""
        return self.tok.encode(text)

    def _encode_left(self, seqs: list[list[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        T = max(len(s) for s in seqs)
        idx = torch.full((len(seqs), T), self.tok.pad_id, dtype=torch.long)
        attn = torch.zeros((len(seqs), T), dtype=torch.bool)
        for r, s in enumerate(seqs):
            idx[r, T - len(s):] = torch.tensor(s, dtype=torch.long)
            attn[r, T - len(s):] = True
        return idx, attn

    def _draw(self, logits: torch.Tensor, sp: SamplingParams, gen: torch.Generator):
        """(next token [B], log-probs [B, V] under the tempered distribution) for one step."""
        logits = logits.float()
        if sp.greedy or sp.temperature <= 0:
            return logits.argmax(-1), F.log_softmax(logits, -1)
        logp = F.log_softmax(logits / sp.temperature, -1)
        probs = logp.exp()
        if sp.top_p < 1.0:
            sp_, si = probs.sort(-1, descending=True)
            keep = sp_.cumsum(-1) - sp_ < sp.top_p
            sp_ = sp_ * keep
            probs = torch.zeros_like(probs).scatter(-1, si, sp_)
        return torch.multinomial(probs, 1, generator=gen).squeeze(-1), logp

    def _sample_batch(self, prompts: list[str], sp: SamplingParams, gen: torch.Generator,
                      prefixes: list[list[int]] | None = None) -> list[Completion]:
        self.model.eval()
        pids = [self.tok.encode(p + sp.response_prefix) for p in prompts]
        if prefixes is not None:
            pids = [a + b for a, b in zip(pids, prefixes)]
        idx, attn = self._encode_left(pids)
        B = idx.shape[0]
        max_new = max(0, min(sp.max_new_tokens, self.cfg.block_size - idx.shape[1]))
        new_tokens = torch.full((B, max_new), self.tok.pad_id, dtype=torch.long)
        new_lp = torch.zeros((B, max_new))
        done = torch.zeros(B, dtype=torch.bool)
        lengths = torch.full((B,), max_new, dtype=torch.long)
        stops = [x for x in (sp.stop or []) if x]
        tails = [""] * B  # generated text per row, only kept when there are stop strings
        T0 = idx.shape[1]
        if max_new > 0:
            with model_compute():
                logits, caches = self.model.prefill(idx, attn, max_new)
            pos = attn.long().sum(1) - 1
            # the mask of prompt + every new position, preallocated (was grown by torch.cat per token)
            attn = torch.cat([attn, torch.ones(B, max_new, dtype=torch.bool)], 1)
        for t in range(max_new):
            nxt, logp = self._draw(logits, sp, gen)
            nxt = torch.where(done, torch.full_like(nxt, self.tok.pad_id), nxt)
            new_tokens[:, t] = nxt
            new_lp[:, t] = torch.where(done, torch.zeros(B), logp.gather(-1, nxt[:, None]).squeeze(-1))
            just = (~done) & (nxt == self.tok.eos_id)
            if stops:
                just = just | self._stop_hits(tails, nxt, done, stops)
            lengths = torch.where(just, torch.full_like(lengths, t + 1), lengths)
            done = done | just
            if bool(done.all()) or t == max_new - 1:
                break
            pos = pos + 1
            with model_compute():
                logits = self.model.decode_step(nxt, pos, attn[:, :T0 + t + 1], caches)
        return [self._completion(prompts[r], pids[r], new_tokens[r, :int(lengths[r])].tolist(),
                                 new_lp[r, :int(lengths[r])].tolist(), sp, stops) for r in range(B)]

    def _stop_hits(self, tails: list[str], nxt: torch.Tensor, done: torch.Tensor, stops: list[str]) -> torch.Tensor:
        """Rows whose generated text now contains a stop string (``tails`` updated in place)."""
        window = max(len(x) for x in stops) + 16
        hit = torch.zeros(len(tails), dtype=torch.bool)
        for r, tok_id in enumerate(nxt.tolist()):
            if bool(done[r]):
                continue
            tails[r] = (tails[r] + self.tok.decode([tok_id]))[-window:]
            hit[r] = any(x in tails[r] for x in stops)
        return hit

    def _completion(self, prompt: str, pids: list[int], ids: list[int], lps: list[float], sp: SamplingParams,
                    stops: list[str]) -> Completion:
        fin = "stop" if ids and ids[-1] == self.tok.eos_id else "length"
        text = self.tok.decode(ids)
        meta: dict[str, Any] = {"temperature": 0.0 if sp.greedy else sp.temperature,
                                **({"response_prefix": sp.response_prefix} if sp.response_prefix else {})}
        hits = [(text.find(x), x) for x in stops if x in text]
        if hits:
            at, hit = min(hits)
            text, fin, meta["stop"] = text[:at], "stop", hit
        return Completion(prompt=prompt, text=text, prompt_ids=pids, token_ids=ids, logprobs=lps, finish_reason=fin,
                          policy_version=self.version, meta=meta)

    def _batch_tensors(self, batch: Sequence[Completion], advantages: Sequence[Any] | None = None):
        """idx, attn [B, T]; mask, old logprobs, advantages on the T-1 shifted targets
        (position t predicts token t+1; see ``completion_rows``)."""
        seqs = [c.prompt_ids + c.token_ids for c in batch]
        T = max(len(s) for s in seqs)
        idx = torch.full((len(seqs), T), self.tok.pad_id, dtype=torch.long)
        attn = torch.zeros((len(seqs), T), dtype=torch.bool)
        for r, s in enumerate(seqs):
            idx[r, :len(s)] = torch.tensor(s)
            attn[r, :len(s)] = True
        mask, old, adv = completion_rows(batch, advantages, T - 1, offset=1)
        return idx, attn, mask, old, adv

    def _token_logprobs(self, model: TinyGPT, idx, attn, temps) -> torch.Tensor:
        from coevo.rl.grpo import token_logprobs

        logits = model(idx, attn)[:, :-1, :] / temps[:, None, None]
        return token_logprobs(logits, idx[:, 1:])

    @torch.no_grad()
    def completion_logprobs(self, batch: Sequence[Completion]) -> list[list[float]]:
        """log p(token | prompt, earlier tokens) of each completion's ``token_ids`` under this
        policy's current weights at temperature 1 (no gradient; e.g. a teacher on a student's tokens)."""
        if not batch:
            return []
        self.model.eval()
        idx, attn, _, _, _ = self._batch_tensors(batch)
        lp = self._token_logprobs(self.model, idx, attn, torch.ones(len(batch)))
        return [lp[r, len(c.prompt_ids) - 1:len(c.prompt_ids) - 1 + len(c.token_ids)].tolist()
                for r, c in enumerate(batch)]

    def forward_backward(self, batch: Sequence[Completion], advantages: Sequence[Any], loss: LossConfig,
                         scale: float = 1.0, num_active_tokens: int | None = None) -> dict:
        """Accumulate the gradient of ``scale`` x ``coevo.rl.grpo.policy_loss`` on ``batch``.

        Advantages: one float per completion, or a list per completion (one per token of
        ``token_ids``); tokens with ``token_mask`` 0 carry no loss and no denominator count.
        ``num_active_tokens``: the step's active-token count (dapo normaliser)."""
        from coevo.rl.grpo import policy_loss

        if len(batch) != len(advantages):
            raise ValueError(f"{len(batch)} completions but {len(advantages)} advantages")
        self.model.train()
        idx, attn, mask, old, adv = self._batch_tensors(batch, advantages)
        # logprobs are taken under the tempered distribution the sample came from; greedy
        # completions (temperature 0) were scored at T = 1, so they train at T = 1 too
        temps = torch.tensor([float(c.meta.get("temperature", 1.0)) or 1.0 for c in batch])
        with model_compute():
            lp = self._token_logprobs(self.model, idx, attn, temps)
            ref = None
            if loss.kl_coef > 0:
                if self.ref_model is None:
                    raise RuntimeError("kl_coef > 0 needs a reference model: call set_reference() first")
                with torch.no_grad():
                    ref = self._token_logprobs(self.ref_model, idx, attn, temps)
            value, metrics = policy_loss(lp, old, adv, mask, loss, ref_logprobs=ref,
                                         num_active_tokens=num_active_tokens)
            (value if scale == 1.0 else value * scale).backward()
        return {k: float(v) for k, v in metrics.items()}

    def optim_step(self) -> dict:
        gn = torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.grad_clip)
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        self.updates += 1
        return {"grad_norm": float(gn)}

    def set_reference(self) -> None:
        """Freeze a copy of the current weights as the KL reference."""
        self.ref_model = TinyGPT(self.cfg)
        self.ref_model.load_state_dict(self.model.state_dict())
        self.ref_model.eval()

    # ------------------------------------------------------------------ state
    def state(self, with_optimizer: bool = True) -> dict:
        st = {"name": self.name, "cfg": asdict(self.cfg), "model": self.model.state_dict(), "updates": self.updates,
              "base_tag": self.base_tag, "gen": self.gen.get_state(), "audit_gen": self.audit_gen.get_state()}
        if with_optimizer:
            st["opt"] = self.opt.state_dict()
            if self.ref_model is not None:
                st["ref_model"] = self.ref_model.state_dict()
        return st

    def load_state(self, st: dict) -> None:
        self.cfg = TinyConfig(**st["cfg"])
        self.tok = CharTokenizer(self.cfg.vocab_size)
        if self.model.state_dict()["wte.weight"].shape != st["model"]["wte.weight"].shape:
            self.model = TinyGPT(self.cfg)
        self.model.load_state_dict({k: v.float() for k, v in st["model"].items()})
        self.opt = torch.optim.AdamW(self.model.parameters(), lr=self.lr, weight_decay=self.weight_decay, betas=(0.9, 0.99))
        if "opt" in st:
            self.opt.load_state_dict(st["opt"])
        if "ref_model" in st:
            self.ref_model = TinyGPT(self.cfg)
            self.ref_model.load_state_dict(st["ref_model"])
        self.updates = st.get("updates", 0)
        self.base_tag = st.get("base_tag", "init")
        if "gen" in st:
            self.gen.set_state(st["gen"])
        if "audit_gen" in st:  # states written before the audit stream existed lack it
            self.audit_gen.set_state(st["audit_gen"])

    def save(self, path: str | Path) -> None:
        """A checkpoint directory: ``model.safetensors`` + ``config.json`` (ready to serve,
        readable with safetensors and json alone) and ``trainer_state.{json,safetensors}``
        (optimizer, RNG streams, reference weights), written atomically."""
        st = self.state()
        rest = {k: v for k, v in st.items() if k not in ("model", "cfg", "name", "base_tag", "updates")}
        atomic_dir(path, lambda d: (write_tiny_checkpoint(d, self.cfg, st["model"], self.name, self.base_tag,
                                                          self.updates), save_tree(d, rest, TRAINER_STATE)))

    def load(self, path: str | Path) -> None:
        """Load a checkpoint directory, or (with a warning) a legacy pickle file the user named."""
        self.load_state(read_checkpoint_state(path, allow_legacy=True))

    @classmethod
    def from_checkpoint(cls, name: str, path: str | Path, lr: float = 1e-4, seed: int = 0,
                        allow_legacy: bool = False) -> "TinyPolicy":
        """Weights (and base tag) of a checkpoint; fresh optimizer and RNG streams from ``seed``.
        ``allow_legacy``: accept an old pickle file (only for a path the user named)."""
        st = read_checkpoint_state(path, allow_legacy=allow_legacy, weights_only=True)
        pol = cls(name, TinyConfig(**st["cfg"]), lr=lr, seed=seed)
        st = {k: v for k, v in st.items() if k not in ("opt", "gen", "audit_gen", "updates")}
        pol.load_state(st)
        pol.base_tag = st.get("base_tag", Path(path).stem)
        pol.gen.manual_seed(seed)
        pol.audit_gen.manual_seed(seed + AUDIT_SEED_OFFSET)
        return pol

    def close(self) -> None:
        """Nothing to release (in-process, CPU)."""


# ---------------------------------------------------------------------- checkpoint files
TINY_FORMAT = "coevo-tiny"
TRAINER_STATE = "trainer_state"


def write_tiny_checkpoint(directory: Path, cfg: TinyConfig, weights: dict, name: str, base_tag: str,
                          updates: int) -> None:
    """``model.safetensors`` (the weights) + ``config.json`` (architecture, tokenizer, tags)."""
    from safetensors.torch import save_file

    save_file({k: v.detach().cpu().contiguous() for k, v in weights.items()}, str(directory / "model.safetensors"))
    doc = {"format": TINY_FORMAT, "format_version": 1, "architecture": "TinyGPT", "config": asdict(cfg),
           "tokenizer": {"kind": "char", "itos": CharTokenizer(cfg.vocab_size).itos}, "name": name, "base_tag": base_tag,
           "updates": updates}
    (directory / "config.json").write_text(json.dumps(doc, indent=1))


def read_checkpoint_state(path: str | Path, allow_legacy: bool = False, weights_only: bool = False) -> dict:
    """A tiny checkpoint as a ``TinyPolicy.state()`` dict: a checkpoint directory, or a legacy
    pickle file when ``allow_legacy``.  ``weights_only``: skip the trainer state."""
    from safetensors.torch import load_file

    path = Path(path)
    if path.is_file():
        if not allow_legacy:
            raise CheckpointError(f"{path} is a legacy pickle checkpoint; name it explicitly "
                                  f"(backend.checkpoints.<role>=...) or convert it")
        return load_legacy_pickle(path)
    cfg_path = path / "config.json"
    if not cfg_path.is_file():
        raise CheckpointError(f"checkpoint not found: {path} (no config.json)")
    doc = json.loads(cfg_path.read_text())
    if doc.get("format") != TINY_FORMAT:
        raise CheckpointError(f"{path} is not a tiny checkpoint (format {doc.get('format')!r})")
    st = {"name": doc.get("name"), "cfg": doc["config"], "model": load_file(str(path / "model.safetensors")),
          "updates": int(doc.get("updates", 0)), "base_tag": doc.get("base_tag", "init")}
    if not weights_only and (path / f"{TRAINER_STATE}.json").is_file():
        st.update(load_tree(path, TRAINER_STATE))
    return st
