"""BM25Retriever over bm25s: hand-checked scores and rankings, tie-break, source restriction."""
import math

import numpy as np
import pytest

from coevo.retrieval.base import Passage, Retriever, format_passages
from coevo.retrieval.bm25 import BM25Retriever, tokenize, top_k_indices

PS = [Passage("p1", "s1", "the cat sat on the mat"), Passage("p2", "s2", "a dog chased the cat"),
      Passage("p3", "s2", "birds fly"), Passage("p0", "s3", "cat cat")]


def lucene(tf, dl, avgdl, df, n, k1=1.5, b=0.75):
    """bm25s 'lucene': idf = ln(1 + (N - df + .5)/(df + .5)), tf part tf/(tf + k1(1 - b + b dl/avgdl))."""
    return math.log(1 + (n - df + 0.5) / (df + 0.5)) * tf / (tf + k1 * (1 - b + b * dl / avgdl))


def test_tokenize_drops_stopwords_keeps_single_chars():
    assert tokenize("The Cat of 7 x", {"the", "of"}) == ["cat", "7", "x"]


def test_scores_match_hand_computation():
    r = BM25Retriever(PS)
    assert isinstance(r, Retriever)
    # doc lengths after stop words: p0 2 (cat cat), p1 3 (cat sat mat), p2 3 (dog chased cat), p3 2
    avgdl = 10 / 4
    [hits] = r.search(["cat"], 3)
    assert [p.pid for p in hits] == ["p0", "p1", "p2"]  # p1, p2 tie -> pid order
    assert hits[0].score == pytest.approx(lucene(2, 2, avgdl, 3, 4), abs=1e-5)  # 0.217817
    assert hits[1].score == pytest.approx(lucene(1, 3, avgdl, 3, 4), abs=1e-5)  # 0.130890
    assert hits[1].score == hits[2].score
    [hits] = r.search(["dog cat"], 2)
    dog = lucene(1, 3, avgdl, 1, 4)
    assert [p.pid for p in hits] == ["p2", "p0"]
    assert hits[0].score == pytest.approx(dog + lucene(1, 3, avgdl, 3, 4), abs=1e-5)


def test_batched_search_and_no_match_fills_by_pid():
    r = BM25Retriever(PS)
    out = r.search(["birds", "zebra"], 2)
    assert [p.pid for p in out[0]] == ["p3", "p0"]
    assert [p.pid for p in out[1]] == ["p0", "p1"] and out[1][0].score == 0.0
    with pytest.raises(TypeError):
        r.search("cat", 1)


def test_source_restriction():
    r = BM25Retriever(PS)
    [hits] = r.search(["cat"], 3, sources={"s2"})
    assert [p.pid for p in hits] == ["p2", "p3"]  # only s2's passages, never more than it has
    [hits] = r.search(["cat"], 5, sources=["s1", "s3"])
    assert [p.pid for p in hits] == ["p0", "p1"]
    assert r.search(["cat"], 3, sources=set()) == [[]]


def test_deterministic_regardless_of_input_order():
    a = BM25Retriever(PS).search(["cat mat", "dog"], 4)
    b = BM25Retriever(list(reversed(PS))).search(["cat mat", "dog"], 4)
    assert a == b


def test_top_k_indices_ties_and_inf():
    s = np.array([1.0, 3.0, 1.0, -np.inf, 3.0, 2.0])
    assert top_k_indices(s, 3).tolist() == [1, 4, 5]
    assert top_k_indices(s, 5).tolist() == [1, 4, 5, 0, 2]
    assert top_k_indices(s, 10).tolist() == [1, 4, 5, 0, 2]


def test_format_passages_search_r1_style():
    ps = [Passage("a", "s", "x y", title="T"), Passage("b", "s", "z")]
    assert format_passages(ps) == "Doc 1(Title: T) x y\nDoc 2 z\n"  # each entry ends in a newline, as Search-R1's
