"""Reading run ledgers for the audit: ledger views -> arrays (I/O only; no statistics here).

Shared by ``coevo.audit.run_audit`` (one run's instruments) and the recipes' predictions (e.g. the RGBC
proposal's P1-P6 pooled over runs). SQL stays in coevo/ledger/views.py.
"""
from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import numpy as np
import yaml

from coevo.ledger import views
from coevo.ledger.store import Ledger, LedgerError, open_run_ledger

__all__ = ["AuditError", "N_BOOT", "finite", "float_array", "open_ledger", "read_config", "collect", "screen_groups"]

N_BOOT = 1000


class AuditError(Exception):
    """A run directory that cannot be audited (no ledger, unreadable ledger, no run)."""


def finite(x) -> Optional[float]:
    if x is None:
        return None
    x = float(x)
    return x if np.isfinite(x) else None


def float_array(col, dtype=float) -> np.ndarray:
    if dtype is float:
        return np.array([np.nan if v is None else float(v) for v in col], dtype=float)
    return np.asarray(col, dtype=dtype)


def open_ledger(run_dir: Path) -> Ledger:
    try:
        return open_run_ledger(run_dir)
    except LedgerError as e:
        raise AuditError(str(e)) from None


def read_config(run_dir: Path, info: dict) -> dict:
    p = Path(run_dir) / "config.yaml"
    text = p.read_text() if p.is_file() else (info.get("config_yaml") or "")
    try:
        cfg = yaml.safe_load(text) or {}
    except yaml.YAMLError:
        cfg = {}
    return cfg if isinstance(cfg, dict) else {}


def _bearing_from_groups(g: dict) -> Optional[dict]:
    """R-Zero: mu = share of a group's m answers that the oracle judges correct (abstentions left out)."""
    if not g["n"]:
        return None
    errs = float_array(g["n_errors"])  # the oracle's endpoint failed: errors, left out like abstentions
    n = float_array(g["n"]) - float_array(g["n_abstained"]) - errs
    ok = n > 0
    mu = np.where(ok, float_array(g["n_correct"]) / np.where(ok, n, 1), np.nan)
    return {"mu": mu[ok], "step": float_array(g["step"])[ok].astype(int), "task": np.asarray(g["task_id"], dtype=object)[ok],
            "k": (float_array(g["n"]) - errs)[ok].astype(int), "n_groups_all_abstained": int((~ok).sum())}


def collect(led: Ledger, run_id: str) -> dict:
    """Everything the instruments need, as arrays (I/O only; no statistics here)."""
    ts = views.task_stats_rows(led, run_id)
    d = {"groups": _bearing_from_groups(views.oracle_groups(led, run_id)),
         "kept": views.kept_label_rows(led, run_id), "task_stats": ts if ts["task_id"] else None,
         "verdict_groups": views.verdict_groups(led, run_id), "abstention_reasons": views.abstention_reasons(led, run_id),
         "proposals": views.proposer_scores(led, run_id), "rounds": views.rounds_completed(led, run_id)}
    rounds = d["rounds"]
    d["eval_final"] = views.eval_accuracy(led, run_id, rounds[-1]) if rounds else None
    d["eval_n"] = sum(views.eval_counts(led, run_id, rounds[-1]).values()) if rounds else 0
    d["reward_rollouts"] = _reward_rollouts(views.step_metrics(led, run_id))
    d["endpoint_errors"] = views.endpoint_errors(led, run_id)  # failed server / judge calls, apart from abstentions
    return d


def _reward_rollouts(steps: List[dict]) -> Optional[int]:
    """Reasoner rollouts that reach a reward over the run: screen + confirm (the budget seed
    000 matches arms on; consensus rollouts are a validation cost and left out). None when
    the recipe does not log them (R-Zero)."""
    ms = [m["metrics"].get("rollouts") for m in steps if m["phase"] == "train"]
    if not ms or any(not isinstance(r, dict) or "screen" not in r for r in ms):
        return None
    return int(sum(r["screen"] + r.get("confirm_train", 0) for r in ms))


def screen_groups(d: dict) -> Optional[dict]:
    """Single-shot groups: task_stats screen groups if the recipe wrote them, else R-Zero oracle groups."""
    ts = d["task_stats"]
    if ts is not None:
        mu = float_array(ts["mu_screen"])
        ok = np.isfinite(mu)
        k = float_array(ts["k_screen"])
        return {"mu": mu[ok], "step": float_array(ts["step"])[ok].astype(int),
                "task": np.asarray(ts["task_id"], dtype=object)[ok], "k": np.nan_to_num(k[ok]).astype(int),
                "source": "task_stats.mu_screen (screen group of K; rows with NULL mu_screen = rejected before rollouts)",
                "n_unscreened": int((~ok).sum())}
    g = d["groups"]
    if g is None:
        return None
    return dict(g, source="verdicts target='oracle' of solver rollouts purpose p_hat/candidate, grouped by task: "
                          "mu = share of the m answers the oracle judges correct")
