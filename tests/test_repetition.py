"""R-Zero repetition penalty: BLEU by hand and against NLTK, clusters, penalty, bench."""
import math

import numpy as np
import pytest
from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

from coevo.rewards.repetition import (
    bench_bleu,
    bench_questions,
    bleu_clusters,
    canonical_labels,
    pairwise_bleu,
    reference_pairwise_bleu,
    repetition_penalty,
)


def nltk_bleu(hyp: str, ref: str) -> float:
    return sentence_bleu([ref.split()], hyp.split(), smoothing_function=SmoothingFunction().method1)


def test_bleu_by_hand_equal_lengths():
    hyp, ref = "the cat sat on the mat", "the cat sat on a mat"
    # p1 = 5/6 (second "the" clipped), p2 = 3/5, p3 = 2/4, p4 = 1/3, BP = 1
    want = (5 / 6 * 3 / 5 * 2 / 4 * 1 / 3) ** 0.25
    assert nltk_bleu(hyp, ref) == pytest.approx(want, abs=1e-12)
    for d in ("reference", "symmetric"):
        assert pairwise_bleu([hyp, ref], direction=d)[0, 1] == pytest.approx(want, abs=1e-12)


def test_bleu_direction_short_vs_long():
    short, long = "a b c", "a b c d e"
    # hyp short: p = 1, 1, 1, smoothed 0.1/1; BP = exp(1 - 5/3)
    s_to_l = math.exp(1 - 5 / 3) * 0.1**0.25
    # hyp long: p = 3/5, 2/4, 1/3, smoothed 0.1/2; BP = 1
    l_to_s = (3 / 5 * 2 / 4 * 1 / 3 * 0.05) ** 0.25
    assert nltk_bleu(short, long) == pytest.approx(s_to_l, abs=1e-12)
    assert nltk_bleu(long, short) == pytest.approx(l_to_s, abs=1e-12)
    # R-Zero's loop: the earlier question is the hypothesis, mirrored
    assert pairwise_bleu([short, long], "reference")[1, 0] == pytest.approx(s_to_l, abs=1e-12)
    assert pairwise_bleu([long, short], "reference")[0, 1] == pytest.approx(l_to_s, abs=1e-12)
    sym = pairwise_bleu([long, short], "symmetric")
    assert sym[0, 1] == sym[1, 0] == pytest.approx((s_to_l + l_to_s) / 2, abs=1e-12)


def test_bleu_edge_cases():
    qs = ["x y", "a b", "a b", "", "   ", "a"]
    s = pairwise_bleu(qs, "reference")
    assert s[0, 1] == 0.0  # no unigram match -> 0 (NLTK returns 0 before smoothing)
    assert s[1, 2] == pytest.approx(0.1**0.5, abs=1e-12)  # identical 2-token strings: 3-/4-grams smoothed
    assert s[3, 4] == 0.0 and s[1, 3] == 0.0  # empty hypothesis / reference
    assert np.all(np.diag(s) == 1.0)
    for d in ("reference", "symmetric"):
        np.testing.assert_allclose(pairwise_bleu(qs, d), reference_pairwise_bleu(qs, direction=d), atol=1e-12)
    assert pairwise_bleu([]).shape == (0, 0)
    with pytest.raises(ValueError, match="direction"):
        pairwise_bleu(qs, direction="hyp")


def test_fast_matches_nltk_every_pair():
    qs = bench_questions(60, seed=3) + ["the the the the", "the the", "1 + 1 = 2 ?"]
    for d in ("reference", "symmetric"):
        ours = pairwise_bleu(qs, d)
        ref = reference_pairwise_bleu(qs, direction=d)
        assert np.max(np.abs(ours - ref)) < 1e-9
    # explicit R-Zero-style loop for the reference direction: j >= i, hyp = i, mirrored
    n = len(qs)
    loop = np.eye(n)
    for i in range(n):
        for j in range(i + 1, n):
            loop[i, j] = loop[j, i] = nltk_bleu(qs[i], qs[j])
    assert np.max(np.abs(pairwise_bleu(qs, "reference") - loop)) < 1e-9
    idx = [(5, 2), (2, 5), (0, 0), (10, 40)]
    np.testing.assert_allclose(
        reference_pairwise_bleu(qs, idx, direction="reference"), [loop[i, j] for i, j in idx], atol=1e-12
    )


BATCH = [
    "Alice has 5 apples and buys 3 more apples . How many apples does Alice have now ?",
    "Alice has 6 apples and buys 3 more apples . How many apples does Alice have now ?",
    "Bob has 5 apples and buys 3 more apples . How many apples does Bob have now ?",
    "What is the remainder when 7 ^ 100 is divided by 13 ?",
]


def test_clusters_and_penalty():
    labels = bleu_clusters(BATCH)
    assert labels[0] == labels[1] == labels[2] != labels[3]
    np.testing.assert_allclose(repetition_penalty(BATCH), [0.75, 0.75, 0.75, 0.25])
    np.testing.assert_allclose(repetition_penalty(BATCH, lam=0.5, direction="reference"), [0.375] * 3 + [0.125])
    # threshold 0 (distance must be below 0): every question alone
    np.testing.assert_allclose(repetition_penalty(BATCH, threshold=1e-9), [0.25] * 4)
    assert repetition_penalty([]).shape == (0,)
    np.testing.assert_allclose(repetition_penalty(["only one"], lam=2.0), [2.0])
    with pytest.raises(ValueError, match="linkage"):
        bleu_clusters(BATCH, linkage="ward")


def test_symmetric_similarity_does_not_depend_on_order():
    qs = bench_questions(120, seed=5)
    perm = np.random.default_rng(0).permutation(len(qs))
    s = pairwise_bleu(qs)
    assert np.array_equal(pairwise_bleu([qs[i] for i in perm]), s[np.ix_(perm, perm)])
    # the reference direction does depend on the order (hypothesis = earlier question)
    r = pairwise_bleu(qs, "reference")
    assert not np.array_equal(pairwise_bleu([qs[i] for i in perm], "reference"), r[np.ix_(perm, perm)])
    # (clusters can still differ under permutation when two candidate merges tie exactly:
    # average linkage then merges the first one it meets, as sklearn/scipy do)


def test_bench_small():
    r = bench_bleu(n=200, sample_pairs=300, seed=1, n_sub=60)
    assert r["n"] == 200 and r["pairs"] == 200 * 199 // 2
    assert r["identical_clusters"] is True
    assert r["max_abs_diff"] < 1e-9
    assert 1 < r["n_clusters"] < 200
    for key in ("reference_seconds_per_pair", "reference_seconds_extrapolated", "ours_seconds", "speedup"):
        assert r[key] > 0
