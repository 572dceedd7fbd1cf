"""The run's verifier: every answer check of a run goes through one verifier kind, the
verifier pool and the verdict cache (ARCHITECTURE.md, "Contracts": Verifier).

``make_run_verifier`` picks the kind (``verify.kind`` or the world's ``verifier_kind``),
builds it with ``make_verifier`` and wraps it in a ``RunVerifier``:

* ``match_many(pairs, criterion_ids=None)``: answer vs label / reference / oracle;
* ``majority_votes(answer_lists)``: labels by grouping answers with the same check.

With a pool every check (anything that parses model output) runs in a pool worker;
with a cache store verdicts are read / written through ``VerdictCache``.  Every
comparison returns a Verdict (1/0, or None with a reason), so a hung or crashing check
becomes a recorded abstention instead of a stalled run.  ``WorldEquivalence(world,
pool)`` is kept as the old name: the world's default kind, no cache.
"""
from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import threading
from typing import Any, Optional, Sequence

from coevo.verify.vote import Vote, majority_vote
from coevo.timing import stage
from coevo.verify.cache import VerdictCache
from coevo.core.verdict import Verdict, abstain, guarded
from coevo.verify.verifiers import Verifier, check_task, make_verifier

WORLD_KIND = "world-equivalent"


class WorldEquivalentVerifier(Verifier):
    """Fallback kind for a world without ``verifier_kind``: its ``equivalent`` (1 or 0)."""

    kind = WORLD_KIND

    def __init__(self, world: Any) -> None:
        self.world = world
        self.version = f"{world.name}:{world.prompt_version}"

    def check(self, answer, reference=None, **ctx) -> Verdict:
        return Verdict(1 if self.world.equivalent(answer, reference) else 0)


def pair_key(answer: str, target: str) -> str:
    """The "answer" part of a cache key for one comparison: both sides, JSON-encoded."""
    return json.dumps([answer, target], ensure_ascii=False)


class RunVerifier:
    """Answer checks and majority votes of a run through one verifier (pool, cache).

    ``checker``: a ``coevo.verify`` verifier (its ``check`` is what runs); ``pool``: a
    ``VerifierPool`` or None (in-process); ``cache``: a ``VerdictCache`` or None;
    ``timeout_s``: per-check limit in the pool (None: the pool's); ``none_votes``: see
    ``majority_vote``.  ``kind`` / ``version`` are the checker's.
    """

    def __init__(self, checker: Verifier, pool=None, cache: Optional[VerdictCache] = None,
                 timeout_s: Optional[float] = None, none_votes: bool = False, options: Optional[dict] = None) -> None:
        self.checker, self.pool, self.cache = checker, pool, cache
        self.timeout_s, self.none_votes = timeout_s, none_votes
        self.kind, self.version = checker.kind, checker.version
        # the checker's options are part of every cache key (same kind + version, other options)
        opts = json.dumps(options or {}, sort_keys=True, default=str)
        self.options_key = "opts:" + hashlib.sha256(opts.encode()).hexdigest()[:16]
        self.sendable = checker  # what goes to the pool workers: the checker without its own pool
        if getattr(checker, "pool", None) is not None:
            self.sendable = copy.copy(checker)
            self.sendable.pool = None

    # ------------------------------------------------------------------ checks
    def _compute(self, pairs: list) -> list[Verdict]:
        """Run the check on (answer, target) pairs, both not None: pool or in-process."""
        if not pairs:
            return []
        if self.pool is None:
            return [self._stamp(guarded(self.checker.check, self.kind, self.version, a, r)) for a, r in pairs]
        try:
            out = self.pool.map(check_task, [(self.sendable, a, r, {}) for a, r in pairs], timeout_s=self.timeout_s)
        except Exception as e:  # noqa: BLE001 - a broken pool is an abstention, not a crash
            return [abstain("verifier-error", self.kind, self.version, error=f"{type(e).__name__}: {e}")
                    for _ in pairs]
        return [self._stamp(v) for v in out]

    def _stamp(self, v: Verdict) -> Verdict:
        v.kind, v.version = self.kind, self.version
        return v

    def check_many(self, pairs: Sequence[tuple[str, str]], criterion_ids: Sequence[Optional[str]]) -> list[Verdict]:
        """Verdicts of the check itself (no None handling), through the cache when set
        (timed as the step's "verify" stage, ``coevo.timing``)."""
        pairs = list(pairs)
        if self.cache is None:
            with stage("verify"):
                return self._compute(pairs)
        items = [(c, pair_key(a, r)) for (a, r), c in zip(pairs, criterion_ids)]
        by_item = dict(zip(items, pairs))
        with stage("verify"):
            out = self.cache.get_or_compute_many(self.kind, self.version, self.options_key, items,
                                                 lambda todo: self._compute([by_item[it] for it in todo]))
        # duplicate keys share one computed Verdict: give each pair its own copy
        return [self._stamp(dataclasses.replace(v, detail=dict(v.detail))) for v in out]

    by_criterion: dict = {}  # criterion id -> RunVerifier of its own kind (``verify.criteria``)

    def match_many(self, pairs: Sequence[tuple[Optional[str], Optional[str]]],
                   criterion_ids: Optional[Sequence[Optional[str]]] = None) -> list[Verdict]:
        """One Verdict per (answer, target): target None -> abstain ``no-target``; answer
        None -> 0 ``no-answer``; else the check.  ``criterion_ids`` (same length, or None)
        is carried to each Verdict's ``criterion_id``; a criterion with a verifier of its
        own (``verify.criteria``) is checked by that one."""
        pairs = list(pairs)
        cids = list(criterion_ids) if criterion_ids is not None else [None] * len(pairs)
        if len(cids) != len(pairs):
            raise ValueError(f"criterion_ids has {len(cids)} entries for {len(pairs)} pairs")
        if not any(c in self.by_criterion for c in cids):
            return self.match_own(pairs, cids)
        out: list[Optional[Verdict]] = [None] * len(pairs)
        groups: dict = {}
        for i, c in enumerate(cids):
            groups.setdefault(c if c in self.by_criterion else None, []).append(i)
        for c, idx in groups.items():
            who = self.by_criterion[c] if c is not None else self
            for i, v in zip(idx, who.match_own([pairs[i] for i in idx], [cids[i] for i in idx])):
                out[i] = v
        return out

    def match_own(self, pairs: list, cids: list) -> list[Verdict]:
        """``match_many`` with this verifier's own check for every pair."""
        out: list[Optional[Verdict]] = [None] * len(pairs)
        todo = []
        for i, (a, t) in enumerate(pairs):
            if t is None:
                out[i] = Verdict(None, "no-target", self.kind, self.version)
            elif a is None:
                out[i] = Verdict(0, "no-answer", self.kind, self.version)
            else:
                todo.append(i)
        for i, v in zip(todo, self.check_many([pairs[i] for i in todo], [cids[i] for i in todo])):
            out[i] = v
        for v, c in zip(out, cids):
            v.criterion_id = c
        return out

    # ------------------------------------------------------------------ votes
    def majority_votes(self, answer_lists: Sequence[Sequence[Optional[str]]]) -> list[Vote]:
        """``majority_vote`` per list with this verifier's check as the equivalence.

        Every comparison ``majority_vote`` can make (a later answer against an earlier
        one) is checked up front in one batch (pool, cache); an abstaining comparison
        (timeout, unparsable ...) counts as "not equivalent"."""
        wanted: dict[tuple[str, str], None] = {}
        for answers in answer_lists:
            seen: dict[str, None] = {}
            for a in answers:
                if a is None:
                    continue
                for r in seen:  # every earlier distinct answer may be a group representative
                    wanted[(a, r)] = None
                seen[a] = None
        pairs = list(wanted)
        verdicts = self.check_many(pairs, [None] * len(pairs))
        table = {p: v.value == 1 for p, v in zip(pairs, verdicts)}
        return [majority_vote(list(answers), lambda a, r: table[(a, r)], none_votes=self.none_votes)
                for answers in answer_lists]

    def equivalent(self, a: Optional[str], b: Optional[str]) -> bool:
        """One comparison (value == 1), through pool and cache like the others."""
        return self.match_many([(a, b)])[0].value == 1


def checker_for(kind: Optional[str], options: Optional[dict], world: Any) -> tuple[Verifier, dict]:
    """The verifier kind of a run and its options: ``kind`` or the world's default."""
    from coevo.core.world import HasVerifierKind, HasVerifierOptions

    default = world.verifier_kind if isinstance(world, HasVerifierKind) else None
    kind = kind or default
    opts = dict(options or {})
    if kind is not None and kind == default and isinstance(world, HasVerifierOptions):
        opts = {**dict(world.verifier_options or {}), **opts}
    if kind is None or kind == WORLD_KIND:
        return WorldEquivalentVerifier(world), opts
    return make_verifier(kind, **opts), opts


def make_run_verifier(kind: Optional[str], options: Optional[dict], world: Any, pool=None, cache_store=None,
                      timeout_s: Optional[float] = None, none_votes: bool = False,
                      criteria: Optional[dict] = None) -> RunVerifier:
    """The run's verifier.

    ``kind``: ``cfg.verify.kind`` (None: the world's ``verifier_kind``; a world without
    one falls back to its ``equivalent``, kind ``world-equivalent``).  ``options``:
    ``cfg.verify.options``, merged over the world's ``verifier_options`` when the kind is
    the world's default.  ``criteria``: ``{criterion_id: {"kind": ..., "options": {...}}}``,
    verifiers of their own for verdicts that carry that criterion id (``verify.criteria``).
    ``pool``: a ``VerifierPool`` (``verify.workers > 0``) or None.
    ``cache_store``: a store with ``get_many`` / ``put_many`` (the run's ``Ledger``) or
    None for no cache.  ``timeout_s``: per-check limit in the pool (None: the pool's)."""
    checker, opts = checker_for(kind, options, world)
    cache = VerdictCache(cache_store) if cache_store is not None else None
    rv = RunVerifier(checker, pool=pool, cache=cache, timeout_s=timeout_s, none_votes=none_votes, options=opts)
    rv.by_criterion = {}
    for cid, spec in (criteria or {}).items():
        c_checker, c_opts = checker_for(spec["kind"], spec.get("options"), world)
        rv.by_criterion[cid] = RunVerifier(c_checker, pool=pool, cache=cache, timeout_s=timeout_s,
                                           none_votes=none_votes, options=c_opts)
    return rv


def run_verifier_from_config(verify_cfg: Any, world: Any, pool=None, ledger=None) -> RunVerifier:
    """``make_run_verifier`` from the pydantic ``cfg.verify`` section: kind, options,
    timeout_s; the ledger is the cache store when ``verify.cache`` is on."""
    store = ledger if getattr(verify_cfg, "cache", False) else None
    return make_run_verifier(verify_cfg.kind, verify_cfg.options, world, pool=pool, cache_store=store,
                             timeout_s=verify_cfg.timeout_s, criteria=getattr(verify_cfg, "criteria", None))


class WorldEquivalence(RunVerifier):
    """The old name: the world's default verifier kind, through ``pool``, no cache."""

    def __init__(self, world: Any, pool=None, none_votes: bool = False) -> None:
        checker, opts = checker_for(None, None, world)
        super().__init__(checker, pool=pool, none_votes=none_votes, options=opts)


_VERIFIERS: dict = {}
_VLOCK = threading.Lock()


def shared_run_verifier(kind: str = "math", options: Optional[dict] = None, workers: Optional[int] = None,
                        timeout_s: Optional[float] = None):
    """A ``RunVerifier`` of ``kind`` (a ``coevo.verify`` kind) through the verifier pool:
    ``workers`` None = the process-wide ``default_pool()``, 0 = in-process (no timeout
    enforcement: tests only), N = a pool of N workers. Cached per process and arguments."""
    import os

    from coevo.verify.pool import VerifierPool, default_pool

    key = (kind, json.dumps(options or {}, sort_keys=True, default=str), workers, timeout_s, os.getpid())
    with _VLOCK:
        if key not in _VERIFIERS:
            pool = default_pool() if workers is None else (VerifierPool(workers=workers) if workers > 0 else None)
            _VERIFIERS[key] = make_run_verifier(kind, options, None, pool=pool, timeout_s=timeout_s)
        return _VERIFIERS[key]
