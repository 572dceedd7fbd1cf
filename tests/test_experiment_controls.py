"""A negative and a positive control for every verdict-bearing claim of every shipped experiment (issue "Verdicts
that can fail", item 7), and the identities behind the rows marked ``by construction``.

Each experiment gets two scripted grids: the runs' summary.json values and the per-run ledger readers
(``run_facts``, ``run_consequences``, ``per_seed_dir``, the P6 bootstrap) replaced by numbers made up per
(arm, seed).  On the *negative* grid every tested claim is false by construction (no effect, or an effect short
of its failure line, with seed-to-seed noise): no claim may come out ``supported``.  On the *positive* grid every
tested claim is true with room to spare: each must be ``supported``.  The claims are the experiment's own
declarations, judged by the engine's code (``judge_rows`` with the planned powers), so a claim that reads the
wrong arm, the wrong sign or the wrong field fails here.  docs/experiments.md lists each claim's controls.
"""
import itertools
from pathlib import Path

import numpy as np
import pytest

from coevo.experiments import load_experiment
from coevo.experiments.claims import evaluate, judge_rows
from coevo.experiments.montecarlo import planned_powers
from coevo.experiments.spec import Runs


def verdicts(exp, summaries: dict) -> dict:
    """The engine's verdicts on a scripted grid: ``summaries[(arm, seed)]``; run dirs named ``arm-s<seed>``."""
    runs = Runs(summaries, {k: Path(f"/scripted/{k[0]}-s{k[1]}") for k in summaries})
    seeds = len({s for _, s in summaries})
    rows = judge_rows([evaluate(c, runs) for c in exp.claims], planned_powers(exp, seeds, n_sims=500))
    return {r["name"]: r for r in rows}


def claims_tested(exp) -> list:
    return [c.name for c in exp.claims if c.tested]


def check(exp, neg: dict, pos: dict) -> None:
    """Every tested claim: not supported on the negative grid, supported on the positive one."""
    for c in claims_tested(exp):
        assert neg[c]["verdict"] != "supported", (c, neg[c]["estimate"], neg[c]["verdict"])
        assert pos[c]["verdict"] == "supported", (c, pos[c]["estimate"], pos[c].get("why"))


def _key(run_dir) -> tuple:
    arm, _, seed = Path(run_dir).name.rpartition("-s")
    return arm, int(seed)


# ---------------------------------------------------------------------- R-Zero over seeds
def _rzero_summary(gain: float, pl: tuple, overall_gain: float, initial: float = 0.46, n: tuple = (170, 175, 185)) -> dict:
    return {"frontier": {"gain": gain, "band": ["L3"]}, "initial_solver_eval_accuracy": {"overall": initial},
            "rounds": [{"round": k + 1, "pseudo_label_accuracy": round(p * m) / m, "n_pseudo_labels": m,
                        "solver_eval_accuracy": {"overall": initial + (overall_gain if k == len(pl) - 1 else 0.0)}}
                       for k, (p, m) in enumerate(zip(pl, n))]}


def rzero_grid(effect: bool, seeds: int = 3) -> dict:
    rng, out = np.random.default_rng(11), {}
    for s in range(seeds):
        e = rng.normal(0, 0.004, 5)
        if effect:  # two's frontier gain 10 pt, 7 pt over the frozen Challenger's; PL 0.66 -> 0.46 (pooled);
            # two's overall gain 4 pt more than single's
            out[("two", s)] = _rzero_summary(0.10 + e[0], (0.66, 0.59, 0.46 + 3 * e[1]), 0.06 + e[2])
            out[("frozen", s)] = _rzero_summary(0.03 + e[4], (0.66, 0.66, 0.66), 0.03)
            out[("single", s)] = _rzero_summary(0.05, (0.66, 0.6, 0.5), 0.02 + e[3])
        else:  # two gains 1.2 pt (short of the 2 pt line), 1 pt over frozen (short of 1.5), flat labels, the same
            # overall gain as single; the Single arm carries the effects, so a claim that reads the wrong arm
            # (single - frozen, single's decline or gain) comes out supported here
            out[("two", s)] = _rzero_summary(0.012 + e[0], (0.66, 0.66, 0.66 + 3 * e[1]), 0.02 + e[2])
            out[("frozen", s)] = _rzero_summary(0.002 + e[4], (0.66, 0.59, 0.46), 0.02 + e[3])
            out[("single", s)] = _rzero_summary(0.10, (0.66, 0.59, 0.46 + 3 * e[1]), 0.02 + e[3])
    return out


def test_rzero_controls():
    exp = load_experiment("rzero-seeds")
    assert claims_tested(exp) == ["two-vs-frozen", "frontier-gain", "pseudo-label-decline", "two-vs-single"]
    check(exp, verdicts(exp, rzero_grid(False)), verdicts(exp, rzero_grid(True)))


# ---------------------------------------------------------------------- False Frontiers
def _ff(k: int, n: int = 64, pl: float = 0.8, em: float = 0.6) -> dict:
    return {"rounds": [{"false_agreement": {"value": k / n, "n": n}, "pseudo_label_accuracy": {"value": pl, "n": n},
                        "solver_eval_accuracy": {"overall": em}}]}


def ablation_grid(effect: bool, seeds: int = 10) -> dict:
    rng, out = np.random.default_rng(12), {}
    for s in range(seeds):
        j = int(rng.integers(-1, 2))
        ks = {"same-source": 8 + j, "random-question": 5 + (s % 2), "source-id": 0 + (s % 3 == 0)} if effect else \
            {"same-source": 6 + j, "random-question": 6 + int(rng.integers(-1, 2)), "source-id": 6 + int(rng.integers(-1, 2))}
        for st, k in ks.items():
            out[(st, s)] = _ff(k)
            out[(f"null-{st}", s)] = _ff(0)
    return out


def test_crossfit_ablation_controls():
    exp = load_experiment("crossfit-ablation")
    assert len(claims_tested(exp)) == 3
    neg, pos = verdicts(exp, ablation_grid(False)), verdicts(exp, ablation_grid(True))
    check(exp, neg, pos)
    assert pos["null-ff-same-source"]["verdict"] == "by construction" and pos["null-ff-same-source"]["estimate"] == 0


def test_drzero_arms_controls():
    """drzero-arms' grids (one post-hoc FF instrument, co-primary FF and label accuracy) are in
    tests/test_drzero_controls.py: its negative / positive grids and the issue-30 equal-FF grid."""
    exp = load_experiment("drzero-arms")
    assert [c.name for c in exp.claims if c.tested] == ["ff-msv+crossfit-vs-drzero", "pl-msv+crossfit-vs-drzero",
                                                         "ff-crossfit-vs-drzero", "cover-em-crossfit-vs-drzero"]


# ---------------------------------------------------------------------- RGBC's arms
def rgbc_grid(effect: bool, seeds: int = 20) -> tuple:
    """Per run: (productive, screened) with each arm's own confirm group and with the post-update one, held-out
    accuracy; SynCo's P6 range with its bootstrap interval."""
    rng, out, facts = np.random.default_rng(14), {}, {}
    for s in range(seeds):
        base = int(rng.integers(58, 66))
        for arm in ("synco", "mu_tilde", "full", "full_post"):
            if arm != "synco" and s >= 5 and arm in ("mu_tilde", "full_post"):
                continue
            gain = (0.06 if effect and arm != "synco" else 0.0) * 320
            k = base + int(round(gain)) + int(rng.integers(-2, 3))
            facts[(arm, s)] = {"productive_counts": (k, 320), "productive_post_counts": (k, 320)}
            acc = 0.47 + (0.05 if effect and arm != "synco" else 0.0) + float(rng.normal(0, 0.003))
            out[(arm, s)] = {"rounds": [{"solver_eval_accuracy": {"overall": acc}}]}
    p6 = (0.06, 0.04, 0.09) if effect else (0.002, 0.0, 0.004)
    return out, facts, p6


def test_rgbc_controls(monkeypatch):
    import coevo.recipes.rgbc.experiments as rg
    import coevo.recipes.rgbc.predictions as rp

    exp = load_experiment("rgbc-arms")
    assert len(claims_tested(exp)) == 10 and "P6" in claims_tested(exp)
    results = []
    for effect in (False, True):
        summaries, facts, (v, lo, hi) = rgbc_grid(effect)
        monkeypatch.setattr(rg, "run_facts", lambda d, f=facts: f[_key(d)])
        monkeypatch.setattr(rp, "evaluate_predictions", lambda dirs, only=(), p=(v, lo, hi): [
            {"id": "P6", "status": "evaluated", "value": p[0], "ci_low": p[1], "ci_high": p[2], "n": len(dirs)}])
        results.append(verdicts(exp, summaries))
    check(exp, *results)
    assert results[0]["P6"]["verdict"] == "refuted"  # a range wholly under the 0.5-point failure line


def test_rgbc_instrument_control_separates_only_what_separates(monkeypatch):
    """The control arms (known unimodal / bimodal pass-rate laws): P1 separates when it is supported on the
    bimodal law and refuted on the unimodal one; P2 with the same verdict on both does not (an artifact)."""
    import coevo.recipes.rgbc.predictions as rp
    from coevo.recipes.rgbc.control import LAW_ARMS, control_table

    exp = load_experiment("rgbc-arms")
    assert set(LAW_ARMS) <= {a.name for a in exp.arms} and not any(set(c.arms) & set(LAW_ARMS) for c in exp.claims)
    verdict = {("P1", "unimodal"): ("refuted", 0.84), ("P1", "bimodal"): ("supported", 0.22),
               ("P2", "unimodal"): ("supported", 0.001), ("P2", "bimodal"): ("supported", 0.001)}

    def scripted(dirs, only=()):
        law = LAW_ARMS[_key(dirs[0])[0]]
        return [{"id": p, "status": "evaluated", "value": verdict[(p, law)][1], "ci_low": 0.0, "ci_high": 1.0,
                 "n": 3, "verdict": verdict[(p, law)][0], "extra": {}} for p in only]
    monkeypatch.setattr(rp, "evaluate_predictions", scripted)
    runs = Runs({(a, s): {} for a in LAW_ARMS for s in range(3)},
                {(a, s): Path(f"/scripted/{a}-s{s}") for a in LAW_ARMS for s in range(3)})
    rows = {(r[0], r[1]): r for r in control_table(runs)["rows"]}
    assert rows[("P1", "unimodal")][-1] == rows[("P1", "bimodal")][-1] == "yes"
    assert rows[("P2", "unimodal")][-1].startswith("no: it does not measure the distribution")
    assert float(rows[("P1", "unimodal")][2]) == pytest.approx(0.839, abs=1e-3)  # the law's true kappa-bar


# ---------------------------------------------------------------------- CASA's arms
CASA_WORLDS = {"q": ("A", "B", "C", "Cp"), "n": ("A", "B", "C"), "rev": ("A", "B", "C")}


def casa_grid(effect: bool, seeds: int = 15, secondary: dict = {"B": 11, "Cp": 6}) -> tuple:  # noqa: B006
    """The consequential world (q), the phi-matched null (n) and the reversed world (rev).  Positive: every
    effect where the claims look (q's held-out gains, reversals, C's lower weight; A's bias above the null in q
    and below it in rev; C's licences rejected less in q and more in rev than in n).  Negative: the null world
    carries q's effects and rev repeats the null, so a claim that reads the wrong world or arm comes out
    supported here."""
    rng, out, cons = np.random.default_rng(15), {}, {}
    for w, s in itertools.product(CASA_WORLDS, range(seeds)):
        for arm in CASA_WORLDS[w]:
            if s >= secondary.get(arm, seeds):
                continue
            e = float(rng.normal(0, 0.002))
            good = (w == "q") if effect else (w == "n")  # negative: the null world carries every effect
            acc = 0.40 + e + (0.08 if good and arm in ("B", "C") else 0.0)
            out[(f"{w}-{arm}", s)] = {"rounds": [{"solver_eval_accuracy": {"overall": acc,
                                                                            "by_difficulty": {"cm-mm": acc}}}]}
            rt = (9 + s % 2) if good else 2 + (s % 2)  # decided reversals the oracle orders as r~ (of 10)
            rej = {"q": 0.30, "n": 0.70, "rev": 0.90} if effect else {"q": 0.90, "n": 0.70, "rev": 0.70}
            bias = {"q": 0.02, "n": 0.0, "rev": -0.02} if effect else {"q": 0.0, "n": 0.02, "rev": 0.02}
            w_lic = 0.85 - (0.10 if good and arm in ("C", "Cp") else 0.0) + e
            cons[(f"{w}-{arm}", s)] = {
                "bias_r": bias[w] + e, "bias_r_tilde": -0.03, "phi_p95": 0.5, "w_licensed_mean": w_lic,
                "rows": 960, "r_undefined": 20, "reversals": {"r_tilde": rt, "r": 10 - rt, "tie": 3, "exact": 13},
                "gates": {"abstention": {"rejected": int(1000 * rej[w]) + int(rng.integers(-8, 9)), "rechecked": 1000}}}
    return out, cons


def test_casa_controls(monkeypatch):
    import coevo.recipes.vgopd.experiments as vg

    exp = load_experiment("casa-arms")
    assert claims_tested(exp) == ["q-n:reward-bias-A", "rev-n:reward-bias-A", "q-n:recheck-rejected-C",
                                  "rev-n:recheck-rejected-C", "q:reversals-oracle-A", "q:CASA-P3", "q:heldout-B-A",
                                  "q:heldout-C-A", "q:CASA-P3-precision"]
    results = []
    for effect in (False, True):
        summaries, cons = casa_grid(effect)
        monkeypatch.setattr(vg, "run_consequences", lambda d, c=cons: c[_key(d)])
        results.append(verdicts(exp, summaries))
    check(exp, *results)
    neg, pos = results
    assert {pos[n]["verdict"] for n in ("q:CASA-P1", "n:CASA-P1", "q:reward-bias-A", "q:reward-bias-B")} == \
        {"by construction"}
    assert pos["n:heldout-C-A"]["role"] == pos["q-n:heldout-C-A"]["role"] == "measurement"
    # the artifact marker of the primary: the null world's C - A as large as the consequential world's
    assert neg["q-n:heldout-C-A"]["estimate"] < 0 < pos["q-n:heldout-C-A"]["estimate"]
    assert pos["q:r-undefined-A"]["estimate"] == pytest.approx(20 / 960)


# ---------------------------------------------------------------------- the identities behind "by construction"
def _axes(total_setup: bool = True) -> dict:
    """The criteria world's positive weights per axis (coevo/worlds/criteria.py): penalties aside."""
    return {"arithmetic": [1.0, 1.0] + ([0.5] if total_setup else []), "method": [0.5, 0.5], "units": [1.0, 1.0],
            "final": [2.0]}


def _expected_bias(weights, truth, u_fail: float, u_pass: float, impute=None) -> float:
    """E[r - oracle] over the abstention patterns (criterion j abstains with u_fail if truly failed, u_pass if
    passed; independent): over the patterns where r is defined (the instrument), or with an undefined r
    (every positive criterion abstained) imputed as ``impute`` (what the ledger's training reward does)."""
    from coevo.recipes.vgopd.rewards import criteria_scores

    w = np.asarray(weights)
    oracle = float(np.clip(np.dot(w, truth) / w.sum(), 0, 1))
    tot = mass = 0.0
    for mask in itertools.product((0, 1), repeat=len(w)):
        prob = np.prod([(u_fail if t == 0 else u_pass) if m else 1 - (u_fail if t == 0 else u_pass)
                        for m, t in zip(mask, truth)])
        r = criteria_scores(w, [None if m else t for m, t in zip(mask, truth)])["r"]
        if not np.isfinite(r):
            if impute is None:
                continue
            r = impute
        tot, mass = tot + prob * (r - oracle), mass + prob
    return tot / mass


def test_casa_reward_bias_identities():
    """A's r drops an abstained criterion from numerator and denominator.  Where r is defined: when failed criteria
    abstain far more often (60 %) than passed ones (5 %), E[r - oracle] > 0 on every axis and truth pattern that
    has a failed and a passed criterion; in the mirror (60 % of passed, 5 % of failed) it is < 0; with abstention
    independent of the answer it is exactly 0 on the equal-weight axes.  Imputing the undefined r as 0 instead
    moves the independent case by -P(undefined) x oracle: the one-criterion axis at 20 % abstention by -20 % of
    its oracle score (the null world's -1.4 points of issue 30).  B's r~ never exceeds the oracle."""
    from coevo.recipes.vgopd.rewards import criteria_scores

    for axis, w in _axes().items():
        for truth in itertools.product((0, 1), repeat=len(w)):
            mixed = 0 < sum(truth) < len(w)
            if mixed:
                assert _expected_bias(w, truth, 0.6, 0.05) > 0, (axis, truth)
                assert _expected_bias(w, truth, 0.05, 0.6) < 0, (axis, truth)
            oracle = float(np.dot(w, truth) / sum(w))
            if len(set(w)) == 1:  # equal weights: E[r | defined] = oracle; only an imputation moves it
                assert _expected_bias(w, truth, 0.2, 0.2) == pytest.approx(0.0, abs=1e-12), (axis, truth)
                undefined = 0.2 ** len(w)
                assert _expected_bias(w, truth, 0.2, 0.2, impute=0.0) == pytest.approx(-undefined * oracle)
            for mask in itertools.product((0, 1), repeat=len(w)):
                sc = criteria_scores(w, [None if m else t for m, t in zip(mask, truth)])
                assert sc["r_tilde"] <= oracle + 1e-12  # r~ <= oracle, always


def test_casa_p1_is_fixed_by_the_world():
    """phi per (rollout, axis) is the abstained share of the axis' positive weight: on the world's layout it
    takes a few values (0, 0.2, 0.25 ... 1). With every criterion abstaining independently at 5-20 % (the
    worlds' judge / timeout / parser rates), more than 5 % of rows abstain somewhere, so p95(phi) is one of those
    values, far above CASA-P1's 0.10 line at any rate the worlds use: the row carries no verdict."""
    for a in (0.05, 0.1, 0.2):
        values, probs = [], []
        for w in _axes().values():
            w = np.asarray(w)
            for mask in itertools.product((0, 1), repeat=len(w)):
                values.append(float(np.dot(w, mask) / w.sum()))
                probs.append(np.prod([a if m else 1 - a for m in mask]) / 4)  # 4 axes, one row each
        order = np.argsort(values)
        cdf = np.cumsum(np.asarray(probs)[order])
        p95 = np.asarray(values)[order][np.searchsorted(cdf, 0.95)]
        assert p95 >= 0.2 and p95 - 0.10 >= 0.10, (a, p95)
