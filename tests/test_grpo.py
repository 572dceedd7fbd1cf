"""GRPO core against hand-computed tensors."""
import math

import numpy as np
import pytest
import torch

from coevo.core.policy import LossConfig
from coevo.rl import bucket_advantages, group_advantages, policy_loss, token_logprobs

REWARDS = torch.tensor([[1.0, 0.0, 0.0, 1.0], [1.0, 1.0, 1.0, 0.0]])


def test_group_advantages_population_std():
    a = group_advantages(REWARDS)
    # group 0: mean .5, population std .5; group 1: mean .75, std sqrt(.1875)
    s1 = math.sqrt(0.1875)
    want = torch.tensor([[0.5, -0.5, -0.5, 0.5], [0.25, 0.25, 0.25, -0.75]])
    want = want / torch.tensor([[0.5 + 1e-6], [s1 + 1e-6]])
    assert torch.allclose(a, want, atol=1e-7)
    assert a[1, 3].item() == pytest.approx(-math.sqrt(3), abs=1e-5)


def test_group_advantages_sample_std_batch_and_none():
    a = group_advantages(REWARDS, unbiased=True)
    assert a[0, 0].item() == pytest.approx(0.5 / (math.sqrt(1 / 3) + 1e-6), abs=1e-7)
    # whole batch: 5 ones of 8, population std sqrt(15)/8; still centred on the group mean
    b = group_advantages(REWARDS, scale="batch")
    assert b[0, 0].item() == pytest.approx(0.5 / (math.sqrt(15) / 8 + 1e-6), abs=1e-7)
    assert b[1, 3].item() == pytest.approx(-0.75 / (math.sqrt(15) / 8 + 1e-6), abs=1e-7)
    n = group_advantages(REWARDS, scale="none")
    assert torch.equal(n, REWARDS - REWARDS.mean(1, keepdim=True))


def test_group_advantages_equal_rewards_are_zero_not_nan():
    r = torch.tensor([[1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0]])
    for scale in ("group", "batch", "none"):
        a = group_advantages(r, scale=scale)
        assert torch.equal(a, torch.zeros_like(r))
    assert torch.equal(group_advantages(torch.tensor([[3.0]]), unbiased=True), torch.zeros(1, 1))
    with pytest.raises(ValueError, match="scale"):
        group_advantages(r, scale="global")


def test_bucket_advantages_numpy_and_torch():
    r = np.array([1.0, 0.0, 1.0, 1.0, 0.5])
    hops = np.array([1, 1, 2, 2, 3])
    a = bucket_advantages(r, hops)
    assert isinstance(a, np.ndarray)
    d = 0.5 / (0.5 + 1e-6)
    np.testing.assert_allclose(a, [d, -d, 0.0, 0.0, 0.0], atol=1e-12)
    t = bucket_advantages(torch.tensor(r, dtype=torch.float32), torch.tensor(hops))
    assert isinstance(t, torch.Tensor) and t.dtype == torch.float32
    np.testing.assert_allclose(t.numpy(), a, atol=1e-6)
    # three-item bucket with string labels, interleaved: mean 1, population std sqrt(2/3)
    a3 = bucket_advantages([0, 9, 1, 2], ["x", "y", "x", "x"])
    s = math.sqrt(2 / 3)
    np.testing.assert_allclose(a3, [-1 / (s + 1e-6), 0.0, 0.0, 1 / (s + 1e-6)], atol=1e-12)


def _batch():
    # old log-probs 0, so ratio = exp(logprobs)
    ratio = torch.tensor([[1.0, 1.5, 0.5], [1.1, 0.7, 2.0]])
    lp = ratio.log().requires_grad_(True)
    old = torch.zeros(2, 3)
    adv = torch.tensor([1.0, -2.0])
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]])
    return lp, old, adv, mask


# per-token losses, eps 0.2:  seq 0 (A=+1): -1, -1.2 (clipped at 1.2), -0.5  -> sum -2.7
#                             seq 1 (A=-2): 2.2, 1.6 (clipped at 0.8), [masked] -> sum 3.8
@pytest.mark.parametrize(
    "agg,kw,want",
    [
        ("grpo", {}, (-2.7 / 3 + 3.8 / 2) / 2),
        ("bnpo", {}, 1.1 / 5),
        ("dr_grpo", {}, 1.1 / 6),  # max_len 3: B * L = 2 * 3
        ("dapo", {}, 1.1 / 5),
        ("dapo", {"num_active_tokens": 11}, 1.1 / 11),
    ],
)
def test_policy_loss_aggregations(agg, kw, want):
    lp, old, adv, mask = _batch()
    loss, m = policy_loss(lp, old, adv, mask, LossConfig(aggregation=agg, max_len=3), **kw)
    assert loss.item() == pytest.approx(want, abs=1e-6)
    assert m["loss"] == pytest.approx(want, abs=1e-6)
    assert m["clip_frac"] == pytest.approx(0.4)  # (0,1) high-clipped, (1,1) low-clipped
    assert m["clip_frac_high"] == pytest.approx(0.2) and m["clip_frac_low"] == pytest.approx(0.2)
    assert m["ratio_mean"] == pytest.approx(4.8 / 5, abs=1e-6)
    assert m["kl"] == 0.0


def test_policy_loss_dr_grpo_needs_fixed_max_len():
    lp, old, adv, mask = _batch()
    with pytest.raises(ValueError, match="max_len"):
        policy_loss(lp, old, adv, mask, LossConfig(aggregation="dr_grpo"))
    # the other modes do not read max_len
    a, _ = policy_loss(lp, old, adv, mask, LossConfig(aggregation="grpo"))
    b, _ = policy_loss(lp, old, adv, mask, LossConfig(aggregation="grpo", max_len=99))
    assert a.item() == b.item()


def test_policy_loss_dr_grpo_max_len_and_clip_higher():
    lp, old, adv, mask = _batch()
    loss, _ = policy_loss(lp, old, adv, mask, LossConfig(aggregation="dr_grpo", max_len=10))
    assert loss.item() == pytest.approx(1.1 / 20, abs=1e-6)
    # clip-higher 0.6: token (0,1) with ratio 1.5 is no longer clipped -> -1.5
    loss, m = policy_loss(lp, old, adv, mask, LossConfig(aggregation="grpo", clip_eps_high=0.6))
    assert loss.item() == pytest.approx((-3.0 / 3 + 3.8 / 2) / 2, abs=1e-6)
    assert m["clip_frac_high"] == 0.0


def test_policy_loss_gradient_zero_on_clipped_tokens():
    lp, old, adv, mask = _batch()
    loss, _ = policy_loss(lp, old, adv, mask, LossConfig(aggregation="grpo"))
    loss.backward()
    g = lp.grad
    # unclipped: d(-r A)/d lp = -r A, then / (3 tokens) / (2 sequences)
    assert g[0, 0].item() == pytest.approx(-1.0 / 6, abs=1e-6)
    assert g[0, 2].item() == pytest.approx(-0.5 / 6, abs=1e-6)
    assert g[1, 0].item() == pytest.approx(2.2 / 4, abs=1e-6)
    assert g[0, 1].item() == 0.0 and g[1, 1].item() == 0.0 and g[1, 2].item() == 0.0


def test_policy_loss_kl_k3():
    lp, old, adv, mask = _batch()
    ref = lp.detach().clone()
    ref[0, 1] += math.log(2.0)  # ref - lp = ln 2 -> k3 = 2 - ln 2 - 1
    k3 = 1.0 - math.log(2.0)
    base, _ = policy_loss(lp, old, adv, mask, LossConfig())
    loss, m = policy_loss(lp, old, adv, mask, LossConfig(kl_coef=0.1), ref_logprobs=ref)
    assert loss.item() - base.item() == pytest.approx(0.1 * k3 / 3 / 2, abs=1e-6)
    assert m["kl"] == pytest.approx(k3 / 5, abs=1e-6)
    # kl_coef 0: reported, not added
    loss0, m0 = policy_loss(lp, old, adv, mask, LossConfig(kl_coef=0.0), ref_logprobs=ref)
    assert loss0.item() == pytest.approx(base.item(), abs=1e-7) and m0["kl"] == pytest.approx(k3 / 5, abs=1e-6)


def test_policy_loss_token_advantages_broadcast_and_errors():
    lp, old, adv, mask = _batch()
    a, _ = policy_loss(lp, old, adv, mask, LossConfig(aggregation="bnpo"))
    b, _ = policy_loss(lp, old, adv[:, None].expand(2, 3), mask, LossConfig(aggregation="bnpo"))
    assert a.item() == pytest.approx(b.item(), abs=1e-7)
    with pytest.raises(ValueError, match="aggregation"):
        policy_loss(lp, old, adv, mask, LossConfig(aggregation="token_mean"))
    with pytest.raises(ValueError, match="advantages"):
        policy_loss(lp, old, torch.zeros(3), mask, LossConfig())


def test_token_logprobs():
    logits = torch.tensor([[[0.0, math.log(3.0), 0.0], [1.0, 1.0, 1.0]]])  # softmax (.2, .6, .2), uniform
    out = token_logprobs(logits, torch.tensor([[1, 2]]))
    assert out.shape == (1, 2)
    assert out[0, 0].item() == pytest.approx(math.log(0.6), abs=1e-6)
    assert out[0, 1].item() == pytest.approx(-math.log(3.0), abs=1e-6)
    ref = torch.log_softmax(logits, -1).gather(-1, torch.tensor([[[1], [2]]])).squeeze(-1)
    assert torch.allclose(out, ref)


def test_policy_loss_kl_bias_correction_times_ratio_not_detached():
    lp, old, adv, mask = _batch()
    ref = lp.detach().clone()
    ref[0, 1] += math.log(2.0)  # ratio there 1.5, k3 = 1 - ln 2; elsewhere ref = lp, k3 = 0
    cfg = LossConfig(kl_coef=0.1, kl_bias_correction=True)
    base, _ = policy_loss(lp, old, adv, mask, LossConfig())
    loss, m = policy_loss(lp, old, adv, mask, cfg, ref_logprobs=ref)
    assert loss.item() - base.item() == pytest.approx(0.1 * 1.5 * (1 - math.log(2.0)) / 6, abs=1e-7)
    assert m["kl"] == pytest.approx(1.5 * (1 - math.log(2.0)) / 5, abs=1e-7)  # the corrected term
    loss.backward()
    # token (0,1) is clipped (no policy-gradient); d(ratio * k3)/d lp = ratio * k3 + ratio * (1 - e^(ref-lp))
    # = 1.5 (1 - ln 2) + 1.5 (1 - 2) = -1.5 ln 2, times 0.1 / (3 tokens * 2 sequences)
    assert lp.grad[0, 1].item() == pytest.approx(-0.025 * math.log(2.0), abs=1e-7)
    lp.grad = None
    plain, _ = policy_loss(lp, old, adv, mask, LossConfig(kl_coef=0.1), ref_logprobs=ref)
    plain.backward()
    assert lp.grad[0, 1].item() == pytest.approx(-1.0 / 60, abs=1e-7)  # 0.1 / 6 * (1 - 2)


# --- TRL reference ----------------------------------------------------------------------------
# Transcribed from huggingface/trl v1.9.0 (commit 35def3ee000a87f6839e66f4b7749b06274ed1b3; same
# lines at main f2cd5771), trl/trainer/grpo_trainer.py, GRPOTrainer._compute_loss (from line 2991): lines
# 3029-3030 (advantages), 3054 and 3066 (ratio), 3069-3076 (KL, bias correction), 3084-3091 (surrogate),
# 3120-3121 (beta * KL), 3124-3142 (aggregation):
# token-level importance sampling, delta=None, no vLLM correction, one process, no gradient
# accumulation (TRL then divides grpo/bnpo/dr_grpo by 1).
def trl_compute_loss(per_token_logps, old_per_token_logps, ref_per_token_logps, advantages, mask, loss_type,
                     beta, epsilon_low, epsilon_high, max_completion_length, num_items_in_batch,
                     use_bias_correction_kl):
    if advantages.dim() == 1:
        advantages = advantages.unsqueeze(1)
    log_ratio = per_token_logps - old_per_token_logps
    coef_1 = torch.exp(log_ratio)
    if beta != 0.0:
        per_token_kl = (
            torch.exp(ref_per_token_logps - per_token_logps) - (ref_per_token_logps - per_token_logps) - 1
        )
        if use_bias_correction_kl:
            per_token_kl = per_token_kl * coef_1
    coef_2 = torch.clamp(coef_1, 1 - epsilon_low, 1 + epsilon_high)
    per_token_loss1 = coef_1 * advantages
    per_token_loss2 = coef_2 * advantages
    per_token_loss = -torch.min(per_token_loss1, per_token_loss2)
    if beta != 0.0:
        per_token_loss = per_token_loss + beta * per_token_kl
    if loss_type == "grpo":
        loss = ((per_token_loss * mask).sum(-1) / mask.sum(-1).clamp(min=1.0)).mean()
    elif loss_type == "bnpo":
        loss = (per_token_loss * mask).sum() / mask.sum().clamp(min=1.0)
    elif loss_type == "dr_grpo":
        loss = (per_token_loss * mask).sum() / (per_token_loss.size(0) * max_completion_length)
    else:  # dapo
        normalizer = num_items_in_batch.clamp(min=1.0) / 1
        loss = (per_token_loss * mask).sum() / normalizer
    return loss


@pytest.mark.parametrize("agg", ["grpo", "dr_grpo", "dapo", "bnpo"])
@pytest.mark.parametrize("bias_correction", [False, True])
@pytest.mark.parametrize("token_adv", [False, True])
def test_policy_loss_matches_trl_compute_loss(agg, bias_correction, token_adv):
    g = torch.Generator().manual_seed(7)
    b, t = 6, 9
    old = -torch.rand(b, t, generator=g) * 3
    lp0 = old + 0.4 * torch.randn(b, t, generator=g)  # ratios on both sides of the clip range
    ref = lp0 + 0.3 * torch.randn(b, t, generator=g)
    adv = torch.randn(b, t, generator=g) if token_adv else torch.randn(b, generator=g)
    mask = (torch.rand(b, t, generator=g) < 0.7).long()
    mask[2] = 0  # a sequence with no active token
    n_items = torch.tensor(float(mask.sum() + 5))  # dapo: the step's count, larger than this batch's
    cfg = LossConfig(clip_eps=0.2, clip_eps_high=0.28, aggregation=agg, kl_coef=0.04, max_len=12,
                     kl_bias_correction=bias_correction)
    lp = lp0.clone().requires_grad_(True)
    ours, _ = policy_loss(lp, old, adv, mask, cfg, ref_logprobs=ref,
                          num_active_tokens=n_items if agg == "dapo" else None)
    ours.backward()
    lp_trl = lp0.clone().requires_grad_(True)
    theirs = trl_compute_loss(lp_trl, old, ref, adv, mask, agg, 0.04, 0.2, 0.28, 12, n_items, bias_correction)
    theirs.backward()
    assert ours.item() == theirs.item()  # the same operations in the same order: bit-identical
    # gradients: identical, except that with the bias correction autograd adds the ratio's two uses
    # in another order (measured 1e-9 .. 4e-9)
    assert (lp.grad - lp_trl.grad).abs().max().item() <= (1e-7 if bias_correction else 0.0)
    assert lp.grad.abs().max().item() > 1e-3  # a real gradient, not two zeros
