"""Per-criterion verdicts through the run verifier (pool, cache, criterion ids).

``CriteriaScorer`` groups the checks of many (entry, answer) pairs by (kind, locate) and
sends each group through one ``coevo.verify.run.RunVerifier`` whose checker is a
``CriterionVerifier``: every verdict runs in the verifier pool when one is given (a hung
check becomes a real ``timeout``), is cached in the run's ledger when a cache store is
given, and carries its criterion id.  The scorer computes no reward: the recipe feeds the
verdicts to its own criteria scores (VG-OPD and CASA: per axis) itself.

    scorer = CriteriaScorer(channels=world.channels, pool=pool, cache_store=ledger)
    verdicts = scorer.score([(entry, answer), ...])   # one list of Verdicts per pair,
                                                      # in entry.criteria order

``criterion_pairs(entry, answer)`` lists what one answer's checks are (criterion id, kind,
locate, answer, reference) for a recipe that builds its own verifiers.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Optional, Sequence

from coevo.criteria.verifier import Channels, CriterionVerifier, reference_of


@dataclass(frozen=True)
class CriterionPair:
    """One check: the criterion, where it reads, and the (answer, reference) the verifier gets."""

    criterion_id: str
    kind: str
    locate: str
    weight: float
    axis: str
    answer: Optional[str]
    reference: str


def criterion_pairs(entry: Any, answer: Optional[str]) -> list[CriterionPair]:
    """The checks of one answer to a ``BankEntry`` (or anything with id, prompt, reference,
    criteria and optional ``meta["ref_len"]``), in criteria order."""
    meta = getattr(entry, "meta", {}) or {}
    ref_len = meta.get("ref_len") or len(entry.reference or "") or None
    return [CriterionPair(c.id, c.kind, c.locate, float(c.weight), c.axis, answer,
                          reference_of(c, entry.prompt, entry.reference, ref_len, key=entry.id))
            for c in entry.criteria]


class CriteriaScorer:
    """Criterion verdicts through ``RunVerifier``s (one per kind × locate).

    ``channels``: abstention channels (``Channels()``: none); ``pool``: a ``VerifierPool``
    or None (in-process); ``cache_store``: the run's ledger (or any store with
    ``get_many`` / ``put_many``) or None; ``timeout_s``: the pool's per-check limit;
    ``judge_options``: the ``llm_judge`` endpoint (base_url, model, api_key_env ...)."""

    def __init__(self, channels: Optional[Channels] = None, pool=None, cache_store=None,
                 timeout_s: Optional[float] = None, judge_options: Optional[dict] = None) -> None:
        self.channels = channels or Channels()
        self.pool, self.cache_store, self.timeout_s = pool, cache_store, timeout_s
        self.judge_options = dict(judge_options or {})
        self._verifiers: dict = {}

    def verifier(self, kind: str, where: str):
        """The ``RunVerifier`` of one (kind, locate)."""
        from coevo.verify.run import RunVerifier
        from coevo.verify.cache import VerdictCache

        key = (kind, where)
        if key not in self._verifiers:
            opts = self.judge_options if kind == "llm_judge" else {}
            checker = CriterionVerifier(kind=kind, locate=where, options=opts, channels=self.channels)
            cache = VerdictCache(self.cache_store) if self.cache_store is not None else None
            self._verifiers[key] = RunVerifier(checker, pool=self.pool, cache=cache, timeout_s=self.timeout_s,
                                               options=json.loads(json.dumps(checker.describe(), default=str)))
        return self._verifiers[key]

    def score_pairs(self, pairs: Sequence[CriterionPair]) -> list:
        """One Verdict per ``CriterionPair``, in order (a None answer is 0 ``no-answer``)."""
        out: list = [None] * len(pairs)
        groups: dict = {}
        for i, p in enumerate(pairs):
            groups.setdefault((p.kind, p.locate), []).append(i)
        for (kind, where), idx in groups.items():
            rv = self.verifier(kind, where)
            got = rv.match_many([(pairs[i].answer, pairs[i].reference) for i in idx],
                                [pairs[i].criterion_id for i in idx])
            for i, v in zip(idx, got):
                out[i] = v
        return out

    def score(self, items: Sequence[tuple[Any, Optional[str]]]) -> list[list]:
        """Verdicts for many (entry, answer) pairs: one list per pair, in criteria order."""
        flat, spans = [], []
        for entry, answer in items:
            ps = criterion_pairs(entry, answer)
            spans.append((len(flat), len(flat) + len(ps)))
            flat.extend(ps)
        got = self.score_pairs(flat)
        return [got[a:b] for a, b in spans]
