"""In-process BM25 retrieval over the ``bm25s`` package (eager sparse scoring).

``BM25Retriever(passages)`` indexes a list of :class:`Passage`; ``search(queries, k, sources)``
scores each query with bm25s and takes the top k with a deterministic tie-break: equal scores
rank by passage id (the index is built in pid order, so a stable sort on -score is the
tie-break).  ``sources`` restricts the candidates to passages of those sources (CrossFit
folds); the per-set mask is cached.  By default passages with score 0 still fill the k slots
(in pid order), as a dense retriever would always return k; ``only_hits=True`` returns only
passages that share a term with the query (score > 0), as a Lucene BM25 index (Search-R1's
pyserini server) does, so fewer than k come back when fewer match; Search-R1 mode (``coevo
eval-qa``, ``coevo serve-retriever``) uses it.  Excluded sources never appear.

Two settings: bm25s's defaults (k1 1.5, b 0.75, ``\\w+`` tokens, no stemming, passages in pid
order; ``coevo eval-qa``), and :func:`search_r1_bm25`, the settings of Search-R1's pyserini index
(k1 0.9, b 0.4, pyserini's analyzer with Porter stemming from ``coevo.retrieval.analysis``, ties in
corpus order as Lucene's doc ids; ``coevo serve-retriever`` by default).  bm25s's ``lucene`` method
is Lucene's BM25 formula; what still differs from a Lucene index is its lossy one-byte document
length norms (``SmallFloat``), which bm25s keeps exact."""
from __future__ import annotations

import functools
import re
from typing import Callable, Collection, Sequence

import numpy as np

from coevo.retrieval.base import Passage

TOKEN_RE = re.compile(r"\w+", re.U)
SEARCH_R1_K1, SEARCH_R1_B = 0.9, 0.4  # pyserini's LuceneSearcher defaults, Search-R1's BM25 server


def default_stopwords() -> frozenset[str]:
    """bm25s's English stop-word list (``bm25s.stopwords.STOPWORDS_EN``)."""
    from bm25s.stopwords import STOPWORDS_EN
    return frozenset(STOPWORDS_EN)


def tokenize(text: str, stopwords: Collection[str] = ()) -> list[str]:
    """Lower-cased word tokens (``\\w+``, single characters kept), stop words dropped."""
    return [t for t in TOKEN_RE.findall(text.lower()) if t not in stopwords]


def top_k_indices(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest scores, best first, ties by ascending index (deterministic).
    ``-inf`` entries are never returned."""
    finite = np.flatnonzero(np.isfinite(scores))
    if k <= 0 or finite.size == 0:
        return np.zeros(0, dtype=np.int64)
    if finite.size <= k:
        cand = finite
    else:
        vals = scores[finite]
        kth = np.partition(vals, finite.size - k)[finite.size - k]
        cand = finite[vals >= kth]  # all ties of the k-th score; ascending index order
    order = np.argsort(-scores[cand], kind="stable")
    return cand[order][:k]


class BM25Retriever:
    """BM25 (Lucene variant, bm25s defaults k1=1.5, b=0.75) over a fixed passage list.

    ``analyzer`` (text -> terms) replaces the default tokenizer and stop words on both the passages
    and the queries; ``corpus_order`` keeps the passages in the order given (ties rank by it)
    instead of sorting them by pid."""

    def __init__(self, passages: Sequence[Passage], *, k1: float = 1.5, b: float = 0.75,
                 method: str = "lucene", stopwords: Collection[str] | None = None,
                 index_title: bool = True, only_hits: bool = False,
                 analyzer: Callable[[str], list[str]] | None = None, corpus_order: bool = False):
        import bm25s

        if not passages:
            raise ValueError("BM25Retriever needs at least one passage")
        ps = list(passages) if corpus_order else sorted(passages, key=lambda p: p.pid)
        pids = [p.pid for p in ps]
        if len(set(pids)) != len(pids):
            raise ValueError("passage ids must be unique")
        self.passages: list[Passage] = ps
        self.only_hits = bool(only_hits)
        self.k1, self.b = float(k1), float(b)
        self.stopwords = default_stopwords() if stopwords is None else frozenset(stopwords)
        self.analyzer = analyzer or functools.partial(tokenize, stopwords=self.stopwords)
        docs = [self.analyzer(f"{p.title} {p.text}" if index_title else p.text) for p in ps]
        docs = [d if d else [""] for d in docs]
        self._bm25 = bm25s.BM25(k1=k1, b=b, method=method)
        self._bm25.index(docs, show_progress=False)
        self._source_of = np.array([p.source for p in ps], dtype=object)
        self._masks: dict[frozenset[str], np.ndarray] = {}

    def __len__(self) -> int:
        return len(self.passages)

    def sources(self) -> list[str]:
        return sorted(set(self._source_of.tolist()))

    def _mask(self, sources: Collection[str]) -> np.ndarray:
        key = frozenset(sources)
        m = self._masks.get(key)
        if m is None:
            m = np.fromiter((s in key for s in self._source_of), dtype=bool, count=len(self._source_of))
            if len(self._masks) > 64:
                self._masks.clear()
            self._masks[key] = m
        return m

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every passage (in pid order) for one query."""
        ids = self._bm25.get_tokens_ids(self.analyzer(query))
        return np.asarray(self._bm25.get_scores_from_ids(ids), dtype=np.float64)

    def search(self, queries: Sequence[str], k: int,
               sources: Collection[str] | None = None) -> list[list[Passage]]:
        if isinstance(queries, str):
            raise TypeError("search takes a sequence of queries, not one string")
        mask = None if sources is None else self._mask(sources)
        out: list[list[Passage]] = []
        for q in queries:
            s = self.scores(q)
            if mask is not None:
                s = np.where(mask, s, -np.inf)
            if self.only_hits:
                s = np.where(s > 0, s, -np.inf)
            idx = top_k_indices(s, k)
            out.append([_with_score(self.passages[i], float(s[i])) for i in idx])
        return out


def search_r1_bm25(passages: Sequence[Passage]) -> BM25Retriever:
    """BM25 as Search-R1's pyserini server answers: k1 0.9, b 0.4, pyserini's English analyzer
    (Porter stemming), only passages that match a query term, ties in corpus order."""
    from coevo.retrieval.analysis import lucene_english_tokens

    return BM25Retriever(passages, k1=SEARCH_R1_K1, b=SEARCH_R1_B, analyzer=lucene_english_tokens,
                         only_hits=True, corpus_order=True)


def _with_score(p: Passage, score: float) -> Passage:
    return Passage(pid=p.pid, source=p.source, text=p.text, title=p.title, score=round(score, 6), contents=p.contents)


def bm25s_defaults(passages: Sequence[Passage]) -> BM25Retriever:
    """bm25s's defaults (k1 1.5, b 0.75, no stemming), only passages that match a query term."""
    return BM25Retriever(passages, only_hits=True)


# the named settings of ``coevo serve-retriever --bm25`` (the first is the default)
BM25_SETTINGS: dict[str, Callable[[Sequence[Passage]], BM25Retriever]] = {
    "search-r1": search_r1_bm25, "bm25s": bm25s_defaults}
