#!/usr/bin/env python
"""GPU check: a randomly initialised Qwen2-architecture model built in code (no download),
two LoRA roles on one base, batched sampling and one GRPO update per role.

Prints one JSON object: for each size, tokens/s sampled, seconds per update (mean of
the timed updates, both roles), peak GPU memory, and the ratio of our update step
(``HFPolicy.forward_backward`` + ``optim_step``) to a bare transformers forward +
backward (``labels=`` cross-entropy) on the same batch and micro-batches.  Random
weights rarely emit EOS, so every sequence runs to ``--new-tokens``.

    python scripts/gpu_check.py --device cuda --sizes 0.5B,4B --json-out gpu_check.json
    python scripts/gpu_check.py --device cpu --sizes tiny          # what the tests run
    python scripts/gpu_check.py --rgbc-model /models/Qwen2.5-0.5B-Instruct   # + two RGBC steps on real weights

With a GPU it also runs two joint RGBC steps (arm full, math world, two LoRA roles) on the 0.5B
model (``--rgbc-steps``, ``--rgbc-size``, ``--rgbc-model``); on CPU only when asked.

Imports only torch, transformers, peft and coevo.backends / coevo.rl (no CLI deps).
"""
from __future__ import annotations

import argparse
import gc
import json
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

# Qwen2-architecture sizes (0.5B = Qwen2.5-0.5B shapes; 4B = Qwen3-4B shapes on the Qwen2 block)
SIZES = {
    "tiny": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, vocab_size=512),
    "0.5B": dict(hidden_size=896, intermediate_size=4864, num_hidden_layers=24, num_attention_heads=14,
                 num_key_value_heads=2, vocab_size=151936),
    "1.5B": dict(hidden_size=1536, intermediate_size=8960, num_hidden_layers=28, num_attention_heads=12,
                 num_key_value_heads=2, vocab_size=151936),
    "4B": dict(hidden_size=2560, intermediate_size=9728, num_hidden_layers=36, num_attention_heads=32,
               num_key_value_heads=8, vocab_size=151936),
}
# (prompts, samples per prompt, new tokens, micro batch) per size
WORKLOAD = {"tiny": (4, 2, 16, 4), "0.5B": (32, 4, 256, 16), "1.5B": (32, 4, 256, 16), "4B": (16, 4, 256, 8)}


def build(size: str, device: str, dtype: torch.dtype, seed: int = 0):
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    cfg = Qwen2Config(**SIZES[size], max_position_embeddings=4096, tie_word_embeddings=size in ("tiny", "0.5B", "1.5B"),
                      pad_token_id=0, eos_token_id=2, bos_token_id=1, use_cache=True)
    with torch.device(device):
        model = Qwen2ForCausalLM(cfg).to(dtype)
    return model


def sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def bare_step(model, batch, micro: int, device: str) -> None:
    """Plain transformers forward+backward (labels= cross-entropy) on the same micro-batches."""
    pad = 0
    for k in range(0, len(batch), micro):
        mb = batch[k:k + micro]
        seqs = [list(c.prompt_ids) + list(c.token_ids) for c in mb]
        T = max(len(s) for s in seqs)
        ids = torch.full((len(seqs), T), pad, dtype=torch.long)
        attn = torch.zeros((len(seqs), T), dtype=torch.long)
        labels = torch.full((len(seqs), T), -100, dtype=torch.long)
        for r, (c, s) in enumerate(zip(mb, seqs)):
            ids[r, :len(s)] = torch.tensor(s)
            attn[r, :len(s)] = 1
            labels[r, len(c.prompt_ids):len(s)] = torch.tensor(c.token_ids)
        out = model(input_ids=ids.to(device), attention_mask=attn.to(device), labels=labels.to(device), use_cache=False)
        (out.loss * len(mb) / len(batch)).backward()


def check_size(size: str, device: str, dtype: torch.dtype, timed_updates: int, seed: int) -> dict:
    from coevo.core.policy import LossConfig, SamplingParams
    from coevo.backends.hf import HFPolicy, SharedBase, make_char_tokenizer, n_params

    n_prompts, n_samples, new_tokens, micro = WORKLOAD[size]
    cuda = device.startswith("cuda")
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    t0 = time.time()
    model = build(size, device, dtype, seed)
    tok = make_char_tokenizer(vocab_size=SIZES[size]["vocab_size"])
    base = SharedBase(model, tok, lora={"r": 16, "alpha": 32}, gradient_checkpointing=True)
    roles = {r: HFPolicy(r, base=base, lr=1e-5, micro_batch=micro, sample_batch=n_prompts * n_samples,
                         device=device, seed=seed) for r in ("challenger", "solver")}
    build_s = time.time() - t0
    prompts = [f"Question {i}: what is {i} + {2 * i}?" for i in range(n_prompts)]
    sp = SamplingParams(temperature=1.0, top_p=1.0, max_new_tokens=new_tokens)
    res: dict = {"params": n_params(model), "build_s": round(build_s, 2), "prompts": n_prompts,
                 "samples_per_prompt": n_samples, "new_tokens": new_tokens, "micro_batch": micro}

    # sampling (warm-up with a short generate first)
    roles["solver"].sample(prompts[:2], 1, SamplingParams(max_new_tokens=4))
    sync(device)
    t = time.time()
    groups = roles["solver"].sample(prompts, n_samples, sp)
    sync(device)
    sample_s = time.time() - t
    batch = [c for g in groups for c in g]
    gen_tokens = sum(len(c.token_ids) for c in batch)
    res.update(sample_s=round(sample_s, 3), sampled_tokens=gen_tokens, tokens_per_s=round(gen_tokens / sample_s, 1))

    # GRPO updates: one per role, warm-up then timed
    adv = [((i % n_samples) - (n_samples - 1) / 2) / n_samples for i in range(len(batch))]
    loss = LossConfig(aggregation="grpo")
    times = []
    for it in range(1 + timed_updates):
        for role in ("challenger", "solver"):
            sync(device)
            t = time.time()
            m = roles[role].forward_backward(batch, adv, loss)
            roles[role].optim_step()
            sync(device)
            if it > 0:
                times.append(time.time() - t)
    res["update_s"] = round(sum(times) / len(times), 3)
    res["loss"] = m.get("loss")
    res["logprob_mismatch"] = m.get("logprob_mismatch")

    # the same batch through a bare transformers forward+backward (solver adapter active, same checkpointing)
    pm = base.model
    base.activate("solver")
    pm.train()
    bare = []
    for it in range(1 + timed_updates):
        sync(device)
        t = time.time()
        bare_step(pm, batch, micro, device)
        pm.zero_grad(set_to_none=True)
        sync(device)
        if it > 0:
            bare.append(time.time() - t)
    res["bare_fwd_bwd_s"] = round(sum(bare) / len(bare), 3)
    res["update_over_bare"] = round(res["update_s"] / res["bare_fwd_bwd_s"], 3)
    if cuda:
        res["peak_gpu_mem_gib"] = round(torch.cuda.max_memory_allocated() / 2 ** 30, 2)
    del roles, base, model, pm
    gc.collect()
    if cuda:
        torch.cuda.empty_cache()
    return res


def rgbc_steps(size: str, device: str, dtype: torch.dtype, steps: int, seed: int, model_dir: str | None = None,
               tasks: int = 8) -> dict:
    """``steps`` joint RGBC steps (arm full, math world) with two LoRA roles (synthesizer, solver) on one
    base: the random Qwen2 model of ``size``, or real weights from ``model_dir`` (e.g. a local
    Qwen2.5-0.5B-Instruct directory; nothing is downloaded).  Random weights write no well-formed task,
    so every output is rejected by the validator (the Synthesizer still samples and updates); real
    weights exercise consensus, screen, confirm and both updates.  Returns per-step seconds and counts."""
    import tempfile

    from coevo.backends.hf import HFPolicy, SharedBase, make_char_tokenizer
    from coevo.config import load_config
    from coevo.ledger.store import Ledger
    from coevo.recipes.rgbc.recipe import RGBCRecipe
    from coevo.runner.loop import Loop
    from coevo.verify.run import make_run_verifier
    from coevo.worlds.math import MathWorld

    t0 = time.time()
    if model_dir:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        tok = AutoTokenizer.from_pretrained(model_dir)
        model = AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=dtype).to(device)
    else:
        model, tok = build(size, device, dtype, seed), make_char_tokenizer(vocab_size=SIZES[size]["vocab_size"])
    base = SharedBase(model, tok, lora={"r": 16, "alpha": 32}, gradient_checkpointing=True)
    micro = WORKLOAD[size][3]
    pols = {r: HFPolicy(r, base=base, lr=1e-5, micro_batch=micro, sample_batch=64, device=device, seed=seed,
                        chat_template=bool(model_dir)) for r in ("solver", "synthesizer")}
    style = "rzero" if model_dir else "fewshot"
    cfg = load_config("cpu", None, ["recipe=rgbc", "rgbc.arm=full", "world.name=math", f"world.prompt_style={style}",
                                    "backend.kind=hf", f"synco.tasks_per_step={tasks}", "synco.synth_group=4",
                                    "synco.rounds=1", f"synco.steps_per_round={steps}", "synco.consensus_n=2",
                                    "synco.synth_max_tokens=" + ("512" if model_dir else "32"),
                                    "sampling.max_new_tokens=" + ("512" if model_dir else "16")])
    world = MathWorld.from_config(cfg)
    rec = RGBCRecipe(cfg, world, pols, "gpu-check", make_run_verifier(None, None, world))
    res: dict = {"model": model_dir or f"random {size}", "build_s": round(time.time() - t0, 2), "steps": []}
    with tempfile.TemporaryDirectory() as d:
        led = Ledger(Path(d) / "ledger.duckdb")
        led.append("runs", [{"run_id": "gpu-check", "recipe": "rgbc", "config_yaml": "{}"}])
        loop = Loop(led, "gpu-check", rec, pols)  # the one step loop (ledger transaction per step)
        for spec in [s for s in loop.plan if s.phase == "train"][:steps]:
            sync(device)
            t = time.time()
            m = loop.step(spec)
            sync(device)
            res["steps"].append({"seconds": round(time.time() - t, 2), "n_proposed": m["n_proposed"],
                                 "n_validated": m["n_validated"], "n_accepted": m["n_accepted"],
                                 "n_bearing": m["n_bearing"], "rollouts": m["rollouts"]})
        res["updates"] = _update_counts(led)
        led.close()
    if device.startswith("cuda"):
        res["peak_gpu_mem_gib"] = round(torch.cuda.max_memory_allocated() / 2 ** 30, 2)
    del pols, base, model
    gc.collect()
    return res


def _update_counts(led) -> dict:
    return {r["role"]: int(r["n"]) for r in led.query("SELECT role, count(*) AS n FROM updates GROUP BY role")}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description="Sampling + GRPO with two LoRA roles on a random Qwen2 model.")
    ap.add_argument("--device", default="auto", help="auto | cuda | cpu")
    ap.add_argument("--sizes", default=None, help="comma list of tiny,0.5B,1.5B,4B (default: 0.5B,4B on cuda, tiny on cpu)")
    ap.add_argument("--dtype", default="auto", help="auto (bf16 on cuda) | bf16 | fp32")
    ap.add_argument("--timed-updates", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json-out", default=None)
    ap.add_argument("--rgbc-steps", type=int, default=None,
                    help="joint RGBC steps (arm full, math world) after the size checks (default: 2 on cuda, 0 on cpu)")
    ap.add_argument("--rgbc-size", default=None, help="model size of the RGBC steps (default: 0.5B on cuda, tiny on cpu)")
    ap.add_argument("--rgbc-model", default=None, help="local model directory for the RGBC steps (real weights)")
    a = ap.parse_args(argv)
    from coevo.backends.hf import pick_dtype

    device = ("cuda" if torch.cuda.is_available() else "cpu") if a.device == "auto" else a.device
    sizes = (a.sizes or ("0.5B,4B" if device.startswith("cuda") else "tiny")).split(",")
    bad = [s for s in sizes if s not in SIZES]
    if bad:
        ap.error(f"unknown size(s) {bad}; choose from {list(SIZES)}")
    dtype = pick_dtype(a.dtype, device)
    import peft
    import transformers

    out: dict = {"device": torch.cuda.get_device_name(0) if device.startswith("cuda") else platform.processor() or "cpu",
                 "dtype": str(dtype).replace("torch.", ""), "torch": torch.__version__,
                 "transformers": transformers.__version__, "peft": peft.__version__, "sizes": {}}
    t0 = time.time()
    for s in sizes:
        out["sizes"][s] = check_size(s, device, dtype, a.timed_updates, a.seed)
        print(json.dumps({s: out["sizes"][s]}), file=sys.stderr, flush=True)
    n_rgbc = a.rgbc_steps if a.rgbc_steps is not None else (2 if device.startswith("cuda") else 0)
    if n_rgbc > 0:
        rs = a.rgbc_size or ("0.5B" if device.startswith("cuda") else "tiny")
        if rs not in SIZES:
            ap.error(f"unknown --rgbc-size {rs!r}; choose from {list(SIZES)}")
        out["rgbc"] = rgbc_steps(rs, device, dtype, n_rgbc, a.seed, a.rgbc_model)
        print(json.dumps({"rgbc": out["rgbc"]}), file=sys.stderr, flush=True)
    out["total_s"] = round(time.time() - t0, 1)
    text = json.dumps(out, indent=2)
    print(text, flush=True)
    if a.json_out:
        Path(a.json_out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.json_out).write_text(text + "\n")
    return out


if __name__ == "__main__":
    main()
