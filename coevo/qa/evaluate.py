"""Evaluate a search-agent solver on QA benchmarks: EM and Cover-EM per benchmark and their means.

Each question becomes a ``Task`` (reference = the JSON list of golds); the solver runs
multi-turn through ``coevo.stages.rollout.solve_multiturn`` in a ``SearchQAWorld``; the
answer (last ``<answer>`` block) is checked by the verifier kind ``em`` (one call gives EM and
Cover-EM).  ``benchmark_means`` gives the unweighted mean over benchmarks (Search-R1's
tables average the seven benchmarks this way) and the question-weighted mean.
"""
from __future__ import annotations

import json
import time
from typing import Any, Sequence

from coevo.backends.base import SamplingParams, full_text
from coevo.qa.agent import SearchQAWorld
from coevo.qa.benchmarks import BenchmarkLoad, QAExample
from coevo.stages.step import answer_of
from coevo.worlds.base import Task

METRICS = ("em", "cover_em")


def benchmark_means(per_benchmark: dict[str, dict]) -> dict[str, float]:
    """Means over benchmarks of each metric in ``METRICS`` (issue #11 item 8).

    ``per_benchmark[name] = {"questions": n_b, "em": m_b, ...}``.  Unweighted:
    ``mean_<m> = (1/B) * sum_b m_b``; question-weighted: ``weighted_<m> = sum_b n_b * m_b /
    sum_b n_b``.  Empty input -> no keys."""
    rows = [r for r in per_benchmark.values() if r.get("questions")]
    if not rows:
        return {}
    n = sum(r["questions"] for r in rows)
    out: dict[str, float] = {}
    for m in METRICS:
        out[f"mean_{m}"] = sum(r[m] for r in rows) / len(rows)
        out[f"weighted_{m}"] = sum(r["questions"] * r[m] for r in rows) / n
    return out


def example_task(ex: QAExample) -> Task:
    return Task(task_id=f"{ex.benchmark}:{ex.qid}", question=ex.question, reference=json.dumps(ex.golds),
                meta={"benchmark": ex.benchmark, "golds": list(ex.golds)})


def _score(tasks: Sequence[Task], comps: Sequence, world: SearchQAWorld, verifier) -> list[dict]:
    texts = [full_text(c) for c in comps]
    answers = [answer_of(world, c, full=True) for c in comps]
    verdicts = verifier.verify_many([(a, t.reference) for a, t in zip(answers, tasks)])
    rows = []
    for t, c, x, a, v in zip(tasks, comps, texts, answers, verdicts):
        rows.append({"id": t.task_id, "question": t.question, "golds": t.meta["golds"], "answer": a, "text": x,
                     "em": int(v.value == 1), "cover_em": int((v.detail or {}).get("cover_em", 0) == 1),
                     "abstained": v.value is None, "reason": v.reason or (v.detail or {}).get("note", ""),
                     "tool_calls": int(c.meta.get("tool_calls", 0)), "finish_reason": c.finish_reason})
    return rows


def _summarise(load: BenchmarkLoad, rows: list[dict], seconds: float) -> dict:
    n = len(rows)
    return {"questions": n, "em": sum(r["em"] for r in rows) / n, "cover_em": sum(r["cover_em"] for r in rows) / n,
            "no_answer": sum(r["answer"] is None for r in rows), "abstained": sum(r["abstained"] for r in rows),
            "mean_tool_calls": sum(r["tool_calls"] for r in rows) / n, "seconds": round(seconds, 3),
            "path": str(load.path), "malformed": len(load.malformed),
            "malformed_lines": [{"line": no, "reason": why} for no, why in load.malformed[:10]]}


def evaluate_qa(policy: Any, world: SearchQAWorld, loads: Sequence[BenchmarkLoad],
                sampling: SamplingParams | None = None, max_turns: int = 4, batch_size: int = 16,
                verifier=None, keep_samples: bool = False) -> dict:
    """EM / Cover-EM of ``policy`` on each loaded benchmark, plus ``benchmark_means``.

    ``sampling`` defaults to greedy, 256 new tokens per turn; ``max_turns`` limits the
    search calls per question."""
    from coevo.stages.rollout import solve_multiturn
    from coevo.verify.verifiers import make_verifier

    sp = sampling or SamplingParams(greedy=True, temperature=0.0, max_new_tokens=256)
    ver = verifier if verifier is not None else make_verifier("em")
    per: dict[str, dict] = {}
    samples: dict[str, list] = {}
    for load in loads:
        t0 = time.perf_counter()
        rows: list[dict] = []
        tasks = [example_task(ex) for ex in load.examples]
        for i in range(0, len(tasks), max(1, batch_size)):
            chunk = tasks[i:i + batch_size]
            comps = [g[0] for g in solve_multiturn(policy, world, chunk, 1, sp, max_turns=max_turns)]
            rows += _score(chunk, comps, world, ver)
        per[load.name] = _summarise(load, rows, time.perf_counter() - t0)
        if keep_samples:
            samples[load.name] = rows
    out = {"benchmarks": per, **benchmark_means(per), "questions": sum(r["questions"] for r in per.values()),
           "topk": world.topk, "max_turns": max_turns, "verifier": {"kind": ver.kind, "version": ver.version}}
    if keep_samples:
        out["samples"] = samples
    return out
