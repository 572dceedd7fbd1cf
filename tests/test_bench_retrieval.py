"""``coevo bench retrieval`` on a tiny corpus: keys and top-k agreement (never speed); the
reference BM25 against hand-computed Lucene scores."""
import json
import math

import pytest
from typer.testing import CliRunner

from coevo.cli import app
from coevo.retrieval.base import Passage
from coevo.retrieval.bench import SparseBM25, pseudo_word, synthetic_corpus, synthetic_queries, topk_agreement
from coevo.retrieval.bm25 import BM25Retriever


def test_generator_is_deterministic():
    a, b = synthetic_corpus(50, seed=3), synthetic_corpus(50, seed=3)
    assert a == b and a != synthetic_corpus(50, seed=4)
    assert a[0].pid == "p0000000" and a[12].source == "s000001" and 40 <= len(a[0].text.split()) <= 80
    assert synthetic_queries(a, 5, 1) == synthetic_queries(b, 5, 1)
    assert len({pseudo_word(i) for i in range(5000)}) == 5000


def test_reference_scores_hand_computed():
    # 3 passages; "apple" in d0 (tf 2, len 3) and d1 (tf 1, len 2); N=3, df=2, avgdl=(3+2+1)/3=2
    ps = [Passage("d0", "s", "apple apple pear"), Passage("d1", "s", "apple kiwi"), Passage("d2", "s", "plum")]
    ref = SparseBM25(ps, index_title=False)
    idf = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))
    k1, b = 1.5, 0.75
    d0 = idf * 2 / (2 + k1 * (1 - b + b * 3 / 2))
    d1 = idf * 1 / (1 + k1 * (1 - b + b * 2 / 2))
    assert ref.scores("apple") == pytest.approx([d0, d1, 0.0])
    assert ref.scores("apple apple") == pytest.approx([2 * d0, 2 * d1, 0.0])  # repeated terms count twice
    ours = BM25Retriever(ps, index_title=False)
    assert ours.scores("apple") == pytest.approx(ref.scores("apple"), abs=1e-6)
    assert ref.search_ids(["apple", "zzz"], 2) == [["d0", "d1"], ["d0", "d1"]]  # zero scores: pid order


def test_topk_agreement_hand_values():
    r = topk_agreement([["a", "b"], ["c", "d"]], [["b", "a"], ["c", "e"]], 2)
    assert r == {"overlap_at_k": 0.75, "identical_share": 0.0, "min_overlap_at_k": 0.5}
    with pytest.raises(ValueError):
        topk_agreement([], [], 2)


def test_bench_command_tiny():
    res = CliRunner().invoke(app, ["bench", "retrieval", "--passages", "300", "--queries", "40", "--k", "5", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert {"ours", "reference", "ratio", "agreement", "passages", "queries", "k"} <= set(out)
    assert out["passages"] == 300 and out["queries"] == 40
    assert out["ours"]["queries_per_s"] > 0 and out["reference"]["queries_per_s"] > 0
    assert out["agreement"]["overlap_at_k"] == 1.0 and out["agreement"]["identical_share"] == 1.0
    assert out["agreement"]["max_top1_score_diff"] < 1e-4
    bad = CliRunner().invoke(app, ["bench", "retrieval", "--queries", "0"])
    assert bad.exit_code == 2
