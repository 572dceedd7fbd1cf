"""Row builders for the ledger tables (coevo/ledger/schema.py): the one place that knows a
row's columns.  Stages call these and return the rows they produced; the runner commits a
step's rows in one transaction (``Ledger.step``).
"""
from __future__ import annotations

import json
from typing import Any

from coevo.core.policy import Completion, full_text, sampler_info


def dumps(obj: Any) -> str:
    return json.dumps(obj, default=float, sort_keys=True)


def segments_info(c: Completion) -> list[dict] | None:
    """The rollout's segments (kind, tokens, text) for the ledger; None for single-turn."""
    if not c.segments:
        return None
    return [{"kind": s.kind, "n_tokens": s.n_tokens, "text": s.text} for s in c.segments]


def rollout_row(run_id: str, round_: int, step: int, rollout_id: str, task_id: str, role: str, purpose: str,
                group_idx: int, c: Completion, answer: str | None) -> dict:
    segs = segments_info(c)
    return {"run_id": run_id, "rollout_id": rollout_id, "task_id": task_id, "round": round_, "step": step,
            "role": role, "purpose": purpose, "group_idx": group_idx, "policy_version": c.policy_version,
            "text": c.text, "answer": answer, "n_tokens": len(c.token_ids), "finish_reason": c.finish_reason,
            "sampler_json": sampler_info(c), "segments_json": dumps(segs) if segs is not None else None,
            "n_masked_tokens": (len(c.token_mask) - sum(c.token_mask)) if c.token_mask is not None else 0}


def verdict_row(run_id: str, step: int, rollout_id: str, task_id: str, target: str, value: int | None, reason: str,
                kind: str, version: str, elapsed_s: float = 0.0, criterion_id: str | None = None) -> dict:
    return {"run_id": run_id, "rollout_id": rollout_id, "task_id": task_id, "step": step, "target": target,
            "verifier_kind": kind, "verifier_version": version, "criterion_id": criterion_id, "value": value,
            "reason": reason, "elapsed_s": elapsed_s}


def verdict_row_of(run_id: str, step: int, rollout_id: str, task_id: str, target: str, v, default_kind: str = "",
                   default_version: str = "") -> dict:
    """A verdict row from a ``coevo.verify.Verdict`` (its kind, version, criterion, elapsed)."""
    return verdict_row(run_id, step, rollout_id, task_id, target, v.value, v.reason,
                       getattr(v, "kind", "") or default_kind, getattr(v, "version", "") or default_version,
                       getattr(v, "elapsed_s", 0.0) or 0.0, getattr(v, "criterion_id", None))


def task_row(run_id: str, round_: int, step: int, task_id: str, source: str, proposer: Completion | None,
             prompt_version: str, task=None, parse_reason: str = "", oracle_answer: str | None = None,
             **extra) -> dict:
    row = {"run_id": run_id, "task_id": task_id, "round": round_, "step": step, "source": source,
           "proposer_version": proposer.policy_version if proposer is not None else None,
           "prompt_version": prompt_version, "raw_text": full_text(proposer) if proposer is not None else None,
           "question": task.question if task else None, "parse_ok": task is not None, "parse_reason": parse_reason,
           "difficulty": task.meta.get("difficulty") if task else None,
           "reference": task.reference if task else None, "oracle_answer": oracle_answer,
           "pseudo_label": None, "p_hat": None, "kept": None, "meta_json": None}
    row.update(extra)
    sampler = sampler_info(proposer) if proposer is not None else None
    if sampler is not None:  # served by an inference server: which one, which adapter
        meta = json.loads(row.get("meta_json") or "{}")
        meta["sampler"] = sampler
        row["meta_json"] = dumps(meta)
    return row


def reward_row(run_id: str, step: int, role: str, item_id: str, task_id: str, reward: float, advantage: float,
               components: dict | None = None) -> dict:
    return {"run_id": run_id, "step": step, "role": role, "item_id": item_id, "task_id": task_id,
            "reward": float(reward), "advantage": float(advantage),
            "components_json": dumps(components) if components is not None else None}


def update_row(run_id: str, step: int, role: str, before: str, after: str, n_sequences: int, metrics: dict) -> dict:
    return {"run_id": run_id, "step": step, "role": role, "version_before": before, "version_after": after,
            "n_sequences": n_sequences, "metrics_json": dumps(metrics)}
