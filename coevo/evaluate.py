"""Benchmark evaluation on local JSONL files (no downloads at run time).

Each line: ``{"question": ..., "answer": "..."}`` or ``{"question": ..., "answers": [...]}``
(``problem`` / ``golden_answers`` are accepted too; optional ``id`` and ``level``).
Prompts come from the world's ``solver_prompt``; the answer from ``extract_answer``.

Metrics, per file and per ``level``:

* ``accuracy_greedy`` — one greedy completion per question, judged against any
  reference answer by the run verifier of the world's default kind
  (``coevo.verify.run.make_run_verifier``: math -> the ``math`` kind, arithmetic
  -> ``integer``), every check in the killable verifier pool (``pool=``, else the
  process-wide default pool); an abstention counts as wrong and is counted under
  ``abstained``.
* ``mean@k`` — k sampled completions per question (temperature / top-p), the mean
  correctness over all k (R-Zero reports mean@32 on AMC/AIME).
* ``cover_em_greedy`` / ``cover_em@k`` — Cover-EM (Search-R1): a SQuAD-normalised
  reference is a substring of the normalised extracted answer (the whole completion
  when nothing could be extracted).  Lenient by design; reported beside accuracy,
  never instead of it.
* ``errors_<run>`` of ``calls_<run>`` — questions whose model-server call failed after its
  retries (openai backend): errors, left out of every metric above, never wrong answers
  (``coevo.core.verdict``); when the first batch's calls all fail the evaluation stops
  (``EndpointDown``).
"""
from __future__ import annotations

import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from coevo.core.policy import SamplingParams
from coevo.core.verdict import Verdict
from coevo.stages import step as sv
from coevo.stages.step import Draw, StepContext


class EvalError(ValueError):
    """Bad evaluation input (file missing, malformed line)."""


def _judge(verifier, preds: list[str | None], golds: list[list[str]]) -> list[Verdict]:
    """One verdict per prediction: 1 if the verifier matches it to any gold; an abstention
    (value None, the verifier's reason) only where no gold gave a decided 0; else 0."""
    pairs, owner = [], []
    for i, (p, gs) in enumerate(zip(preds, golds)):
        for g in gs:
            pairs.append((p, g))
            owner.append(i)
    vs = verifier.match_many(pairs)
    vals = [v.value for v in vs]
    reasons = [v.reason for v in vs]
    out = [{"value": 0, "abstained": False, "reason": ""} for _ in preds]
    seen_value = [False] * len(preds)
    for i, v, r in zip(owner, vals, reasons):
        if v == 1:
            out[i] = {"value": 1, "abstained": False, "reason": ""}
        elif v is not None:
            seen_value[i] = True
        elif out[i]["value"] != 1 and not seen_value[i] and preds[i] is not None:
            out[i] = {"value": 0, "abstained": True, "reason": r}
    for i, o in enumerate(out):  # a decided 0 against some gold overrides an abstention on another
        if o["abstained"] and seen_value[i]:
            o["abstained"] = False
    return [Verdict(None, o["reason"] or "undecidable") if o["abstained"] else Verdict(o["value"]) for o in out]


def match_any(verifier, answers: list[list[str | None]], golds: list[list[str]]) -> list[list[Verdict]]:
    """The stage's ``match`` for benchmark files: per task, each answer judged against any of the
    task's references (``_judge``), in one verifier call."""
    flat = _judge(verifier, [a for ans in answers for a in ans], [g for ans, g in zip(answers, golds) for _ in ans])
    out, j = [], 0
    for ans in answers:
        out.append(flat[j:j + len(ans)])
        j += len(ans)
    return out


def eval_verifier(world, verifier=None, pool=None):
    """The verifier ``coevo eval`` scores with: ``verifier`` if given, else the world's
    default kind through ``pool`` (None: the process-wide default pool)."""
    if verifier is not None:
        return verifier
    from coevo.verify.run import make_run_verifier
    from coevo.verify.pool import default_pool

    return make_run_verifier(None, None, world, pool=pool if pool is not None else default_pool())


def evaluate_jsonl(policy, world, path: str | Path, k: int = 0, greedy: bool = True, temperature: float = 0.6,
                   top_p: float = 0.95, max_new_tokens: int = 512, limit: int | None = None,
                   batch_size: int = 16, keep_samples: bool = False, verifier=None, pool=None) -> dict:
    """Greedy accuracy and/or mean@k (+ Cover-EM) of ``policy`` on a local JSONL file.

    Answers are scored by ``verifier`` (a run verifier: ``match_many``) or, when None, by
    ``eval_verifier(world, pool=pool)``."""
    from coevo.worlds.math import load_jsonl_tasks

    path = Path(path)
    if not path.is_file():
        raise EvalError(f"eval file not found: {path}")
    try:
        tasks = load_jsonl_tasks(path)
    except ValueError as e:
        raise EvalError(str(e)) from None
    if limit:
        tasks = tasks[:limit]
    if not tasks:
        raise EvalError(f"{path}: no questions")
    if not greedy and k <= 0:
        raise EvalError("nothing to do: greedy is off and k = 0")
    verifier = eval_verifier(world, verifier, pool)
    golds = [list(t.meta.get("answers") or [t.reference]) for t in tasks]
    levels = [str(t.meta.get("difficulty", "all")) for t in tasks]
    t0 = time.time()
    result: dict[str, Any] = {"file": str(path), "n": len(tasks), "policy_version": getattr(policy, "version", ""),
                              "world": world.name, "prompt_version": world.prompt_version,
                              "verifier_kind": verifier.kind, "verifier_version": verifier.version,
                              "max_new_tokens": max_new_tokens}
    runs = []
    if greedy:
        runs.append(("greedy", 1, SamplingParams(greedy=True, temperature=0.0, max_new_tokens=max_new_tokens)))
    if k > 0:
        runs.append((f"@{k}", k, SamplingParams(temperature=temperature, top_p=top_p, max_new_tokens=max_new_tokens)))
        result.update(temperature=temperature, top_p=top_p, k=k)
    samples = []
    for tag, n, sp in runs:
        got = sv.sample_verify(StepContext.of(world, verifier, sp), policy, tasks, n, {"gold": golds},
                               Draw(match=match_any, chunk=batch_size))
        samples.extend(_score_run(result, tag, got, golds, levels, keep_samples))
    result["seconds"] = round(time.time() - t0, 2)
    if keep_samples:
        result["samples"] = samples
    return result


def _score_run(result: dict, tag: str, got, golds: list[list[str]], levels: list[str], keep_samples: bool) -> list:
    """One run's accuracy, Cover-EM, abstentions and errors into ``result``; the samples when kept.
    A completion the server failed to give (``finish_reason == "error"``) is an error: left out of
    accuracy and Cover-EM (a question all of whose samples failed is left out), counted in
    ``errors_<tag>`` of ``calls_<tag>`` (one call per question), never scored as wrong."""
    from coevo.core.verdict import completion_errors
    from coevo.verify.answers import cover_em

    flat = [(j, c) for j, group in enumerate(got.outs) for c in group]
    preds = [a for ans in got.answers for a in ans]
    verdicts = [v for vs in got.verdicts["gold"] for v in vs]
    cover = [cover_em(p if p is not None else c.text, golds[j]) for (j, c), p in zip(flat, preds)]
    per_task, per_task_cov = defaultdict(list), defaultdict(list)
    for (j, c), v, cv in zip(flat, verdicts, cover):
        if c.finish_reason != "error":
            per_task[j].append(1 if v.value == 1 else 0)
            per_task_cov[j].append(cv)
    scored = sorted(per_task)
    acc = {j: sum(per_task[j]) / len(per_task[j]) for j in scored}
    cov = {j: sum(per_task_cov[j]) / len(per_task_cov[j]) for j in scored}
    name = "accuracy_greedy" if tag == "greedy" else f"mean{tag}"
    cname = "cover_em_greedy" if tag == "greedy" else f"cover_em{tag}"
    result[name] = sum(acc.values()) / len(acc) if acc else None
    result[cname] = sum(cov.values()) / len(cov) if cov else None
    result[f"se_{name}"] = _se(list(acc.values()))
    ok = [(c, p) for (_, c), p in zip(flat, preds) if c.finish_reason != "error"]
    result[f"no_answer_{tag}"] = sum(p is None for _, p in ok) / len(ok) if ok else None
    result[f"abstained_{tag}"] = sum(v.abstained for (_, c), v in zip(flat, verdicts) if c.finish_reason != "error")
    result[f"errors_{tag}"], result[f"calls_{tag}"] = completion_errors(got.outs)
    if result[f"errors_{tag}"]:
        result[f"error_first_{tag}"] = next(str(c.meta.get("error", "")) for _, c in flat if c.finish_reason == "error")
    for lv in sorted(set(levels)):
        idx = [j for j in scored if levels[j] == lv]
        d = result.setdefault("by_level", {}).setdefault(lv, {})
        d.update({"n": len(idx), name: sum(acc[j] for j in idx) / len(idx) if idx else None,
                  cname: sum(cov[j] for j in idx) / len(idx) if idx else None})
    if not keep_samples:
        return []
    return [{"task_id": got.tasks[j].task_id, "run": tag, "text": c.text, "pred": p,
             "correct": 1 if v.value == 1 else 0, "cover_em": cv, "error": c.finish_reason == "error"}
            for (j, c), p, v, cv in zip(flat, preds, verdicts, cover)]


def _se(xs: list[float]) -> float:
    """Binomial-style standard error of a mean over questions."""
    n = len(xs)
    if n < 2:
        return 0.0
    m = sum(xs) / n
    return (sum((x - m) ** 2 for x in xs) / (n - 1) / n) ** 0.5
