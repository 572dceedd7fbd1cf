"""coevo's rewards as an OpenRLHF ``reward_func`` (``--reward.remote_url file.py``; docs/integrations.md, "OpenRLHF";
tested against OpenRLHF 0.11.2's own loader and calling path).

OpenRLHF 0.11.2's calling convention (``openrlhf/utils/agent.py`` of the PyPI wheel):

* loading (``SingleTurnAgentExecutor.__init__``, agent.py:191-205): the CLI's ``--reward.remote_url``
  (``openrlhf/cli/train_ppo_ray.py:558``; ``--remote_rm_url`` before the dotted flags) reaches the executor as
  ``remote_rm_url`` (train_ppo_ray.py:80, ``trainer/ray/vllm_engine.py:59``); when its first entry ends in
  ``.py``, the file is executed as module ``reward_func`` (``importlib.util.spec_from_file_location``) and its
  attribute ``reward_func`` is taken. One executor per vLLM engine actor, so one loaded module per engine process.
* calling (``execute``, agent.py:286-304, and ``_fetch_rewards_via_func``, agent.py:308-325): once per sample,
  as soon as it is generated, ``reward_func(queries, prompts, labels)`` with three lists of **one** entry
  (``batch_size = 1``), in a worker thread (``asyncio.to_thread``): many calls run at once. ``query`` is the
  decoded prompt + response (``skip_special_tokens=False``), ``prompt`` the prompt text, ``label`` the
  dataset's ``--label_key`` value. No step, no trainer state: nothing in the context says which step it is.
* the return (agent.py:293-302, ``openrlhf/trainer/ppo_utils/samples_generator.py:250-304``): a dict with
  ``rewards`` (the training reward), ``scores`` (logged; ``rewards`` when absent) and ``extra_logs`` (each value
  logged as a per-sample metric). Each becomes ``torch.tensor([value])``, so a reward must be a number: there
  is no "no reward" value. An exception is caught and logged at info level (agent.py:303-304) and the sample
  gets no reward.

This module holds only that convention; the rewards, verdicts and rows are ``coevo.integrations.scoring``, the
ledger part ``coevo.integrations.ledger_writer``.

* ``SolverRewardFunc``: the Solver's verified reward (any coevo verifier, the verifier pool's timeouts): 1.0 / 0.0,
  and an abstention scores ``abstain`` (default 0.0, a number because OpenRLHF needs one); its ledger row keeps
  the abstention (reward and verdict NULL, ``components.abstained``, ``meta.abstain_value``), so ``coevo audit``
  counts it.
* ``ChallengerRewardFunc``: the R-Zero Challenger's reward. Its repetition penalty needs the whole batch, so
  each per-sample call joins a batch held in this process (``ThreadBatch``, the threaded counterpart of
  ``verl_manager.BatchCollector``) and waits until ``batch_size`` samples joined or ``batch_wait_s`` seconds
  passed since the batch's first; the batch is scored once and every call returns its own reward. B (written
  on every row, ``meta.batch_size``, and logged as ``coevo_batch_size``) is this engine's share of the step.
  Python's default thread pool, which ``asyncio.to_thread`` uses, runs min(32, cpus + 4) calls at once, so a
  batch holds at most that many samples: a larger ``batch_size`` closes by ``batch_wait_s``.

**The step** (OpenRLHF passes none): a documented counter per process. The Solver's step is
``call number // batch_size``; the Challenger's is the number of batches this process scored before. Rows
say so (``meta.step_from = "counter"``). ``batch_size`` = the samples one engine scores per step
(``rollout_batch_size x n_samples_per_prompt / vllm_num_engines``).

Rows are tagged ``openrlhf`` with OpenRLHF's installed version and the role. ``reward_func_from_env()`` builds
the function from ``COEVO_*`` variables (OpenRLHF's loader passes no arguments): ``examples/openrlhf_reward.py``.
"""
from __future__ import annotations

import hashlib
import os
import threading
import time
from typing import Any, Callable, Optional, Sequence

from coevo.integrations.common import LEDGER_ENV, as_reference, build_verifier, import_function
from coevo.integrations.ledger_writer import current_part
from coevo.integrations.scoring import (
    Framework, SolverItem, challenger_rows, challenger_scores, installed_version, solver_rows, solver_score,
    solver_verdicts,
)
from coevo.recipes.rzero import CHALLENGER

__all__ = ["SolverRewardFunc", "ChallengerRewardFunc", "ThreadBatch", "reward_func_from_env", "response_of",
           "framework", "ROLES"]

ROLES = ("solver", CHALLENGER)
_FW: dict = {}


def framework() -> Framework:
    if "fw" not in _FW:
        _FW["fw"] = Framework("openrlhf", installed_version("openrlhf"))
    return _FW["fw"]


def response_of(query: str, prompt: Optional[str]) -> str:
    """The response in OpenRLHF's ``query`` (the decoded prompt + response): what follows the prompt's text
    when the query starts with it, else the whole query."""
    if prompt and query.startswith(prompt):
        return query[len(prompt):]
    return query


def _as_output(scores: Sequence[float], logs: dict) -> dict:
    """OpenRLHF's return shape (agent.py:293-302): tensors of one value per sample, as its examples return."""
    import torch

    r = torch.tensor([float(s) for s in scores], dtype=torch.float32)
    return {"rewards": r, "scores": r.clone(),
            "extra_logs": {k: torch.tensor([float(x) for x in v], dtype=torch.float32) for k, v in logs.items()}}


class _RewardFunc:
    """What both rewards share: the verifier, the ledger part, the step counter."""

    role = "solver"

    def __init__(self, ledger: Optional[str], verifier: str, verifier_options: Optional[dict],
                 verify_workers: Optional[int], timeout_s: Optional[float], abstain: float, batch_size: int,
                 flush_rows: int, flush_s: float) -> None:
        if int(batch_size) < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.ledger = ledger
        self.rv = build_verifier(verifier, verifier_options, verify_workers, timeout_s)
        self.abstain, self.batch_size = float(abstain), int(batch_size)
        self.flush_rows, self.flush_s = int(flush_rows), float(flush_s)
        self.lock = threading.Lock()
        self.calls = 0

    def writer(self):
        """This process's ledger part (None without a ledger root); opened at construction too, so that when
        OpenRLHF loads the module in its main thread the part's SIGTERM handler is installed."""
        self._w = current_part(getattr(self, "_w", None), self.ledger or os.environ.get(LEDGER_ENV), framework(),
                               self.flush_rows, self.flush_s)
        return self._w


class SolverRewardFunc(_RewardFunc):
    """``reward_func(queries, prompts, labels)`` of the Solver: 1.0 when the response's answer matches the label
    under coevo's verifier ``verifier``, 0.0 when it does not or has none, ``abstain`` when the verifier
    abstained. The task id is a hash of the prompt; ``extract`` as ``coevo.integrations.common.extract_answer``."""

    def __init__(self, ledger: Optional[str] = None, verifier: str = "math", extract: str = "auto",
                 abstain: float = 0.0, batch_size: int = 1, verifier_options: Optional[dict] = None,
                 verify_workers: Optional[int] = None, timeout_s: Optional[float] = None, flush_rows: int = 4096,
                 flush_s: float = 2.0) -> None:
        super().__init__(ledger, verifier, verifier_options, verify_workers, timeout_s, abstain, batch_size,
                         flush_rows, flush_s)
        self.extract = extract
        self.groups: dict = {}  # (step, task) -> samples seen: the group index of the next one
        self.writer()

    def __call__(self, queries: Sequence[str], prompts: Sequence[str], labels: Sequence[Any]) -> dict:
        n = len(queries)
        if len(prompts) != n or len(labels) != n:
            raise ValueError(f"coevo openrlhf reward: {n} queries, {len(prompts)} prompts, {len(labels)} labels")
        tids = [f"openrlhf:q{hashlib.sha1(str(p).encode()).hexdigest()[:12]}" for p in prompts]
        items = [SolverItem(tids[i], response_of(queries[i], prompts[i]), as_reference(labels[i]), prompts[i],
                            meta={"step_from": "counter", "batch_size": self.batch_size, "abstain_value": self.abstain})
                 for i in range(n)]
        solver_verdicts(self.rv, items, self.extract)
        scores = [solver_score(it.verdicts[0], self.abstain) for it in items]
        kept = [solver_score(it.verdicts[0], None) for it in items]  # the ledger keeps an abstention NULL
        with self.lock:
            step = self.calls // self.batch_size
            self.calls += n
            group = []
            for t in tids:
                group.append(self.groups.get((step, t), 0))
                self.groups[(step, t)] = group[-1] + 1
            self.groups = {k: v for k, v in self.groups.items() if k[0] >= step - 1}
        w = self.writer()
        if w is not None:  # rows built at commit time, off this thread
            w.write(lambda: solver_rows(w.part, w.next_id, framework(), step, items, kept, "oracle",
                                        group_idx=group), n_rows=4 * n)
        abst = [float(it.verdicts[0].value is None) for it in items]
        return _as_output(scores, {"coevo_abstained": abst})


class ThreadBatch:
    """Per-sample calls from many threads gathered into batches of ``size`` (or what joined within ``wait_s``
    of a batch's first call); ``score(items) -> one result per item`` runs once per batch, in the thread of
    the call that closed it. ``join`` returns (result, batch number, B)."""

    def __init__(self, size: int, wait_s: float, score: Callable[[list, int], list]) -> None:
        self.size, self.wait_s, self.score = int(size), float(wait_s), score
        self.cv = threading.Condition()
        self.cur: Optional[dict] = None
        self.n_batches = 0

    def join(self, item: Any) -> tuple:
        with self.cv:
            b = self.cur
            if b is None:
                b = self.cur = {"items": [], "out": None, "err": None, "t0": time.monotonic(), "k": self.n_batches}
                self.n_batches += 1
            i = len(b["items"])
            b["items"].append(item)
            close = len(b["items"]) >= self.size
            while not close and b["out"] is None and b["err"] is None:
                left = b["t0"] + self.wait_s - time.monotonic()
                if self.cur is b and left <= 0:
                    close = True
                    break
                self.cv.wait(timeout=max(left, 0.0) if self.cur is b else None)
            if close:
                self.cur = None if self.cur is b else self.cur
        if close:
            try:
                out, err = self.score(list(b["items"]), b["k"]), None
            except BaseException as e:  # every caller of the batch raises it
                out, err = None, e
            with self.cv:
                b["out"], b["err"] = out, err
                self.cv.notify_all()
        if b["err"] is not None:
            raise b["err"]
        return b["out"][i], b["k"], len(b["items"])


class ChallengerRewardFunc(_RewardFunc):
    """``reward_func(queries, prompts, labels)`` of the R-Zero Challenger (``<question>…</question>`` responses):
    ``solver_fn(questions) -> one list of raw Solver outputs per question`` samples the Solver; the formulas
    and options are ``coevo.integrations.scoring.challenger_scores``, B = the batch the calls joined (module
    docstring). A question whose Solver gave no answer list scores ``abstain`` and its row says so."""

    role = CHALLENGER

    def __init__(self, solver_fn: Callable[[list], list], ledger: Optional[str] = None, verifier: str = "math",
                 extract: str = "auto", batch_size: int = 1, batch_wait_s: float = 60.0, abstain: float = 0.0,
                 uncertainty_variant: str = "paper", rep_lambda: float = 1.0, rep_threshold: float = 0.5,
                 rep_linkage: str = "average", bleu_direction: str = "symmetric", format_failure_reward: float = 0.0,
                 verifier_options: Optional[dict] = None, verify_workers: Optional[int] = None,
                 timeout_s: Optional[float] = None, flush_rows: int = 4096, flush_s: float = 2.0) -> None:
        super().__init__(ledger, verifier, verifier_options, verify_workers, timeout_s, abstain, batch_size,
                         flush_rows, flush_s)
        if float(batch_wait_s) <= 0:
            raise ValueError(f"batch_wait_s must be > 0, got {batch_wait_s}")
        self.solver_fn, self.extract = solver_fn, extract
        self.opts = dict(uncertainty_variant=uncertainty_variant, rep_lambda=rep_lambda, rep_threshold=rep_threshold,
                         rep_linkage=rep_linkage, bleu_direction=bleu_direction,
                         format_failure_reward=format_failure_reward)
        self.batch = ThreadBatch(self.batch_size, batch_wait_s, self._score_batch)
        self.writer()

    def _score_batch(self, texts: list, step: int) -> list:
        """Score one batch, write its rows (step = the batch's number); per text (score, components)."""
        b = challenger_scores(texts, self.rv, None, self.solver_fn, self.extract, **self.opts)
        scores = [o["score"] for o in b.out]
        no_answers = [i for i in b.votes if not b.answers.get(i)]
        for i in no_answers:
            scores[i] = self.abstain
            b.out[i]["abstained"] = True
        w = self.writer()
        if w is not None:
            meta = [{"step_from": "counter", "batch_size": len(texts), "abstain_value": self.abstain}] * len(texts)
            rows = challenger_rows(w.part, w.next_id(), framework(), step, b, self.rv, meta)
            for i in no_answers:  # the ledger keeps an abstention NULL (OpenRLHF got ``abstain``)
                rows["rewards"][i]["reward"] = None
            w.write(rows)
        return [(scores[i], b.out[i]) for i in range(len(texts))]

    def __call__(self, queries: Sequence[str], prompts: Sequence[str], labels: Sequence[Any]) -> dict:
        if len(prompts) != len(queries):
            raise ValueError(f"coevo openrlhf reward: {len(queries)} queries, {len(prompts)} prompts")
        scores, logs = [], {"coevo_p_hat": [], "coevo_r_rep": [], "coevo_format_ok": [], "coevo_abstained": [],
                            "coevo_batch_size": []}
        for q, p in zip(queries, prompts):  # OpenRLHF passes one sample per call
            (s, o), _, size = self.batch.join(response_of(q, p))
            scores.append(s)
            for k in ("p_hat", "r_rep", "format_ok"):
                logs[f"coevo_{k}"].append(o[k])
            logs["coevo_abstained"].append(float(bool(o.get("abstained"))))
            logs["coevo_batch_size"].append(float(size))
        return _as_output(scores, logs)


def _env(name: str, default: Any, cast: Callable = str) -> Any:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return cast(raw)
    except ValueError:
        raise ValueError(f"${name}={raw!r} is not a valid {cast.__name__}") from None


def reward_func_from_env(role: Optional[str] = None) -> _RewardFunc:
    """The reward function the variables describe (OpenRLHF's loader passes no arguments): ``COEVO_ROLE``
    (``solver`` or ``challenger``; ``role`` overrides it), ``COEVO_LEDGER`` (the ledger root; none: no rows),
    ``COEVO_VERIFIER`` (default math), ``COEVO_EXTRACT`` (auto), ``COEVO_ABSTAIN`` (0.0), ``COEVO_BATCH_SIZE``
    (1: the samples one engine scores per step), ``COEVO_VERIFY_TIMEOUT_S``; the Challenger's
    ``COEVO_SOLVER_FN`` (``package.module:function``, required; ``coevo.integrations.solver_client:solve``
    samples an OpenAI-compatible server configured by ``COEVO_SOLVER_*``) and ``COEVO_BATCH_WAIT_S`` (60)."""
    role = role or _env("COEVO_ROLE", "solver")
    if role not in ROLES:
        raise ValueError(f"$COEVO_ROLE must be one of {ROLES}, got {role!r}")
    kw = dict(verifier=_env("COEVO_VERIFIER", "math"), extract=_env("COEVO_EXTRACT", "auto"),
              abstain=_env("COEVO_ABSTAIN", 0.0, float), batch_size=_env("COEVO_BATCH_SIZE", 1, int),
              timeout_s=_env("COEVO_VERIFY_TIMEOUT_S", None, float))
    if role == "solver":
        return SolverRewardFunc(**kw)
    ref = _env("COEVO_SOLVER_FN", "")
    if not ref:
        raise ValueError("the challenger reward needs $COEVO_SOLVER_FN=package.module:function (the Solver sampler)")
    return ChallengerRewardFunc(import_function(ref, "$COEVO_SOLVER_FN"), batch_wait_s=_env("COEVO_BATCH_WAIT_S", 60.0, float), **kw)
