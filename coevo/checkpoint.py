"""Checkpoints as data, not code: tensors in safetensors, everything else in JSON.

``encode`` / ``decode`` round-trip nested dicts (string or int keys), lists, tuples, tensors,
None, bool, int, float (exactly: JSON floats are written with ``repr``) and str, so RNG
states (torch Generator states are uint8 tensors; ``random.getstate()`` is a tuple),
counters, recipe state and optimizer state dicts (int keys, tuple betas) come back equal.
``save_tree`` writes ``<name>.json`` + ``<name>.safetensors`` into a directory;
``atomic_dir`` builds a directory next to its target and swaps it in with renames, so a
crash mid-write leaves the previous content (or nothing) but never half a checkpoint.

``load_legacy_pickle`` is the only ``torch.load`` of pickles in coevo: old ``.pt`` states
and checkpoints, loaded only from a path the user names (``--resume DIR``,
``backend.checkpoints.<role>=old.pt``), with a one-line warning.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any, Callable

import torch

FORMAT_VERSION = 1
_TENSOR, _TUPLE, _DICT = "__tensor__", "__tuple__", "__dict__"


class CheckpointError(Exception):
    pass


def encode(obj: Any) -> tuple[Any, dict[str, torch.Tensor]]:
    """(JSON-able tree, tensors by key): each tensor is replaced by ``{"__tensor__": key}``."""
    tensors: dict[str, torch.Tensor] = {}

    def enc(x: Any, where: str) -> Any:
        if x is None or isinstance(x, (bool, int, float, str)):
            return x
        if isinstance(x, torch.Tensor):
            key = f"t{len(tensors)}"
            tensors[key] = x.detach().cpu().contiguous().clone()
            return {_TENSOR: key}
        if isinstance(x, tuple):
            return {_TUPLE: [enc(v, f"{where}[{i}]") for i, v in enumerate(x)]}
        if isinstance(x, list):
            return [enc(v, f"{where}[{i}]") for i, v in enumerate(x)]
        if isinstance(x, dict):
            if all(isinstance(k, str) and not k.startswith("__") for k in x):
                return {k: enc(v, f"{where}.{k}") for k, v in x.items()}
            for k in x:
                if not isinstance(k, (str, int)) or isinstance(k, bool):
                    raise CheckpointError(f"cannot store key {k!r} of type {type(k).__name__} at {where or 'root'}")
            return {_DICT: [[k, enc(v, f"{where}.{k}")] for k, v in x.items()]}
        raise CheckpointError(f"cannot store a {type(x).__name__} at {where or 'root'} in a checkpoint")

    return enc(obj, ""), tensors


def decode(tree: Any, tensors: dict[str, torch.Tensor]) -> Any:
    """Inverse of ``encode``."""
    if isinstance(tree, list):
        return [decode(v, tensors) for v in tree]
    if not isinstance(tree, dict):
        return tree
    if _TENSOR in tree and len(tree) == 1:
        return tensors[tree[_TENSOR]]
    if _TUPLE in tree and len(tree) == 1:
        return tuple(decode(v, tensors) for v in tree[_TUPLE])
    if _DICT in tree and len(tree) == 1:
        return {k: decode(v, tensors) for k, v in tree[_DICT]}
    return {k: decode(v, tensors) for k, v in tree.items()}


def save_tree(directory: str | Path, obj: Any, name: str = "state") -> None:
    """Write ``obj`` as ``<name>.json`` (structure) + ``<name>.safetensors`` (tensors)."""
    from safetensors.torch import save_file

    directory = Path(directory)
    tree, tensors = encode(obj)
    save_file(tensors, str(directory / f"{name}.safetensors"))
    doc = {"format": "coevo-tree", "format_version": FORMAT_VERSION, "tree": tree}
    (directory / f"{name}.json").write_text(json.dumps(doc, allow_nan=True))


def load_tree(directory: str | Path, name: str = "state") -> Any:
    from safetensors.torch import load_file

    directory = Path(directory)
    jpath = directory / f"{name}.json"
    if not jpath.is_file():
        raise CheckpointError(f"{directory} is not a coevo checkpoint directory (no {name}.json)")
    doc = json.loads(jpath.read_text())
    spath = directory / f"{name}.safetensors"
    tensors = load_file(str(spath)) if spath.is_file() else {}
    return decode(doc["tree"], tensors)


def atomic_dir(target: str | Path, write: Callable[[Path], None]) -> Path:
    """Build ``target`` as a directory via ``write(tmp_dir)``, then swap it in with renames.
    A crash before the swap leaves the old ``target`` untouched (and a ``.tmp`` folder)."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f"{target.name}.tmp-{os.getpid()}")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    write(tmp)
    for f in tmp.iterdir():
        if f.is_file():
            with open(f, "rb") as fh:
                os.fsync(fh.fileno())
    old = target.with_name(f"{target.name}.old-{os.getpid()}")
    if target.is_dir():
        os.replace(target, old)
    elif target.exists():
        target.unlink()  # a legacy pickle file of the same name
    os.replace(tmp, target)
    if old.exists():
        shutil.rmtree(old)
    return target


def is_stale_temp(path: Path) -> bool:
    """A leftover of an interrupted ``atomic_dir`` (``<name>.tmp-PID`` / ``<name>.old-PID``)."""
    return ".tmp-" in path.name or ".old-" in path.name


_warned: set[str] = set()


def load_legacy_pickle(path: str | Path) -> Any:
    """Load an old ``torch.save`` pickle (executes code it carries: only for a path the user
    named explicitly), printing one warning line on stderr."""
    path = Path(path)
    if str(path) not in _warned:
        _warned.add(str(path))
        print(f"warning: {path} is a legacy pickle checkpoint; loading it runs any code it carries "
              f"(only load files you trust)", file=sys.stderr)
    return torch.load(path, map_location="cpu", weights_only=False)


# ---------------------------------------------------------------------- export
TRAINING_ONLY = ("trainer_state.json", "trainer_state.safetensors")


def checkpoint_kind(directory: Path) -> str:
    """``tiny`` (model.safetensors + coevo config.json), ``peft-adapter`` or ``hf-model``."""
    if (directory / "adapter_config.json").is_file():
        return "peft-adapter"
    cfg = directory / "config.json"
    if cfg.is_file() and json.loads(cfg.read_text()).get("format") == "coevo-tiny":
        return "tiny"
    return "hf-model"


def export_checkpoint(run_dir: str | Path, round_: int, role: str, out: str | Path) -> tuple[Path, str]:
    """Copy round ``round_``'s checkpoint of ``role`` to ``out`` without the training-only
    files: tiny -> model.safetensors + config.json; LoRA role -> a PEFT adapter directory;
    full model -> a ``save_pretrained`` directory.  Returns (out, kind); one-line errors."""
    run_dir, out = Path(run_dir), Path(out)
    if not run_dir.is_dir():
        raise CheckpointError(f"run directory not found: {run_dir}")
    ck_root = run_dir / "checkpoints"
    rounds = sorted(int(p.name.split("-")[1]) for p in ck_root.glob("round-*") if p.name.split("-")[1].isdigit()) \
        if ck_root.is_dir() else []
    if round_ not in rounds:
        have = ", ".join(map(str, rounds)) or "none"
        raise CheckpointError(f"no checkpoint of round {round_} in {run_dir} (rounds with checkpoints: {have})")
    ck = ck_root / f"round-{round_}"
    src = ck / f"{role}.pt"
    if not src.exists():
        have = ", ".join(sorted(p.name.removesuffix(".pt") for p in ck.glob("*.pt"))) or "none"
        raise CheckpointError(f"no role {role!r} in round {round_} of {run_dir} (roles: {have})")
    if src.is_file():
        raise CheckpointError(f"{src} is a legacy pickle checkpoint: load it with backend.checkpoints.{role}={src} "
                              f"in a new run to convert it")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise CheckpointError(f"output directory {out} exists and is not empty")

    def write(d: Path) -> None:
        for f in src.iterdir():
            if f.is_file() and f.name not in TRAINING_ONLY:
                shutil.copy2(f, d / f.name)

    if out.is_dir():
        out.rmdir()
    return atomic_dir(out, write), checkpoint_kind(src)


def load_weights_dir(directory: str | Path) -> dict[str, torch.Tensor]:
    """Every tensor of a ``save_pretrained`` directory (``model.safetensors`` or its shards)."""
    from safetensors.torch import load_file

    directory = Path(directory)
    index = directory / "model.safetensors.index.json"
    if index.is_file():
        shards = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        return {k: v for s in shards for k, v in load_file(str(directory / s)).items()}
    if not (directory / "model.safetensors").is_file():
        raise CheckpointError(f"{directory} has no model.safetensors")
    return load_file(str(directory / "model.safetensors"))
