"""Verdict cache keyed by (verifier kind + version, prompt version, criterion id, answer hash).

VG-OPD (as the CASA proposal §core idea quotes it): judge calls are cached by (judge version, prompt version, criterion id,
answer hash) and one cached verdict serves every rollout that produced the same
answer; a re-score of a run replays cached verdicts instead of re-calling the judge.

The store is anything with ``get_many(keys) -> {key: row}`` and ``put_many(rows)``;
``MemoryCacheStore`` ships here, the ledger provides a DuckDB store with the same
protocol.  Transient abstentions (timeout, judge-unavailable, worker-crash,
sandbox-error) are not stored unless ``cache_transient=True``: a retry may succeed.
"""
from __future__ import annotations

import hashlib
import json
import time
from typing import Callable, Optional, Protocol

from coevo.core.verdict import TRANSIENT_REASONS, Verdict


class CacheStore(Protocol):
    def get_many(self, keys: list) -> dict: ...
    def put_many(self, rows: list) -> None: ...


def answer_hash(answer) -> str:
    return hashlib.sha256(str(answer).encode("utf-8", "surrogatepass")).hexdigest()


def cache_key(kind: str, version: str, prompt_version: Optional[str], criterion_id: Optional[str], answer) -> str:
    """sha256 over the four key parts (answer hashed first); stable across processes."""
    parts = [str(kind), str(version), str(prompt_version or ""), str(criterion_id or ""), answer_hash(answer)]
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()


class MemoryCacheStore:
    """In-memory store (a dict of rows); the reference implementation of the protocol."""

    def __init__(self):
        self.rows: dict = {}

    def get_many(self, keys: list) -> dict:
        return {k: self.rows[k] for k in keys if k in self.rows}

    def put_many(self, rows: list) -> None:
        for r in rows:
            self.rows[r["key"]] = dict(r)

    def __len__(self):
        return len(self.rows)


class VerdictCache:
    """Get-or-compute verdicts through a store; counts hits and misses."""

    def __init__(self, store: Optional[CacheStore] = None, cache_transient: bool = False):
        self.store = store if store is not None else MemoryCacheStore()
        self.cache_transient = cache_transient
        self.hits = 0
        self.misses = 0

    @staticmethod
    def row(key: str, verdict: Verdict, kind: str, version: str, prompt_version, criterion_id, answer) -> dict:
        r = verdict.to_row()
        r.update({"key": key, "kind": kind, "version": version, "prompt_version": prompt_version or "",
                  "criterion_id": criterion_id or "", "answer_hash": answer_hash(answer), "created_at": time.time()})
        return r

    def cacheable(self, v: Verdict) -> bool:
        return self.cache_transient or not (v.value is None and v.reason in TRANSIENT_REASONS)

    def get(self, key: str) -> Optional[Verdict]:
        got = self.store.get_many([key]).get(key)
        if got is None:
            return None
        v = Verdict.from_row(got)
        v.detail = dict(v.detail, cached=True)
        return v

    def get_or_compute(self, kind: str, version: str, prompt_version, criterion_id, answer,
                       compute: Callable[[], Verdict]) -> Verdict:
        key = cache_key(kind, version, prompt_version, criterion_id, answer)
        hit = self.get(key)
        if hit is not None:
            self.hits += 1
            return hit
        self.misses += 1
        v = compute()
        if self.cacheable(v):
            self.store.put_many([self.row(key, v, kind, version, prompt_version, criterion_id, answer)])
        return v

    def get_or_compute_many(self, kind: str, version: str, prompt_version, items: list,
                            compute_many: Callable[[list], list]) -> list:
        """``items``: [(criterion_id, answer), ...]; ``compute_many`` gets the misses
        (same tuples) and returns their verdicts in order.  Duplicate keys computed once."""
        keys = [cache_key(kind, version, prompt_version, c, a) for c, a in items]
        found = self.store.get_many(list(dict.fromkeys(keys)))
        todo, seen = [], set()
        for k, it in zip(keys, items):
            if k not in found and k not in seen:
                seen.add(k)
                todo.append((k, it))
        fresh = dict(zip([k for k, _ in todo], compute_many([it for _, it in todo]) if todo else []))
        rows = [self.row(k, fresh[k], kind, version, prompt_version, it[0], it[1])
                for k, it in todo if self.cacheable(fresh[k])]
        if rows:
            self.store.put_many(rows)
        out = []
        for k in keys:
            if k in found:
                self.hits += 1
                v = Verdict.from_row(found[k])
                v.detail = dict(v.detail, cached=True)
                out.append(v)
            else:
                self.misses += 1
                out.append(fresh[k])
        return out


def criterion_fingerprint(question: str, reference: str) -> str:
    """Stand-in criterion id when a judge call has none: hash of question + reference."""
    return "q:" + hashlib.sha256(json.dumps([question, reference]).encode()).hexdigest()[:24]
