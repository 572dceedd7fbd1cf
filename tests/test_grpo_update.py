"""grpo_update: split into micro-batches, the gradient is the gradient of the unsplit batch.

Two policies: a small float64 bigram policy defined here (it calls the shared
``policy_loss`` exactly as the backends do), and the ``tiny`` backend.  For grpo, dr_grpo
and dapo the reference is one ``forward_backward`` on the whole batch; bnpo is per
micro-batch by definition (as in TRL), so its reference is the same objective computed in
one unsplit pass: sum over micro-batches c of (|c| / B) * (token sum of c) / (active tokens
of c), written as per-token advantages A_t * w_c and a plain token sum (the clipped
surrogate is positively homogeneous in A; KL off).
"""
import pytest
import torch

from coevo.core.policy import Completion, LossConfig, SamplingParams
from coevo.backends.tiny import TinyPolicy
from coevo.rl.grpo import active_tokens, combine_metrics, micro_batch_args, policy_loss
from coevo.rl.grpo import grpo_update

LENGTHS = [3, 1, 5, 2, 4, 6, 2]  # B = 7
MASKS = {2: [1, 1, 0, 0, 1], 6: [0, 0]}  # world-inserted tokens; a rollout with no generated token
AGGS = ["grpo", "dr_grpo", "dapo", "bnpo"]


def padded(batch, advantages):
    """[B, T] mask, old log-probs and advantages ([B] or [B, T]) of a batch of completions."""
    T = max(1, max(len(c.token_ids) for c in batch))
    mask, old = torch.zeros(len(batch), T, dtype=torch.float64), torch.zeros(len(batch), T, dtype=torch.float64)
    per_token = any(isinstance(a, (list, tuple)) for a in advantages)
    adv = torch.zeros(len(batch), T, dtype=torch.float64) if per_token else torch.tensor(
        [float(a) for a in advantages], dtype=torch.float64)
    for r, c in enumerate(batch):
        L = len(c.token_ids)
        mask[r, :L] = torch.tensor(c.token_mask if c.token_mask is not None else [1] * L, dtype=torch.float64)
        old[r, :L] = torch.tensor(c.logprobs, dtype=torch.float64)
        if per_token:
            a = advantages[r]
            adv[r, :L] = torch.tensor(a if isinstance(a, (list, tuple)) else [a] * L, dtype=torch.float64)
    return mask, old, adv


class BigramPolicy:
    """log p(token | previous token) = log_softmax(W[previous])[token]; float64; records calls."""

    def __init__(self, vocab: int = 6, seed: int = 0):
        g = torch.Generator().manual_seed(seed)
        self.w = torch.randn(vocab, vocab, generator=g, dtype=torch.float64).requires_grad_(True)
        self.ref = self.w.detach() + 0.3 * torch.randn(vocab, vocab, generator=g, dtype=torch.float64)
        self.calls: list[tuple[int, dict]] = []
        self.grads: list[torch.Tensor] = []

    def logprobs(self, w, batch):
        T = max(1, max(len(c.token_ids) for c in batch))
        rows = []
        for c in batch:
            prev = torch.tensor(([c.prompt_ids[-1]] + c.token_ids)[:len(c.token_ids)], dtype=torch.long)
            lp = torch.log_softmax(w[prev], -1).gather(-1, torch.tensor(c.token_ids)[:, None])[:, 0]
            rows.append(torch.cat([lp, lp.new_zeros(T - len(c.token_ids))]))
        return torch.stack(rows)

    def forward_backward(self, batch, advantages, loss, **kw):
        self.calls.append((len(batch), dict(kw)))
        mask, old, adv = padded(batch, advantages)
        lp = self.logprobs(self.w, batch)
        ref = self.logprobs(self.ref, batch) if loss.kl_coef > 0 else None
        value, metrics = policy_loss(lp, old, adv, mask, loss, ref_logprobs=ref,
                                     num_active_tokens=kw.get("num_active_tokens"))
        (value * kw.get("scale", 1.0)).backward()
        return metrics

    def optim_step(self):
        self.grads.append(self.w.grad.clone())
        self.w.grad = None
        return {"grad_norm": 0.0}


def bigram_batch(pol: BigramPolicy, seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    comps = []
    for i, L in enumerate(LENGTHS):
        ids = torch.randint(0, pol.w.shape[0], (L,), generator=g).tolist()
        comps.append(Completion("p", "", [i % pol.w.shape[0]], ids, [], token_mask=MASKS.get(i)))
    with torch.no_grad():
        lp = pol.logprobs(pol.w, comps)
    for r, c in enumerate(comps):  # sampler log-probs off by up to 0.5: some ratios leave the clip range
        noise = (torch.rand(len(c.token_ids), generator=g, dtype=torch.float64) - 0.5)
        c.logprobs = (lp[r, :len(c.token_ids)] + noise).tolist()
    return comps


def advantages_for(comps, per_token: bool, seed: int = 2):
    g = torch.Generator().manual_seed(seed)
    if per_token:
        return [torch.randn(len(c.token_ids), generator=g).tolist() for c in comps]
    return torch.randn(len(comps), generator=g).tolist()


def bnpo_reference_advantages(comps, advantages, micro_batch):
    """Per-token advantages A_t * (|c| / B) / (active tokens of c), c = the micro-batch of t."""
    out, n = [], len(comps)
    for i in range(0, n, micro_batch):
        part = comps[i:i + micro_batch]
        w = (len(part) / n) / max(1, sum(active_tokens(c) for c in part))
        for c, a in zip(part, advantages[i:i + micro_batch]):
            a = a if isinstance(a, list) else [a] * len(c.token_ids)
            out.append([x * w for x in a])
    return out


def reference_backward(pol, comps, adv, loss, micro_batch):
    """Accumulate the gradient of the unsplit objective (bnpo: the per-micro-batch one) in one pass."""
    if loss.aggregation == "bnpo":
        adv = bnpo_reference_advantages(comps, adv, min(micro_batch, len(comps)))
        pol.forward_backward(comps, adv, LossConfig(loss.clip_eps, loss.clip_eps_high, "dapo"), num_active_tokens=1)
    else:
        pol.forward_backward(comps, adv, loss)


# ---------------------------------------------------------------------------------- bigram
def test_micro_batch_args_per_mode():
    # 7 sequences in parts of 3, 3, 1; 20 active tokens in the step
    assert micro_batch_args("grpo", 3, 7, 20) == (3 / 7, None)
    assert micro_batch_args("dr_grpo", 1, 7, 20) == (1 / 7, None)
    assert micro_batch_args("bnpo", 3, 7, 20) == (3 / 7, None)
    assert micro_batch_args("dapo", 3, 7, 20) == (1.0, 20)
    with pytest.raises(ValueError, match="aggregation"):
        micro_batch_args("token_mean", 3, 7, 20)


def test_active_tokens_respects_token_mask():
    pol = BigramPolicy()
    comps = bigram_batch(pol)
    assert [active_tokens(c) for c in comps] == [3, 1, 3, 2, 4, 6, 0]


@pytest.mark.parametrize("agg", AGGS)
def test_calls_scale_and_token_count(agg):
    pol = BigramPolicy()
    comps = bigram_batch(pol)
    adv = advantages_for(comps, False)
    loss = LossConfig(aggregation=agg, max_len=8)
    grpo_update(pol, comps, adv, loss, micro_batch=3)
    if agg == "dapo":
        want = [(3, {"scale": 1.0, "num_active_tokens": 19})] * 2 + [(1, {"scale": 1.0, "num_active_tokens": 19})]
    else:
        want = [(3, {"scale": 3 / 7, "num_active_tokens": None})] * 2 + [
            (1, {"scale": 1 / 7, "num_active_tokens": None})]
    assert pol.calls == want
    pol.calls.clear()
    grpo_update(pol, comps, adv, loss, micro_batch=7)  # fits: today's call, no extra arguments
    assert pol.calls == [(7, {})]


@pytest.mark.parametrize("agg", AGGS)
@pytest.mark.parametrize("per_token", [False, True])
@pytest.mark.parametrize("micro_batch", [1, 3, 7, 512])
def test_bigram_split_gradient_equals_unsplit(agg, per_token, micro_batch):
    pol = BigramPolicy()
    comps = bigram_batch(pol)
    adv = advantages_for(comps, per_token)
    kl = agg != "bnpo"  # bnpo's reference rewrites advantages, which the KL term does not see
    loss = LossConfig(clip_eps=0.2, clip_eps_high=0.28, aggregation=agg, max_len=8,
                      kl_coef=0.05 if kl else 0.0, kl_bias_correction=kl)
    grpo_update(pol, comps, adv, loss, micro_batch=micro_batch)
    got = pol.grads.pop()
    reference_backward(pol, comps, adv, loss, micro_batch)
    pol.optim_step()
    want = pol.grads.pop()
    assert want.abs().max().item() > 1e-3
    assert (got - want).abs().max().item() < 1e-12


def test_bnpo_one_sequence_per_micro_batch_is_grpo():
    pol = BigramPolicy()
    comps = bigram_batch(pol)
    adv = advantages_for(comps, True)
    grpo_update(pol, comps, adv, LossConfig(aggregation="bnpo"), micro_batch=1)
    grpo_update(pol, comps, adv, LossConfig(aggregation="grpo"), micro_batch=512)
    g_grpo, g_bnpo = pol.grads.pop(), pol.grads.pop()
    assert (g_bnpo - g_grpo).abs().max().item() < 1e-12


def test_old_rule_doubled_the_gradient():
    """The rule replaced here (each part's own mean, summed) on 5 identical sequences in parts
    of 4 and 1: mean + mean = 2 x the batch mean; grpo_update now gives 1 x."""
    pol = BigramPolicy()
    c = bigram_batch(pol)[0]
    comps = [Completion("p", "", c.prompt_ids, c.token_ids, c.logprobs) for _ in range(5)]
    loss = LossConfig(aggregation="grpo")
    grpo_update(pol, comps, [1.0] * 5, loss, micro_batch=4)
    new = pol.grads.pop()
    for i in (0, 4):
        pol.forward_backward(comps[i:i + 4], [1.0] * len(comps[i:i + 4]), loss)
    pol.optim_step()
    old = pol.grads.pop()
    pol.forward_backward(comps, [1.0] * 5, loss)
    pol.optim_step()
    unsplit = pol.grads.pop()
    assert (new - unsplit).abs().max().item() < 1e-12
    assert (old - 2.0 * unsplit).abs().max().item() < 1e-12


@pytest.mark.parametrize("agg", ["grpo", "dr_grpo", "dapo"])
def test_combined_metrics_equal_unsplit(agg):
    pol = BigramPolicy()
    comps = bigram_batch(pol)
    adv = advantages_for(comps, False)
    loss = LossConfig(aggregation=agg, max_len=8, kl_coef=0.05)
    split = grpo_update(pol, comps, adv, loss, micro_batch=3)
    whole = grpo_update(pol, comps, adv, loss, micro_batch=7)
    for k in ("loss", "clip_frac", "clip_frac_low", "clip_frac_high", "ratio_mean", "kl"):
        assert split[k] == pytest.approx(whole[k], abs=1e-12), k
    assert whole["clip_frac"] > 0 and whole["kl"] > 0


def test_combine_metrics_weights_by_hand():
    parts = [({"loss": 0.5, "clip_frac": 0.2, "n_seqs": 3.0, "other": 1.0}, 3, 10),
             ({"loss": 0.25, "clip_frac": 0.6, "n_seqs": 1.0, "other": 5.0}, 1, 30)]
    m = combine_metrics(parts, "grpo")
    assert m["loss"] == pytest.approx(0.5 * 3 / 4 + 0.25 / 4)  # by sequences
    assert m["clip_frac"] == pytest.approx(0.2 * 10 / 40 + 0.6 * 30 / 40)  # by active tokens
    assert m["n_seqs"] == 4.0 and m["other"] == pytest.approx(2.0)
    assert combine_metrics(parts, "dapo")["loss"] == pytest.approx(0.75)  # each already / step tokens


def test_empty_and_mismatched():
    pol = BigramPolicy()
    assert grpo_update(pol, [], [], LossConfig()) == {"skipped": 1.0}
    comps = bigram_batch(pol)
    with pytest.raises(ValueError, match="advantages"):
        grpo_update(pol, comps, [0.0], LossConfig())
    with pytest.raises(ValueError, match="micro_batch"):
        grpo_update(pol, comps, [0.0] * 7, LossConfig(), micro_batch=0)


# ---------------------------------------------------------------------------------- tiny backend
@pytest.fixture(scope="module")
def tiny_batch():
    """A TinyPolicy (its reference = the weights before a small perturbation) and 8 completions
    of lengths 1..8 cut from its own samples, sampler log-probs off by up to 0.3, one token_mask
    with zeros.  Shared by the tests, which never step the optimiser."""
    pol = TinyPolicy("x", seed=0)
    pol.set_reference()
    with torch.no_grad():  # move away from the reference so the KL term has a gradient
        g = torch.Generator().manual_seed(3)
        for p in pol.model.parameters():
            p.add_(0.02 * torch.randn(p.shape, generator=g))
    prompts = ["12+3=", "7*8=", "(1+2)*3=", "9-4="]
    outs = pol.sample(prompts, 2, SamplingParams(temperature=1.0, max_new_tokens=8))
    comps, g = [], torch.Generator().manual_seed(4)
    for i, c in enumerate(x for row in outs for x in row):
        L = max(1, min(len(c.token_ids), 1 + (3 * i) % 8))  # different lengths: a prefix of a sample
        noise = (0.6 * (torch.rand(L, generator=g) - 0.5)).tolist()
        mask = [1, 0, 0, 1, 1, 1, 1, 1][:L] if i == 5 else None
        comps.append(Completion(c.prompt, "", c.prompt_ids, c.token_ids[:L],
                                [a + b for a, b in zip(c.logprobs[:L], noise)], meta=dict(c.meta), token_mask=mask))
    return pol, comps


@pytest.mark.parametrize("agg", AGGS)
@pytest.mark.parametrize("per_token", [False, True])
def test_tiny_split_gradient_equals_unsplit(agg, per_token, tiny_batch):
    pol, comps = tiny_batch
    assert len({len(c.token_ids) for c in comps}) > 2 and any(0 in (c.token_mask or [1]) for c in comps)
    adv = advantages_for(comps, per_token)
    kl = agg != "bnpo"
    loss = LossConfig(clip_eps=0.2, clip_eps_high=0.28, aggregation=agg, max_len=8,
                      kl_coef=0.05 if kl else 0.0, kl_bias_correction=kl)
    grads: list[list[torch.Tensor]] = []

    def capture():
        grads.append([p.grad.clone() for p in pol.model.parameters()])
        pol.model.zero_grad(set_to_none=True)
        return {}

    pol.optim_step = capture  # no optimiser step: every call sees the same weights
    for mb in (1, 3, len(comps)):
        grpo_update(pol, comps, adv, loss, micro_batch=mb)
        got = grads.pop()
        reference_backward(pol, comps, adv, loss, mb)
        capture()
        want = grads.pop()
        diff = max((a - b).abs().max().item() for a, b in zip(got, want))
        scale = max(b.abs().max().item() for b in want)
        assert scale > 1e-4, (mb, scale)
        assert diff < 1e-6, (agg, per_token, mb, diff, scale)
