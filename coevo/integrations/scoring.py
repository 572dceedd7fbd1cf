"""The reward core the framework adapters share (``verl_reward``, ``trl``): the Solver's verified reward,
the R-Zero Challenger's reward, tri-state verdicts and the ledger rows of both. It names no framework:
an adapter passes a ``Framework`` (its name and version), which every row carries.

Tri-state verdicts: 1 = the verifier matched the answer, 0 = it did not (a missing answer is 0,
``no-answer``), None = the verifier abstained (timeout, unparsable reference, no target ...). A reward
function reports an abstention as its ``abstain`` value (None where the framework accepts it).

Row tags (the schema has no framework column): ``tasks.source`` = the framework's name for the Solver's
tasks (the Challenger's own tasks keep the role), ``tasks.prompt_version`` and ``rollouts.policy_version``
= ``"<name> <version>"``, ``tasks.meta_json`` and ``rewards.components_json`` hold ``framework``,
``framework_version`` and ``role``; verdict rows join their rollout by ``rollout_id``; the part's ``runs`` row
names the framework too (``coevo.integrations.ledger_writer``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import numpy as np

from coevo.integrations.common import extract_answer, rollout_row_of, task_row_of
from coevo.ledger.store import dumps, reward_row, verdict_row, verdict_row_of
from coevo.recipes.rzero import CHALLENGER

__all__ = ["Framework", "installed_version", "tri_state", "SolverItem", "solver_verdicts", "solver_score",
           "solver_rows", "ChallengerBatch", "challenger_scores", "challenger_rows"]


@dataclass(frozen=True)
class Framework:
    """The framework a row came from: its name and installed version ("" when unknown)."""
    name: str
    version: str = ""

    @property
    def label(self) -> str:
        return f"{self.name} {self.version}".strip()

    def meta(self, role: str) -> dict:
        return {"framework": self.name, "framework_version": self.version, "role": role}


def installed_version(dist: str) -> str:
    """The installed version of distribution ``dist``; "" when it is not installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return ""


def tri_state(v) -> int:
    """1 / 0 / -1 (= abstained) of a Verdict."""
    return -1 if v.value is None else int(v.value)


def solver_score(v, abstain: Optional[float]) -> Optional[float]:
    """The Solver's reward of a verdict: its value, or ``abstain`` when the verifier abstained."""
    if v.value is None:
        return None if abstain is None else float(abstain)
    return float(v.value)


# ---------------------------------------------------------------------- the Solver
@dataclass
class SolverItem:
    """One Solver completion to score: its task, the text, the reference (``target``) and, with a
    pseudo-label target, an oracle answer to judge it against as well."""
    task_id: str
    text: Optional[str]
    reference: Optional[str]
    question: Optional[str] = None
    oracle: Optional[str] = None
    meta: dict = field(default_factory=dict)
    answer: Optional[str] = None
    verdicts: list = field(default_factory=list)  # [target verdict, oracle verdict?]


def solver_verdicts(rv, items: Sequence[SolverItem], extract: str = "auto") -> None:
    """Extract each item's answer and judge it (one batch through the verifier pool): ``verdicts[0]``
    against its reference, ``verdicts[1]`` against its oracle answer where it has one."""
    pairs, where = [], []
    for i, it in enumerate(items):
        it.answer = extract_answer(it.text, extract)
        it.verdicts = []
        pairs.append((it.answer, it.reference))
        where.append(i)
        if it.oracle is not None:
            pairs.append((it.answer, it.oracle))
            where.append(i)
    for i, v in zip(where, rv.match_many(pairs)):
        items[i].verdicts.append(v)


def solver_rows(run_id: str, next_id: Callable[[], str], fw: Framework, step: int, items: Sequence[SolverItem],
                scores: Sequence[Optional[float]], target: str = "oracle", role: str = "solver",
                group_idx: Optional[Sequence[int]] = None) -> dict:
    """The ledger rows of scored Solver items: one task row per distinct task (``coevo import parts`` keeps
    one per (task, step)), per item one rollout (purpose ``p_hat`` against an oracle: the audit's bearing groups; ``train``
    against a pseudo-label), its verdicts and its reward (advantage NULL: the trainer computes it)."""
    rows: dict[str, list] = {"tasks": [], "rollouts": [], "verdicts": [], "rewards": []}
    purpose = "p_hat" if target == "oracle" else "train"
    seen: set = set()
    js = _JsonCache()  # a batch's rows share a few distinct JSON blobs: each is encoded once
    for k, (it, score) in enumerate(zip(items, scores)):
        rid = next_id()
        v = it.verdicts[0]
        if it.task_id not in seen:  # the samples of one prompt share its task row
            seen.add(it.task_id)
            rows["tasks"].append(task_row_of(run_id, 1, step, it.task_id, fw.name, it.question, it.reference,
                                             prompt_version=fw.label, parse_ok=True,
                                             oracle_answer=it.reference if target == "oracle" else it.oracle,
                                             pseudo_label=it.reference if target == "pseudo_label" else None,
                                             meta_json=js(dict(it.meta, **fw.meta(role)))))
        g = group_idx[k] if group_idx is not None else 0
        rows["rollouts"].append(rollout_row_of(run_id, 1, step, rid, it.task_id, role, purpose, g, it.text, it.answer,
                                               fw.label))
        rows["verdicts"].append(verdict_row_of(run_id, step, rid, it.task_id, target, v))
        rows["verdicts"] += [verdict_row_of(run_id, step, rid, it.task_id, "oracle", x) for x in it.verdicts[1:]]
        comp = {"verdict_reason": v.reason, "abstained": v.value is None, **fw.meta(role)}
        r = reward_row(run_id, step, role, rid, it.task_id, 0.0 if score is None else score, 0.0, None)
        r["reward"], r["advantage"] = score, None  # NULL reward = abstained (the trainer leaves it out)
        r["components_json"] = js(comp)
        rows["rewards"].append(r)
    return rows


class _JsonCache:
    """``dumps`` of flat dicts, each distinct one encoded once (unhashable values: encoded every time)."""

    def __init__(self) -> None:
        self.memo: dict = {}

    def __call__(self, d: dict) -> str:
        try:
            key = tuple(sorted(d.items()))
            hash(key)
        except TypeError:
            return dumps(d)
        if key not in self.memo:
            self.memo[key] = dumps(d)
        return self.memo[key]


# ---------------------------------------------------------------------- the R-Zero Challenger
@dataclass
class ChallengerBatch:
    texts: list
    parsed: list  # coevo.core.world.ParseResult per text
    answers: dict  # index of a parsed question -> the Solver's answers (None: none)
    votes: dict  # index -> coevo.verify.vote.Vote
    out: list  # per text: {"score", "p_hat", "r_unc", "r_rep", "format_ok"}


def challenger_scores(texts: Sequence[Optional[str]], rv, answers: Optional[dict] = None,
                      solver_fn: Optional[Callable[[list], list]] = None, extract: str = "auto",
                      uncertainty_variant: str = "paper", rep_lambda: float = 1.0, rep_threshold: float = 0.5,
                      rep_linkage: str = "average", bleu_direction: str = "symmetric",
                      format_failure_reward: float = 0.0) -> ChallengerBatch:
    """R-Zero Challenger reward (R-Zero §2.2, with the repository's reference variants) of a batch of
    Challenger outputs: r = max(0, r_unc(p_hat) - r_rep) with p_hat the majority-vote share of the
    question's Solver answers (``answers[i]``, else ``solver_fn(questions)`` -> raw Solver outputs per
    question) and r_rep = lambda |C|/B over the batch's BLEU clusters (B = the whole batch, as R-Zero's
    code); a question that fails to parse gets ``format_failure_reward`` (paper 0, R-Zero code -1).
    Formulas and options of ``coevo.recipes.rzero`` (``coevo.recipes.rzero.rewards``)."""
    from coevo.recipes.rzero.rewards import challenger_reward, uncertainty_reward
    from coevo.rewards.repetition import repetition_penalty
    from coevo.worlds.math import MathWorld

    world, n = MathWorld(), len(texts)
    parsed = [world.parse_task(t or "", f"q{i}") for i, t in enumerate(texts)]
    valid = [i for i, p in enumerate(parsed) if p.ok]
    got = {i: (answers or {}).get(i) for i in valid}
    missing = [i for i in valid if got[i] is None]
    if missing and solver_fn is not None:
        for i, outs in zip(missing, solver_fn([parsed[i].task.question for i in missing])):
            got[i] = [extract_answer(t, extract) for t in outs]
    votes = rv.majority_votes([got[i] or [] for i in valid])
    out = [{"score": float(format_failure_reward), "p_hat": 0.0, "r_unc": 0.0, "r_rep": 0.0, "format_ok": 0.0}
           for _ in range(n)]
    if valid:
        p_hat = np.array([v.p_hat for v in votes])
        qs = [world.repetition_text(parsed[i].task.question) for i in valid]
        r_rep = repetition_penalty(qs, lam=rep_lambda, threshold=rep_threshold, linkage=rep_linkage,
                                   direction=bleu_direction) * (len(qs) / n)  # B = the whole batch
        r_unc = uncertainty_reward(p_hat, uncertainty_variant)
        r = challenger_reward(p_hat, r_rep, uncertainty_variant)
        for j, i in enumerate(valid):
            out[i] = {"score": float(r[j]), "p_hat": float(p_hat[j]), "r_unc": float(r_unc[j]),
                      "r_rep": float(r_rep[j]), "format_ok": 1.0}
    return ChallengerBatch(list(texts), parsed, got, dict(zip(valid, votes)), out)


def challenger_rows(run_id: str, call: str, fw: Framework, step: int, b: ChallengerBatch, rv,
                    meta: Optional[Sequence[dict]] = None) -> dict:
    """The ledger rows of a scored Challenger batch: per question a task (source = the Challenger role),
    its reward with the components, and one Solver rollout + pseudo-label verdict per sampled answer."""
    rows: dict[str, list] = {"tasks": [], "rollouts": [], "verdicts": [], "rewards": []}
    for i, p in enumerate(b.parsed):
        tid = f"{call}-q{i}"
        vote, o = b.votes.get(i), b.out[i]
        comp = ({"format_ok": True, "p_hat": o["p_hat"], "r_unc": o["r_unc"], "r_rep": o["r_rep"],
                 "pseudo_label": vote.label, "n_answers": len(b.answers.get(i) or [])} if vote is not None
                else {"format_ok": False, "reason": p.reason})
        m = dict((meta[i] if meta is not None else {}), **fw.meta(CHALLENGER))
        rows["tasks"].append(task_row_of(run_id, 1, step, tid, CHALLENGER, p.task.question if p.ok else None,
                                         p.task.reference if p.ok else None, raw_text=b.texts[i], parse_reason=p.reason,
                                         parse_ok=p.ok, prompt_version=fw.label, pseudo_label=comp.get("pseudo_label"),
                                         p_hat=comp.get("p_hat"), meta_json=dumps(m)))
        rows["rewards"].append(reward_row(run_id, step, CHALLENGER, tid, tid, o["score"], 0.0,
                                          dict(comp, **fw.meta(CHALLENGER))))
        rows["rewards"][-1]["advantage"] = None
        for k, a in enumerate(b.answers.get(i) or []):
            rid = f"{tid}-p_hat-{k}"
            rows["rollouts"].append(rollout_row_of(run_id, 1, step, rid, tid, "solver", "p_hat", k, None, a, fw.label))
            rows["verdicts"].append(verdict_row(run_id, step, rid, tid, "pseudo_label", 1 if vote.agree[k] else 0,
                                                "" if a is not None else "no-answer", rv.kind, rv.version))
    return rows
