import pytest
import torch

from coevo.core.policy import LossConfig, SamplingParams
from coevo.backends.tiny import TinyConfig, TinyPolicy


def _pol(seed=0):
    return TinyPolicy("t", TinyConfig(vocab_size=31, block_size=48, n_layer=1, n_head=2, n_embd=32), lr=1e-2, seed=seed)


def test_sample_shapes_logprobs_match_full_forward():
    pol = _pol()
    outs = pol.sample(["<solve>1+2=", "<propose>"], 3, SamplingParams(max_new_tokens=6))
    assert len(outs) == 2 and all(len(o) == 3 for o in outs)
    c = outs[0][1]
    assert len(c.token_ids) == len(c.logprobs) <= 6
    idx = torch.tensor([c.prompt_ids + c.token_ids])
    lp = torch.log_softmax(pol.model(idx)[0, :-1], -1)
    P = len(c.prompt_ids)
    ref = [lp[P - 1 + i, t].item() for i, t in enumerate(c.token_ids)]
    assert max(abs(a - b) for a, b in zip(ref, c.logprobs)) < 1e-4


def test_sampling_is_deterministic_given_seed_and_state_roundtrip(tmp_path):
    a, b = _pol(1), _pol(1)
    sp = SamplingParams(max_new_tokens=5)
    assert [c.text for c in a.sample(["<propose>"], 4, sp)[0]] == [c.text for c in b.sample(["<propose>"], 4, sp)[0]]
    a.save(tmp_path / "a.pt")
    nxt = [c.text for c in a.sample(["<propose>"], 4, sp)[0]]
    c = _pol(7)
    c.load(tmp_path / "a.pt")
    assert [x.text for x in c.sample(["<propose>"], 4, sp)[0]] == nxt


def test_forward_backward_moves_logprob_in_advantage_direction():
    pol = _pol(2)
    comps = pol.sample(["<solve>3+4="], 4, SamplingParams(max_new_tokens=4))[0]
    adv = [1.0, -1.0, 0.0, 0.0]
    before = pol.version
    lp0 = sum(comps[0].logprobs)
    pol.forward_backward(comps, adv, LossConfig())
    pol.optim_step()
    assert pol.version != before
    idx = torch.tensor([comps[0].prompt_ids + comps[0].token_ids])
    lp = torch.log_softmax(pol.model(idx)[0, :-1], -1)
    P = len(comps[0].prompt_ids)
    lp1 = sum(lp[P - 1 + i, t].item() for i, t in enumerate(comps[0].token_ids))
    assert lp1 > lp0


def test_greedy_sampling_is_argmax():
    pol = _pol(3)
    g1 = pol.sample(["<solve>9*9="], 2, SamplingParams(greedy=True, max_new_tokens=5))[0]
    assert g1[0].text == g1[1].text


def test_response_prefix_extends_the_prompt():
    from coevo.core.policy import full_text

    pol = _pol()
    c = pol.sample(["<solve>"], 1, SamplingParams(greedy=True, max_new_tokens=4, response_prefix="1+2="))[0][0]
    assert c.prompt_ids == pol.tok.encode("<solve>1+2=") and c.prompt == "<solve>"
    assert full_text(c) == "1+2=" + c.text


def test_token_prefixes_continue_after_the_prompt_and_logprobs_match():
    pol = _pol(4)
    pre = pol.tokenize("12+")
    c = pol.sample(["<solve>"], 2, SamplingParams(max_new_tokens=6, temperature=0.7), token_prefixes=[pre])[0][1]
    assert c.prompt_ids == pol.tok.encode("<solve>") + pre and pol.tokenize("12+") == [pol.tok.stoi[ch] for ch in "12+"]
    idx = torch.tensor([c.prompt_ids + c.token_ids])
    lp = torch.log_softmax(pol.model(idx)[0, :-1] / 0.7, -1)
    P = len(c.prompt_ids)
    assert max(abs(lp[P - 1 + i, t].item() - x) for i, (t, x) in enumerate(zip(c.token_ids, c.logprobs))) < 1e-4
    pol.close()  # a no-op on the tiny backend


def test_stop_strings_cut_text_and_keep_tokens():
    pol = _pol(5)
    free = pol.sample(["<propose>"], 16, SamplingParams(max_new_tokens=10))[0]
    stop = next(ch for ch in "0123456789+-*=() ;" if any(ch in c.text[1:] for c in free))
    again = _pol(5).sample(["<propose>"], 16, SamplingParams(max_new_tokens=10, stop=[stop]))[0]
    hit = [c for c in again if c.meta.get("stop") == stop]
    assert hit
    for c in hit:
        assert c.finish_reason == "stop" and stop not in c.text
        assert pol.tok.decode(c.token_ids) == c.text + stop and len(c.logprobs) == len(c.token_ids)
    # rows that never produce the stop string are drawn exactly as without it
    for a, b in zip(free, again):
        if stop not in a.text:
            assert a.token_ids == b.token_ids


def test_audit_stream_is_separate():
    sp = SamplingParams(max_new_tokens=5)
    a, b = _pol(6), _pol(6)
    x = [c.token_ids for c in a.sample(["<propose>"], 4, sp)[0]]
    b.sample(["<propose>"], 4, SamplingParams(max_new_tokens=5, stream="audit"))
    assert [c.token_ids for c in b.sample(["<propose>"], 4, sp)[0]] == x
    with pytest.raises(ValueError, match="stream"):
        a.sample(["<propose>"], 1, SamplingParams(stream="eval"))
