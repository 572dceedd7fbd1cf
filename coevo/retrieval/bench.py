"""``coevo bench retrieval``: BM25Retriever queries/s next to a reference measured in the same run.

Corpus: ``synthetic_corpus(n_passages, seed)`` — deterministic pseudo-words drawn from a
Zipf(1.1) distribution over a 30,000-word vocabulary, 40–80 words per passage, 10 passages
per source.  Queries: 4 words of a random passage plus one random vocabulary word.

Reference: ``SparseBM25``, the same Lucene BM25 written directly as a scipy CSC matrix of
per-(passage, term) weights ``idf(t) * tf / (tf + k1 * (1 - b + b * dl / avgdl))`` with
``idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))`` (bm25s ``scoring._score_idf_lucene`` and
``_score_tfc_robertson``, which its ``lucene`` method uses), a query = the sum of its terms'
columns (repeated terms count twice, as in bm25s), same tokenizer, same stop words and the
same deterministic top-k (``top_k_indices``).  Both sides return the top-k passage ids per
query; ``agreement`` compares them.  Timings are measurements, never test conditions.
"""
from __future__ import annotations

import math
import platform
import time
from typing import Sequence

import numpy as np

from coevo.retrieval.base import Passage

VOCAB = 30_000


def pseudo_word(i: int) -> str:
    """A deterministic letters-only word for index ``i`` (never a stop word: it ends in 'q')."""
    letters = "bcdfghjklmnprstvwz"
    s = ""
    i += 1
    while i:
        i, r = divmod(i, len(letters))
        s += letters[r] + "aeiou"[r % 5]
    return s + "q"


def synthetic_corpus(n_passages: int, seed: int = 0, vocab: int = VOCAB, per_source: int = 10) -> list[Passage]:
    rng = np.random.default_rng(seed)
    words = [pseudo_word(i) for i in range(vocab)]
    w = 1.0 / np.arange(1, vocab + 1) ** 1.1
    lengths = rng.integers(40, 81, size=n_passages)
    ids = rng.choice(vocab, size=int(lengths.sum()), p=w / w.sum())
    out, pos = [], 0
    for i, n in enumerate(lengths):
        out.append(Passage(pid=f"p{i:07d}", source=f"s{i // per_source:06d}",
                           text=" ".join(words[j] for j in ids[pos:pos + n])))
        pos += n
    return out


def synthetic_queries(passages: Sequence[Passage], n: int, seed: int = 1, vocab: int = VOCAB) -> list[str]:
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        toks = passages[int(rng.integers(len(passages)))].text.split()
        pick = rng.choice(len(toks), size=min(4, len(toks)), replace=False)
        out.append(" ".join([toks[i] for i in sorted(pick)] + [pseudo_word(int(rng.integers(vocab)))]))
    return out


class SparseBM25:
    """Lucene BM25 as one scipy sparse matrix (the reference; see module docstring)."""

    def __init__(self, passages: Sequence[Passage], k1: float = 1.5, b: float = 0.75, index_title: bool = True,
                 stopwords=None):
        from scipy import sparse

        from coevo.retrieval.bm25 import default_stopwords, tokenize

        self.stopwords = default_stopwords() if stopwords is None else frozenset(stopwords)
        ps = sorted(passages, key=lambda p: p.pid)
        self.pids = [p.pid for p in ps]
        vocab: dict[str, int] = {}
        rows, cols = [], []
        lengths = np.zeros(len(ps))
        for d, p in enumerate(ps):
            toks = tokenize(f"{p.title} {p.text}" if index_title else p.text, self.stopwords) or [""]
            lengths[d] = len(toks)
            for t in toks:
                rows.append(d)
                cols.append(vocab.setdefault(t, len(vocab)))
        tf = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(ps), len(vocab)))
        tf.sum_duplicates()
        df = np.bincount(tf.indices, minlength=len(vocab))
        idf = np.log1p((len(ps) - df + 0.5) / (df + 0.5))
        norm = k1 * (1 - b + b * lengths / lengths.mean())
        t = tf.tocoo()
        w = idf[t.col] * t.data / (t.data + norm[t.row])
        self.matrix = sparse.csc_matrix((w, (t.row, t.col)), shape=tf.shape)
        self.vocab = vocab
        self._tokenize = tokenize

    def scores(self, query: str) -> np.ndarray:
        ids = [self.vocab[t] for t in self._tokenize(query, self.stopwords) if t in self.vocab]
        if not ids:
            return np.zeros(len(self.pids))
        return np.asarray(self.matrix[:, ids].sum(axis=1)).ravel()

    def search_ids(self, queries: Sequence[str], k: int) -> list[list[str]]:
        from coevo.retrieval.bm25 import top_k_indices

        return [[self.pids[i] for i in top_k_indices(self.scores(q), k)] for q in queries]


def topk_agreement(a: Sequence[Sequence[str]], b: Sequence[Sequence[str]], k: int) -> dict:
    """Mean overlap |A ∩ B| / k of two top-k id lists per query, and the share of queries
    whose lists are identical (same ids, same order)."""
    if len(a) != len(b) or not a:
        raise ValueError("need two equally long, non-empty lists of results")
    overlap = [len(set(x[:k]) & set(y[:k])) / k for x, y in zip(a, b)]
    same = [list(x[:k]) == list(y[:k]) for x, y in zip(a, b)]
    return {"overlap_at_k": sum(overlap) / len(a), "identical_share": sum(same) / len(a),
            "min_overlap_at_k": min(overlap)}


def timed(fn, *args):
    t0 = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t0


def bench_retrieval(n_passages: int = 100_000, n_queries: int = 1000, k: int = 10, seed: int = 0) -> dict:
    """Index ``n_passages`` synthetic passages with our BM25Retriever and the scipy reference,
    run ``n_queries`` queries through each, and report queries/s, the ratio and top-k agreement."""
    from coevo.retrieval.bm25 import BM25Retriever

    if n_passages < 1 or n_queries < 1 or k < 1:
        raise ValueError("n_passages, n_queries and k must be >= 1")
    passages, gen_s = timed(synthetic_corpus, n_passages, seed)
    queries = synthetic_queries(passages, n_queries, seed + 1)
    ours, ours_index_s = timed(BM25Retriever, passages)
    ref, ref_index_s = timed(SparseBM25, passages)
    ours_hits, ours_s = timed(ours.search, queries, k)
    ref_ids, ref_s = timed(ref.search_ids, queries, k)
    ours_ids = [[p.pid for p in hs] for hs in ours_hits]
    top1 = [abs(hs[0].score - float(ref.scores(q).max())) for q, hs in zip(queries[:50], ours_hits[:50]) if hs]
    qps, ref_qps = n_queries / max(ours_s, 1e-12), n_queries / max(ref_s, 1e-12)
    return {
        "passages": n_passages, "queries": n_queries, "k": k, "seed": seed,
        "ours": {"name": "coevo.retrieval.bm25.BM25Retriever (bm25s, lucene)", "queries_per_s": round(qps, 1),
                 "index_s": round(ours_index_s, 3), "search_s": round(ours_s, 3)},
        "reference": {"name": "scipy sparse Lucene BM25 (SparseBM25)", "queries_per_s": round(ref_qps, 1),
                      "index_s": round(ref_index_s, 3), "search_s": round(ref_s, 3)},
        "ratio": round(qps / ref_qps, 3) if ref_qps > 0 else math.inf,
        "agreement": {**topk_agreement(ours_ids, ref_ids, k), "max_top1_score_diff": max(top1) if top1 else 0.0},
        "corpus_generation_s": round(gen_s, 3),
        "machine": {"python": platform.python_version(), "processor": platform.machine()},
    }
