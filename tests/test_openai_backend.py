"""OpenAI-compatible backend against real HTTP servers on 127.0.0.1 (scripts/serve_hf.py)."""
import importlib.util
from pathlib import Path

import pytest

from conftest import need_module

need_module("transformers")
need_module("peft")
httpx = need_module("httpx")

from coevo.core.policy import LossConfig, Policy, SamplingParams, sampler_info  # noqa: E402
from coevo.backends.openai_server import OpenAIPolicy, ServerError  # noqa: E402
from coevo.backends.roles import load_base, make_role_policies  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("serve_hf", ROOT / "scripts" / "serve_hf.py")
serve_hf = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(serve_hf)

MODEL = {"model": "tiny-llama", "seed": 0}


@pytest.fixture(scope="module")
def servers():
    out = []
    for _ in range(2):
        model, tok = load_base(MODEL)
        out.append(serve_hf.start_server(model, tok, served_name="tiny-llama", allow_fault_injection=True))
    yield out
    for srv, _, _ in out:
        srv.shutdown()


@pytest.fixture()
def policies(servers, tmp_path):
    pols = make_role_policies({**MODEL, "backend": "openai", "servers": [u for _, _, u in servers],
                               "adapter_dir": str(tmp_path / "adapters"), "lr": 5e-2, "lora": {"r": 4, "alpha": 8}})
    for p in pols.values():
        p.backoff_s = 0.01
    yield pols
    for srv_state in (s for _, s, _ in servers):
        srv_state.fail_next = 0
    for p in pols.values():
        p.close()


def test_sampling_logprobs_and_ledger_fields(policies, servers):
    so = policies["solver"]
    assert isinstance(so, Policy)
    out = so.sample(["What is 2+3?", "Hi", "x"], 3, SamplingParams(temperature=0.8, max_new_tokens=8))
    assert len(out) == 3 and all(len(g) == 3 for g in out)
    for g in out:
        for c in g:
            assert len(c.token_ids) == len(c.logprobs) > 0
            assert c.meta["served_model"] == "solver-v0" and c.meta["server"] in [u for _, _, u in servers]
            assert c.policy_version == "solver:tiny-llama+0"
            info = sampler_info(c)  # what the ledger's rollouts.sampler_json holds (as JSON)
            assert info["served_model"] == "solver-v0" and info["server"] == c.meta["server"]
    # the server's logprobs are the trainer's: the adapter was synced before the first request
    batch = [c for g in out for c in g]
    m = so.trainer.forward_backward(batch, [0.0] * len(batch), LossConfig())
    so.trainer.opt.zero_grad(set_to_none=True)
    assert m["logprob_mismatch"] < 1e-4
    # load balancing: both servers saw sampling requests
    assert all(s.requests > 0 for _, s, _ in servers)


def test_weight_sync_after_update(policies, servers):
    so = policies["solver"]
    out = so.sample(["a", "b"], 2, SamplingParams(max_new_tokens=6))
    batch = [c for g in out for c in g]
    so.forward_backward(batch, [1.0, -1.0, 1.0, -1.0], LossConfig())
    m = so.optim_step()
    assert m["sync_ok"] == 1.0 and so.lora_name == "solver-v1"
    for _, state, _ in servers:
        assert "solver-v1" in state.adapters and "solver-v0" not in state.adapters
    out2 = so.sample(["a"], 2, SamplingParams(max_new_tokens=6))
    assert out2[0][0].meta["served_model"] == "solver-v1" and out2[0][0].policy_version.endswith("+1")
    m2 = so.trainer.forward_backward(out2[0], [0.0, 0.0], LossConfig())
    so.trainer.opt.zero_grad(set_to_none=True)
    assert m2["logprob_mismatch"] < 1e-4  # the server now samples from the updated adapter


def test_chat_endpoint(policies, servers, tmp_path):
    trainer = policies["challenger"].trainer
    chat = OpenAIPolicy(trainer, [servers[0][2]], endpoint="chat", adapter_dir=tmp_path / "chat")
    try:
        c = chat.sample(["hello there"], 2, SamplingParams(max_new_tokens=5))[0]
        assert len(c) == 2 and c[0].meta["endpoint"] == "chat" and c[0].prompt_ids == trainer.format_prompt("hello there")
        m = trainer.forward_backward(c, [0.0, 0.0], LossConfig())
        trainer.opt.zero_grad(set_to_none=True)
        assert m["logprob_mismatch"] < 1e-4
    finally:
        chat.close()


@pytest.mark.parametrize("endpoint", ["completions", "chat"])
def test_response_prefix_over_http(policies, servers, tmp_path, endpoint):
    """Prefill reaches the server (prompt ids / vLLM's continue_final_message) and the
    returned logprobs are the trainer's on the same prompt ids."""
    trainer = policies["solver"].trainer
    pol = OpenAIPolicy(trainer, [servers[0][2]], endpoint=endpoint, adapter_dir=tmp_path / endpoint)
    try:
        c = pol.sample(["hello"], 2, SamplingParams(max_new_tokens=5, response_prefix="<q>"))[0]
        assert c[0].prompt_ids == trainer.format_prompt("hello", "<q>") and c[0].meta["response_prefix"] == "<q>"
        m = trainer.forward_backward(c, [0.0, 0.0], LossConfig())
        trainer.opt.zero_grad(set_to_none=True)
        assert m["logprob_mismatch"] < 1e-4
    finally:
        pol.close()


def test_server_error_mid_round_fails_over(policies, servers):
    so = policies["solver"]
    so.sample(["warm"], 1, SamplingParams(max_new_tokens=2))
    servers[0][1].fail_next = 2  # the next two requests to server 0 fail with HTTP 500
    out = so.sample(["p1", "p2", "p3", "p4"], 2, SamplingParams(max_new_tokens=4))
    assert all(c.finish_reason in ("stop", "length") for g in out for c in g)
    retried = [c for g in out for c in g if "retried_after" in c.meta]
    assert retried and "HTTP 500" in retried[0].meta["retried_after"][0]
    assert so.stats["retries"] >= 2


def test_all_servers_down_is_recorded_not_raised(policies, servers):
    so = policies["solver"]
    so.sample(["warm"], 1, SamplingParams(max_new_tokens=2))
    for _, s, _ in servers:
        s.fail_next = 100
    so.retries = 2
    out = so.sample(["q"], 3, SamplingParams(max_new_tokens=4))
    assert [c.finish_reason for c in out[0]] == ["error"] * 3
    assert "HTTP 500" in out[0][0].meta["error"] and out[0][0].meta["attempts"] == 3
    assert so.errors[-1]["kind"] == "sample" and "injected fault" in so.errors[-1]["reason"]
    assert so.forward_backward(out[0], [1.0, 1.0, 1.0], LossConfig())["n_seqs"] == 0  # nothing to learn from
    so.on_error = "raise"
    with pytest.raises(ServerError, match="HTTP 500"):
        so.sample(["q"], 1, SamplingParams(max_new_tokens=2))


def test_failed_sync_is_recorded_and_version_lags(policies, servers):
    so = policies["challenger"]
    so.sample(["warm"], 1, SamplingParams(max_new_tokens=2))
    out = so.sample(["a"], 2, SamplingParams(max_new_tokens=4))
    so.forward_backward(out[0], [1.0, -1.0], LossConfig())
    servers[1][1].fail_next = 1  # server 1 refuses the load_lora_adapter call
    m = so.optim_step()
    assert m["sync_ok"] == 0.0 and so.errors[-1]["kind"] == "sync"
    assert so.synced_version == "challenger:tiny-llama+0" and so.version == "challenger:tiny-llama+1"
    # the next sample retries the sync first
    c = so.sample(["a"], 1, SamplingParams(max_new_tokens=3))[0][0]
    assert c.policy_version == "challenger:tiny-llama+1" and c.meta["served_model"] == "challenger-v1"


def test_protocol_errors(servers):
    url = servers[0][2]
    models = httpx.get(url + "/v1/models").json()
    assert models["data"][0]["id"] == "tiny-llama"
    r = httpx.post(url + "/v1/unload_lora_adapter", json={"lora_name": "nope"})
    assert r.status_code == 404
    r = httpx.post(url + "/v1/load_lora_adapter", json={"lora_name": "x", "lora_path": "/nonexistent"})
    assert r.status_code == 400
    r = httpx.post(url + "/v1/completions", json={"model": "unknown", "prompt": "hi", "max_tokens": 2})
    assert r.status_code == 404
    r = httpx.post(url + "/v1/completions", json={"model": "tiny-llama", "prompt": "hi", "max_tokens": 3,
                                                  "logprobs": 1, "n": 2})
    body = r.json()
    assert r.status_code == 200 and len(body["choices"]) == 2 and body["usage"]["completion_tokens"] > 0
    assert len(body["choices"][0]["logprobs"]["token_logprobs"]) == len(body["choices"][0]["logprobs"]["tokens"])


def test_full_mode_cannot_sync(servers):
    with pytest.raises(ValueError, match="LoRA"):
        make_role_policies({**MODEL, "backend": "openai", "mode": "full", "servers": [servers[0][2]]})


def test_streams_are_seeded_per_request_and_separate(policies, servers):
    """Every request carries a seed from the trainer's stream counter; the reference server
    honours it, so audit draws never move the train draws (and counters are in the state)."""
    so = policies["solver"]
    tr = so.trainer
    sp = SamplingParams(temperature=1.0, max_new_tokens=8)
    audit = SamplingParams(temperature=1.0, max_new_tokens=8, stream="audit")
    so.sample(["warm"], 1, sp)  # sync the adapter first
    st = so.state()
    first = [c.token_ids for g in so.sample(["p", "q"], 3, sp) for c in g]
    so.load_state(st)  # rewind both counters
    au = [c.token_ids for g in so.sample(["p", "q"], 3, audit) for c in g]
    again = [c.token_ids for g in so.sample(["p", "q"], 3, sp) for c in g]
    assert again == first and au != first
    assert tr.audit_calls == st["audit_calls"] + 1 and tr.sample_calls == st["sample_calls"] + 1
    c = so.sample(["p"], 1, sp)[0][0]
    assert isinstance(c.meta["seed"], int) and 0 <= c.meta["seed"] < 2 ** 31


@pytest.mark.parametrize("endpoint", ["completions", "chat"])
def test_token_prefixes_over_http(policies, servers, tmp_path, endpoint):
    trainer = policies["solver"].trainer
    pol = OpenAIPolicy(trainer, [servers[0][2]], endpoint=endpoint, adapter_dir=tmp_path / endpoint)
    try:
        pre = pol.tokenize("(12)=3;")
        out = pol.sample(["hello", "x"], 2, SamplingParams(max_new_tokens=5, response_prefix="<q>"),
                         token_prefixes=[pre, []])
        assert out[0][0].prompt_ids == trainer.format_prompt("hello", "<q>") + pre
        assert out[1][0].prompt_ids == trainer.format_prompt("x", "<q>")
        assert out[0][0].meta.get("prefix_as_text", False) == (endpoint == "chat")
        batch = [c for g in out for c in g]
        m = trainer.forward_backward(batch, [0.0] * 4, LossConfig())
        trainer.opt.zero_grad(set_to_none=True)
        assert m["logprob_mismatch"] < 1e-4  # the server continued from exactly these ids
    finally:
        pol.close()
