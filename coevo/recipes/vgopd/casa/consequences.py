"""What abstentions do, counted by the oracle, on one finished VG-OPD run (``coevo experiment casa-arms``).

From the run's ledger (``criterion_scores``, ``casa_gates``, criterion ``verdicts``, student ``rollouts``)
and the world rebuilt from its config (the training prompts are ``world.sample_tasks(prompts, step)``):

* **reward bias**: per (rollout, axis) row, A's reward r and B's reward r~ minus the oracle's axis score
  (every criterion judged by ``truth_of``, no abstention).  Abstention at random leaves r unbiased and
  r~ low; abstention on wrong answers lifts r above the truth (the inflation r = r~ / (1 - phi) acts).
* **rank reversals checked against the oracle** over the whole run (``instruments.rank_reversals``).
* **licences the oracle re-check rejects**, per channel (``casa_gates.recheck`` = 0).
* **the first challenge (abstention confounded with difficulty)**: per abstention reason the count and the
  oracle's failure rate of the abstained criteria beside the scored ones; timeouts by answer length
  (length / reference length bins) and unparsable by output format of the located part
  (time unit / length unit / other), each with a chi-square test of homogeneity over distinct
  (prompt, criterion, answer) checks (a repeated answer gets the same simulated draw: counted once).

Pure function of the run directory; the numbers are cached per directory and finished-ledger size.
"""
from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Dict, List

import numpy as np

from coevo.recipes.vgopd.instruments import rank_reversals

__all__ = ["run_consequences", "LENGTH_BINS", "FORMATS", "chi2_homogeneity", "part_format", "length_bin"]

LENGTH_BINS = ((0.0, 0.95, "short (< 0.95 ref)"), (0.95, 1.05, "as long as the reference"), (1.05, np.inf, "long (> 1.05 ref)"))
FORMATS = ("time unit", "length unit", "other")
_TIME = re.compile(r"[0-9] ?(s|min|h)$")
_LENGTH = re.compile(r"[0-9] ?(mm|cm|dm|m|km)$")
PARSING = ("numeric_unit", "sympy_equiv", "sandbox_py", "integer")


def part_format(part) -> str:
    """Output format of a located part: a number with a time unit, with a length unit, or other."""
    p = (part or "").strip()
    return "time unit" if _TIME.search(p) else "length unit" if _LENGTH.search(p) else "other"


def length_bin(length: int, ref_len: int) -> str:
    x = length / max(ref_len, 1)
    return next(name for lo, hi, name in LENGTH_BINS if lo <= x < hi)


def chi2_homogeneity(counts: Dict[str, tuple]) -> dict:
    """Chi-square test that the rate k/n is the same in every category ({name: (k, n)}; categories with
    n = 0 left out).  Returns statistic, df, p (NaN when fewer than two categories or no event)."""
    from scipy import stats

    rows = [(k, n - k) for k, n in counts.values() if n > 0]
    if len(rows) < 2 or sum(k for k, _ in rows) == 0 or sum(m for _, m in rows) == 0:
        return {"chi2": float("nan"), "df": 0, "p": float("nan")}
    chi2, p, df, _ = stats.chi2_contingency(np.asarray(rows, dtype=float), correction=False)
    return {"chi2": float(chi2), "df": int(df), "p": float(p)}


def _world_and_tasks(cfg: dict, steps):
    from coevo.worlds.criteria import CriteriaWorld

    world = CriteriaWorld(**((cfg.get("world") or {}).get("options") or {}))
    n = int((cfg.get("vgopd") or {}).get("prompts", 16))
    tasks = {}
    for s in sorted(set(steps)):
        for t in world.sample_tasks(n, seed=int(s)):
            tasks[t.task_id] = t
    return world, tasks


def _load(run_dir: Path) -> dict:
    from coevo.audit.data import open_ledger, read_config
    from coevo.ledger import views
    from coevo.recipes.vgopd.casa import views as casa_views

    led = open_ledger(run_dir)
    try:
        info = views.run_info(led)
        rid = info["run_id"]
        sc = casa_views.criterion_score_columns(led, rid)
        gt = casa_views.gate_columns(led, rid)
        ans = {r["rollout_id"]: r["answer"] for r in led.query(
            "SELECT rollout_id, answer FROM rollouts WHERE run_id = ? AND purpose = 'train'", [rid])}
        ver = led.query("SELECT rollout_id, task_id, criterion_id, value, reason FROM verdicts WHERE run_id = ? "
                        "AND target = 'criterion'", [rid])
    finally:
        led.close()
    return {"cfg": read_config(run_dir, info), "scores": sc, "gates": gt, "answers": ans,
            "verdicts": [v for v in ver if v["rollout_id"] in ans]}


def _reasons(world, tasks, answers, verdicts) -> tuple:
    """By reason: [n, n bad]; timeouts by length bin and unparsable by format: {name: (k, n)}."""
    from coevo.criteria.verifier import locate
    from coevo.worlds.criteria import truth_of

    by_reason: Dict[str, List[int]] = {}
    tbin: Dict[str, List[int]] = {name: [0, 0] for *_, name in LENGTH_BINS}
    fmt: Dict[str, List[int]] = {f: [0, 0] for f in FORMATS}
    seen_len = set()
    for v in verdicts:
        t = tasks.get(v["task_id"])
        if t is None:
            continue
        c, a = world.entry(t).criterion(v["criterion_id"]), answers[v["rollout_id"]]
        reason = "scored" if v["value"] in (0, 1) else (v["reason"] or "abstained")
        bad = int(truth_of(c, a) != (1 if c.weight > 0 else 0))
        cell = by_reason.setdefault(reason, [0, 0])
        cell[0], cell[1] = cell[0] + 1, cell[1] + bad
        key = (v["task_id"], v["criterion_id"], a)  # repeats of one answer share their hash draw: count it once
        if key not in seen_len:
            seen_len.add(key)
            b = tbin[length_bin(len(a or ""), int(t.meta.get("ref_len") or 1))]
            b[0], b[1] = b[0] + int(reason == "timeout"), b[1] + 1
            if c.kind in PARSING and reason != "timeout":
                f = fmt[part_format(locate(a, c.locate))]
                f[0], f[1] = f[0] + int(reason == "unparsable"), f[1] + 1
    return by_reason, {k: tuple(x) for k, x in tbin.items()}, {k: tuple(x) for k, x in fmt.items()}


def _oracle_rows(world, tasks, answers, sc) -> np.ndarray:
    """The oracle's axis score (clipped r~ with every criterion true) of each criterion_scores row."""
    from coevo.recipes.vgopd.casa.scoring import Check, score_answer
    from coevo.worlds.criteria import truth_of

    cache: dict = {}
    out = np.full(len(sc["step"]), np.nan)
    for i, (rid, tid, axis) in enumerate(zip(sc["rollout_id"], sc["task_id"], sc["axis"])):
        t = tasks.get(tid)
        if t is None or rid not in answers:
            continue
        if rid not in cache:
            a = answers[rid]
            checks = [Check(c.id, c.axis, float(c.weight), truth_of(c, a), "", c.kind) for c in world.criteria(t)]
            cache[rid] = {ax: s.r_tilde for ax, s in score_answer(checks).items()}
        out[i] = cache[rid].get(axis, np.nan)
    return out


def _f(col) -> np.ndarray:
    return np.array([np.nan if x is None else float(x) for x in col], dtype=float)


@lru_cache(maxsize=256)
def _cached(run_dir: str, mtime: float) -> dict:
    d = _load(Path(run_dir))
    sc = d["scores"]
    world, tasks = _world_and_tasks(d["cfg"], sc["step"])
    truth = _oracle_rows(world, tasks, d["answers"], sc)
    r, rt, phi = _f(sc["r"]), _f(sc["r_tilde"]), _f(sc["phi"])
    r_used = np.where(np.isfinite(r), r, 0.0)
    ok = np.isfinite(truth)
    groups = list(zip(sc["step"], sc["task_id"], sc["group_idx"], sc["axis"]))
    rev = rank_reversals(groups, _f(sc["r_tilde_raw"]), phi, min_gap=float((d["cfg"].get("casa") or {}).get(
        "rank_delta", 0.05)), truth=np.where(ok, truth, np.nan))
    by_reason, tbin, fmt = _reasons(world, tasks, d["answers"], d["verdicts"])
    gates = {}
    for ch, rc in zip(d["gates"]["channel"], d["gates"]["recheck"]):
        g = gates.setdefault(ch, [0, 0, 0])  # licences, re-checked, rejected
        g[0] += 1
        if rc is not None:
            g[1], g[2] = g[1] + 1, g[2] + int(rc == 0)
    abst = _f(sc["n_abstained"]) > 0
    return {"rows": int(ok.sum()), "bias_r": float(np.mean(r_used[ok] - truth[ok])) if ok.any() else None,
            "bias_r_tilde": float(np.mean(rt[ok] - truth[ok])) if ok.any() else None,
            "abs_err_r": float(np.mean(np.abs(r_used[ok] - truth[ok]))) if ok.any() else None,
            "abs_err_r_tilde": float(np.mean(np.abs(rt[ok] - truth[ok]))) if ok.any() else None,
            "bias_r_abstained": float(np.mean(r_used[ok & abst] - truth[ok & abst])) if (ok & abst).any() else None,
            "phi_mean": float(np.nanmean(phi)) if phi.size else None,
            "phi_p95": float(np.nanquantile(phi, 0.95)) if np.isfinite(phi).any() else None,
            "reversals": {"pairs": rev["n_pairs"], "exact": rev["n_exact"], **rev.get("oracle", {})},
            "gates": {k: {"licences": v[0], "rechecked": v[1], "rejected": v[2]} for k, v in gates.items()},
            "w_licensed_mean": float(np.mean(_f(sc["w_licensed"]))) if sc["step"] else None,
            "w_licensed_raw_mean": float(np.mean(_f(sc["w_licensed_raw"]))) if sc["step"] else None,
            "by_reason": {k: {"n": v[0], "bad": v[1]} for k, v in sorted(by_reason.items())},
            "timeouts_by_length": {k: {"k": v[0], "n": v[1]} for k, v in tbin.items()},
            "unparsable_by_format": {k: {"k": v[0], "n": v[1]} for k, v in fmt.items()}}


def run_consequences(run_dir) -> dict:
    """The oracle-counted consequences of abstention on one finished run (module docstring)."""
    p = Path(run_dir).resolve()
    led = p / "ledger.duckdb"
    return _cached(str(p), led.stat().st_mtime if led.exists() else 0.0)
