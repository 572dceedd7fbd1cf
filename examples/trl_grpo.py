"""TRL's GRPOTrainer with coevo's Solver reward and ledger: 2 steps of a tiny Llama on CPU, no download.

    bash .ci/trl.sh --build                      # .venv-trl: torch 2.13.0 (CPU), trl 1.16.0, coevo
    .venv-trl/bin/python examples/trl_grpo.py --ledger runs/trl-ledger --out runs/trl-run
    coevo audit runs/trl-run                     # per-step bearing rates, abstention share

The model is a 2-layer Llama built from a config with random weights, and the tokenizer is coevo's
character tokenizer (``coevo.backends.tokenizer.make_char_tokenizer``, ChatML template), so nothing is
fetched. Such a model never writes ``\\boxed{}``, so the example judges with ``cover_em`` (the reference
is contained in the completion, Search-R1's Cover-EM) on single-digit answers, which random text hits
now and then: groups are then mixed (bearing) or all wrong. With a real model, use ``verifier="math"``
(the default). One prompt has no reference: the verifier abstains, the reward is None, and TRL leaves
that completion out of its group's baseline; the ledger counts it (the audit's abstention share).
"""
from __future__ import annotations

import argparse
from pathlib import Path


def tiny_model_and_tokenizer(seed: int):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from coevo.backends.tokenizer import make_char_tokenizer

    tok = make_char_tokenizer()
    torch.manual_seed(seed)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=512,
                      pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id, bos_token_id=None)
    return LlamaForCausalLM(cfg), tok


def dataset():
    from datasets import Dataset

    qs = [("What is 2 + 2?", "4"), ("What is 3 + 4?", "7"), ("What is 9 - 8?", "1"),
          ("Name any colour.", None)]  # no reference: an abstention
    return Dataset.from_list([{"prompt": [{"role": "user", "content": q}], "solution": a} for q, a in qs])


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ledger", type=Path, required=True, help="where the reward writes its ledger parts")
    ap.add_argument("--out", type=Path, required=True, help="the run directory coevo audit reads (new)")
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--verifier", default="cover_em")
    a = ap.parse_args(argv)

    from trl import GRPOConfig, GRPOTrainer

    from coevo.integrations.importers import import_parts
    from coevo.integrations.trl import CoevoLedgerCallback, SolverReward

    model, tok = tiny_model_and_tokenizer(a.seed)
    reward = SolverReward(ledger=str(a.ledger), verifier=a.verifier, extract="raw", verify_workers=1)
    args = GRPOConfig(output_dir=str(a.out.parent / f"{a.out.name}-trainer"), max_steps=a.steps, seed=a.seed,
                      per_device_train_batch_size=8, num_generations=4, max_completion_length=24,
                      learning_rate=1e-3, beta=0.0, logging_steps=1, save_strategy="no", report_to=[],
                      use_cpu=True, bf16=False, dataloader_num_workers=0, disable_tqdm=True)
    trainer = GRPOTrainer(model=model, processing_class=tok, reward_funcs=[reward], args=args,
                          train_dataset=dataset(), callbacks=[CoevoLedgerCallback()])
    trainer.train()
    res = import_parts(a.ledger, a.out)  # the callback closed the parts at train end
    print(f"trained {trainer.state.global_step} steps; ledger: {res['counts']} -> {a.out}; "
          f"next: coevo audit {a.out}")
    return res


if __name__ == "__main__":
    main()
