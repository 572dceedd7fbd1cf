"""Multi-turn rollouts (coevo.stages.rollout) with the scripted tool world, on the tiny and HF backends:
segment bookkeeping, logprobs vs a fresh forward pass, masked (env) tokens carry no gradient and
no denominator count, token-level advantages, scale / num_active_tokens, and RNG streams."""
import random

import pytest
import torch

from conftest import need_module
from coevo.core.policy import LossConfig, SamplingParams, full_text
from coevo.backends.tiny import TinyConfig, TinyPolicy
from coevo.stages.rollout import rollout, solve_multiturn
from coevo.core.world import ANSWER, QUESTION, role_sampling
from coevo.worlds.scripted import ScriptedToolWorld, format_question

WORLD = ScriptedToolWorld()
TASKS = list(WORLD.eval_set())[::10][:8]
SP = SamplingParams(temperature=0.9, max_new_tokens=12)


def _bias_head(head: torch.nn.Module, ids: list[int], amount: float) -> None:
    """Make the policy likelier to emit ``ids`` (a forward hook: sampling and training both see it)."""
    def hook(_m, _inp, out):
        out = out.clone()
        out[..., ids] += amount
        return out
    head.register_forward_hook(hook)


def _tiny(seed: int = 0) -> TinyPolicy:
    pol = TinyPolicy("solver", TinyConfig(vocab_size=31, block_size=96, n_layer=1, n_head=2, n_embd=32), lr=1e-2,
                     seed=seed)
    _bias_head(pol.model.head, [pol.tok.stoi[")"]], 2.5)
    return pol


def _episodes(pol, n: int = 4, stream: str = "train", max_turns: int = 3):
    sp = SamplingParams(temperature=SP.temperature, max_new_tokens=SP.max_new_tokens, stream=stream)
    return [c for g in solve_multiturn(pol, WORLD, TASKS, n, sp, max_turns=max_turns) for c in g]


def _with_tools(comps):
    return [c for c in comps if c.meta["tool_calls"] > 0]


# ---------------------------------------------------------------------------- the world
def test_scripted_world_contract_and_vocabulary():
    t = WORLD.parse_task(format_question("37+5"), "t1").task
    assert t.question == "37+5" and t.meta["difficulty"] == "L2"
    assert WORLD.oracle(t) == str(WORLD.table[37] + 5)
    assert WORLD.run_tool(t, "<solve>37+5;(37)") == f"={WORLD.table[37]};"
    assert WORLD.run_tool(t, "(x)") == "=;" and WORLD.run_tool(t, "(123)") == "=;" and WORLD.run_tool(t, "(5") is None
    assert WORLD.parse_task("<question>1*2</question>", "t").reason == "not-a-lookup"
    assert WORLD.tool_stops(ANSWER) == [")"] and WORLD.tool_stops(QUESTION) == []
    tok = TinyPolicy("x", TinyConfig(vocab_size=31, block_size=8, n_layer=1, n_head=1, n_embd=8)).tok
    for task in WORLD.eval_set():  # every trace fits the tiny character vocabulary
        demo = WORLD.demonstration(task)
        ids = tok.encode(WORLD.solver_prompt(task) + demo)
        assert tok.unk_id not in ids and len(ids) <= 24
        assert WORLD.equivalent(WORLD.extract_answer(demo), WORLD.oracle(task))
    assert len(WORLD.eval_set()) == 100


# ---------------------------------------------------------------------------- tiny backend
def test_tiny_episodes_segments_and_masks():
    pol = _tiny()
    comps = _episodes(pol)
    multi = _with_tools(comps)
    assert len(comps) == 32 and len(multi) >= 4
    for c in comps:
        assert len(c.token_ids) == len(c.logprobs) == len(c.token_mask) == sum(s.n_tokens for s in c.segments)
        assert full_text(c) == "".join(s.text for s in c.segments)
        assert c.prompt_ids == pol.tok.encode(c.prompt)
        pos, text = 0, ""
        for s in c.segments:
            ids = c.token_ids[pos:pos + s.n_tokens]
            if s.kind == "env":
                assert ids == pol.tokenize(s.text) and s.text == WORLD.run_tool(None, text)
                assert c.token_mask[pos:pos + s.n_tokens] == [0] * s.n_tokens
                assert c.logprobs[pos:pos + s.n_tokens] == [0.0] * s.n_tokens
            else:
                assert pol.tok.decode(ids) == s.text and set(c.token_mask[pos:pos + s.n_tokens]) == {1}
            pos, text = pos + s.n_tokens, text + s.text
        assert c.meta["turns"] == c.meta["tool_calls"] + 1 or c.meta.get("turn_limit")


def test_tiny_single_turn_fast_path_is_plain_sample():
    class NoTools(ScriptedToolWorld):
        def tool_stops(self, role):
            return []

    a, b = _tiny(3), _tiny(3)
    sp = role_sampling(WORLD, ANSWER, SP)
    got = rollout(a, NoTools(), ["<solve>1;"], 3, sp)
    want = b.sample(["<solve>1;"], 3, sp)
    assert [c.token_ids for c in got[0]] == [c.token_ids for c in want[0]] and got[0][0].token_mask is None


def _fresh_tiny_logprobs(pol, c) -> list[float]:
    idx = torch.tensor([c.prompt_ids + c.token_ids])
    with torch.no_grad():
        lp = torch.log_softmax(pol.model(idx)[0, :-1] / c.meta["temperature"], -1)
    P = len(c.prompt_ids)
    return [lp[P - 1 + i, t].item() for i, t in enumerate(c.token_ids)]


def test_tiny_generated_logprobs_match_fresh_forward():
    pol = _tiny(1)
    comps = _with_tools(_episodes(pol))
    diffs = [abs(a - b) for c in comps for a, b, m in zip(_fresh_tiny_logprobs(pol, c), c.logprobs, c.token_mask) if m]
    assert len(diffs) > 20 and max(diffs) < 1e-4


def _grads(pol, comps, adv, loss, **kw) -> torch.Tensor:
    params = list(pol.model.parameters()) if isinstance(pol, TinyPolicy) else list(pol.trainable_params().values())
    for p in params:
        p.grad = None
    pol.forward_backward(comps, adv, loss, **kw)
    g = torch.cat([p.grad.reshape(-1) if p.grad is not None else torch.zeros(p.numel()) for p in params])
    for p in params:
        p.grad = None
    return g


def _token_adv(comps, seq_adv, env_value):
    """Per-token advantages: the sequence's value on policy tokens, ``env_value(i)`` on env tokens."""
    return [[a if m else env_value(i) for i, m in enumerate(c.token_mask)] for c, a in zip(comps, seq_adv)]


def _hand_loss(pol, comps, adv, agg):
    """The clipped objective computed by hand over *policy* tokens only (ratio ~ 1: no clipping)."""
    per_seq, n_active, total = [], 0, 0.0
    for c, a in zip(comps, adv):
        idx = torch.tensor([c.prompt_ids + c.token_ids])
        lp = torch.log_softmax(pol.model(idx)[0, :-1] / c.meta["temperature"], -1)
        P = len(c.prompt_ids)
        terms = [-a * torch.exp(lp[P - 1 + i, t] - c.logprobs[i]) for i, t in enumerate(c.token_ids) if c.token_mask[i]]
        s = torch.stack(terms).sum()
        per_seq.append(s / len(terms))
        n_active += len(terms)
        total = total + s
    return torch.stack(per_seq).mean() if agg == "grpo" else total / n_active


@pytest.mark.parametrize("agg", ["grpo", "bnpo", "dapo"])
def test_tiny_env_tokens_carry_no_gradient(agg):
    pol = _tiny(2)
    comps = _with_tools(_episodes(pol))[:6]
    seq_adv = [1.0, -0.5, 0.75, -1.0, 0.25, -0.25][:len(comps)]
    loss = LossConfig(aggregation=agg)
    rng = random.Random(0)
    g1 = _grads(pol, comps, _token_adv(comps, seq_adv, lambda i: 0.0), loss)
    g2 = _grads(pol, comps, _token_adv(comps, seq_adv, lambda i: rng.uniform(-50, 50)), loss)
    assert torch.equal(g1, g2)  # env-token advantages never reach the gradient
    # the same objective written by hand over policy tokens only (env tokens in no denominator)
    pol.model.zero_grad(set_to_none=True)
    _hand_loss(pol, comps, seq_adv, "grpo" if agg == "grpo" else "tokens").backward()
    ref = torch.cat([p.grad.reshape(-1) for p in pol.model.parameters()])
    pol.model.zero_grad(set_to_none=True)
    assert float(ref.abs().max()) > 1e-4
    assert float((g1 - ref).abs().max()) < 1e-5 * max(1.0, float(ref.abs().max()))


def test_tiny_per_token_advantages_equal_per_sequence_when_constant():
    pol = _tiny(4)
    comps = _episodes(pol)[:8]
    seq = [0.5, -1.0, 1.5, 0.0, -0.25, 1.0, -0.75, 0.3]
    for agg in ("grpo", "dr_grpo", "dapo"):
        loss = LossConfig(aggregation=agg, max_len=40)
        g_seq = _grads(pol, comps, seq, loss)
        g_tok = _grads(pol, comps, [[a] * len(c.token_ids) for c, a in zip(comps, seq)], loss)
        assert float((g_seq - g_tok).abs().max()) < 1e-7 and float(g_seq.abs().max()) > 0


def test_tiny_scale_and_global_active_tokens():
    pol = _tiny(5)
    comps = _with_tools(_episodes(pol))[:6]
    adv = [1.0, -1.0, 0.5, -0.5, 2.0, -2.0][:len(comps)]
    dapo = LossConfig(aggregation="dapo")
    whole = _grads(pol, comps, adv, dapo)
    n_active = sum(sum(c.token_mask) for c in comps)
    k = len(comps) // 2
    split = (_grads(pol, comps[:k], adv[:k], dapo, num_active_tokens=n_active)
             + _grads(pol, comps[k:], adv[k:], dapo, num_active_tokens=n_active))
    assert float((whole - split).abs().max()) < 1e-6
    doubled = _grads(pol, comps, adv, dapo, scale=2.0)
    assert float((doubled - 2 * whole).abs().max()) < 1e-6


# ---------------------------------------------------------------------------- tiny streams
def test_tiny_audit_stream_never_moves_train_stream():
    sp, audit = SamplingParams(max_new_tokens=8), SamplingParams(max_new_tokens=8, stream="audit")
    a, b = _tiny(7), _tiny(7)
    ta = [c.token_ids for _ in range(2) for c in a.sample(["<solve>3;"], 4, sp)[0]]
    tb1 = [c.token_ids for c in b.sample(["<solve>3;"], 4, sp)[0]]
    au = [c.token_ids for c in b.sample(["<solve>3;"], 4, audit)[0]]
    tb2 = [c.token_ids for c in b.sample(["<solve>3;"], 4, sp)[0]]
    assert ta == tb1 + tb2 and au != tb2
    # the audit stream is the generator the RGBC recipe swapped in: Generator().manual_seed(seed + 7919)
    c = _tiny(7)
    c.gen = torch.Generator().manual_seed(7 + 7919)
    assert [x.token_ids for x in c.sample(["<solve>3;"], 4, sp)[0]] == au
    # multi-turn episodes on the audit stream leave the train stream where it was
    d, e = _tiny(8), _tiny(8)
    _episodes(d, stream="audit")
    assert [x.token_ids for x in _episodes(d)] == [x.token_ids for x in _episodes(e)]


def test_tiny_state_roundtrips_both_streams(tmp_path):
    sp, audit = SamplingParams(max_new_tokens=6), SamplingParams(max_new_tokens=6, stream="audit")
    a = _tiny(9)
    a.sample(["<solve>1;"], 3, sp)
    a.sample(["<solve>1;"], 2, audit)
    a.save(tmp_path / "a.pt")
    b = _tiny(0)
    b.load(tmp_path / "a.pt")
    for s in (audit, sp, audit):
        assert [c.token_ids for c in a.sample(["<solve>2;"], 3, s)[0]] == \
               [c.token_ids for c in b.sample(["<solve>2;"], 3, s)[0]]
    old = a.state()
    del old["audit_gen"]  # a state written before the audit stream existed
    c = _tiny(0)
    c.load_state(old)
    assert torch.equal(c.gen.get_state(), a.gen.get_state())
    from coevo.checkpoint import load_tree

    st = load_tree(tmp_path / "a.pt", "trainer_state")
    assert {"gen", "audit_gen"} <= set(st)


def test_tiny_from_checkpoint_reseeds_both_streams(tmp_path):
    a = _tiny(3)
    a.sample(["<solve>1;"], 2, SamplingParams(max_new_tokens=4, stream="audit"))
    a.save(tmp_path / "c.pt")
    b = TinyPolicy.from_checkpoint("solver", tmp_path / "c.pt", seed=11)
    assert torch.equal(b.audit_gen.get_state(), torch.Generator().manual_seed(11 + 7919).get_state())
    assert torch.equal(b.gen.get_state(), torch.Generator().manual_seed(11).get_state())


# ---------------------------------------------------------------------------- HF backend
@pytest.fixture(scope="module")
def hf_solver():
    need_module("transformers")
    need_module("peft")
    from coevo.backends.roles import make_role_policies

    so = make_role_policies({"model": "tiny-llama", "mode": "lora", "lr": 5e-2, "lora": {"r": 4, "alpha": 8},
                             "micro_batch": 3, "roles": ["solver"]})["solver"]
    _bias_head(so.model.get_output_embeddings(), so.tokenize(")"), 4.0)
    return so


def _hf_grads(so, comps, adv, loss, **kw):
    return _grads(so, comps, adv, loss, **kw)


def test_hf_multiturn_logprobs_masks_and_gradients(hf_solver):
    so = hf_solver
    sp = SamplingParams(temperature=0.8, max_new_tokens=16)
    comps = [c for g in solve_multiturn(so, WORLD, TASKS[:4], 3, sp, max_turns=2) for c in g]
    multi = _with_tools(comps)
    assert len(multi) >= 3
    for c in multi:
        assert len(c.token_ids) == len(c.logprobs) == len(c.token_mask) == sum(s.n_tokens for s in c.segments)
        pos = 0
        for s in c.segments:
            if s.kind == "env":
                assert c.token_ids[pos:pos + s.n_tokens] == so.tokenize(s.text)
                assert c.token_mask[pos:pos + s.n_tokens] == [0] * s.n_tokens
            pos += s.n_tokens
    # generated tokens' logprobs equal a fresh forward over the concatenated sequence
    diffs = []
    with torch.no_grad():
        for c in multi:
            idx = torch.tensor([c.prompt_ids + c.token_ids])
            logits = so.model(input_ids=idx).logits[0, :-1].float() / c.meta["temperature"]
            lp = torch.log_softmax(logits, -1)
            P = len(c.prompt_ids)
            diffs += [abs(lp[P - 1 + i, t].item() - c.logprobs[i]) for i, t in enumerate(c.token_ids) if c.token_mask[i]]
    assert len(diffs) > 20 and max(diffs) < 1e-4
    m = so.forward_backward(multi, [0.0] * len(multi), LossConfig())
    so.opt.zero_grad(set_to_none=True)
    assert m["logprob_mismatch"] < 1e-4 and m["n_tokens"] == sum(sum(c.token_mask) for c in multi)
    # env tokens: any advantage there leaves the gradient unchanged (micro-batched, three aggregations)
    seq = [(-1.0) ** i * (0.5 + 0.25 * i) for i in range(len(multi))]
    rng = random.Random(1)
    for agg in ("grpo", "dapo", "dr_grpo"):
        loss = LossConfig(aggregation=agg, max_len=48)
        g1 = _hf_grads(so, multi, _token_adv(multi, seq, lambda i: 0.0), loss)
        g2 = _hf_grads(so, multi, _token_adv(multi, seq, lambda i: rng.uniform(-50, 50)), loss)
        g3 = _hf_grads(so, multi, seq, loss)  # per-sequence == constant per-token
        assert float(g1.abs().max()) > 0
        assert torch.equal(g1, g2) and float((g1 - g3).abs().max()) < 1e-6 * max(1.0, float(g1.abs().max()))


def test_hf_multiturn_audit_stream_and_state(hf_solver):
    so = hf_solver
    sp = SamplingParams(temperature=1.0, max_new_tokens=10)
    st = so.state()
    first = [c.token_ids for g in solve_multiturn(so, WORLD, TASKS[:2], 2, sp) for c in g]
    after = so.state()
    so.load_state(st)
    audit = SamplingParams(temperature=1.0, max_new_tokens=10, stream="audit")
    solve_multiturn(so, WORLD, TASKS[:2], 2, audit)
    assert so.audit_calls > st["audit_calls"] and so.sample_calls == st["sample_calls"]
    assert [c.token_ids for g in solve_multiturn(so, WORLD, TASKS[:2], 2, sp) for c in g] == first
    assert so.state()["sample_calls"] == after["sample_calls"]
