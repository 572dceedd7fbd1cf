"""CASA's arms over seeds (issue 23 part 3): VG-OPD under arms A, B, C (both discount conventions) on a
criteria world where abstention depends on the answer (``q-*``), and the same arms on the null world
where it does not (``n-*``), paired by seed.

Worlds (docs/criteria.md "Abstention with consequences"; both with ``total_setup`` so rank reversals
can happen, and the held-out family ``cm-mm`` never drawn for training):

- consequential (``q``): the simulated judge says unknown on 60 % of wrong method answers (5 % of right
  ones); timeouts at 5 % x (length / reference length)^4; unparsable on 80 % of parsing-kind parts
  written with a time unit (2 % elsewhere);
- null (``n``): judge unknown 20 %, timeouts 5 % at any length, unparsable 5 %: independent of the answer.

Claims (pre-registered; docs/experiments.md): the primary is ``q:heldout-C-A``: training on C's reward
instead of A's raises held-out accuracy when abstention depends on the answer (smallest effect of interest 1
point, one prompt of 100); secondaries on the consequential world: ``q:heldout-B-A``, the oracle's side in
rank reversals (``q:reversals-oracle-A``: the share of decided reversals it orders as r~, counts), CASA-P3
with both discounts, and across worlds (``q-n:``) C's rejected low-confidence licences.  By construction, no
verdict: A's and B's reward bias against the oracle (their sign follows from the judge's abstention settings
and the r / r~ identities) and CASA-P1 (p95(phi) takes one of a few values per axis); the null world's rows
are measurements beside the consequential world's.  The tables add CASA-P1..P4 of ``coevo audit
--predictions`` per world, and the first challenge's stratification by abstention reason with the
heterogeneity tests (``coevo.recipes.vgopd.casa.consequences``).

Budgets: ``default`` (the preset's 2 rounds x 5 steps x 12 prompts, held-out set 100 prompts, 3 seeds);
``short`` (2 rounds x 3 steps x 8 prompts, 60 held-out prompts, 3 seeds);
``ci`` (1 round of 1 step, 6 prompts, 20 held-out prompts, 2 seeds): grid and resume only, no verdict (smoke).
"""
from __future__ import annotations

from typing import Callable, Optional

from coevo.experiments.claims import Claim, Design, SeedSample, paired_by_seed, ratio_over_seeds
from coevo.experiments.spec import Arm, Experiment
from coevo.recipes.vgopd.casa.consequences import chi2_homogeneity, run_consequences

FAMILY = "cm-mm"
COMMON = ("world.options.total_setup=true", f"world.options.train_exclude=[{FAMILY}]", "world.options.eval_n=100")
CONSEQUENTIAL = ("world.options.judge_unknown_rate=0.05", "world.options.judge_unknown_wrong_rate=0.6",
                 "world.options.timeout_rate=0.05", "world.options.timeout_power=4",
                 "world.options.unparsable_rate=0.02", "world.options.unparsable_format='[0-9] ?(s|min|h)$'",
                 "world.options.unparsable_format_rate=0.8")
NULL = ("world.options.judge_unknown_rate=0.2", "world.options.timeout_rate=0.05", "world.options.timeout_power=0",
        "world.options.unparsable_rate=0.05")
ARMS = {"A": ("casa.arm=A",), "B": ("casa.arm=B",), "C": ("casa.arm=C", "casa.discount=one_minus_precision"),
        "Cp": ("casa.arm=C", "casa.discount=precision")}
WORLDS = {"q": ("consequential", CONSEQUENTIAL, ("A", "B", "C", "Cp")), "n": ("null", NULL, ("A", "B", "C"))}


def _ledger_metric(arm: str, fn: Callable[[dict], Optional[float]]) -> Callable:
    """``sample`` over the seeds of one arm from its runs' ``run_consequences``."""
    def sample(runs) -> SeedSample:
        out = {}
        for s in runs.seeds(arm):
            v = fn(run_consequences(runs.run_dir(arm, s)))
            if v is not None:
                out[s] = float(v)
        return SeedSample(out, f"t over the seeds of {arm} (ledger, oracle)")
    sample.arms = (arm,)
    return sample


def _ledger_paired(arm: str, base: str, fn: Callable[[dict], Optional[float]]) -> Callable:
    def sample(runs) -> SeedSample:
        a, b = _ledger_metric(arm, fn)(runs).values, _ledger_metric(base, fn)(runs).values
        return SeedSample({s: a[s] - b[s] for s in sorted(set(a) & set(b))}, f"paired t over seeds ({arm} - {base})")
    sample.arms = (arm, base)
    return sample


def reversal_count(runs, arm: str, seed: int):
    """(exact reversals the oracle orders as r~, exact reversals it orders as r~ or as r): ties left out."""
    r = run_consequences(runs.run_dir(arm, seed))["reversals"]
    return r.get("r_tilde", 0), r.get("r_tilde", 0) + r.get("r", 0)


def heldout(s: dict) -> float:
    return s["rounds"][-1]["solver_eval_accuracy"]["overall"]


def family(s: dict) -> Optional[float]:
    return s["rounds"][-1]["solver_eval_accuracy"].get("by_difficulty", {}).get(FAMILY)


def _rejected(channel: str) -> Callable:
    def fn(c: dict) -> Optional[float]:
        g = c["gates"].get(channel)
        return g["rejected"] / g["rechecked"] if g and g["rechecked"] else None
    return fn


PILOT = "the default run at ad836ad, seeds 0-2 (docs/vgopd.md); seeds also evaluated: not held out"
BIAS_A_WHY = ("r drops an abstained criterion from numerator and denominator: when the judge abstains on 60 % of "
              "failed and 5 % of passed criteria the abstained ones are mostly failed, so r lies above the oracle on "
              "average; on the null world the expectation is 0 but for an undefined r imputed as 0 "
              "(tests/test_experiment_controls.py::test_casa_reward_bias_identities)")
BIAS_B_WHY = ("r~ keeps every positive weight in its denominator and scores an abstained criterion 0, so r~ <= the "
              "oracle's score on every row, < wherever a passed criterion abstains "
              "(tests/test_experiment_controls.py::test_casa_reward_bias_identities)")
P1_WHY = ("phi of a (rollout, axis) row is the abstained share of its few positive weights, so it takes a handful of "
          "values; with at least 5 % of criteria abstaining, more than 5 % of rows reach phi = 0.5 and p95(phi) is 0.5 "
          "in every seed (tests/test_experiment_controls.py::test_casa_p1_is_fixed_by_the_world)")
HELDOUT_WHY = "one held-out prompt of the 100 is 1 point: a smaller difference is below the held-out set's resolution"


def _heldout_claim(w: str, label: str, arm: str, role: str, sd: float, what: str) -> Claim:
    name = f"{w}:heldout-{arm.split('-')[1]}-A"
    if w != "q":
        return Claim(name, f"[{label}] held-out accuracy, {what} - A: the null world's control (abstention "
                     "independent of the answer: no difference expected)", "final-round held-out accuracy, paired "
                     "by seed", paired_by_seed(arm, f"{w}-A", heldout), role="measurement", scale=100, unit=" pt")
    return Claim(name, f"[{label}] training on {what}'s reward instead of A's raises held-out accuracy when "
                 "abstention depends on the answer (the CASA proposal's arms)", "final-round held-out accuracy, "
                 "paired by seed (100 prompts in every run: the t over seeds is the counts' pooled difference)",
                 paired_by_seed(arm, f"{w}-A", heldout), role=role, direction=1, smallest_effect=0.01,
                 smallest_effect_why=HELDOUT_WHY, design=Design("seeds (paired with arm A)", 0.02, "twice the "
                 "smallest effect of interest (the proposal gives no number)", sd, PILOT), scale=100, unit=" pt")


def _world_claims(w: str) -> list:
    label, _, arms = WORLDS[w]
    A, B, C, Cp = (f"{w}-{a}" for a in ("A", "B", "C", "Cp"))
    pt = {"scale": 100, "unit": " pt"}
    q = w == "q"
    out = [
        Claim(f"{w}:reward-bias-A", f"[{label}] arm A's reward r lies above the oracle's axis score when abstention "
              "depends on the answer (r = r~ / (1 - phi) lifts wrong answers)", "mean(r - oracle) per (rollout, axis), "
              "arm A", _ledger_metric(A, lambda c: c["bias_r"]), role="by construction", construction=BIAS_A_WHY, **pt),
        Claim(f"{w}:reward-bias-B", f"[{label}] arm B's fixed denominator counts abstentions as failures: r~ lies "
              "below the oracle's score", "mean(r~ - oracle), arm B", _ledger_metric(B, lambda c: c["bias_r_tilde"]),
              role="by construction", construction=BIAS_B_WHY, **pt),
        Claim(f"{w}:reversals-oracle-A", f"[{label}] where r and r~ order two rollouts differently, the oracle sides "
              "with r~ (CASA proposal corollary 2)", "share of the exact reversals the oracle orders as r~ (ties out), "
              "arm A, pooled over seeds", ratio_over_seeds(A, reversal_count),
              **(dict(role="secondary", direction=1, smallest_effect=0.55, smallest_effect_why="the oracle siding with "
                      "r~ in under 55 of 100 decided reversals would make r~ barely safer than a coin",
                      design=Design("seeds, ~3 decided reversals per run", 0.75, "a clear majority (3 of 4); the "
                                    "proposal gives no number", 0.32, "q-A's decided reversals 3/3, 1/3, 4/4: their "
                                    "rates' SD 0.38 less the binomial SD of ~3 at 0.8 (0.22), extra-binomial 0.32; "
                                    f"{PILOT}", kind="rate", n_per_seed=3)) if q else dict(role="measurement")),
              scale=100, unit=" %"),
        Claim(f"{w}:recheck-rejected-C", f"[{label}] share of arm C's low-confidence (abstention-channel) licences "
              "the oracle re-check rejects", "rejected / re-checked abstention licences, arm C (1 - p)",
              _ledger_metric(C, _rejected("abstention")), role="measurement", scale=100, unit=" %"),
        Claim(f"{w}:CASA-P1", f"[{label}] p95(phi) >= 0.10; < 0.02 refutes (CASA-P1)", "p95(phi), arm A",
              _ledger_metric(A, lambda c: c["phi_p95"]), role="by construction", construction=P1_WHY,
              source_value=0.10, scale=100, unit=" %"),
        Claim(f"{w}:CASA-P3", f"[{label}] C's discounted effective licensed weight is significantly below A's "
              "undiscounted weight (CASA-P3, (1 - p))", "mean licensed weight per (rollout, axis), C effective - A",
              _ledger_paired(C, A, lambda c: c["w_licensed_mean"]),
              **(dict(role="secondary", direction=-1, failure_line=0.0, design=Design(
                  "seeds (paired with arm A)", -0.05, "a 5-point lower weight (the proposal gives no number)", 0.0105,
                  PILOT)) if q else dict(role="measurement"))),
        _heldout_claim(w, label, B, "secondary", 0.02, "B (r~)"),
        _heldout_claim(w, label, C, "primary", 0.036, "C (1 - p)"),
        Claim(f"{w}:family-C-A", f"[{label}] no drop on the held-out family {FAMILY} (trained on no prompt of it): "
              "C (1 - p) - A", f"final-round accuracy on the {FAMILY} held-out prompts, paired by seed",
              paired_by_seed(C, A, family), role="measurement", **pt),
    ]
    if "Cp" in arms:
        out.append(Claim(f"{w}:CASA-P3-precision", f"[{label}] CASA-P3 with the x p discount: C's effective "
                         "licensed weight below A's", "mean licensed weight per row, C (x p) - A",
                         _ledger_paired(Cp, A, lambda c: c["w_licensed_mean"]), role="secondary", direction=-1,
                         failure_line=0.0, design=Design("seeds (paired with arm A)", -0.05, "a 5-point lower weight "
                                                         "(the proposal gives no number)", 0.011, PILOT)))
    return out


def _cross_world_claims() -> list:
    """The consequential world against the null world, paired by seed (same seeds, same prompts)."""
    return [
        Claim("q-n:reward-bias-A", "arm A's reward lies further above the oracle's score when abstention depends on "
              "the answer than when it does not: the inflation r = r~ / (1 - phi) acting on wrong answers",
              "mean(r - oracle), arm A: consequential - null world, paired by seed",
              _ledger_paired("q-A", "n-A", lambda c: c["bias_r"]), role="by construction", construction=BIAS_A_WHY,
              scale=100, unit=" pt"),
        Claim("q-n:recheck-rejected-C", "arm C's low-confidence licences are rejected by the oracle less often when "
              "the abstained criteria are truly failed ones", "rejected share of abstention licences, arm C (1 - p): "
              "consequential - null world, paired by seed", _ledger_paired("q-C", "n-C", _rejected("abstention")),
              role="secondary", direction=-1, smallest_effect=-0.05, smallest_effect_why="a licence re-check that "
              "moved by under 5 points between worlds where abstention means opposite things would not tell them "
              "apart", design=Design("seeds (paired across worlds)", -0.10, "a 10-point drop (the proposal gives no "
              "number)", 0.0246, PILOT), scale=100, unit=" pt"),
    ]


def _arm_rows(runs) -> list:
    rows = []
    for arm in runs.arms:
        for s in runs.seeds(arm):
            c, sm = run_consequences(runs.run_dir(arm, s)), runs.summary(arm, s)
            r, ab = c["reversals"], c["gates"].get("abstention", {})
            fa = c["gates"].get("failure", {})
            rows.append([arm, s, f"{heldout(sm):.3f}", f"{family(sm) if family(sm) is not None else float('nan'):.3f}",
                         f"{c['phi_mean']:.3f}", f"{c['bias_r']:+.4f}", f"{c['bias_r_tilde']:+.4f}",
                         f"{r['exact']} of {r['pairs']} ({r.get('r_tilde', 0)} / {r.get('r', 0)} / {r.get('tie', 0)})",
                         f"{fa.get('rejected', 0)}/{fa.get('rechecked', 0)}", f"{ab.get('rejected', 0)}/{ab.get('rechecked', 0)}",
                         f"{c['w_licensed_mean']:.3f}"])
    return rows


def _confound_rows(runs, w: str) -> tuple:
    """Per reason n and oracle failure rate (pooled over the world's runs), and the two heterogeneity
    tests (over its arm-A runs: the arms of one seed share their first step's rollouts)."""
    reason: dict = {}
    tb: dict = {}
    fm: dict = {}
    for arm in [a for a in runs.arms if a.startswith(f"{w}-")]:
        for s in runs.seeds(arm):
            c = run_consequences(runs.run_dir(arm, s))
            for k, v in c["by_reason"].items():
                x = reason.setdefault(k, [0, 0])
                x[0], x[1] = x[0] + v["n"], x[1] + v["bad"]
            if arm != f"{w}-A":
                continue
            for src, dst in ((c["timeouts_by_length"], tb), (c["unparsable_by_format"], fm)):
                for k, v in src.items():
                    x = dst.setdefault(k, [0, 0])
                    x[0], x[1] = x[0] + v["k"], x[1] + v["n"]
    total = sum(v[0] for v in reason.values())
    r_rows = [[k, v[0], f"{v[0] / total:.4f}" if total else "", f"{v[1] / v[0]:.3f}" if v[0] else ""]
              for k, v in sorted(reason.items())]
    het = []
    for name, d in (("timeout vs answer length", tb), ("unparsable vs output format", fm)):
        t = chi2_homogeneity({k: tuple(v) for k, v in d.items()})
        rates = "; ".join(f"{k}: {v[0]}/{v[1]}" + (f" = {v[0] / v[1]:.3f}" if v[1] else "") for k, v in d.items())
        het.append([name, rates, f"{t['chi2']:.1f}", t["df"], f"{t['p']:.2g}"])
    return r_rows, het


def tables(runs) -> dict:
    from coevo.recipes.vgopd.predictions import evaluate_casa_predictions

    out = {"Runs": {"head": ["arm", "seed", "held-out acc", f"{FAMILY} acc", "mean phi", "r - oracle", "r~ - oracle",
                             "reversals (oracle: r~ / r / tie)", "failure licences rejected",
                             "abstention licences rejected", "licensed weight / row"], "rows": _arm_rows(runs)}}
    for w, (label, _, _) in WORLDS.items():
        if not any(a.startswith(f"{w}-") for a in runs.arms):
            continue
        r_rows, het = _confound_rows(runs, w)
        out[f"{label} world: criterion checks by abstention reason (pooled over arms and seeds)"] = {
            "head": ["reason", "n checks", "share of checks (phi per check)", "oracle failure rate"], "rows": r_rows}
        out[f"{label} world: heterogeneity (chi-square of homogeneity; arm A, distinct checks)"] = {
            "head": ["test", "rates per stratum", "chi2", "df", "p"], "rows": het}
        dirs = [runs.run_dir(a, s) for a in runs.arms if a.startswith(f"{w}-") for s in runs.seeds(a)]
        preds = evaluate_casa_predictions(dirs)
        out[f"{label} world: coevo audit --predictions"] = {
            "head": ["P", "value [95 % interval]", "n", "verdict"],
            "rows": [[p["id"], _fmt_pred(p), p.get("n", ""), p.get("verdict", p.get("reason", ""))] for p in preds]}
    return out


def _fmt_pred(p: dict) -> str:
    if p.get("status") != "evaluated":
        return p.get("status", "")
    v, lo, hi = p.get("value"), p.get("ci_low"), p.get("ci_high")
    f = lambda x: "nan" if x is None else f"{x:.4g}"  # noqa: E731
    return f"{f(v)} [{f(lo)}, {f(hi)}]"


SHORT = ("vgopd.steps_per_round=3", "vgopd.prompts=8", "world.options.eval_n=60")
CI = ("vgopd.rounds=1", "vgopd.steps_per_round=1", "vgopd.prompts=6", "world.options.eval_n=20")

EXPERIMENT = Experiment(
    name="casa-arms",
    description="VG-OPD under CASA's arms A / B / C (both discounts) on a criteria world where abstention depends on "
                "the answer, and on the null world beside it, over seeds: what A's inflation does to rewards, "
                "rankings, licences and held-out accuracy, counted by the oracle.",
    arms=[Arm(f"{w}-{a}", "vgopd", (*COMMON, *ch, *ARMS[a])) for w, (_, ch, arms) in WORLDS.items() for a in arms],
    claims=[*_cross_world_claims(), *(c for w in WORLDS for c in _world_claims(w))],
    seeds=3,
    budgets={"default": (), "short": SHORT, "ci": CI},
    seeds_for={"ci": 2},
    tables=tables,
    notes={"default": "the vgopd preset (2 rounds x 5 steps x 12 prompts x G 8), 100 held-out prompts, 1 torch thread",
           "short": "2 rounds x 3 steps x 8 prompts, 60 held-out prompts, 3 seeds (a loaded machine's stand-in)",
           "ci": "1 round of 1 step, 6 prompts, 20 held-out prompts, 2 seeds: grid, resume and verdicts, not the science"},
)
