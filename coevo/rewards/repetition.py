"""R-Zero repetition penalty: cluster a batch of questions by pairwise BLEU (R-Zero §2.2).

R-Zero §2.2 and §3.1: the questions of one batch are clustered agglomeratively
with distance ``1 - BLEU`` and threshold ``tau_BLEU = 0.5``; a question in cluster C
gets ``r_rep = lambda * |C| / B`` where B is the whole batch (ANCHORS: the rollout
batch, 512 prompts x 4 = 2,048 questions, not one GRPO group).

What the reference code does (``_bleu_distance_matrix`` in R-Zero's
``examples/reward_function/caller_penalty.py``; read in the forks
JinYuanLi0012/R-Zero and others, which carry it unchanged)::

    smoother = SmoothingFunction().method1
    for i in range(n):
        for j in range(i, n):
            score = 1.0 if i == j else sentence_bleu([s[j].split()], s[i].split(),
                                                    smoothing_function=smoother)
            dist[i, j] = dist[j, i] = 1 - score

i.e. whitespace tokens, NLTK ``sentence_bleu`` (BLEU-4, uniform weights) with
smoothing ``method1`` (epsilon = 0.1 added to a zero n-gram match count), the
*earlier* question of a pair is the hypothesis and the *later* one the reference,
computed for j > i only and mirrored, diagonal forced to 1.  Then
``AgglomerativeClustering(n_clusters=None, distance_threshold=0.5,
metric="precomputed", linkage="average")`` and the penalty ``|C| / B`` (lambda = 1).

BLEU is asymmetric (brevity penalty and precision denominators use the hypothesis),
so the reference distance depends on the order of the batch.  Two directions:

- ``direction="symmetric"`` (default): mean of BLEU(i -> j) and BLEU(j -> i).  The
  paper speaks of "pairwise BLEU similarity" as a distance without a direction; an
  order-independent similarity is what it implies, so it is the default.
- ``direction="reference"``: exactly R-Zero's code (hypothesis = lower index).

Either way the diagonal is 1 (as in R-Zero; note NLTK's own BLEU of a sentence with
itself is < 1 when it has fewer than 4 tokens, because of the smoothed empty 3-/4-gram
precisions).  Parse failures enter R-Zero's batch as the empty string; an empty
hypothesis or reference has BLEU 0 against everything, so empties never cluster.

The fast path computes exactly NLTK's numbers: each sentence's n-gram counts
(n = 1..4) are built once; clipped matches ``sum_g min(c_i(g), c_j(g))`` (symmetric
in i, j) are sums over count levels t of binary co-occurrence products
``X_t X_t^T`` with ``X_t[i, g] = 1[c_i(g) >= t]`` (sparse; scipy), then precisions,
smoothing and the brevity penalty are applied elementwise on B x B arrays.
"""
from __future__ import annotations

import json
import math
import random
import time
from collections import Counter
from typing import Sequence

import numpy as np

DIRECTIONS = ("symmetric", "reference")
LINKAGES = ("average", "complete", "single")
MAX_N = 4
SMOOTH_EPSILON = 0.1  # NLTK SmoothingFunction().method1 default, as used by R-Zero


def _check(direction: str, linkage: str | None = None) -> None:
    if direction not in DIRECTIONS:
        raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
    if linkage is not None and linkage not in LINKAGES:
        raise ValueError(f"linkage must be one of {LINKAGES} (precomputed distances), got {linkage!r}")


def _tokenize(questions: Sequence[str]) -> list[list[str]]:
    return [q.split() for q in questions]


# ----------------------------------------------------------------------------- fast path


def _clipped_matches(tokens: list[list[str]], n: int, dense_df: int = 48) -> np.ndarray:
    """B x B int matrix of clipped n-gram matches sum_g min(c_i(g), c_j(g)).

    min(a, b) = sum_{t >= 1} 1[a >= t] 1[b >= t], so the matrix is a sum over count
    levels t of binary products X_t X_t^T.  N-grams present in more than ``dense_df``
    sentences go through a dense float32 BLAS product (exact: integers < 2**24), the
    long tail through a scipy sparse product.
    """
    from scipy import sparse

    b = len(tokens)
    vocab: dict[tuple[str, ...], int] = {}
    rows: list[int] = []
    cols: list[int] = []
    cnts: list[int] = []
    for i, toks in enumerate(tokens):
        if len(toks) < n:
            continue
        for g, c in Counter(zip(*(toks[k:] for k in range(n)))).items():
            j = vocab.get(g)
            if j is None:
                j = vocab[g] = len(vocab)
            rows.append(i)
            cols.append(j)
            cnts.append(c)
    if not cnts:
        return np.zeros((b, b), dtype=np.int32)
    rows_a = np.asarray(rows, dtype=np.int64)
    cols_a = np.asarray(cols, dtype=np.int64)
    cnts_a = np.asarray(cnts, dtype=np.int64)
    df = np.bincount(cols_a, minlength=len(vocab))
    frequent = df > dense_df
    # level 1 of the frequent n-grams: one dense BLAS product
    first = frequent[cols_a]
    if first.any():
        dense_col = np.cumsum(frequent) - 1
        x = np.zeros((b, int(frequent.sum())), dtype=np.float32)
        x[rows_a[first], dense_col[cols_a[first]]] = 1.0
        out = x @ x.T
    else:
        out = np.zeros((b, b), dtype=np.float32)
    # everything else (rare n-grams at level 1, all n-grams at levels >= 2): sparse
    tail = None
    for t in range(1, int(cnts_a.max()) + 1):
        sel = (cnts_a >= t) & (~first if t == 1 else True)
        if not sel.any():
            continue
        x = sparse.csr_matrix(
            (np.ones(int(sel.sum()), dtype=np.float32), (rows_a[sel], cols_a[sel])), shape=(b, len(vocab))
        )
        prod = x @ x.T
        tail = prod if tail is None else tail + prod
    if tail is not None:
        out += tail.toarray()
    return out.astype(np.int32)


def _bleu_hyp_rows(tokens: list[list[str]]) -> np.ndarray:
    """Full ordered matrix: entry [i, j] = sentence_bleu([tokens[j]], tokens[i], method1).

    NLTK: p_n = m_n / d_n with d_n = max(1, len(hyp) - n + 1), a zero m_n replaced by
    eps / d_n (method1); BLEU = BP * exp(sum_n 0.25 log p_n); 0 if m_1 = 0;
    BP = 1 if len(hyp) > len(ref), 0 if len(hyp) = 0, else exp(1 - len(ref)/len(hyp)).
    Here log p_n = log(m_n or eps) - log d_n, the first term by table look-up.
    """
    lens = np.array([len(t) for t in tokens], dtype=np.int64)
    top = int(lens.max()) if lens.size else 0
    log_m = np.log(np.maximum(np.arange(top + 1, dtype=np.float64), 1.0))
    log_m[0] = math.log(SMOOTH_EPSILON)
    row_term = np.zeros(len(tokens))
    acc = None
    m1 = None
    for n in range(1, MAX_N + 1):
        m = _clipped_matches(tokens, n)
        if n == 1:
            m1 = m
        row_term += np.log(np.maximum(1, lens - n + 1).astype(np.float64))
        acc = log_m[m] if acc is None else acc + log_m[m]
    lh = lens.astype(np.float64)
    # brevity penalty by table over (len_hyp, len_ref)
    hl = np.arange(top + 1, dtype=np.float64)[:, None]
    rl = np.arange(top + 1, dtype=np.float64)[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        bp_tab = np.where(hl > rl, 1.0, np.where(hl == 0, 0.0, np.exp(1.0 - rl / np.where(hl == 0, 1.0, hl))))
    bp = bp_tab[lens[:, None], lens[None, :]]
    bleu = bp * np.exp(0.25 * acc - 0.25 * row_term[:, None])
    bleu[m1 == 0] = 0.0  # NLTK returns 0 when no unigram matches
    del lh
    return bleu


def _combine(ordered: np.ndarray, direction: str) -> np.ndarray:
    if direction == "reference":
        up = np.triu(ordered, 1)
        s = up + up.T
    else:
        s = 0.5 * (ordered + ordered.T)
    np.fill_diagonal(s, 1.0)
    return s


def pairwise_bleu(questions: Sequence[str], direction: str = "symmetric") -> np.ndarray:
    """B x B BLEU similarity matrix (diagonal 1), identical to NLTK ``sentence_bleu``
    with ``SmoothingFunction().method1`` on whitespace tokens (up to float rounding).

    ``direction="reference"``: S[i, j] = S[j, i] = BLEU(hyp=q_min(i,j), ref=q_max(i,j)),
    R-Zero's code; ``"symmetric"``: mean of both directions.
    """
    _check(direction)
    if len(questions) == 0:
        return np.zeros((0, 0))
    return _combine(_bleu_hyp_rows(_tokenize(questions)), direction)


# ----------------------------------------------------------------------------- NLTK path


def reference_pairwise_bleu(questions: Sequence[str], pairs=None, direction: str = "symmetric"):
    """The slow path: NLTK ``sentence_bleu`` called per pair, as R-Zero does.

    ``pairs=None``: the full B x B matrix (same layout as :func:`pairwise_bleu`).
    ``pairs``: an iterable of (i, j); returns a 1-D array of S[i, j].
    """
    _check(direction)
    import warnings

    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

    smoother = SmoothingFunction().method1
    toks = _tokenize(questions)

    def score(i: int, j: int) -> float:
        if i == j:
            return 1.0
        if direction == "reference":
            a, b = (i, j) if i < j else (j, i)
            return float(sentence_bleu([toks[b]], toks[a], smoothing_function=smoother))
        return 0.5 * (
            float(sentence_bleu([toks[j]], toks[i], smoothing_function=smoother))
            + float(sentence_bleu([toks[i]], toks[j], smoothing_function=smoother))
        )

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if pairs is not None:
            return np.array([score(int(i), int(j)) for i, j in pairs], dtype=np.float64)
        b = len(toks)
        s = np.eye(b)
        for i in range(b):
            for j in range(i + 1, b):
                s[i, j] = s[j, i] = score(i, j)
        return s


# ----------------------------------------------------------------------------- clustering


def cluster_labels(similarity: np.ndarray, threshold: float = 0.5, linkage: str = "average") -> np.ndarray:
    """Agglomerative clustering of a precomputed similarity matrix, distance 1 - S.

    sklearn ``AgglomerativeClustering(n_clusters=None, distance_threshold=threshold,
    metric="precomputed", linkage=linkage)``: merging stops at distance >= threshold.
    Exact ties between candidate merges are broken by position in the batch (sklearn /
    scipy behaviour), so even the symmetric similarity can give a different partition
    for a permuted batch when two distances are exactly equal.
    """
    _check("symmetric", linkage)
    b = similarity.shape[0]
    if b == 0:
        return np.zeros(0, dtype=np.int64)
    if b == 1:
        return np.zeros(1, dtype=np.int64)
    from sklearn.cluster import AgglomerativeClustering

    dist = 1.0 - similarity
    np.fill_diagonal(dist, 0.0)
    model = AgglomerativeClustering(
        n_clusters=None, distance_threshold=threshold, metric="precomputed", linkage=linkage
    )
    return model.fit_predict(dist).astype(np.int64)


def bleu_clusters(
    questions: Sequence[str], threshold: float = 0.5, linkage: str = "average", direction: str = "symmetric"
) -> np.ndarray:
    """Cluster labels of a batch of questions (R-Zero: threshold 0.5, average linkage)."""
    _check(direction, linkage)
    return cluster_labels(pairwise_bleu(questions, direction), threshold, linkage)


def cluster_share(labels: np.ndarray) -> np.ndarray:
    """|C(i)| / B for each item."""
    labels = np.asarray(labels)
    if labels.size == 0:
        return np.zeros(0)
    _, inv, counts = np.unique(labels, return_inverse=True, return_counts=True)
    return counts[inv] / labels.size


def repetition_penalty(
    questions: Sequence[str],
    lam: float = 1.0,
    threshold: float = 0.5,
    linkage: str = "average",
    direction: str = "symmetric",
) -> np.ndarray:
    """r_rep(i) = lam * |C(i)| / B, B = len(questions) (R-Zero §2.2; R-Zero's code: lam = 1)."""
    return lam * cluster_share(bleu_clusters(questions, threshold, linkage, direction))


def canonical_labels(labels: np.ndarray) -> np.ndarray:
    """Relabel clusters by order of first appearance (compare partitions exactly)."""
    mapping: dict[int, int] = {}
    return np.array([mapping.setdefault(int(x), len(mapping)) for x in labels], dtype=np.int64)


# ----------------------------------------------------------------------------- benchmark

_NAMES = ["Alice", "Bob", "Carla", "David", "Emma", "Farid", "Grace", "Hiro", "Ivy", "Jamal",
          "Kira", "Liam", "Maya", "Noah", "Olga", "Pedro", "Quinn", "Rosa", "Sam", "Tara"]
_ITEMS = ["apples", "pencils", "marbles", "stickers", "books", "cookies", "coins", "stamps",
          "oranges", "cards", "shells", "balloons", "candles", "tickets", "bottles", "plates"]
_TEMPLATES = [
    "{n1} has {a} {it}. {n1} buys {b} more {it} and gives {c} to {n2}. How many {it} does {n1} have now?",
    "A train travels {a} kilometers in {b} hours. At the same speed, how many kilometers will it travel in {c} hours?",
    "What is the remainder when {a}^{b} is divided by {c}?",
    "Find the number of positive integers n less than {a} such that n^2 + {b}n is divisible by {c}.",
    "{n1} reads {a} pages on Monday and {b} pages on Tuesday. If the book has {c} pages, how many pages are left?",
    "A rectangle has a perimeter of {a} and a length of {b}. What is its area?",
    "The sum of {b} consecutive integers is {a}. What is the largest of these integers?",
    "A store sells {it} at {b} dollars each. {n1} spends {a} dollars on {it}. How many {it} did {n1} buy, and how much change from {c} dollars?",
    "Let f(x) = {b}x^2 - {c}x + {a}. Find the sum of all real x such that f(f(x)) = x.",
    "In triangle ABC, AB = {a}, BC = {b} and CA = {c}. Compute the area of triangle ABC.",
    "How many ways can {b} {it} be distributed among {c} children if each child gets at least one and no child gets more than {a}?",
    "{n1} and {n2} share {a} {it} in the ratio {b}:{c}. How many more {it} does {n1} get than {n2}?",
    "Find the smallest positive integer k such that {a}k + {b} is a multiple of {c}.",
    "A tank holds {a} liters. It is filled at {b} liters per minute and drains at {c} liters per minute. How long until it is full?",
]
_CONTEXT = ["", "", "", "Give your answer as an integer.", "Show that your answer is unique.",
            "Assume all quantities are whole numbers.", "Express the answer in simplest form.",
            "Round to the nearest whole number if needed.", "Explain each step of your reasoning carefully."]


def _fresh_question(rng: random.Random) -> str:
    t = rng.choice(_TEMPLATES)
    n1, n2 = rng.sample(_NAMES, 2)
    q = t.format(n1=n1, n2=n2, it=rng.choice(_ITEMS), a=rng.randint(2, 999), b=rng.randint(2, 99),
                 c=rng.randint(2, 99))
    ctx = rng.choice(_CONTEXT)
    if ctx:
        q = q + " " + ctx if rng.random() < 0.7 else ctx + " " + q
    return q


def _mutate(q: str, rng: random.Random) -> str:
    toks = q.split()
    for _ in range(rng.randint(1, 3)):
        op = rng.random()
        k = rng.randrange(len(toks))
        if op < 0.5:
            toks[k] = str(rng.randint(2, 999)) if rng.random() < 0.6 else rng.choice(_NAMES + _ITEMS)
        elif op < 0.75 and len(toks) > 4:
            del toks[k]
        else:
            toks.insert(k, rng.choice(["then", "also", "exactly", "now", "total", "more"]))
    return " ".join(toks)


def bench_questions(n: int, seed: int = 0) -> list[str]:
    """n arithmetic-word-problem-like questions, ~40% near-duplicates of earlier ones
    (1-3 token edits) and ~3% parse failures (empty string), deterministic from seed."""
    rng = random.Random(seed)
    out: list[str] = []
    for _ in range(n):
        r = rng.random()
        if r < 0.03:
            out.append("")
        elif r < 0.43 and out:
            base = rng.choice([q for q in out[-200:] if q] or [_fresh_question(rng)])
            out.append(_mutate(base, rng))
        else:
            out.append(_fresh_question(rng))
    return out


def bench_bleu(
    n: int = 2048, sample_pairs: int = 3000, seed: int = 0, n_sub: int | None = None,
    direction: str = "reference",
) -> dict:
    """Our pairwise BLEU vs NLTK ``sentence_bleu`` (R-Zero's per-pair loop), same run.

    - reference: NLTK timed on ``sample_pairs`` random pairs i < j, extrapolated to all
      n(n-1)/2 pairs (one call per pair, as R-Zero's loop; two for "symmetric");
    - ours: :func:`pairwise_bleu` on all pairs;
    - identical scores on the sampled pairs and on a fully computed subset of ``n_sub``
      (default min(300, n)) questions;
    - identical clusters: (a) the subset, full NLTK matrix vs ours; (b) all n, ours vs
      ours with the sampled entries replaced by NLTK's values.
    """
    _check(direction)
    questions = bench_questions(n, seed)
    rng = np.random.default_rng(seed)
    total_pairs = n * (n - 1) // 2
    k = min(sample_pairs, total_pairs)
    flat = rng.choice(total_pairs, size=k, replace=False) if k else np.zeros(0, dtype=np.int64)
    iu, ju = np.triu_indices(n, 1)
    pairs = np.stack([iu[flat], ju[flat]], axis=1)

    # warm up both paths (imports, caches) so neither timing pays a one-off cost
    reference_pairwise_bleu(questions[:4], direction=direction)
    pairwise_bleu(questions[:4], direction=direction)

    t0 = time.perf_counter()
    ref_vals = reference_pairwise_bleu(questions, pairs, direction=direction)
    ref_time = time.perf_counter() - t0
    per_pair = ref_time / max(k, 1)

    t0 = time.perf_counter()
    ours = pairwise_bleu(questions, direction=direction)
    ours_time = time.perf_counter() - t0

    diffs = [float(np.max(np.abs(ours[pairs[:, 0], pairs[:, 1]] - ref_vals))) if k else 0.0]

    ns = min(300 if n_sub is None else n_sub, n)
    sub = questions[:ns]
    ref_sub = reference_pairwise_bleu(sub, None, direction=direction)
    ours_sub = pairwise_bleu(sub, direction=direction)
    diffs.append(float(np.max(np.abs(ref_sub - ours_sub))) if ns else 0.0)
    same_sub = bool(np.array_equal(canonical_labels(cluster_labels(ref_sub)), canonical_labels(cluster_labels(ours_sub))))

    patched = ours.copy()
    patched[pairs[:, 0], pairs[:, 1]] = ref_vals
    patched[pairs[:, 1], pairs[:, 0]] = ref_vals
    labels = cluster_labels(ours)
    same_full = bool(np.array_equal(canonical_labels(labels), canonical_labels(cluster_labels(patched))))

    extrapolated = per_pair * total_pairs
    return {
        "n": n,
        "pairs": total_pairs,
        "direction": direction,
        "sample_pairs": int(k),
        "n_sub": ns,
        "reference_seconds_per_pair": per_pair,
        "reference_seconds_extrapolated": extrapolated,
        "ours_seconds": ours_time,
        "speedup": extrapolated / ours_time if ours_time > 0 else math.inf,
        "max_abs_diff": max(diffs),
        "identical_clusters": same_sub and same_full,
        "n_clusters": int(len(np.unique(labels))),
    }


if __name__ == "__main__":  # pragma: no cover
    print(json.dumps(bench_bleu(n=512), indent=2))
