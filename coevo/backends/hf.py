"""HF backend: the Policy contract on transformers (+ peft for LoRA roles).

* ``sample``: batched ``model.generate`` (left padding, ``num_return_sequences=n``),
  temperature / top-p / greedy, stop strings (cut out of ``text`` as vLLM does; the
  tokens that produced them stay in ``token_ids`` so training sees what was sampled),
  and one log-probability per sampled token.
* Log-probabilities follow the ``tiny`` backend's convention: they are taken under the
  *tempered* distribution ``log_softmax(logits / T)`` (top-p truncation is not applied
  to them), ``meta['temperature']`` records T, and ``forward_backward`` divides the
  logits by the same T.  Greedy samples record T = 1.  They are captured during
  ``generate`` by a logits processor placed before the temperature / top-p warpers,
  which keeps one ``[B, V]`` row per step instead of every step's logits.
* ``forward_backward``: right-padded micro-batches, ``coevo.rl.grpo.token_logprobs``
  and ``policy_loss`` (the shared GRPO core), each micro-batch's loss weighted so that
  the sum equals the loss of the whole batch for the chosen aggregation.
  ``old_logprobs='sampler'`` (default) uses the sampler's numbers as the PPO
  denominator; ``'current'`` uses the detached current forward (exactly on-policy; the
  mismatch between the two is reported as ``logprob_mismatch``).
* Roles: several ``HFPolicy`` objects may share one ``SharedBase`` (one base model, one
  LoRA adapter per role, switched with peft ``set_adapter``), or hold separate models,
  or one policy may serve both roles (see ``coevo.backends.roles``).
* Gradient checkpointing and bf16 (when the device supports it) are options.
"""
from __future__ import annotations

import copy
import math
import shutil
from pathlib import Path
from typing import Any, Sequence

import torch

from coevo.core.policy import STREAMS, Completion, LossConfig, SamplingParams
from coevo.backends.tiny import completion_rows
from coevo.backends.tokenizer import CHAT_TEMPLATE, make_char_tokenizer  # noqa: F401  (re-exported)
from coevo.backends.tokenizer import StopOnNewText, cut_at_stop
from coevo.checkpoint import atomic_dir, load_legacy_pickle, load_tree, load_weights_dir, save_tree


AUDIT_SEED_OFFSET = 1 << 40  # the "audit" stream's seeds: seed * 100003 + audit_calls + 2**40

# ---------------------------------------------------------------------------- building blocks
def pick_dtype(dtype: str | torch.dtype | None, device: str) -> torch.dtype:
    """'auto' -> bf16 on a CUDA device that supports it, else fp32."""
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype in (None, "auto"):
        if str(device).startswith("cuda") and torch.cuda.is_available() and torch.cuda.is_bf16_supported():
            return torch.bfloat16
        return torch.float32
    return {"bf16": torch.bfloat16, "bfloat16": torch.bfloat16, "fp32": torch.float32, "float32": torch.float32,
            "fp16": torch.float16, "float16": torch.float16}[str(dtype)]


def tiny_llama(vocab_size: int, hidden: int = 64, layers: int = 2, heads: int = 4, seed: int = 0,
               arch: str = "llama"):
    """A randomly initialised Llama / Qwen2 model built in code (no download)."""
    from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    kw = dict(vocab_size=vocab_size, hidden_size=hidden, intermediate_size=hidden * 2, num_hidden_layers=layers,
              num_attention_heads=heads, num_key_value_heads=max(1, heads // 2), max_position_embeddings=2048,
              tie_word_embeddings=True, pad_token_id=0, eos_token_id=2, bos_token_id=1)
    if arch == "qwen2":
        return Qwen2ForCausalLM(Qwen2Config(**kw))
    return LlamaForCausalLM(LlamaConfig(**kw))


class _LogprobRecorder:
    """Logits processor that keeps log p(sampled token) under the tempered distribution.

    Called once per step with the raw scores (it runs before our temperature / top-p
    warpers); at step t+1 ``input_ids[:, -1]`` is the token chosen at step t.
    """

    def __init__(self, temperature: float) -> None:
        self.t = float(temperature)
        self.prev: torch.Tensor | None = None
        self.steps: list[torch.Tensor] = []

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        if self.prev is not None:
            self.steps.append(self.prev.gather(-1, input_ids[:, -1:]).squeeze(-1))
        self.prev = torch.log_softmax(scores.float() / self.t, dim=-1)
        return scores

    def finish(self, sequences: torch.Tensor, n_new: int) -> torch.Tensor:
        if self.prev is not None and len(self.steps) < n_new:
            self.steps.append(self.prev.gather(-1, sequences[:, -1:]).squeeze(-1))
        self.prev = None
        if not self.steps:
            return torch.zeros(sequences.shape[0], 0)
        return torch.stack(self.steps, dim=1).cpu()


class SharedBase:
    """One base model with one LoRA adapter per role (peft ``set_adapter`` switches)."""

    def __init__(self, model, tokenizer, lora: dict | None = None, gradient_checkpointing: bool = False) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.lora = dict(lora or {})
        self.gradient_checkpointing = gradient_checkpointing
        self.adapters: list[str] = []
        self.active: str | None = None

    def lora_config(self):
        from peft import LoraConfig

        lc = self.lora
        return LoraConfig(r=int(lc.get("r", 16)), lora_alpha=int(lc.get("alpha", 32)),
                          lora_dropout=float(lc.get("dropout", 0.0)), bias="none", task_type="CAUSAL_LM",
                          target_modules=lc.get("target_modules") or ["q_proj", "k_proj", "v_proj", "o_proj",
                                                                       "gate_proj", "up_proj", "down_proj"])

    def add_adapter(self, name: str) -> str:
        from peft import get_peft_model

        if name in self.adapters:
            raise ValueError(f"adapter {name!r} already exists")
        if not self.adapters:
            if self.gradient_checkpointing:
                self.model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
            self.model = get_peft_model(self.model, self.lora_config(), adapter_name=name)
        else:
            self.model.add_adapter(name, self.lora_config())
        self.adapters.append(name)
        self.activate(name)
        return name

    def activate(self, name: str) -> None:
        if self.active != name:
            self.model.set_adapter(name)  # also makes only this adapter trainable
            self.active = name

    def adapter_params(self, name: str) -> dict[str, torch.nn.Parameter]:
        tag = f".{name}."
        return {k: p for k, p in self.model.named_parameters() if tag in k and "lora_" in k}


# ---------------------------------------------------------------------------- the policy
class HFPolicy:
    """Policy contract on a transformers causal LM, optionally one LoRA adapter of a SharedBase."""

    def __init__(self, name: str, model=None, tokenizer=None, *, base: SharedBase | None = None,
                 adapter: str | None = None, lr: float = 1e-5, weight_decay: float = 0.0, grad_clip: float = 1.0,
                 micro_batch: int = 8, sample_batch: int = 64, chat_template: bool = True,
                 system_prompt: str | None = None, gradient_checkpointing: bool = False, device: str | None = None,
                 seed: int = 0, old_logprobs: str = "sampler", base_tag: str = "init") -> None:
        if old_logprobs not in ("sampler", "current"):
            raise ValueError(f"old_logprobs must be 'sampler' or 'current', got {old_logprobs!r}")
        self.name = name
        self.base = base
        if base is not None:
            self.adapter = base.add_adapter(adapter or name)
            self.tokenizer = base.tokenizer
        else:
            if model is None or tokenizer is None:
                raise ValueError("HFPolicy needs either base= or model= and tokenizer=")
            self.adapter = None
            self._model = model
            self.tokenizer = tokenizer
            if gradient_checkpointing:
                model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        self.device = torch.device(device) if device else next(self.model.parameters()).device
        self.lr, self.weight_decay, self.grad_clip = lr, weight_decay, grad_clip
        self.micro_batch, self.sample_batch = micro_batch, sample_batch
        self.chat_template = chat_template and getattr(self.tokenizer, "chat_template", None) is not None
        self.system_prompt = system_prompt
        self.old_logprobs = old_logprobs
        self.seed = seed
        self.updates = 0
        self.sample_calls = 0  # "train" stream counter
        self.audit_calls = 0  # "audit" stream counter
        self.base_tag = base_tag
        self.ref_model = None
        self.opt = torch.optim.AdamW(list(self.trainable_params().values()), lr=lr, weight_decay=weight_decay,
                                     betas=(0.9, 0.99))
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token

    # ------------------------------------------------------------------ plumbing
    @property
    def model(self):
        return self.base.model if self.base is not None else self._model

    def _activate(self) -> None:
        if self.base is not None:
            self.base.activate(self.adapter)

    def trainable_params(self) -> dict[str, torch.nn.Parameter]:
        if self.base is not None:
            return self.base.adapter_params(self.adapter)
        return {k: p for k, p in self.model.named_parameters() if p.requires_grad}

    @property
    def version(self) -> str:
        return f"{self.name}:{self.base_tag}+{self.updates}"

    def format_prompt(self, prompt: str, response_prefix: str = "") -> list[int]:
        """Token ids of a prompt, through the tokenizer's chat template when it has one;
        ``response_prefix`` is appended after the generation prompt (assistant prefill)."""
        if self.chat_template:
            msgs = ([{"role": "system", "content": self.system_prompt}] if self.system_prompt else [])
            msgs.append({"role": "user", "content": prompt})
            text = self.tokenizer.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
            return self.tokenizer(text + response_prefix, add_special_tokens=False)["input_ids"]
        return self.tokenizer(prompt + response_prefix)["input_ids"]

    def tokenize(self, text: str) -> list[int]:
        """Ids of ``text`` as inside a completion (no special tokens added)."""
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def next_seed(self, stream: str = "train") -> int:
        """The seed of the next sampling call of ``stream`` (and advance that stream's counter):
        "train" = ``seed * 100003 + sample_calls`` (as always), "audit" = ``seed * 100003 +
        audit_calls + 2**40``, so audit calls never move the train counter."""
        if stream not in STREAMS:
            raise ValueError(f"SamplingParams.stream must be one of {STREAMS}, got {stream!r}")
        if stream == "train":
            self.sample_calls += 1
            return self.seed * 100003 + self.sample_calls - 1
        self.audit_calls += 1
        return self.seed * 100003 + self.audit_calls - 1 + AUDIT_SEED_OFFSET

    # ------------------------------------------------------------------ sampling
    @torch.no_grad()
    def sample(self, prompts: Sequence[str], n: int, sampling: SamplingParams,
               token_prefixes: Sequence[Sequence[int]] | None = None) -> list[list[Completion]]:
        """n completions per prompt; ``token_prefixes[j]`` continue prompt j (after its template
        and ``response_prefix``); draws seeded from ``sampling.stream`` (``next_seed``)."""
        if token_prefixes is not None and len(token_prefixes) != len(prompts):
            raise ValueError(f"{len(prompts)} prompts but {len(token_prefixes)} token_prefixes")
        self._activate()
        self.model.eval()
        out: list[list[Completion]] = []
        per_chunk = max(1, self.sample_batch // max(1, n))
        for i in range(0, len(prompts), per_chunk):
            ids = [self.format_prompt(p, sampling.response_prefix) for p in prompts[i:i + per_chunk]]
            if token_prefixes is not None:
                ids = [a + list(b) for a, b in zip(ids, token_prefixes[i:i + per_chunk])]
            out.extend(self.sample_ids(ids, n, sampling, prompts=list(prompts[i:i + per_chunk])))
        return out

    @torch.no_grad()
    def sample_ids(self, prompt_ids: list[list[int]], n: int, sp: SamplingParams,
                   prompts: list[str] | None = None, seed: int | None = None) -> list[list[Completion]]:
        """Sample after given prompt ids; ``seed`` (a server request's) overrides the stream's."""
        from transformers import GenerationConfig, LogitsProcessorList, TemperatureLogitsWarper, TopPLogitsWarper

        self._activate()
        self.model.eval()
        tok = self.tokenizer
        greedy = sp.greedy or sp.temperature <= 0
        temp = 1.0 if greedy else float(sp.temperature)
        pad = tok.pad_token_id
        P = max(len(p) for p in prompt_ids)
        ids = torch.full((len(prompt_ids), P), pad, dtype=torch.long)
        attn = torch.zeros((len(prompt_ids), P), dtype=torch.long)
        for r, p in enumerate(prompt_ids):
            ids[r, P - len(p):] = torch.tensor(p, dtype=torch.long)
            attn[r, P - len(p):] = 1
        rec = _LogprobRecorder(temp)
        procs = [rec]
        if not greedy and temp != 1.0:
            procs.append(TemperatureLogitsWarper(temp))
        if not greedy and sp.top_p < 1.0:
            procs.append(TopPLogitsWarper(float(sp.top_p)))
        gc = GenerationConfig(do_sample=not greedy, temperature=1.0, top_p=1.0, top_k=None if greedy else 0,
                              max_new_tokens=int(sp.max_new_tokens), num_return_sequences=int(n),
                              pad_token_id=pad, eos_token_id=tok.eos_token_id, return_dict_in_generate=True)
        torch.manual_seed(self.next_seed(sp.stream) if seed is None else int(seed))
        kw: dict[str, Any] = {}
        if sp.stop and any(sp.stop):
            from transformers import StoppingCriteriaList

            kw["stopping_criteria"] = StoppingCriteriaList([StopOnNewText(tok, sp.stop, P)])
        res = self.model.generate(input_ids=ids.to(self.device), attention_mask=attn.to(self.device),
                                  generation_config=gc, logits_processor=LogitsProcessorList(procs), **kw)
        seqs = res.sequences.cpu()
        new = seqs[:, P:]
        lps = rec.finish(res.sequences, new.shape[1])
        comps: list[Completion] = []
        for r in range(seqs.shape[0]):
            j = r // n
            toks = new[r].tolist()
            lp = lps[r].tolist()
            cut, finish, stop_hit = len(toks), "length", None
            if tok.eos_token_id in toks:
                cut, finish = toks.index(tok.eos_token_id) + 1, "stop"
            toks, lp = toks[:cut], lp[:cut]
            text = tok.decode(toks, skip_special_tokens=True)
            if sp.stop:
                k, text2, stop_hit = cut_at_stop(tok, toks, text, sp.stop)
                if stop_hit is not None:
                    toks, lp, text, finish = toks[:k], lp[:k], text2, "stop"
            prompt_text = prompts[j] if prompts is not None else tok.decode(prompt_ids[j])
            meta = {"temperature": temp, "top_p": 1.0 if greedy else float(sp.top_p), "chat_template": self.chat_template}
            if stop_hit is not None:
                meta["stop"] = stop_hit
            if sp.response_prefix:
                meta["response_prefix"] = sp.response_prefix
            comps.append(Completion(prompt=prompt_text, text=text, prompt_ids=list(prompt_ids[j]), token_ids=toks,
                                    logprobs=lp, finish_reason=finish, policy_version=self.version, meta=meta))
        return [comps[j * n:(j + 1) * n] for j in range(len(prompt_ids))]

    # ------------------------------------------------------------------ learning
    def _micro_tensors(self, batch: Sequence[Completion], advantages: Sequence[Any] | None = None):
        """Right-padded ids; mask / old logprobs / advantages from the first position that predicts
        a completion token (``start``) on; ``token_mask`` 0 tokens are masked (``completion_rows``)."""
        pad = self.tokenizer.pad_token_id
        seqs = [list(c.prompt_ids) + list(c.token_ids) for c in batch]
        T = max(len(s) for s in seqs)
        idx = torch.full((len(seqs), T), pad, dtype=torch.long)
        attn = torch.zeros((len(seqs), T), dtype=torch.long)
        for r, s in enumerate(seqs):
            idx[r, :len(s)] = torch.tensor(s, dtype=torch.long)
            attn[r, :len(s)] = 1
        start = max(0, min(len(c.prompt_ids) for c in batch) - 1)  # first position that predicts a completion token
        mask, old, adv = completion_rows(batch, advantages, T - start - 1, offset=start + 1)
        if advantages is None:
            return idx, attn, mask, old, start
        return idx, attn, mask, old, start, adv

    def _logprobs(self, idx, attn, start, temps, disable_adapter: bool = False, model=None) -> torch.Tensor:
        from coevo.rl.grpo import token_logprobs

        m = model if model is not None else self.model
        dev = self.device
        if disable_adapter and self.base is not None:
            with m.disable_adapter():
                logits = m(input_ids=idx.to(dev), attention_mask=attn.to(dev), use_cache=False).logits
        else:
            logits = m(input_ids=idx.to(dev), attention_mask=attn.to(dev), use_cache=False).logits
        logits = logits[:, start:-1, :].float() / temps.to(dev)[:, None, None]
        return token_logprobs(logits, idx[:, start + 1:].to(dev))

    def forward_backward(self, batch: Sequence[Completion], advantages: Sequence[Any], loss: LossConfig,
                         scale: float = 1.0, num_active_tokens: int | None = None) -> dict[str, float]:
        """Gradient of ``scale`` x the policy loss of the whole batch, over micro-batches.

        Advantages per sequence (floats) or per token (lists); ``token_mask`` 0 tokens carry no
        loss and do not count in any denominator (dapo's token count, grpo's per-sequence means,
        dr_grpo's default L = the longest completion's active tokens).  ``num_active_tokens``:
        the step's active-token count when the caller splits a step (dapo).  The reported
        ``loss`` is this batch's unscaled loss."""
        from coevo.rl.grpo import policy_loss

        if len(batch) != len(advantages):
            raise ValueError(f"{len(batch)} completions but {len(advantages)} advantages")
        n_batch = len(batch)  # an empty completion has no token to train but still counts in B (as TRL)
        keep = [i for i, c in enumerate(batch) if len(c.token_ids) > 0]
        if not keep:
            return {"loss": 0.0, "n_seqs": 0.0, "n_tokens": 0.0}
        batch = [batch[i] for i in keep]
        advs = [advantages[i] for i in keep]
        self._activate()
        self.model.train()
        n_seq = len(batch)
        active = [sum(c.token_mask) if c.token_mask is not None else len(c.token_ids) for c in batch]
        n_tok = sum(active)
        cfg = loss  # dr_grpo needs the fixed L (loss.max_completion_length): policy_loss says so if missing
        dapo = cfg.aggregation == "dapo"
        norm = num_active_tokens if num_active_tokens is not None else n_tok
        order = sorted(range(n_seq), key=lambda i: len(batch[i].prompt_ids) + len(batch[i].token_ids))
        sums: dict[str, float] = {}
        total, mismatch = 0.0, 0.0
        for k in range(0, n_seq, self.micro_batch):
            sel = order[k:k + self.micro_batch]
            mb = [batch[i] for i in sel]
            idx, attn, mask, old, start, adv = self._micro_tensors(mb, [advs[i] for i in sel])
            temps = torch.tensor([float(c.meta.get("temperature", 1.0)) or 1.0 for c in mb])
            lp = self._logprobs(idx, attn, start, temps)
            mask, old, adv = mask.to(lp.device), old.to(lp.device), adv.to(lp.device)
            with torch.no_grad():
                mismatch += float(((lp.detach() - old).abs() * mask).sum())
            if self.old_logprobs == "current":
                old = lp.detach()
            ref = self._reference_logprobs(idx, attn, start, temps) if cfg.kl_coef > 0 else None
            value, metrics = policy_loss(lp, old, adv, mask, cfg, ref_logprobs=ref,
                                         num_active_tokens=norm if dapo else None)
            # dapo is already normalised by the whole step's tokens; the others are means over micro-batches
            part = value if dapo else value * (len(mb) / n_batch)
            (part if scale == 1.0 else part * scale).backward()
            total += float(part.detach())
            w = float(mask.sum()) / max(1, n_tok) if dapo else len(mb) / n_seq  # metric weight
            for key, v in metrics.items():
                if key != "loss":
                    sums[key] = sums.get(key, 0.0) + float(v) * w
        sums["loss"] = total
        sums["logprob_mismatch"] = mismatch / max(1, n_tok)
        sums["n_seqs"], sums["n_tokens"] = float(n_seq), float(n_tok)
        return sums

    def _reference_logprobs(self, idx, attn, start, temps) -> torch.Tensor:
        with torch.no_grad():
            if self.base is not None:
                return self._logprobs(idx, attn, start, temps, disable_adapter=True)
            if self.ref_model is not None:
                return self._logprobs(idx, attn, start, temps, model=self.ref_model)
        raise RuntimeError("kl_coef > 0 needs a reference: call set_reference() first")

    def optim_step(self) -> dict[str, float]:
        params = list(self.trainable_params().values())
        gn = torch.nn.utils.clip_grad_norm_(params, self.grad_clip) if params else torch.tensor(0.0)
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        self.updates += 1
        return {"grad_norm": float(gn)}

    def set_reference(self) -> None:
        """KL reference: the base model (adapter disabled) for LoRA roles, else a frozen copy."""
        if self.base is None:
            self.ref_model = copy.deepcopy(self.model).eval()
            for p in self.ref_model.parameters():
                p.requires_grad_(False)

    # ------------------------------------------------------------------ state
    def _key(self, k: str) -> str:
        return k.replace(f".{self.adapter}.", ".{ADAPTER}.") if self.adapter else k

    def state(self, with_optimizer: bool = True) -> dict:
        st = {"name": self.name, "adapter": self.adapter, "updates": self.updates, "base_tag": self.base_tag,
              "sample_calls": self.sample_calls, "audit_calls": self.audit_calls,
              "params": {self._key(k): p.detach().cpu().clone() for k, p in self.trainable_params().items()}}
        if with_optimizer:
            st["opt"] = self.opt.state_dict()
        return st

    def load_state(self, st: dict) -> None:
        params = self.trainable_params()
        by_key = {self._key(k): p for k, p in params.items()}
        missing = [k for k in by_key if k not in st["params"]]
        if missing:
            raise ValueError(f"checkpoint lacks {len(missing)} parameters, e.g. {missing[0]}")
        with torch.no_grad():
            for k, p in by_key.items():
                p.copy_(st["params"][k].to(p.device, p.dtype))
        if "opt" in st:
            self.opt.load_state_dict(st["opt"])
        self.updates = int(st.get("updates", 0))
        self.base_tag = st.get("base_tag", self.base_tag)
        self.sample_calls = int(st.get("sample_calls", 0))
        self.audit_calls = int(st.get("audit_calls", 0))

    def save(self, path: str | Path) -> None:
        """Atomic checkpoint dir: PEFT adapter (LoRA role) or save_pretrained files + trainer_state.* for load."""
        st = {k: v for k, v in self.state().items() if k != "params" or self.base is not None}
        atomic_dir(path, lambda d: (self._write_serving_files(d), save_tree(d, st, "trainer_state")))

    def _write_serving_files(self, d: Path) -> None:
        if self.base is None:
            return self.model.save_pretrained(str(d), safe_serialization=True), self.tokenizer.save_pretrained(str(d))
        for f in self.export_adapter(d / ".peft").iterdir():
            f.replace(d / f.name)
        shutil.rmtree(d / ".peft")

    def load(self, path: str | Path) -> None:
        """A checkpoint directory (``save``), or with a warning a legacy pickle file the user named."""
        if Path(path).is_file():
            return self.load_state(load_legacy_pickle(path))
        st = load_tree(path, "trainer_state")  # a full model's parameters: its save_pretrained files
        self.load_state(st if "params" in st else {**st, "params": load_weights_dir(path)})

    def close(self) -> None:
        """Nothing to release: the model lives as long as the object (or its SharedBase)."""

    def export_adapter(self, directory: str | Path) -> Path:
        """Write this role's LoRA adapter in PEFT format (what vLLM's load_lora_adapter reads)."""
        if self.base is None:
            raise ValueError("export_adapter needs a LoRA role (mode 'lora'); full models are synced by restart")
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self.model.save_pretrained(str(directory), selected_adapters=[self.adapter])
        sub = directory / self.adapter  # peft nests non-'default' adapters in a sub-directory
        return sub if (sub / "adapter_config.json").is_file() else directory

    def load_adapter_dir(self, directory: str | Path) -> None:
        """Load PEFT adapter weights (as written by ``export_adapter``) into this role's adapter."""
        from peft.utils import load_peft_weights, set_peft_model_state_dict

        weights = load_peft_weights(str(directory), device=str(self.device))
        set_peft_model_state_dict(self.model, weights, adapter_name=self.adapter)


def n_params(model) -> int:
    return sum(p.numel() for p in model.parameters())


def perplexity_of(policy: HFPolicy, prompt: str, answer: str) -> float:
    """exp(mean NLL) of ``answer`` after ``prompt`` (a quick sanity probe)."""
    pids = policy.format_prompt(prompt)
    aids = policy.tokenizer(answer, add_special_tokens=False)["input_ids"]
    c = Completion(prompt=prompt, text=answer, prompt_ids=pids, token_ids=aids, logprobs=[0.0] * len(aids))
    idx, attn, mask, _, start = policy._micro_tensors([c])
    with torch.no_grad():
        lp = policy._logprobs(idx, attn, start, torch.ones(1))
    return math.exp(-float((lp.cpu() * mask).sum() / mask.sum()))
