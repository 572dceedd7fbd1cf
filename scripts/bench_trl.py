"""One GRPO iteration of SmolLM2-135M with LoRA: coevo's HF backend against TRL's GRPOTrainer,
side by side on this machine, each side in its own process (peak RSS is per process).

An iteration = sample G completions for each of P prompts, score them, group advantages, one
loss/backward pass over the P x G completions (in micro-batches of ``--micro-batch``; TRL: per-device
batch with gradient accumulation, one generation batch of P x G) and one optimiser step. Both sides use the same
converted SmolLM2 directory, fp32 on CPU, the same LoRA (r, alpha, all seven projections),
temperature 1.0, the same completion limit, the same reward, no KL term and no gradient
checkpointing; each runs ``--iterations`` iterations (default 3) and the first is left out (warm-up).

TRL is not a dependency of coevo: install it apart and point ``--trl-path`` at it, e.g.

    pip install --no-deps --target /tmp/trl trl==1.16.0 datasets==5.2.0 dill==0.4.1 \\
        multiprocess==0.70.19 pandas==3.1.1 xxhash==4.1.0
    python scripts/bench_trl.py --trl-path /tmp/trl

Prints one JSON object: per side seconds per iteration (median of the timed ones), generated
tokens, seconds per 1,000 generated tokens, peak RSS, and the ratios coevo / TRL. Wall time
depends on the machine's load; the ratio is the number to compare (both sides measured in the
same run). docs/speed.md records a measurement.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROMPTS = ["What is 7 + 5? Answer with a number.", "Name a prime number greater than 10.",
           "What is 9 times 3? Answer with a number.", "Write one short sentence about the sea.",
           "What is 100 minus 37?", "Count from 1 to 5.", "What is half of 84?", "Name a color of the sky."]


def reward(text: str) -> float:
    """A cheap, deterministic reward with spread inside a group: 1 if the completion holds a digit."""
    return float(any(ch.isdigit() for ch in text))


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def run_coevo(a) -> dict:
    import torch

    from coevo.core.policy import LossConfig, SamplingParams
    from coevo.backends.roles import make_role_policies
    from coevo.rl.grpo import group_advantages

    torch.set_num_threads(a.threads)
    pol = make_role_policies({"model": "smollm2", "roles": ["solver"], "mode": "lora", "lr": a.lr,
                              "lora": {"r": a.r, "alpha": a.alpha}, "micro_batch": a.micro_batch,
                              "sample_batch": a.prompts * a.group, "seed": 0})["solver"]
    prompts = PROMPTS[:a.prompts]
    times, tokens = [], []
    for it in range(a.iterations):
        t0 = time.perf_counter()
        groups = pol.sample(prompts, a.group, SamplingParams(temperature=1.0, max_new_tokens=a.max_new_tokens))
        r = torch.tensor([[reward(c.text) for c in g] for g in groups])
        adv = group_advantages(r, "group")
        flat = [c for g in groups for c in g]
        pol.forward_backward(flat, [float(x) for x in adv.reshape(-1)], LossConfig(aggregation="dapo"))
        pol.optim_step()
        times.append(time.perf_counter() - t0)
        tokens.append(sum(len(c.token_ids) for c in flat))
    return {"seconds": times, "tokens": tokens}


def run_trl(a) -> dict:
    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from coevo.backends import smollm2

    torch.set_num_threads(a.threads)
    model_dir = str(smollm2.ensure_converted())
    times, tokens, t0 = [], [], [0.0]

    class Clock(TrainerCallback):
        def on_step_begin(self, args, state, control, **kw):
            t0[0] = time.perf_counter()

        def on_step_end(self, args, state, control, **kw):
            times.append(time.perf_counter() - t0[0])

        def on_log(self, args, state, control, logs=None, **kw):
            if logs and "completions/mean_length" in logs:
                tokens.append(logs["completions/mean_length"] * a.prompts * a.group)

    n = a.prompts * a.group
    ds = Dataset.from_list([{"prompt": [{"role": "user", "content": p}]} for p in PROMPTS[:a.prompts]] * a.iterations)
    with tempfile.TemporaryDirectory() as out:
        cfg = GRPOConfig(output_dir=out, use_cpu=True, bf16=False, fp16=False, gradient_checkpointing=False,
                         per_device_train_batch_size=a.micro_batch, gradient_accumulation_steps=n // a.micro_batch,
                         num_generations=a.group, generation_batch_size=n,
                         max_completion_length=a.max_new_tokens, max_steps=a.iterations, learning_rate=a.lr,
                         beta=0.0, loss_type="dapo", temperature=1.0, logging_steps=1, report_to=[],
                         save_strategy="no", seed=0, dataloader_num_workers=0, shuffle_dataset=False)
        tr = GRPOTrainer(model=model_dir, reward_funcs=lambda completions, **kw: [
            reward(c[0]["content"] if isinstance(c, list) else c) for c in completions],
            args=cfg, train_dataset=ds, peft_config=LoraConfig(
                r=a.r, lora_alpha=a.alpha, lora_dropout=0.0, bias="none", task_type="CAUSAL_LM",
                target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]),
            callbacks=[Clock()])
        tr.train()
    return {"seconds": times, "tokens": tokens}


def side(a) -> None:
    res = run_coevo(a) if a.side == "coevo" else run_trl(a)
    res["peak_rss_mb"] = peak_rss_mb()
    print("BENCH_JSON " + json.dumps(res), flush=True)


def summarise(res: dict) -> dict:
    t, k = res["seconds"][1:], res["tokens"][1:]  # the first iteration is warm-up
    med = statistics.median(t)
    return {"seconds_per_iteration": med, "iterations_timed": len(t), "generated_tokens": statistics.median(k) if k else None,
            "seconds_per_1k_tokens": 1000 * sum(t) / sum(k) if k and sum(k) else None,
            "peak_rss_mb": res["peak_rss_mb"], "all_seconds": res["seconds"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trl-path", default=None, help="a directory with trl and its extra dependencies")
    ap.add_argument("--prompts", type=int, default=4)
    ap.add_argument("--group", type=int, default=4)
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--micro-batch", type=int, default=4,
                    help="completions per forward/backward pass (TRL: per-device batch, with gradient accumulation)")
    ap.add_argument("--r", type=int, default=8)
    ap.add_argument("--alpha", type=int, default=16)
    ap.add_argument("--lr", type=float, default=1e-5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--side", choices=("coevo", "trl"), default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.iterations < 2:
        ap.error("--iterations must be >= 2 (the first is warm-up)")
    if (a.prompts * a.group) % a.micro_batch:
        ap.error("--micro-batch must divide --prompts x --group")
    if a.side:
        return side(a)
    out = {"config": {k: v for k, v in vars(a).items() if k not in ("side", "trl_path")}}
    for s in ("coevo", "trl"):
        env = dict(os.environ)
        if s == "trl" and a.trl_path:
            env["PYTHONPATH"] = os.pathsep.join([a.trl_path, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        p = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--side", s,
                            *[x for k, v in out["config"].items() for x in (f"--{k.replace('_', '-')}", str(v))]],
                           capture_output=True, text=True, env=env)
        line = [ln for ln in p.stdout.splitlines() if ln.startswith("BENCH_JSON ")]
        if p.returncode != 0 or not line:
            sys.exit(f"{s} side failed (exit {p.returncode}):\n{p.stderr[-3000:]}")
        out[s] = summarise(json.loads(line[-1][len("BENCH_JSON "):]))
    c, t = out["coevo"], out["trl"]
    out["ratio_coevo_over_trl"] = {
        "seconds_per_iteration": c["seconds_per_iteration"] / t["seconds_per_iteration"],
        "seconds_per_1k_tokens": (c["seconds_per_1k_tokens"] / t["seconds_per_1k_tokens"]
                                  if c["seconds_per_1k_tokens"] and t["seconds_per_1k_tokens"] else None),
        "peak_rss": c["peak_rss_mb"] / t["peak_rss_mb"]}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
