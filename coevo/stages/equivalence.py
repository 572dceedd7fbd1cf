"""Answer matching and majority voting through the world's ``equivalent``, in the verifier pool.

Every comparison returns a Verdict (value 1/0, or None with a reason), so a hung or
crashing equivalence check becomes a recorded abstention instead of a stalled run.
"""
from __future__ import annotations

from typing import Sequence

from coevo.stages.core import Vote, majority_vote
from coevo.verify.verdict import Verdict
from coevo.worlds.base import World

KIND = "world-equivalent"


def _match_item(item) -> Verdict:
    world, answer, target = item
    if target is None:
        return Verdict(None, "no-target", KIND)
    if answer is None:
        return Verdict(0, "no-answer", KIND)
    return Verdict(1 if world.equivalent(answer, target) else 0, "", KIND)


def _vote_item(item) -> Verdict:
    world, answers, none_votes = item
    v = majority_vote(answers, world.equivalent, none_votes=none_votes)
    return Verdict(1, "", KIND, detail={"label": v.label, "p_hat": v.p_hat, "agree": v.agree,
                                         "n_distinct": v.n_distinct})


class WorldEquivalence:
    """The verifier recipes use for answer-vs-label checks and majority votes."""

    kind = KIND

    def __init__(self, world: World, pool=None, none_votes: bool = False) -> None:
        self.world, self.pool, self.none_votes = world, pool, none_votes
        self.version = f"{world.name}:{world.prompt_version}"

    def _map(self, fn, items: list) -> list[Verdict]:
        if self.pool is None:
            out = []
            for it in items:
                try:
                    out.append(fn(it))
                except Exception as e:  # never an exception out of a verifier
                    out.append(Verdict(None, "verifier-error", KIND, detail={"error": repr(e)}))
            return out
        return self.pool.map(fn, items)

    def match_many(self, pairs: Sequence[tuple[str | None, str | None]]) -> list[Verdict]:
        out = self._map(_match_item, [(self.world, a, b) for a, b in pairs])
        for v in out:
            v.kind, v.version = KIND, self.version
        return out

    def majority_votes(self, answer_lists: Sequence[Sequence[str | None]]) -> list[Vote]:
        verdicts = self._map(_vote_item, [(self.world, list(a), self.none_votes) for a in answer_lists])
        votes = []
        for answers, v in zip(answer_lists, verdicts):
            if v.value is None:  # the vote itself abstained: no label, recorded via p_hat = 0
                votes.append(Vote(None, 0.0, list(answers), [False] * len(answers), 0))
            else:
                d = v.detail
                votes.append(Vote(d["label"], d["p_hat"], list(answers), d["agree"], d["n_distinct"]))
        return votes
