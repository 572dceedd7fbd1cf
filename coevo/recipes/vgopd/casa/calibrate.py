"""The two control worlds of ``coevo experiment casa-arms``, measured on the consequential world's calibration runs.

From finished VG-OPD runs on the consequential criteria world (their ledgers' criterion ``verdicts`` of the
student's training answers, the world rebuilt from each run's config):

* **which abstentions the world's channels made**: an abstained verdict is *simulated* when the same check with
  every channel off (``Channels()``) gives a verdict; a part the real parser cannot read abstains in every world
  and is left out, since the control worlds keep that parser;
* per axis, the share of (answer, axis) rows whose simulated abstentions form each set of criteria (a
  *pattern*; the empty set left implicit): ``phi_matched_patterns`` gives them as the world option
  ``phi_patterns``, so the phi-matched null world draws the same patterns at the same rates, whatever the
  answer says (the distribution of phi per axis is matched, the dependence on correctness removed);
* per criterion, the simulated abstention rate given the oracle's verdict 1 / 0 and the share of each verdict:
  ``reversed_rates`` mirrors them (the rate given 1 becomes c x the consequential rate given 0, and vice versa)
  with c chosen so the criterion's overall abstention rate stays the consequential one: the world option
  ``verdict_rates`` of the reversed world, which abstains more on right answers at the same phi level.

Pure functions of the run directories (``measure``) and of the measured counts (the other two).
"""
from __future__ import annotations

from pathlib import Path
from typing import Dict, Iterable

__all__ = ["measure", "phi_matched_patterns", "reversed_rates"]


def _run_counts(run_dir: Path, out: dict) -> None:
    from coevo.audit.data import open_ledger, read_config
    from coevo.criteria.verifier import Channels, CriterionVerifier, reference_of
    from coevo.ledger import views
    from coevo.worlds.criteria import CriteriaWorld, truth_of

    led = open_ledger(run_dir)
    try:
        info = views.run_info(led)
        rid = info["run_id"]
        got = views.rollout_answers(led, rid, "train", role="student")
        ver = views.target_verdicts(led, rid, "criterion")
    finally:
        led.close()
    cfg = read_config(run_dir, info)
    world = CriteriaWorld(**((cfg.get("world") or {}).get("options") or {}))
    n = int((cfg.get("vgopd") or {}).get("prompts", 16))
    tasks = {t.task_id: t for s in sorted({int(r["step"]) for r in got}) for t in world.sample_tasks(n, seed=s)}
    ans = {r["rollout_id"]: (r["task_id"], r["answer"]) for r in got}
    null: dict = {}
    rows: Dict[tuple, set] = {}
    for v in ver:
        if v["rollout_id"] not in ans:
            continue
        tid, a = ans[v["rollout_id"]]
        entry = world.entry(tasks[tid])
        c = entry.criterion(v["criterion_id"])
        rows.setdefault((v["rollout_id"], c.axis), set())
        truth = truth_of(c, a)
        cell = out["criteria"].setdefault(c.id, {"n": [0, 0], "abstained": [0, 0], "weight": float(c.weight)})
        cell["n"][truth] += 1
        if v["value"] in (0, 1):
            continue
        if (c.kind, c.locate) not in null:
            null[(c.kind, c.locate)] = CriterionVerifier(kind=c.kind, locate=c.locate, channels=Channels())
        ref = reference_of(c, entry.prompt, entry.reference, entry.meta.get("ref_len"), key=entry.id)
        if null[(c.kind, c.locate)].check(a, ref).value in (0, 1):  # the world's channels made this abstention
            cell["abstained"][truth] += 1
            rows[(v["rollout_id"], c.axis)].add(c.id)
    for (_, axis), ids in rows.items():
        ax = out["axes"].setdefault(axis, {"rows": 0, "patterns": {}})
        ax["rows"] += 1
        if ids:
            key = "+".join(sorted(ids))
            ax["patterns"][key] = ax["patterns"].get(key, 0) + 1


def measure(run_dirs: Iterable) -> dict:
    """Counts over the runs' student training answers: ``axes[axis] = {rows, patterns: {"id1+id2": rows}}``
    (simulated abstentions only) and ``criteria[id] = {n: [verdict 0, verdict 1], abstained: [.., ..]}``
    (the oracle's verdict; abstained: simulated abstentions among them)."""
    out: dict = {"axes": {}, "criteria": {}, "runs": 0}
    for d in run_dirs:
        _run_counts(Path(d), out)
        out["runs"] += 1
    return out


def phi_matched_patterns(counts: dict, digits: int = 4) -> dict:
    """The world option ``phi_patterns``: per axis, each pattern's share of the axis' rows (rounded)."""
    return {axis: {k: round(n / ax["rows"], digits) for k, n in sorted(ax["patterns"].items())
                   if round(n / ax["rows"], digits) > 0}
            for axis, ax in sorted(counts["axes"].items()) if ax["rows"] and ax["patterns"]}


def reversed_rates(counts: dict, digits: int = 4) -> dict:
    """The world option ``verdict_rates``: per criterion [rate given verdict 1, rate given verdict 0].  Where the
    consequential world abstained more often on the criterion's wrong verdict (0 for a positive criterion, 1 for
    a penalty) than on its right one, the two rates are swapped and scaled to the criterion's consequential
    overall rate (capped at 1); where it already abstained more often on the right verdict (the penalty
    ``wrong_unit``, through timeouts), its rates are kept.  So every criterion abstains at least as often on
    its right verdict as on its wrong one, at the consequential world's overall rate."""
    out = {}
    for cid, c in sorted(counts["criteria"].items()):
        n0, n1 = c["n"]
        a0, a1 = c["abstained"]
        if not (n0 + n1) or not (a0 + a1):
            continue
        q0, q1 = (a0 / n0 if n0 else 0.0), (a1 / n1 if n1 else 0.0)  # P(abstain | verdict 0), (| verdict 1)
        wrong_more = q0 > q1 if c.get("weight", 1.0) > 0 else q1 > q0
        if not wrong_more:
            out[cid] = [round(q1, digits), round(q0, digits)]
            continue
        mirrored = q0 * n1 + q1 * n0  # abstentions the swapped rates would give on the same verdicts
        scale = (a0 + a1) / mirrored if mirrored else 0.0
        out[cid] = [round(min(1.0, q0 * scale), digits), round(min(1.0, q1 * scale), digits)]
    return out
