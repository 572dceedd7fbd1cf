"""HF backend on a tiny random Llama with an offline character tokenizer (no downloads)."""
import math

import pytest

from conftest import need_module

torch = need_module("torch")
need_module("transformers")
need_module("peft")

from conftest import require_smollm2  # noqa: E402

from coevo.core.policy import Completion, LossConfig, Policy, SamplingParams  # noqa: E402
from coevo.backends.hf import HFPolicy, SharedBase, make_char_tokenizer, tiny_llama  # noqa: E402
from coevo.backends.tokenizer import cut_at_stop  # noqa: E402
from coevo.backends.roles import RoleConfigError, make_role_policies  # noqa: E402


@pytest.fixture(scope="module")
def roles():
    return make_role_policies({"model": "tiny-llama", "mode": "lora", "lr": 5e-2, "lora": {"r": 4, "alpha": 8},
                               "micro_batch": 2})


def test_protocol_and_shapes(roles):
    so = roles["solver"]
    assert isinstance(so, Policy)
    out = so.sample(["What is 2+3?", "Hi"], 3, SamplingParams(temperature=0.8, top_p=0.9, max_new_tokens=10))
    assert len(out) == 2 and all(len(g) == 3 for g in out)
    for g, prompt in zip(out, ["What is 2+3?", "Hi"]):
        for c in g:
            assert c.prompt == prompt
            assert len(c.token_ids) == len(c.logprobs) <= 10
            assert all(lp <= 0 for lp in c.logprobs)
            assert c.finish_reason in ("stop", "length")
            assert c.meta["temperature"] == 0.8 and c.meta["chat_template"] is True
            assert c.policy_version == "solver:tiny-llama+0"
    # the chat template comes from the tokenizer
    text = so.tokenizer.decode(out[0][0].prompt_ids)
    assert text.startswith("<|im_start|>user\nWhat is 2+3?<|im_end|>") and text.endswith("<|im_start|>assistant\n")


def test_sampler_logprobs_match_training_forward(roles):
    """The logprobs recorded during generate equal the training forward's (tempered) logprobs."""
    so = roles["solver"]
    out = so.sample(["abc", "a longer prompt"], 2, SamplingParams(temperature=0.7, max_new_tokens=8))
    batch = [c for g in out for c in g]
    m = so.forward_backward(batch, [0.0] * len(batch), LossConfig())
    so.opt.zero_grad(set_to_none=True)
    assert m["logprob_mismatch"] < 1e-4
    assert abs(m["ratio_mean"] - 1.0) < 1e-4


def test_greedy_is_deterministic_and_stop_strings(roles):
    so = roles["solver"]
    sp = SamplingParams(greedy=True, max_new_tokens=12)
    a = so.sample(["hello"], 1, sp)[0][0]
    b = so.sample(["hello"], 1, sp)[0][0]
    assert a.token_ids == b.token_ids and a.meta["temperature"] == 1.0
    if len(a.text) >= 3:
        stop = a.text[1:3]
        c = so.sample(["hello"], 1, SamplingParams(greedy=True, max_new_tokens=12, stop=[stop]))[0][0]
        assert c.finish_reason == "stop" and c.meta["stop"] == stop
        assert c.text == a.text[:a.text.find(stop)]
        assert so.tokenizer.decode(c.token_ids).startswith(c.text + stop)


def test_response_prefix_is_prefilled_and_recorded(roles):
    """Assistant prefill: the prompt ids end with the prefix; text/logprobs cover only new tokens."""
    from coevo.core.policy import full_text

    so = roles["solver"]
    sp = SamplingParams(greedy=True, max_new_tokens=6, response_prefix="<q>\n")
    c = so.sample(["What is 2+3?"], 1, sp)[0][0]
    text = so.tokenizer.decode(c.prompt_ids)
    assert text.endswith("<|im_start|>assistant\n<q>\n") and c.prompt_ids == so.format_prompt("What is 2+3?", "<q>\n")
    assert c.meta["response_prefix"] == "<q>\n" and full_text(c).startswith("<q>\n" + c.text)
    assert len(c.token_ids) == len(c.logprobs)
    m = so.forward_backward([c], [0.0], LossConfig())  # training sees the same prompt ids
    so.opt.zero_grad(set_to_none=True)
    assert m["logprob_mismatch"] < 1e-4


def test_cut_at_stop_unit():
    tok = make_char_tokenizer()
    ids = tok("ab. cd. ef", add_special_tokens=False)["input_ids"]
    k, text, hit = cut_at_stop(tok, ids, "ab. cd. ef", [". c", "ef"])
    assert (k, text, hit) == (5, "ab", ". c")
    assert cut_at_stop(tok, ids, "ab. cd. ef", ["zz"]) == (len(ids), "ab. cd. ef", None)


def test_update_moves_only_its_own_adapter(roles):
    so, ch = roles["solver"], roles["challenger"]
    before_ch = {k: p.detach().clone() for k, p in ch.trainable_params().items()}
    before_so = {k: p.detach().clone() for k, p in so.trainable_params().items()}
    assert before_ch and before_so and not set(before_ch) & set(before_so)
    out = so.sample(["q1", "q2"], 2, SamplingParams(max_new_tokens=6))
    batch = [c for g in out for c in g]
    v0 = so.version
    m = so.forward_backward(batch, [1.0, -1.0, 1.0, -1.0], LossConfig())
    assert math.isfinite(m["loss"]) and m["n_seqs"] == 4
    s = so.optim_step()
    assert s["grad_norm"] > 0 and so.version != v0 and so.version.endswith("+1")
    assert all(torch.equal(before_ch[k], p) for k, p in ch.trainable_params().items())
    assert any(not torch.equal(before_so[k], p) for k, p in so.trainable_params().items())


@pytest.mark.parametrize("agg", ["grpo", "dr_grpo", "dapo"])
def test_micro_batching_matches_full_batch(roles, agg):
    so = roles["solver"]
    out = so.sample(["x", "yy", "zzz"], 2, SamplingParams(max_new_tokens=7))
    batch = [c for g in out for c in g]
    adv = [1.0, -0.5, 0.25, -1.0, 0.5, 0.0]
    grads = []
    for mb in (2, 64):
        so.micro_batch = mb
        so.forward_backward(batch, adv, LossConfig(aggregation=agg, max_len=7))
        grads.append({k: p.grad.clone() for k, p in so.trainable_params().items()})
        so.opt.zero_grad(set_to_none=True)
    so.micro_batch = 2
    err = max(float((grads[0][k] - grads[1][k]).abs().max()) for k in grads[0])
    scale = max(float(g.abs().max()) for g in grads[1].values())
    assert err <= 1e-4 * max(scale, 1e-6) + 1e-7


def test_kl_to_base_and_save_load(tmp_path, roles):
    so = roles["solver"]
    out = so.sample(["kl"], 2, SamplingParams(max_new_tokens=5))
    m = so.forward_backward(out[0], [1.0, -1.0], LossConfig(kl_coef=0.1))
    so.opt.zero_grad(set_to_none=True)
    assert m["kl"] >= 0.0
    path = tmp_path / "solver.pt"
    so.save(str(path))
    saved = {k: p.detach().clone() for k, p in so.trainable_params().items()}
    ver = so.version
    with torch.no_grad():
        for p in so.trainable_params().values():
            p.add_(1.0)
    so.updates += 5
    so.load(str(path))
    assert so.version == ver
    assert all(torch.equal(saved[k], p) for k, p in so.trainable_params().items())
    d = so.export_adapter(tmp_path / "export")
    assert (d / "adapter_config.json").is_file()


def test_shared_and_full_modes():
    shared = make_role_policies({"model": "tiny-llama", "mode": "shared", "lora": {"r": 2}})
    assert shared["solver"] is shared["challenger"] and shared["solver"].name == "shared"
    full = make_role_policies({"model": "tiny-llama", "mode": "full", "roles": ["solver", "challenger"]})
    assert full["solver"].model is not full["challenger"].model and full["solver"].adapter is None
    c = full["solver"].sample(["a"], 1, SamplingParams(max_new_tokens=4))[0][0]
    full["solver"].set_reference()
    m = full["solver"].forward_backward([c], [1.0], LossConfig(kl_coef=0.1))
    assert m["kl"] == pytest.approx(0.0, abs=1e-6)
    with pytest.raises(RoleConfigError, match="mode"):
        make_role_policies({"model": "tiny-llama", "mode": "nope"})
    with pytest.raises(RoleConfigError, match="model"):
        make_role_policies({"model": "/nonexistent/dir"})


def test_run_config_mapping():
    from types import SimpleNamespace

    from coevo.backends.roles import from_run_config

    b = SimpleNamespace(kind="hf", roles="separate", lr_solver=1e-5, lr_challenger=2e-5, grad_clip=0.5,
                        options={"model": "tiny-llama", "device": "cpu"})
    d = from_run_config(SimpleNamespace(backend=b, seed=3))
    # per-role rates come from the recipe's RoleSpec.lr through the runner (lr_by_role), not from a role list here
    assert d["mode"] == "full" and d["lr"] == 1e-5 and "lr_by_role" not in d and d["model"] == "tiny-llama"
    assert d["seed"] == 3 and d["backend"] == "hf"


def test_empty_completion_is_skipped():
    tok = make_char_tokenizer()
    pol = HFPolicy("s", model=tiny_llama(len(tok)), tokenizer=tok)
    c = Completion(prompt="p", text="", prompt_ids=[1, 2, 3], token_ids=[], logprobs=[])
    assert pol.forward_backward([c], [1.0], LossConfig())["n_seqs"] == 0


def test_empty_completion_counts_in_the_sequence_mean():
    """grpo's mean over sequences: an empty completion (no token) adds no loss but counts in B,
    as in TRL and the tiny backend, so [c, empty] gives half the loss of [c] alone."""
    tok = make_char_tokenizer()
    pol = HFPolicy("s", model=tiny_llama(len(tok), seed=0), tokenizer=tok, seed=0)
    c = pol.sample(["1+2="], 1, SamplingParams(temperature=1.0, max_new_tokens=6))[0][0]
    empty = Completion(prompt="p", text="", prompt_ids=[1, 2, 3], token_ids=[], logprobs=[])
    alone = pol.forward_backward([c], [1.0], LossConfig())
    pol.opt.zero_grad(set_to_none=True)
    both = pol.forward_backward([c, empty], [1.0, 1.0], LossConfig())
    pol.opt.zero_grad(set_to_none=True)
    assert both["loss"] == pytest.approx(alone["loss"] / 2, rel=1e-5) and both["n_seqs"] == 1


def test_shared_base_rejects_duplicate_adapter():
    tok = make_char_tokenizer()
    base = SharedBase(tiny_llama(len(tok)), tok, lora={"r": 2})
    HFPolicy("alpha", base=base)
    with pytest.raises(ValueError, match="already exists"):
        HFPolicy("alpha", base=base)


# ---------------------------------------------------------------------------- SmolLM2 (slow)
@pytest.mark.slow
def test_smollm2_convert_sample_update():
    smollm2 = require_smollm2()
    smollm2.convert()  # once; reused afterwards
    assert smollm2.is_converted()
    pols = make_role_policies({"model": "smollm2", "mode": "lora", "lr": 1e-4, "lora": {"r": 8, "alpha": 16},
                               "micro_batch": 4})
    so, ch = pols["solver"], pols["challenger"]
    text = so.tokenizer.decode(so.format_prompt("What is 2+3?"))
    assert "<|im_start|>user\nWhat is 2+3?<|im_end|>" in text and text.endswith("<|im_start|>assistant\n")
    g = so.sample(["What is 2+3? Put the final answer in \\boxed{}."], 1, SamplingParams(greedy=True, max_new_tokens=24))
    assert g[0][0].text.strip() and len(g[0][0].token_ids) == len(g[0][0].logprobs)
    for pol in (ch, so):
        out = pol.sample(["Write a short math question."], 2, SamplingParams(temperature=1.0, max_new_tokens=16))
        m = pol.forward_backward(out[0], [1.0, -1.0], LossConfig())
        assert m["logprob_mismatch"] < 1e-3
        assert pol.optim_step()["grad_norm"] > 0 and pol.version.endswith("+1")


@pytest.mark.slow
def test_smollm2_cpu_preset_run(tmp_path):
    """`coevo run --preset smollm2-cpu`: one R-Zero round on the math world with real SmolLM2
    text, parsed questions, a non-empty Solver dataset and one LoRA update per role."""
    import json
    import subprocess
    import sys

    import duckdb

    require_smollm2()  # CI (COEVO_REQUIRE_SMOLLM2) installs it: a missing file is a failure there
    out = tmp_path / "run"
    r = subprocess.run([sys.executable, "-m", "coevo.cli", "run", "--preset", "smollm2-cpu", "--out", str(out), "-q"],
                       capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    for name in ("ledger.duckdb", "summary.json", "config.yaml", "report.html"):
        assert (out / name).exists(), name
    con = duckdb.connect(str(out / "ledger.duckdb"), read_only=True)
    q = lambda sql: con.execute(sql).fetchall()  # noqa: E731
    # real model text from both roles; the Challenger's questions parse
    assert q("select count(*) from tasks where raw_text like '<question>%' and length(raw_text) > 20")[0][0] >= 8
    assert q("select count(*) from tasks where parse_ok and question like '%?%'")[0][0] >= 1
    assert q("select count(*) from rollouts where role = 'solver' and length(text) > 10")[0][0] >= 8
    # a solver dataset, and one LoRA update per role that bumped its version
    ups = {role: (b, a) for role, b, a in q("select role, version_before, version_after from updates")}
    assert ups == {"challenger": ("challenger:smollm2+0", "challenger:smollm2+1"),
                   "solver": ("solver:smollm2+0", "solver:smollm2+1")}
    assert q("select count(*) from rewards where role = 'solver'")[0][0] == 8
    summary = json.loads((out / "summary.json").read_text())
    assert summary["rounds"][0]["kept_fraction"] > 0 and summary["preset"] == "smollm2-cpu"
    print(f"smollm2-cpu preset: {summary['wall_seconds']:.0f} s, "
          f"format failures {summary['rounds'][0]['format_failure_rate']:.2f}")


# ---------------------------------------------------------------------------- streams, prefixes
def _fresh(seed: int = 5) -> HFPolicy:
    tok = make_char_tokenizer()
    return HFPolicy("s", model=tiny_llama(len(tok), seed=0), tokenizer=tok, seed=seed)


def test_audit_stream_never_moves_train_stream_and_state_roundtrip():
    sp = SamplingParams(temperature=1.0, max_new_tokens=8)
    audit = SamplingParams(temperature=1.0, max_new_tokens=8, stream="audit")
    a, b = _fresh(), _fresh()
    ta = [c.token_ids for _ in range(2) for g in a.sample(["hi", "yo"], 2, sp) for c in g]
    tb1 = [c.token_ids for g in b.sample(["hi", "yo"], 2, sp) for c in g]
    au = [c.token_ids for g in b.sample(["hi", "yo"], 2, audit) for c in g]
    tb2 = [c.token_ids for g in b.sample(["hi", "yo"], 2, sp) for c in g]
    assert ta == tb1 + tb2 and au != tb2 and (b.sample_calls, b.audit_calls) == (2, 1)
    st = b.state()
    assert (st["sample_calls"], st["audit_calls"]) == (2, 1)
    c = _fresh()
    c.load_state(st)
    for s in (audit, sp):
        assert [x.token_ids for g in b.sample(["q"], 2, s) for x in g] == [x.token_ids for g in c.sample(["q"], 2, s) for x in g]
    old = {k: v for k, v in st.items() if k != "audit_calls"}  # a state from before the audit stream
    c.load_state(old)
    assert c.audit_calls == 0 and c.sample_calls == 2
    with pytest.raises(ValueError, match="stream"):
        c.sample(["q"], 1, SamplingParams(stream="nope"))


def test_token_prefixes_and_per_token_advantages():
    pol = _fresh(7)
    pre = pol.tokenize("(12)=3;")
    assert pre == pol.tokenizer("(12)=3;", add_special_tokens=False)["input_ids"] and pol.tokenizer.decode(pre) == "(12)=3;"
    out = pol.sample(["a", "bb"], 2, SamplingParams(temperature=0.9, max_new_tokens=6), token_prefixes=[pre, []])
    assert out[0][0].prompt_ids == pol.format_prompt("a") + pre and out[1][0].prompt_ids == pol.format_prompt("bb")
    batch = [c for g in out for c in g]
    m = pol.forward_backward(batch, [0.0] * 4, LossConfig())
    pol.opt.zero_grad(set_to_none=True)
    assert m["logprob_mismatch"] < 1e-4
    grads = []
    for adv in ([1.0, -1.0, 0.5, -0.5], [[a] * len(c.token_ids) for c, a in zip(batch, [1.0, -1.0, 0.5, -0.5])]):
        pol.forward_backward(batch, adv, LossConfig())
        grads.append(torch.cat([p.grad.reshape(-1) for p in pol.trainable_params().values()]))
        pol.opt.zero_grad(set_to_none=True)
    assert float((grads[0] - grads[1]).abs().max()) < 1e-6 and float(grads[0].abs().max()) > 0
    pol.forward_backward(batch, [1.0, -1.0, 0.5, -0.5], LossConfig(), scale=3.0)
    g3 = torch.cat([p.grad.reshape(-1) for p in pol.trainable_params().values()])
    pol.opt.zero_grad(set_to_none=True)
    assert float((g3 - 3 * grads[0]).abs().max()) < 1e-6
    pol.close()


def test_dapo_global_token_count_across_calls():
    pol = _fresh(8)
    batch = [c for g in pol.sample(["x", "yy", "zzz"], 2, SamplingParams(max_new_tokens=7)) for c in g]
    adv = [1.0, -0.5, 0.25, -1.0, 0.5, 0.1]
    dapo = LossConfig(aggregation="dapo")
    pol.forward_backward(batch, adv, dapo)
    whole = torch.cat([p.grad.reshape(-1) for p in pol.trainable_params().values()])
    pol.opt.zero_grad(set_to_none=True)
    n = sum(len(c.token_ids) for c in batch)
    pol.forward_backward(batch[:2], adv[:2], dapo, num_active_tokens=n)
    pol.forward_backward(batch[2:], adv[2:], dapo, num_active_tokens=n)
    split = torch.cat([p.grad.reshape(-1) for p in pol.trainable_params().values()])
    pol.opt.zero_grad(set_to_none=True)
    assert float((whole - split).abs().max()) < 1e-6 and float(whole.abs().max()) > 0
