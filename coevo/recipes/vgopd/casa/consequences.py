"""What abstentions do, counted by the oracle, on one finished VG-OPD run (``coevo experiment casa-arms``).

From the run's ledger (``criterion_scores``, ``casa_gates``, criterion ``verdicts``, student ``rollouts``)
and the world rebuilt from its config (the training prompts are ``world.sample_tasks(prompts, step)``):

* **reward bias** (``reward_bias``): per (rollout, axis) row, r and r~ minus the oracle's axis score
  (every criterion judged by the oracle, no abstention; the ledger's ``oracle`` column, re-judged with
  ``truth_of`` for a run written before it).  Abstention at random leaves r unbiased where it is defined and
  r~ low; abstention on wrong answers lifts r above the truth (the inflation r = r~ / (1 - phi) acts).  An
  undefined r (phi = 1) is counted (``r_undefined``, per axis ``r_undefined_by_axis``) and never imputed:
  imputed as 0 it moved the null world's bias by -1.4 points (issue 30);
* **the distribution of phi per axis** (``phi_shares``): what the phi-matched null world matches;
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

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Dict, List

import numpy as np

from coevo.recipes.vgopd.instruments import rank_reversals

__all__ = ["run_consequences", "reward_bias", "phi_shares", "LENGTH_BINS", "FORMATS", "chi2_homogeneity", "part_format",
           "length_bin"]

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
    from coevo.recipes.vgopd import tables as vg_tables

    led = open_ledger(run_dir)
    try:
        info = views.run_info(led)
        rid = info["run_id"]
        sc = vg_tables.criterion_score_columns(led, rid)
        oracle = vg_tables.oracle_columns(led, rid)
        gt = vg_tables.gate_columns(led, rid)
        ans = {r["rollout_id"]: r["answer"] for r in views.rollout_answers(led, rid, "train")}
        ver = views.target_verdicts(led, rid, "criterion")
    finally:
        led.close()
    return {"cfg": read_config(run_dir, info), "scores": sc, "oracle": oracle, "gates": gt, "answers": ans,
            "verdicts": [v for v in ver if v["rollout_id"] in ans]}


class _Truth:
    """The oracle's verdict of (rollout, criterion): from the ledger's ``oracle_json`` where the run recorded
    it, else re-judged with ``truth_of`` (a run written before the column existed), each pair once."""

    def __init__(self, world, tasks, answers, oracle):
        self.world, self.tasks, self.answers, self.known = world, tasks, answers, {}
        for rid, js in zip(oracle["rollout_id"], oracle["oracle_json"]) if oracle else ():
            for cid, v in json.loads(js or "{}").items():
                self.known[(rid, cid)] = int(v)

    def __call__(self, rollout_id: str, task_id: str, criterion_id: str) -> int:
        key = (rollout_id, criterion_id)
        if key not in self.known:
            from coevo.worlds.criteria import truth_of

            c = self.world.entry(self.tasks[task_id]).criterion(criterion_id)
            self.known[key] = truth_of(c, self.answers[rollout_id])
        return self.known[key]


def _reasons(world, tasks, answers, verdicts, truth: _Truth) -> tuple:
    """By reason: [n, n bad]; timeouts by length bin and unparsable by format: {name: (k, n)}."""
    from coevo.criteria.verifier import locate

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
        bad = int(truth(v["rollout_id"], v["task_id"], c.id) != (1 if c.weight > 0 else 0))
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


def _oracle_rows(world, tasks, sc, oracle, truth: _Truth) -> np.ndarray:
    """The oracle's axis score (clipped r~ with every criterion true) of each criterion_scores row: the
    ledger's ``oracle`` column where recorded, else from the criteria's true verdicts."""
    from coevo.recipes.vgopd.casa.scoring import Check, score_answer

    if oracle and all(x is not None for x in oracle["oracle"]) and list(oracle["rollout_id"]) == list(sc["rollout_id"]):
        return _f(oracle["oracle"])
    cache: dict = {}
    out = np.full(len(sc["step"]), np.nan)
    for i, (rid, tid, axis) in enumerate(zip(sc["rollout_id"], sc["task_id"], sc["axis"])):
        t = tasks.get(tid)
        if t is None or rid not in truth.answers:
            continue
        if rid not in cache:
            checks = [Check(c.id, c.axis, float(c.weight), truth(rid, tid, c.id), "", c.kind) for c in world.criteria(t)]
            cache[rid] = {ax: s.r_tilde for ax, s in score_answer(checks).items()}
        out[i] = cache[rid].get(axis, np.nan)
    return out


def _f(col) -> np.ndarray:
    return np.array([np.nan if x is None else float(x) for x in col], dtype=float)


def reward_bias(r, r_tilde, oracle, abstained=None) -> dict:
    """r and r~ against the oracle's axis score per (rollout, axis) row (rows with an oracle score).  An
    undefined r (every positive criterion of the axis abstained: phi = 1) is **counted, never imputed**:
    ``bias_r`` / ``abs_err_r`` are over the rows where r is defined, ``r_undefined`` says how many are not and
    ``oracle_r_undefined`` what the oracle scores them.  ``bias_r_trained`` is the one number with the
    training rule of arm A (``scoring.arm_reward``: an undefined r rewards ``UNDEFINED_R_REWARD``): what A's
    update sees, named as such.  ``abstained`` (bool per row) adds ``bias_r_abstained`` over defined rows
    with an abstention."""
    from coevo.recipes.vgopd.casa.scoring import UNDEFINED_R_REWARD

    r, rt, tr = (np.asarray(x, dtype=float) for x in (r, r_tilde, oracle))
    ok = np.isfinite(tr)
    dfn, und = ok & np.isfinite(r), ok & ~np.isfinite(r)
    mean = lambda x: float(np.mean(x)) if x.size else None  # noqa: E731
    out = {"rows": int(ok.sum()), "r_defined": int(dfn.sum()), "r_undefined": int(und.sum()),
           "bias_r": mean(r[dfn] - tr[dfn]), "abs_err_r": mean(np.abs(r[dfn] - tr[dfn])),
           "bias_r_tilde": mean(rt[ok] - tr[ok]), "abs_err_r_tilde": mean(np.abs(rt[ok] - tr[ok])),
           "oracle_r_undefined": mean(tr[und]),
           "bias_r_trained": mean(np.where(np.isfinite(r[ok]), r[ok], UNDEFINED_R_REWARD) - tr[ok])}
    if abstained is not None:
        ab = dfn & np.asarray(abstained, dtype=bool)
        out["bias_r_abstained"] = mean(r[ab] - tr[ab])
    return out


def phi_shares(axis, phi) -> dict:
    """Per axis: rows, mean phi, the share of rows with phi > 0 (some positive weight abstained) and with
    phi = 1 (all of it: r undefined), p95(phi): the distribution the phi-matched null world matches."""
    ax, ph = np.asarray(axis, dtype=object), np.asarray(phi, dtype=float)
    out = {}
    for a in sorted({str(x) for x in ax.tolist()}):
        p = ph[(ax == a) & np.isfinite(ph)]
        if p.size:
            out[a] = {"rows": int(p.size), "phi_mean": float(p.mean()), "phi_any": float((p > 0).mean()),
                      "phi_all": float((p >= 1).mean()), "phi_p95": float(np.quantile(p, 0.95))}
    return out


def _gates(g: dict) -> dict:
    out: dict = {}
    for ch, rc in zip(g["channel"], g["recheck"]):
        x = out.setdefault(ch, [0, 0, 0])  # licences, re-checked, rejected
        x[0] += 1
        if rc is not None:
            x[1], x[2] = x[1] + 1, x[2] + int(rc == 0)
    return {k: {"licences": v[0], "rechecked": v[1], "rejected": v[2]} for k, v in out.items()}


@lru_cache(maxsize=512)
def _cached(run_dir: str, mtime: float) -> dict:
    d = _load(Path(run_dir))
    sc = d["scores"]
    world, tasks = _world_and_tasks(d["cfg"], sc["step"])
    truth = _Truth(world, tasks, d["answers"], d["oracle"])
    oracle = _oracle_rows(world, tasks, sc, d["oracle"], truth)
    phi = _f(sc["phi"])
    ok = np.isfinite(oracle)
    groups = list(zip(sc["step"], sc["task_id"], sc["group_idx"], sc["axis"]))
    rev = rank_reversals(groups, _f(sc["r_tilde_raw"]), phi, min_gap=float((d["cfg"].get("casa") or {}).get(
        "rank_delta", 0.05)), truth=np.where(ok, oracle, np.nan))
    by_reason, tbin, fmt = _reasons(world, tasks, d["answers"], d["verdicts"], truth)
    und = ok & ~np.isfinite(_f(sc["r"]))
    axes = np.asarray(sc["axis"], dtype=object)
    return {**reward_bias(_f(sc["r"]), _f(sc["r_tilde"]), oracle, _f(sc["n_abstained"]) > 0),
            "r_undefined_by_axis": {a: int((und & (axes == a)).sum()) for a in sorted(set(sc["axis"]))},
            "phi_mean": float(np.nanmean(phi)) if phi.size else None,
            "phi_p95": float(np.nanquantile(phi, 0.95)) if np.isfinite(phi).any() else None,
            "phi_by_axis": phi_shares(sc["axis"], phi),
            "reversals": {"pairs": rev["n_pairs"], "exact": rev["n_exact"], **rev.get("oracle", {})},
            "gates": _gates(d["gates"]),
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
