"""How a recipe's roles (its ``RoleSpec`` names) map onto backends.

``make_role_policies(cfg) -> {role: Policy}`` takes a plain dict (so the pydantic
config can pass ``model_dump()``):

    {
      "backend": "hf",                 # hf | openai (remote sampling, local HF training)
      "model": "smollm2",              # smollm2 | tiny-llama | tiny-qwen2 | <HF directory>
      "roles": None,                   # the role names; None = DEFAULT_ROLES (a recipe's run names its own)
      "mode": "lora",                  # lora: two adapters on one base (one GPU)
                                       # full: two independent full models
                                       # shared: one policy for every role (R-Zero "Single")
      "lora": {"r": 16, "alpha": 32, "dropout": 0.0, "target_modules": null},
      "lr": 1e-5, "lr_by_role": {"solver": 1e-5}, "weight_decay": 0.0, "grad_clip": 1.0,
      "micro_batch": 8, "sample_batch": 64,
      "gradient_checkpointing": false, "dtype": "auto", "device": "cpu",
      "chat_template": true, "system_prompt": null, "old_logprobs": "sampler",
      "seed": 0, "cache_dir": null,    # smollm2 conversion cache
      "servers": ["http://127.0.0.1:8000"], "endpoint": "completions",   # backend: openai
      "adapter_dir": "runs/x/adapters", "served_model": null,
      "retries": 3, "backoff_s": 0.5, "timeout_s": 300.0,          # per request, then the next server
      "on_error": "record",            # record: a request failing on every server becomes a completion
                                       # with finish_reason "error" (ledgered); raise: the step fails
                                       # (HTTP 401/403 always raises: a wrong key is never recorded)
      "api_key_env": "OPENAI_API_KEY", # the variable holding the servers' bearer token, read per
                                       # request; a literal "api_key" is refused (config.yaml is shared)
    }

``make_role_policies(run_config, roles=(...))`` also accepts the pydantic RunConfig
(see ``from_run_config``).  With ``mode='shared'`` the returned dict maps every role to the *same* object, so a
recipe that updates both roles updates one set of parameters twice per round.
"""
from __future__ import annotations

from typing import Any

DEFAULTS: dict[str, Any] = {
    "backend": "hf", "model": "smollm2", "roles": None, "mode": "lora",
    "lora": {"r": 16, "alpha": 32, "dropout": 0.0, "target_modules": None},
    "lr": 1e-5, "lr_by_role": {}, "weight_decay": 0.0, "grad_clip": 1.0, "micro_batch": 8,
    "sample_batch": 64,
    "gradient_checkpointing": False, "dtype": "auto", "device": "cpu", "chat_template": True,
    "system_prompt": None, "old_logprobs": "sampler", "seed": 0, "cache_dir": None,
    "servers": [], "endpoint": "completions", "adapter_dir": None, "served_model": None,
    "retries": 3, "backoff_s": 0.5, "timeout_s": 300.0, "on_error": "record",
    "api_key_env": "OPENAI_API_KEY",
    "tiny": {"hidden": 64, "layers": 2, "heads": 4},
}
MODES = ("lora", "full", "shared")
# the keys backend.options may set (hf / openai); set by the runner from other fields, not by options:
OPTION_KEYS = frozenset(DEFAULTS) - {"backend", "roles", "lr_by_role"}
# what only the openai backend reads (its servers, requests and adapter sync)
OPENAI_KEYS = frozenset({"servers", "endpoint", "adapter_dir", "served_model", "retries", "backoff_s", "timeout_s",
                         "on_error", "api_key_env"})
# per backend kind (the tiny backend takes none: its settings are backend fields)
KIND_OPTION_KEYS = {"tiny": frozenset(), "hf": OPTION_KEYS - OPENAI_KEYS, "openai": OPTION_KEYS}
# the options that are mappings, and their keys
NESTED_KEYS = {"lora": frozenset(DEFAULTS["lora"]), "tiny": frozenset(DEFAULTS["tiny"])}


def _unknown(bad: list[str], known, where: str) -> str:
    import difflib

    near = {k: difflib.get_close_matches(k, sorted(known), n=1) for k in bad}
    said = ", ".join(repr(where + k) + (f" (did you mean {near[k][0]!r}?)" if near[k] else "") for k in bad)
    return f"unknown option {said}; known: {', '.join(sorted(known)) or 'none'}"


# the roles built when a caller names none (tests, scripts; a run passes its recipe's RoleSpec names): a
# proposer and a solver, in the order this module has always built them (in ``full`` mode role i gets
# seed + i; in ``lora`` mode the adapters are initialised in this order)
DEFAULT_ROLES = ("challenger", "solver")


def default_roles() -> list[str]:
    """The roles built when none are named (``DEFAULT_ROLES``)."""
    return list(DEFAULT_ROLES)


def check_option_keys(options: dict, kind: str = "openai") -> None:
    """An unknown ``backend.options`` key of backend ``kind`` is an error naming it (and the nearest
    known key), so a typo cannot silently fall back to a default; the keys of the nested options
    (``lora``, ``tiny``) are checked too (``unknown option 'lora.rr'``)."""
    known = KIND_OPTION_KEYS.get(kind, OPTION_KEYS)
    bad = sorted(set(options) - known)
    if bad:
        if not known:
            raise RoleConfigError(f"backend {kind!r} takes no options (got {', '.join(map(repr, bad))}); its "
                                  f"settings are backend fields (checkpoints, lr, lr_solver, grad_clip, threads)")
        raise RoleConfigError(_unknown(bad, known, ""))
    for name, keys in NESTED_KEYS.items():
        sub = options.get(name)
        if sub is None:
            continue
        if not isinstance(sub, dict):
            raise RoleConfigError(f"{name}: expected a mapping of {', '.join(sorted(keys))}, got {sub!r}")
        bad = sorted(set(sub) - keys)
        if bad:
            raise RoleConfigError(_unknown(bad, keys, f"{name}."))


class RoleConfigError(ValueError):
    """A bad role/backend option (message names the key)."""


def load_base(cfg: dict):
    """(model, tokenizer) for ``cfg['model']`` on ``cfg['device']`` in the chosen dtype; never downloads."""
    import torch
    from pathlib import Path

    from coevo.backends.hf import make_char_tokenizer, pick_dtype, tiny_llama

    name = str(cfg["model"])
    device = str(cfg.get("device") or "cpu")
    dtype = pick_dtype(cfg.get("dtype"), device)
    if name == "smollm2":
        from coevo.backends import smollm2

        model, tok = smollm2.load_model(cfg.get("cache_dir"), dtype=dtype), smollm2.load_tokenizer(cfg.get("cache_dir"))
    elif name in ("tiny-llama", "tiny-qwen2"):
        t = {**DEFAULTS["tiny"], **(cfg.get("tiny") or {})}
        tok = make_char_tokenizer()
        model = tiny_llama(len(tok), hidden=int(t["hidden"]), layers=int(t["layers"]), heads=int(t["heads"]),
                           seed=int(cfg.get("seed", 0)), arch="qwen2" if name == "tiny-qwen2" else "llama").to(dtype)
    elif Path(name).is_dir():
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tok = AutoTokenizer.from_pretrained(name, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(name, dtype=dtype, local_files_only=True)
    else:
        raise RoleConfigError(f"model: {name!r} is not 'smollm2', 'tiny-llama', 'tiny-qwen2' or a local HF directory")
    model.to(device)
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    torch.manual_seed(int(cfg.get("seed", 0)))
    return model, tok


def from_run_config(cfg) -> dict:
    """Plain dict from the run config (``coevo.config.RunConfig``): ``backend.kind`` ->
    backend, ``backend.roles`` (separate | shared | lora) -> mode (full | shared | lora),
    per-role learning rates, grad clip, seed; ``backend.options`` supplies the rest
    (model, lora, device, dtype, servers, ...)."""
    b = cfg.backend
    d: dict[str, Any] = {"backend": "openai" if b.kind == "openai" else "hf",
                         "mode": {"separate": "full", "shared": "shared", "lora": "lora"}[b.roles],
                         "lr": float(b.lr_solver),  # per-role rates: lr_by_role, from the recipe's RoleSpec.lr
                         "grad_clip": float(b.grad_clip), "seed": int(getattr(cfg, "seed", 0))}
    d.update(dict(b.options or {}))
    return d


def _refuse_literal_key(c: dict) -> None:
    """Secrets by reference: a literal ``api_key`` (or a key pasted into ``api_key_env``) is a
    ``RoleConfigError`` whose message names the option, never the value."""
    from coevo.secrets import refuse_literal_key

    try:
        refuse_literal_key(c, "backend.options")
    except ValueError as e:
        raise RoleConfigError(str(e).removeprefix("backend.options.")) from None


def make_role_policies(cfg: Any = None, **overrides: Any) -> dict:
    """Build one Policy per role from a plain dict (see module docstring) or a RunConfig."""
    from coevo.backends.hf import HFPolicy, SharedBase

    if cfg is not None and not isinstance(cfg, dict) and hasattr(cfg, "backend"):
        cfg = from_run_config(cfg)
    c = {**DEFAULTS, **(cfg or {}), **overrides}
    _refuse_literal_key(c)
    mode = c["mode"]
    if mode not in MODES:
        raise RoleConfigError(f"mode: must be one of {MODES}, got {mode!r}")
    if c["backend"] not in ("hf", "openai"):
        raise RoleConfigError(f"backend: must be 'hf' or 'openai', got {c['backend']!r}")
    roles = list(default_roles() if c["roles"] is None else c["roles"])
    if not roles:
        raise RoleConfigError("roles: empty")
    lr_by_role = dict(c.get("lr_by_role") or {})
    kw = dict(lr=float(c["lr"]), weight_decay=float(c["weight_decay"]), grad_clip=float(c["grad_clip"]),
              micro_batch=int(c["micro_batch"]), sample_batch=int(c["sample_batch"]),
              chat_template=bool(c["chat_template"]), system_prompt=c["system_prompt"],
              device=str(c["device"]), seed=int(c["seed"]), old_logprobs=str(c["old_logprobs"]),
              base_tag=str(c["model"]).rstrip("/").split("/")[-1])
    gc = bool(c["gradient_checkpointing"])
    policies: dict = {}
    if mode == "lora":
        model, tok = load_base(c)
        base = SharedBase(model, tok, lora=c["lora"], gradient_checkpointing=gc)
        for r in roles:
            policies[r] = HFPolicy(r, base=base, adapter=r, **{**kw, "lr": lr_by_role.get(r, kw["lr"])})
    elif mode == "full":
        for i, r in enumerate(roles):
            model, tok = load_base({**c, "seed": int(c["seed"]) + i})
            policies[r] = HFPolicy(r, model=model, tokenizer=tok, gradient_checkpointing=gc,
                                   **{**kw, "lr": lr_by_role.get(r, kw["lr"])})
    else:  # shared: R-Zero "Single" ablation, one set of parameters for every role
        model, tok = load_base(c)
        base = SharedBase(model, tok, lora=c["lora"], gradient_checkpointing=gc)
        shared = HFPolicy("shared", base=base, adapter="shared", **kw)
        policies = {r: shared for r in roles}
    if c["backend"] == "openai":
        from coevo.backends.openai_server import OpenAIPolicy

        if not c["servers"]:
            raise RoleConfigError("servers: backend 'openai' needs at least one server URL")
        wrapped: dict = {}
        for r, p in policies.items():
            key = id(p)
            wrapped[r] = next((w for w in wrapped.values() if id(w.trainer) == key), None) or OpenAIPolicy(
                p, servers=list(c["servers"]), endpoint=str(c["endpoint"]), adapter_dir=c["adapter_dir"],
                served_model=c["served_model"], retries=int(c["retries"]), backoff_s=float(c["backoff_s"]),
                timeout_s=float(c["timeout_s"]), on_error=str(c["on_error"]), api_key_env=str(c["api_key_env"]))
        policies = wrapped
    return policies
