"""Scripted grids for the False Frontiers experiments (issue #30; the style of tests/test_experiment_controls.py):
the runs' summary.json values and the per-run ledger readers replaced by numbers made up per (arm, seed), judged by
the experiments' own claims through the engine's code.  Negative grid: every tested claim false (the effects sit in
the wrong arm), none may be supported; positive grid: every tested claim true, each must be supported.  And the
issue's test: CrossFit labels as wrong as Dr. Zero's give equal FF, whatever CrossFit's internal agreement."""
from pathlib import Path

import numpy as np

from coevo.experiments import load_experiment
from coevo.experiments.claims import evaluate, judge_rows
from coevo.experiments.montecarlo import planned_powers
from coevo.experiments.spec import Runs

ARMS = ("drzero", "msv", "crossfit", "msv+crossfit")


def verdicts(exp, summaries: dict) -> dict:
    runs = Runs(summaries, {k: Path(f"/scripted/{k[0]}-s{k[1]}") for k in summaries})
    seeds = len({s for _, s in summaries})
    rows = judge_rows([evaluate(c, runs) for c in exp.claims], planned_powers(exp, seeds, n_sims=500))
    return {r["name"]: r for r in rows}


def check(exp, neg: dict, pos: dict) -> None:
    for c in (c.name for c in exp.claims if c.tested):
        assert neg[c]["verdict"] != "supported", (c, neg[c]["estimate"], neg[c]["verdict"])
        assert pos[c]["verdict"] == "supported", (c, pos[c]["estimate"], pos[c].get("why"))


# ---------------------------------------------------------------------- drzero-arms
def arms_summary(ff: int, internal: int, pl: int, n: int = 64, em: float = 0.6) -> dict:
    """A 2-round run: the post-hoc audit's ff of n, the round audit's internal agreement, pl right labels of n per
    round."""
    rnd = {"false_agreement": {"value": internal / n, "n": n}, "pseudo_label_accuracy": {"value": pl / n, "n": n},
           "solver_eval_accuracy": {"overall": em}}
    audit = {"false_agreements": ff, "audited": n, "labels_right": pl, "labels_judged": n, "value": ff / n}
    return {"rounds": [dict(rnd, round=1), dict(rnd, round=2, post_hoc_audit=audit)]}


def arms_grid(effect: bool, seeds: int = 20, crossfit_as_drzero: bool = False) -> tuple:
    rng, out, cover = np.random.default_rng(31), {}, {}
    for s in range(seeds):
        j = int(rng.integers(-1, 2))
        if effect:  # FF 9 -> 1 of 64, labels 48 -> 58 of 64, Cover-EM +15 points
            ff = {"drzero": 9 + j, "msv": 8 + j, "crossfit": 3 + (s % 2), "msv+crossfit": 1 + (s % 2)}
            pl = {"drzero": 48 + j, "msv": 54, "crossfit": 50, "msv+crossfit": 58 + (s % 2)}
        else:  # no effect in the arms the claims read; MSV carries them (a claim with the wrong baseline fails)
            ff = {a: 6 + int(rng.integers(-1, 2)) for a in ("drzero", "crossfit", "msv+crossfit")} | {"msv": 14 + j}
            pl = {a: 50 + int(rng.integers(-1, 2)) for a in ("drzero", "crossfit", "msv+crossfit")} | {"msv": 40}
        if crossfit_as_drzero:
            ff["crossfit"], pl["crossfit"] = ff["drzero"], pl["drzero"]
        for a in ARMS:  # the internal agreement: 0 in the CrossFit arms (the scorer never reads the source)
            out[(a, s)] = arms_summary(ff[a], 0 if "crossfit" in a else ff[a], pl[a])
            cover[(a, s)] = 0.55 + (0.15 if effect and a == "crossfit" else 0.0) + float(rng.normal(0, 0.01))
    return out, cover


def _script_dirs(monkeypatch, cover):
    import coevo.recipes.drzero.arms as dz

    monkeypatch.setattr(dz, "per_seed_dir", lambda runs, arm, fn, c=cover: {
        s: (c[(arm, s)] if fn is dz.run_cover_em else 1000.0) for s in runs.seeds(arm)})
    import coevo.recipes.drzero.experiments as ex

    monkeypatch.setattr(ex, "per_seed_dir", dz.per_seed_dir)


def test_drzero_arms_controls(monkeypatch):
    exp = load_experiment("drzero-arms")
    tested = [c.name for c in exp.claims if c.tested]
    assert tested == ["ff-msv+crossfit-vs-drzero", "pl-msv+crossfit-vs-drzero", "ff-crossfit-vs-drzero",
                      "cover-em-crossfit-vs-drzero"]
    assert [c.name for c in exp.claims if c.role == "primary"] == tested[:2]  # co-primaries
    results = []
    for effect in (False, True):
        summaries, cover = arms_grid(effect)
        _script_dirs(monkeypatch, cover)
        results.append(verdicts(exp, summaries))
    check(exp, *results)
    pos = results[1]
    assert pos["rollouts-crossfit"]["verdict"] == "descriptive"
    assert pos["internal-agreement-crossfit"]["estimate"] == 0.0 < pos["ff-crossfit"]["estimate"]


def test_crossfit_labels_as_wrong_as_drzero_give_equal_ff(monkeypatch):
    """The issue's done-when test on the claims: CrossFit's audited labels as wrong as Dr. Zero's, its internal
    agreement 0: FF(CrossFit) - FF(Dr. Zero) = 0 exactly, not supported; the internal agreement stays a
    measurement (0 against Dr. Zero's)."""
    exp = load_experiment("drzero-arms")
    summaries, cover = arms_grid(True, crossfit_as_drzero=True)
    _script_dirs(monkeypatch, cover)
    v = verdicts(exp, summaries)
    assert v["ff-crossfit-vs-drzero"]["estimate"] == 0.0 and v["ff-crossfit-vs-drzero"]["verdict"] != "supported"
    assert v["ff-crossfit"]["estimate"] == v["ff-drzero"]["estimate"] > 0
    assert v["internal-agreement-crossfit"]["estimate"] == 0.0 < v["internal-agreement-drzero"]["estimate"]
    assert v["internal-agreement-crossfit"]["verdict"] == "measured"


# ---------------------------------------------------------------------- crossfit-ablation
def _ff(k: int, n: int = 64, hop1: int = 0) -> dict:
    """A replay run: k false agreements of n, hop1 of them on 1-hop questions (of 25)."""
    by = {"hop1": {"false_agreements": hop1, "n": 25}, "hop2": {"false_agreements": k - hop1, "n": n - 25}}
    return {"rounds": [{"false_agreement": {"value": k / n, "n": n}, "pseudo_label_accuracy": {"value": 0.8, "n": n},
                        "false_agreement_by_hop": by}]}


def ablation_grid(effect: bool, seeds: int = 10) -> dict:
    rng, out = np.random.default_rng(12), {}
    for s in range(seeds):
        j = int(rng.integers(-1, 2))
        ks = {"same-source": 8 + j, "random-question": 5 + (s % 2), "source-id": 0 + (s % 3 == 0)} if effect else \
            {"same-source": 6 + j, "random-question": 6 + int(rng.integers(-1, 2)),
             "source-id": 6 + int(rng.integers(-1, 2))}
        for st, k in ks.items():
            out[(st, s)] = _ff(k, hop1=0 if st == "source-id" else min(k, 2))
            out[(f"null-{st}", s)] = _ff(0)
        out[("shared-source-id", s)] = _ff(7 + j, hop1=3)
        out[("shared-same-source", s)] = _ff(8 + j, hop1=3)
        out[("source-id-own-source", s)] = _ff(ks["same-source"], hop1=2)
        out[("same-source-unfiltered", s)] = _ff(ks["same-source"], hop1=2)
    return out


def test_crossfit_ablation_controls():
    exp = load_experiment("crossfit-ablation")
    assert [c.name for c in exp.claims if c.tested] == ["source-id-below-random-question",
                                                         "random-question-below-same-source",
                                                         "source-id-below-same-source"]
    neg, pos = verdicts(exp, ablation_grid(False)), verdicts(exp, ablation_grid(True))
    check(exp, neg, pos)
    assert pos["null-ff-same-source"]["verdict"] == "by construction" and pos["null-ff-same-source"]["estimate"] == 0
    # the controls: measurements with the line that would mark the headline an artifact
    for name in ("control-shared:source-id-vs-same-source", "control-own-source:vs-same-source",
                 "control-unfiltered:same-source", "ff-hop1-source-id"):
        assert pos[name]["verdict"] == "measured" and pos[name]["source_note"].startswith("artifact if:")
    assert pos["ff-hop1-source-id"]["estimate"] == 0.0 < pos["control-shared:ff-hop1-source-id"]["estimate"]
    assert pos["control-own-source:vs-same-source"]["estimate"] == 0.0


def test_held_out_seeds_and_worlds():
    """Evaluation seeds start at 100, each run its own world and folds; the calibration seeds are recorded."""
    for name in ("crossfit-ablation", "drzero-arms"):
        exp = load_experiment(name)
        grid = exp.grid()
        assert min(r.seed for r in grid) == 100 and len(exp.calibration) == 2
        for r in grid[:3]:
            assert f"world.options.seed={r.seed}" in r.overrides and f"crossfit.fold_seed={r.seed}" in r.overrides
