"""The R-Zero Challenger under verl 0.9.1 (``.venv-verl``, ``bash .ci/verl.sh``) with coevo's shipped Solver client:
verl's ``RewardLoopManager`` on 2 Ray workers runs coevo's reward manager from a config alone, and the reward's
``solver_fn=coevo.integrations.solver_client:solve`` samples the Solver from ``scripts/serve_hf.py`` serving
SmolLM2-135M-Instruct on 127.0.0.1 (issue #32 item 6). Skipped without verl; ``COEVO_REQUIRE_VERL=1`` (set by
.ci/verl.sh) turns the skip into a failure."""
import importlib.util
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from conftest import need_module, verl_challenger_overrides

# a failure under COEVO_REQUIRE_VERL=1, or COEVO_REQUIRE_ALL=1 with -m verl (conftest.need_module)
verl = need_module("verl", "verl 0.9.1 in .venv-verl: bash .ci/verl.sh --build", "COEVO_REQUIRE_VERL", marker="verl")
pytestmark = pytest.mark.verl

import torch  # noqa: E402
from tensordict import TensorDict  # noqa: E402
from verl import DataProto  # noqa: E402

from coevo.integrations.common import close_parts, extract_answer  # noqa: E402
from coevo.integrations.importers import import_parts  # noqa: E402
from coevo.integrations.verl_check import compose  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
# the Challenger's outputs: three questions and one format failure
CH = ["<question>What is 2+2?</question> \\boxed{4}", "no tags here", "<question>What is 3+5 exactly?</question>",
      "<question>Name the largest prime below twenty.</question>"]
QUESTIONS = {0: "What is 2+2?", 2: "What is 3+5 exactly?", 3: "Name the largest prime below twenty."}
# serve_hf.py generates one request at a time: a loaded 2-core machine needs the long timeout
SOLVER_KW = {"n": 4, "model": "smollm2", "max_tokens": 48, "temperature": 1.0, "seed": 11, "timeout_s": 1200}


@pytest.fixture(scope="module")
def served_solver(tmp_path_factory):
    """scripts/serve_hf.py serving SmolLM2-135M-Instruct on 127.0.0.1 (coevo's reference OpenAI-compatible server),
    in a thread of this process; verl's reward workers (Ray processes) reach it over TCP. Its tokenizer, saved as
    an HF directory, is the one verl's reward workers load (``actor_rollout_ref.model.path``)."""
    from coevo.backends.roles import load_base

    spec = importlib.util.spec_from_file_location("serve_hf", ROOT / "scripts" / "serve_hf.py")
    serve_hf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(serve_hf)
    model, tok = load_base({"model": "smollm2", "seed": 0})
    d = tmp_path_factory.mktemp("smollm2-tok")
    tok.save_pretrained(d)
    srv, state, url = serve_hf.start_server(model, tok, served_name="smollm2")
    sampled = []  # (the prompt's text, the n texts) of every request the server answered
    generate = state.generate

    def recording(model_name, prompt_ids, n, sp, seed=None):
        groups = generate(model_name, prompt_ids, n, sp, seed)
        sampled.extend((tok.decode(p), [c.text for c in g]) for p, g in zip(prompt_ids, groups))
        return groups

    state.generate = recording
    yield sampled, url, tok, str(d)
    srv.shutdown()
    srv.server_close()


def challenger_sample(tok, text: str, index: int, P: int = 48, R: int = 32) -> DataProto:
    """One Challenger sample as verl's agent loop builds it for the reward (prompts left-padded, responses
    right-padded; the dataset row's fields as non-tensors), with no Solver answers in ``extra_info``."""
    chat = [{"role": "user", "content": "Pose a question."}]
    p = tok.encode(tok.apply_chat_template(chat, add_generation_prompt=True, tokenize=False), add_special_tokens=False)
    r = tok.encode(text, add_special_tokens=False) + [tok.eos_token_id]
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    ids = torch.tensor([pad] * (P - len(p)) + p + r + [pad] * (R - len(r)), dtype=torch.int64)
    mask = torch.tensor([0] * (P - len(p)) + [1] * (len(p) + len(r)) + [0] * (R - len(r)), dtype=torch.int64)
    batch = TensorDict({"prompts": ids[None, :P], "responses": ids[None, P:], "attention_mask": mask[None],
                        "input_ids": ids[None], "position_ids": torch.arange(P + R)[None]}, batch_size=1)
    row = {"data_source": "rzero", "reward_model": {"style": "rule", "ground_truth": None},
           "extra_info": {"split": "train", "index": index}, "raw_prompt": chat, "index": index, "uid": f"u{index}"}
    nt = {k: np.array([v], dtype=object) for k, v in row.items()}
    nt.update({"__num_turns__": np.array([2]), "tool_extra_fields": np.array([{}], dtype=object),
               "prompt_len": np.array([len(p)]), "response_len": np.array([len(r)])})
    return DataProto(batch=batch, non_tensor_batch=nt)


def test_reward_loop_challenger_with_the_shipped_solver_fn_against_a_served_solver(tmp_path, served_solver):
    """No Solver answers in the data: the reward asks the served Solver (n = 4 per question, one request each),
    and the ledger rows carry the answers it sampled and the p_hat they give."""
    import duckdb
    import ray
    from verl.experimental.reward_loop import RewardLoopManager

    sampled, url, tok, tok_dir = served_solver
    led = tmp_path / "led"
    solver = ["+reward.reward_kwargs.solver_fn=coevo.integrations.solver_client:solve",
              f"+reward.reward_kwargs.solver_base_url={url}/v1",
              *[f"+reward.reward_kwargs.solver_{k}={v}" for k, v in SOLVER_KW.items()]]
    cfg = compose(verl_challenger_overrides(tok_dir, led, 60, *solver))
    data = DataProto.concat([challenger_sample(tok, t, i) for i, t in enumerate(CH)])
    ray.init(num_cpus=2, include_dashboard=False, ignore_reinit_error=True)
    try:
        out = RewardLoopManager(cfg).compute_rm_score(data)
    finally:
        ray.shutdown()  # as verl's main_ppo ends
    assert len(sampled) == 3 and all(len(ts) == 4 for _, ts in sampled)  # one request per valid question, n = 4
    assert out.non_tensor_batch["format_ok"].tolist() == [1.0, 0.0, 1.0, 1.0]
    answers = {q: [extract_answer(t) for t in ts] for q in QUESTIONS.values() for p, ts in sampled if q in p}
    assert sorted(answers) == sorted(QUESTIONS.values())
    close_parts()
    c = import_parts(led, tmp_path / "run")["counts"]
    assert c["tasks"] == 4 and c["rollouts"] == 12 and c["rewards"] == 4
    db = duckdb.connect(str(tmp_path / "run" / "ledger.duckdb"), read_only=True)
    got = {q: (p, a) for q, p, a in db.execute(
        "select t.question, t.p_hat, list(r.answer order by r.group_idx) from tasks t join rollouts r using (task_id) "
        "group by 1, 2").fetchall()}
    p_hat = out.non_tensor_batch["p_hat"].tolist()
    for i, q in QUESTIONS.items():
        assert got[q][1] == answers[q]  # the Solver's sampled answers, in sample order
        votes = Counter(a for a in answers[q] if a is not None)
        share = max(votes.values()) / 4 if votes else 0.0  # p_hat: majority share of the n = 4 samples
        assert got[q][0] == pytest.approx(share) and p_hat[i] == pytest.approx(share)
    print({q: a for q, (_, a) in got.items()}, p_hat)
