"""coevo's rewards inside TRL's ``GRPOTrainer`` (docs/integrations.md, "TRL"; tested against TRL 1.16.0).

TRL calls each reward function as ``f(prompts=..., completions=..., completion_ids=..., **columns,
trainer_state=..., log_extra=..., log_metric=...)`` with one entry per completion (a prompt repeated
``num_generations`` times, consecutive) and takes back ``list[float | None]``; ``None`` means "no reward
for this completion" and TRL leaves it out of the group's baseline (``GRPOTrainer._calculate_rewards``).
Prompts and completions are strings (standard format) or lists of ``{"role", "content"}`` messages
(conversational format). This module holds only that calling convention; the rewards, verdicts and
rows are ``coevo.integrations.scoring``, the ledger part ``coevo.integrations.ledger_writer``.

* ``SolverReward``: the Solver's verified reward through coevo's verifier pool (any verifier kind, its
  timeouts enforced in killable workers from any thread); an abstention is ``None``.
* ``ChallengerReward``: the R-Zero Challenger's reward (uncertainty of the Solver's sampled answers,
  minus the batch's repetition penalty, the format check) with a ``solver_fn``.
* ``CoevoLedgerCallback``: a ``transformers.TrainerCallback`` that commits and closes the ledger parts
  when training ends (and commits at each checkpoint save).

The step of a row is ``trainer_state.global_step`` (TRL passes the trainer's state to every reward
function); without a trainer state, ``step=`` or the call number, and the row says where it came from.
Rows are tagged ``trl`` with TRL's installed version and the role; ``coevo import parts LEDGER --out RUN``
merges the parts, then ``coevo audit RUN`` reads them.
"""
from __future__ import annotations

import hashlib
import os
from typing import Any, Callable, Optional, Sequence

from coevo.integrations.common import LEDGER_ENV, as_reference, build_verifier
from coevo.integrations.ledger_writer import current_part
from coevo.integrations.scoring import (
    Framework, SolverItem, challenger_rows, challenger_scores, installed_version, solver_rows, solver_score,
    solver_verdicts,
)

__all__ = ["SolverReward", "ChallengerReward", "CoevoLedgerCallback", "framework", "text_of", "ANSWER_KEYS"]

ANSWER_KEYS = ("solution", "answer", "ground_truth")  # TRL's accuracy_reward reads "solution"
_FW: dict = {}


def framework() -> Framework:
    if "fw" not in _FW:
        _FW["fw"] = Framework("trl", installed_version("trl"))
    return _FW["fw"]


def text_of(x: Any, role: Optional[str] = None) -> Optional[str]:
    """The text of a prompt or completion: a string as is; a conversational one (list of messages) = the
    content of its last message of ``role`` (any role when None), text parts of a content list joined."""
    if x is None or isinstance(x, str):
        return x
    msgs = [m for m in x if isinstance(m, dict) and (role is None or m.get("role") == role)]
    if not msgs:
        return None
    c = msgs[-1].get("content")
    if isinstance(c, list):  # content blocks: [{"type": "text", "text": ...}, {"type": "image"}, ...]
        return "".join(p.get("text", "") for p in c if isinstance(p, dict) and p.get("type") == "text")
    return None if c is None else str(c)


class _Reward:
    """What both rewards share: the ledger part, the verifier, the step."""

    def __init__(self, name: str, ledger: Optional[str], verifier: str, verifier_options: Optional[dict],
                 verify_workers: Optional[int], timeout_s: Optional[float], flush_rows: int, flush_s: float) -> None:
        self.__name__ = name  # TRL names the reward's logged metrics after it
        self.ledger = ledger
        self.rv = build_verifier(verifier, verifier_options, verify_workers, timeout_s)
        self.flush_rows, self.flush_s = int(flush_rows), float(flush_s)
        self.calls = 0

    def writer(self):
        """This process's ledger part (kept between calls; opened again after the callback closed it)."""
        self._w = current_part(getattr(self, "_w", None), self.ledger or os.environ.get(LEDGER_ENV), framework(),
                               self.flush_rows, self.flush_s)
        return self._w

    def step(self, trainer_state: Any, step: Optional[int]) -> tuple[int, str]:
        """(step, where it came from): ``trainer_state.global_step``, ``step=``, else this reward's call number."""
        self.calls += 1
        if trainer_state is not None and getattr(trainer_state, "global_step", None) is not None:
            return int(trainer_state.global_step), "trainer_state.global_step"
        if step is not None:
            return int(step), "kwarg"
        return self.calls, "none"


class SolverReward(_Reward):
    """The Solver's verified reward: 1.0 when the completion's answer matches the dataset's reference
    (column ``answer_key``; by default the first of ``solution``, ``answer``, ``ground_truth``) under
    coevo's verifier ``verifier``, 0.0 when it does not or has no answer, ``abstain`` (None) when the
    verifier abstains. ``target="pseudo_label"``: the column holds majority-vote labels (R-Zero's Solver
    data) and ``oracle_key`` may name a column of trusted answers, judged as well. ``task_key``: a column
    of task ids (default: a hash of the prompt's text)."""

    def __init__(self, ledger: Optional[str] = None, verifier: str = "math", answer_key: Optional[str] = None,
                 extract: str = "auto", abstain: Optional[float] = None, target: str = "oracle",
                 oracle_key: Optional[str] = None, task_key: Optional[str] = None, verifier_options: Optional[dict] = None,
                 verify_workers: Optional[int] = None, timeout_s: Optional[float] = None, flush_rows: int = 4096,
                 flush_s: float = 5.0, name: str = "coevo_solver") -> None:
        if target not in ("oracle", "pseudo_label"):
            raise ValueError(f"target must be oracle or pseudo_label, got {target!r}")
        super().__init__(name, ledger, verifier, verifier_options, verify_workers, timeout_s, flush_rows, flush_s)
        self.answer_key, self.extract, self.abstain, self.target = answer_key, extract, abstain, target
        self.oracle_key, self.task_key = oracle_key, task_key

    def _refs(self, kwargs: dict, n: int) -> list:
        keys = [self.answer_key] if self.answer_key else [k for k in ANSWER_KEYS if k in kwargs]
        if not keys or keys[0] not in kwargs:
            cols = sorted(k for k in kwargs if k not in ("trainer_state", "log_extra", "log_metric", "completion_ids"))
            raise ValueError(f"coevo SolverReward: no reference column {self.answer_key or ANSWER_KEYS} among the "
                             f"dataset's columns {cols}; name it with answer_key=")
        refs = list(kwargs[keys[0]])
        if len(refs) != n:
            raise ValueError(f"coevo SolverReward: column {keys[0]!r} has {len(refs)} entries for {n} completions")
        return refs

    def __call__(self, prompts: Sequence, completions: Sequence, trainer_state: Any = None, step: Optional[int] = None,
                 log_extra: Optional[Callable] = None, log_metric: Optional[Callable] = None, **kwargs) -> list:
        n = len(completions)
        refs = self._refs(kwargs, n)
        questions = [text_of(p, "user") for p in prompts]
        oracles = list(kwargs[self.oracle_key]) if self.oracle_key and self.target == "pseudo_label" else [None] * n
        tids = [str(t) for t in kwargs[self.task_key]] if self.task_key else \
            [f"{framework().name}:q{hashlib.sha1(str(q).encode()).hexdigest()[:12]}" for q in questions]
        items = [SolverItem(tids[i], text_of(completions[i], "assistant"), as_reference(refs[i]), questions[i],
                            as_reference(oracles[i])) for i in range(n)]
        solver_verdicts(self.rv, items, self.extract)
        scores = [solver_score(it.verdicts[0], self.abstain) for it in items]
        s, s_from = self.step(trainer_state, step)
        w = self.writer()
        if w is not None:
            seen: dict[str, int] = {}
            group = [seen.__setitem__(t, seen.get(t, -1) + 1) or seen[t] for t in tids]  # k-th sample of its prompt
            for it in items:
                it.meta = {"step_from": s_from}
            # the rows are built when they are committed (off this thread when buffered): the call returns now
            w.write(lambda: solver_rows(w.part, w.next_id, framework(), s, items, scores, self.target, group_idx=group),
                    n_rows=4 * n)
        verdicts = [it.verdicts[0] for it in items]
        if log_extra is not None:  # TRL's completions table
            log_extra(f"{self.__name__}_verdict", [v.reason if v.value is None else v.value for v in verdicts])
        if log_metric is not None:
            log_metric(f"{self.__name__}/abstained", sum(v.value is None for v in verdicts) / max(n, 1))
        return scores


class ChallengerReward(_Reward):
    """The R-Zero Challenger's reward of a batch of Challenger completions (``<question>…</question>``):
    ``solver_fn(questions) -> one list of raw Solver outputs per question`` samples the Solver (R-Zero: 10
    samples); the formulas and options are ``coevo.integrations.scoring.challenger_scores``. A question
    whose Solver gave no answer list is an abstention (``abstain``, None). B of the repetition penalty =
    the completions of this call (one process's share of TRL's generation batch)."""

    def __init__(self, solver_fn: Callable[[list], list], ledger: Optional[str] = None, verifier: str = "math",
                 extract: str = "auto", uncertainty_variant: str = "paper", rep_lambda: float = 1.0,
                 rep_threshold: float = 0.5, rep_linkage: str = "average", bleu_direction: str = "symmetric",
                 format_failure_reward: float = 0.0, abstain: Optional[float] = None,
                 verifier_options: Optional[dict] = None, verify_workers: Optional[int] = None,
                 timeout_s: Optional[float] = None, flush_rows: int = 4096, flush_s: float = 5.0,
                 name: str = "coevo_challenger") -> None:
        super().__init__(name, ledger, verifier, verifier_options, verify_workers, timeout_s, flush_rows, flush_s)
        self.solver_fn, self.extract, self.abstain = solver_fn, extract, abstain
        self.opts = dict(uncertainty_variant=uncertainty_variant, rep_lambda=rep_lambda, rep_threshold=rep_threshold,
                         rep_linkage=rep_linkage, bleu_direction=bleu_direction,
                         format_failure_reward=format_failure_reward)

    def __call__(self, prompts: Sequence, completions: Sequence, trainer_state: Any = None, step: Optional[int] = None,
                 log_extra: Optional[Callable] = None, log_metric: Optional[Callable] = None, **kwargs) -> list:
        texts = [text_of(c, "assistant") for c in completions]
        b = challenger_scores(texts, self.rv, None, self.solver_fn, self.extract, **self.opts)
        no_answers = [i for i in b.votes if not b.answers.get(i)]
        scores: list = [o["score"] for o in b.out]
        for i in no_answers:
            scores[i] = None if self.abstain is None else float(self.abstain)
            b.out[i]["abstained"] = True
        s, s_from = self.step(trainer_state, step)
        w = self.writer()
        if w is not None:
            rows = challenger_rows(w.part, w.next_id(), framework(), s, b, self.rv, [{"step_from": s_from}] * len(texts))
            for i in no_answers:
                rows["rewards"][i]["reward"] = scores[i]
            w.write(rows)
        if log_metric is not None:
            log_metric(f"{self.__name__}/format_ok", sum(o["format_ok"] for o in b.out) / max(len(texts), 1))
        return scores


def _callback_class() -> type:
    """``CoevoLedgerCallback``, built on first use: ``transformers.TrainerCallback`` is its base, and the
    reward functions above import without transformers (an import that takes seconds)."""
    if "cb" in _FW:
        return _FW["cb"]
    from transformers import TrainerCallback

    from coevo.integrations.ledger_writer import close_parts, flush_parts

    class CoevoLedgerCallback(TrainerCallback):
        """Commits the ledger parts of this process at each checkpoint save, and commits and closes them
        when training ends (``on_train_end``), so ``coevo import parts`` can merge them right after
        ``trainer.train()`` returns. A reward called after that opens the part again."""

        def on_save(self, args, state, control, **kwargs):
            flush_parts()

        def on_train_end(self, args, state, control, **kwargs):
            close_parts()

    CoevoLedgerCallback.__module__ = __name__
    _FW["cb"] = CoevoLedgerCallback
    return CoevoLedgerCallback


def __getattr__(name: str):  # PEP 562: ``from coevo.integrations.trl import CoevoLedgerCallback``
    if name == "CoevoLedgerCallback":
        return _callback_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
