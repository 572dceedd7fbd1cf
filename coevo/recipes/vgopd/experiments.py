"""CASA's arms over seeds (issue 23 part 3, issue 30): VG-OPD under arms A, B, C (both discount conventions) on a
criteria world where abstention depends on the answer (``q-*``), and on two control worlds, paired by seed:

- consequential (``q``): the simulated judge says unknown on 60 % of wrong method answers (5 % of right
  ones); timeouts at 5 % x (length / reference length)^4; unparsable on 80 % of parsing-kind parts written
  with a time unit (2 % elsewhere) (docs/criteria.md "Abstention with consequences");
- phi-matched null (``n``): the consequential world's simulated abstention patterns per axis, drawn at the
  rates they had there (calibration runs, ``casa.calibrate``) but whatever the answer says: the same
  distribution of the abstention share phi per axis, abstention independent of correctness;
- reversed (``rev``): per criterion the consequential abstention rates given a right and a wrong verdict,
  swapped and scaled to the same overall rate: abstains more on RIGHT answers at the same phi level.

All three with ``total_setup`` (rank reversals can happen) and the held-out family ``cm-mm`` never drawn for
training; the world's prompt, abstention and held-out seeds follow the run seed (``seeded``), and the
evaluation seeds start at 100, off the calibration seeds (``CALIBRATION``).

An undefined r (every positive criterion of an axis abstained) is counted, per run and per world, and never
imputed (``casa.consequences.reward_bias``); arm A's TRAINING reward still needs a number there
(``scoring.UNDEFINED_R_REWARD`` = 0, a training rule): the instruments report it apart.

Claims (pre-registered; docs/experiments.md): the primary is ``q:heldout-C-A``: training on C's reward instead
of A's raises held-out accuracy when abstention depends on the answer (smallest effect of interest 1 point).
Secondaries: ``q:heldout-B-A``, the oracle's side in rank reversals, CASA-P3 with both discounts, and the
controls as contrasts paired by seed: A's reward bias in the consequential world above the phi-matched null's
(``q-n:reward-bias-A``) and in the reversed world below it (``rev-n:reward-bias-A``: the sign flips), C's
low-confidence licences rejected less often in the consequential world (``q-n:recheck-rejected-C``) and more
often in the reversed one (``rev-n:recheck-rejected-C``).  Measurements beside them: the same held-out
differences on the control worlds (``n:heldout-C-A``, ``rev:heldout-C-A``, ``q-n:heldout-C-A``) with the
result that would mark the primary an artifact written into their statements, the undefined-r share per
world.  By construction (no verdict): the sign of A's and B's reward bias on the consequential world (the
r / r~ identities at the world's settings) and CASA-P1 (p95(phi) takes one of a few values per axis).  The
tables add the runs, phi per axis and world (the match of the null world), CASA-P1..P4 of ``coevo audit
--predictions`` per world, and the first challenge's stratification by abstention reason with the
heterogeneity tests (``coevo.recipes.vgopd.experiment_tables``).

Budgets: ``default`` (1 round x 10 steps x 12 prompts, the preset's G 8; one held-out evaluation of 1000
prompts after training, no initial one); ``short`` (1 round x 6 steps x 8 prompts, 400 held-out prompts);
``ci`` (1 round of 1 step, 6 prompts, 20 held-out prompts, 2 seeds): grid and resume only, no verdict (smoke).
"""
from __future__ import annotations

from typing import Callable, Optional

from coevo.experiments.claims import Claim, Design, SeedSample, paired_by_seed, ratio_over_seeds
from coevo.experiments.spec import Arm, Experiment
from coevo.recipes.vgopd.casa.consequences import run_consequences
from coevo.recipes.vgopd.experiment_tables import FAMILY, family, heldout, tables
from coevo.recipes.vgopd.experiment_worlds import CALIBRATION, PILOT, WORLDS

COMMON = ("world.options.total_setup=true", f"world.options.train_exclude=[{FAMILY}]", "world.options.eval_n=1000",
          "vgopd.rounds=1", "vgopd.steps_per_round=10", "vgopd.initial_eval=false")
ARMS = {"A": ("casa.arm=A",), "B": ("casa.arm=B",), "C": ("casa.arm=C", "casa.discount=one_minus_precision"),
        "Cp": ("casa.arm=C", "casa.discount=precision")}
CORE = ("A", "C")  # the primary's pair: every seed in every world
# seeds from power (montecarlo.seeds_for_power at the pilot SDs of experiment_worlds.PILOT): the primary needs 15 for
# 80 % at +2 points; q:heldout-B-A 11 (B runs 11 in every world, so its controls pair with it); C (x p) 6
SEEDS, MAX_SEEDS = 15, {"B": 11, "Cp": 6}
SEEDED = {"world.options.seed": 0, "world.options.channel_seed": 0, "world.options.eval_seed": 0}


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


def _diff_in_diff(w: str, base_w: str, arm: str, base: str, metric: Callable) -> Callable:
    """(arm - base) in world ``w`` minus the same in ``base_w``, paired by seed."""
    def sample(runs) -> SeedSample:
        d = {}
        for ww in (w, base_w):
            a, b = runs.per_seed(f"{ww}-{arm}", metric), runs.per_seed(f"{ww}-{base}", metric)
            d[ww] = {s: a[s] - b[s] for s in set(a) & set(b)}
        return SeedSample({s: d[w][s] - d[base_w][s] for s in sorted(set(d[w]) & set(d[base_w]))},
                          f"paired t over seeds (({w}-{arm} - {w}-{base}) - ({base_w}-{arm} - {base_w}-{base}))")
    sample.arms = (f"{w}-{arm}", f"{w}-{base}", f"{base_w}-{arm}", f"{base_w}-{base}")
    return sample


def reversal_count(runs, arm: str, seed: int):
    """(exact reversals the oracle orders as r~, exact reversals it orders as r~ or as r): ties left out."""
    r = run_consequences(runs.run_dir(arm, seed))["reversals"]
    return r.get("r_tilde", 0), r.get("r_tilde", 0) + r.get("r", 0)


def _rejected(channel: str) -> Callable:
    def fn(c: dict) -> Optional[float]:
        g = c["gates"].get(channel)
        return g["rejected"] / g["rechecked"] if g and g["rechecked"] else None
    return fn


def _undefined_share(c: dict) -> Optional[float]:
    return c["r_undefined"] / c["rows"] if c.get("rows") else None


BIAS_A_WHY = ("r drops an abstained criterion from numerator and denominator: where failed criteria abstain far more "
              "often than passed ones the abstained ones are mostly failed, so E[r - oracle | r defined] > 0 for every "
              "truth pattern with a failed and a passed criterion, = 0 for the others; an undefined r is left out, not "
              "imputed (tests/test_experiment_controls.py::test_casa_reward_bias_identities)")
BIAS_B_WHY = ("r~ keeps every positive weight in its denominator and scores an abstained criterion 0, so r~ <= the "
              "oracle's score on every row, < wherever a passed criterion abstains "
              "(tests/test_experiment_controls.py::test_casa_reward_bias_identities)")
P1_WHY = ("phi of a (rollout, axis) row is the abstained share of its few positive weights, so it takes a handful of "
          "values; with at least 5 % of criteria abstaining, more than 5 % of rows reach phi = 0.5 and p95(phi) is 0.5 "
          "in every seed (tests/test_experiment_controls.py::test_casa_p1_is_fixed_by_the_world)")
HELDOUT_WHY = ("1 point of held-out accuracy is the smallest gain that would justify a different reward rule (the "
               "proposal gives no number; it was one prompt of the 100-prompt set at pre-registration)")
BIAS_SESOI_WHY = ("half a point of the axis score is about one (rollout, axis) row in a hundred lifted by a whole "
                  "weight-1 criterion: less would not reorder the answers of a 12-prompt x 8-rollout step")


def _artifact(w: str, x: str) -> str:
    """The result on control world ``w`` that would mark q:heldout-{x}-A an artifact."""
    if w == "n":
        return (f"q:heldout-{x}-A is an artifact of the world's abstention rates, not of answer-dependent abstention, "
                f"if {x} - A here is as large as on the consequential world")
    return (f"in the reversed world the abstained criteria are mostly passed ones: q:heldout-{x}-A is not about which "
            f"answers abstain if {x} - A here is as large as on the consequential world")


def _heldout_claim(w: str, label: str, arm: str, role: str, what: str) -> Claim:
    x = arm.split("-")[1]
    name = f"{w}:heldout-{x}-A"
    if w != "q":
        return Claim(name, f"[{label}] held-out accuracy, {what} - A: a control of q:heldout-{x}-A ({_artifact(w, x)})",
                     "final-round held-out accuracy, paired by seed", paired_by_seed(arm, f"{w}-A", heldout),
                     role="measurement", scale=100, unit=" pt")
    sd, origin = PILOT[f"heldout-{x}-A"]
    return Claim(name, f"[{label}] training on {what}'s reward instead of A's raises held-out accuracy when "
                 "abstention depends on the answer (the CASA proposal's arms)", "final-round held-out accuracy, "
                 "paired by seed (1000 prompts in every run: the t over seeds is the counts' pooled difference)",
                 paired_by_seed(arm, f"{w}-A", heldout), role=role, direction=1, smallest_effect=0.01,
                 smallest_effect_why=HELDOUT_WHY, design=Design("seeds (paired with arm A)", 0.02, "twice the "
                 "smallest effect of interest (the proposal gives no number)", sd, origin), scale=100, unit=" pt")


def _world_claims(w: str) -> list:
    label, _, arms = WORLDS[w]
    A, B, C, Cp = (f"{w}-{a}" for a in ("A", "B", "C", "Cp"))
    pt = {"scale": 100, "unit": " pt"}
    q = w == "q"
    out = [
        Claim(f"{w}:reward-bias-A", f"[{label}] arm A's reward r against the oracle's axis score where r is defined "
              "(r = r~ / (1 - phi) lifts wrong answers when their criteria abstain)", "mean(r - oracle) per (rollout, "
              "axis) with r defined, arm A", _ledger_metric(A, lambda c: c["bias_r"]),
              **(dict(role="by construction", construction=BIAS_A_WHY) if q else dict(role="measurement")), **pt),
        Claim(f"{w}:reward-bias-B", f"[{label}] arm B's fixed denominator counts abstentions as failures: r~ lies "
              "below the oracle's score", "mean(r~ - oracle), arm B", _ledger_metric(B, lambda c: c["bias_r_tilde"]),
              role="by construction", construction=BIAS_B_WHY, **pt),
        Claim(f"{w}:r-undefined-A", f"[{label}] share of arm A's (rollout, axis) rows whose r is undefined (every "
              "positive criterion abstained): counted, never imputed", "r undefined / rows, arm A",
              _ledger_metric(A, _undefined_share), role="measurement", scale=100, unit=" %"),
        Claim(f"{w}:reversals-oracle-A", f"[{label}] where r and r~ order two rollouts differently, the oracle sides "
              "with r~ (CASA proposal corollary 2)", "share of the exact reversals the oracle orders as r~ (ties out), "
              "arm A, pooled over seeds", ratio_over_seeds(A, reversal_count),
              **(dict(role="secondary", direction=1, smallest_effect=0.55, smallest_effect_why="the oracle siding with "
                      "r~ in under 55 of 100 decided reversals would make r~ barely safer than a coin",
                      design=Design("seeds, ~9 decided reversals per run", 0.75, "a clear majority (3 of 4); the "
                                    "proposal gives no number", PILOT["reversals"][0], PILOT["reversals"][1],
                                    kind="rate", n_per_seed=9)) if q else dict(role="measurement")),
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
                  "seeds (paired with arm A)", -0.05, "a 5-point lower weight (the proposal gives no number)",
                  *PILOT["CASA-P3"])) if q else dict(role="measurement"))),
        _heldout_claim(w, label, B, "secondary", "B (r~)"),
        _heldout_claim(w, label, C, "primary", "C (1 - p)"),
        Claim(f"{w}:family-C-A", f"[{label}] no drop on the held-out family {FAMILY} (trained on no prompt of it): "
              "C (1 - p) - A", f"final-round accuracy on the {FAMILY} held-out prompts, paired by seed",
              paired_by_seed(C, A, family), role="measurement", **pt),
    ]
    if "Cp" in arms:
        out.append(Claim(f"{w}:CASA-P3-precision", f"[{label}] CASA-P3 with the x p discount: C's effective "
                         "licensed weight below A's", "mean licensed weight per row, C (x p) - A",
                         _ledger_paired(Cp, A, lambda c: c["w_licensed_mean"]), role="secondary", direction=-1,
                         failure_line=0.0, design=Design("seeds (paired with arm A)", -0.05, "a 5-point lower weight "
                                                         "(the proposal gives no number)", *PILOT["CASA-P3-precision"])))
    return out


def _bias_contrast(w: str, direction: int, statement: str) -> Claim:
    sd, origin = PILOT[f"{w}-n:reward-bias-A"]
    return Claim(f"{w}-n:reward-bias-A", statement, f"mean(r - oracle) with r defined, arm A: {WORLDS[w][0]} - "
                 "phi-matched null world, paired by seed", _ledger_paired(f"{w}-A", "n-A", lambda c: c["bias_r"]),
                 role="secondary", direction=direction, smallest_effect=0.005 * direction,
                 smallest_effect_why=BIAS_SESOI_WHY, design=Design("seeds (paired across worlds)", 0.01 * direction,
                 "twice the smallest effect of interest (the proposal gives no number)", sd, origin),
                 scale=100, unit=" pt")


def _rejected_contrast(w: str, direction: int, statement: str) -> Claim:
    sd, origin = PILOT[f"{w}-n:recheck-rejected-C"]
    return Claim(f"{w}-n:recheck-rejected-C", statement, f"rejected share of abstention licences, arm C (1 - p): "
                 f"{WORLDS[w][0]} - phi-matched null world, paired by seed",
                 _ledger_paired(f"{w}-C", "n-C", _rejected("abstention")), role="secondary", direction=direction,
                 smallest_effect=0.05 * direction, smallest_effect_why="a licence re-check that moved by under 5 "
                 "points between worlds where abstention means opposite things would not tell them apart",
                 design=Design("seeds (paired across worlds)", 0.10 * direction, "a 10-point difference (the "
                               "proposal gives no number)", sd, origin), scale=100, unit=" pt")


def _cross_world_claims() -> list:
    """The consequential and the reversed world against the phi-matched null world, paired by seed."""
    return [
        _bias_contrast("q", 1, "arm A's reward lies further above the oracle's score when abstention falls on wrong "
                       "answers than when it falls at random at the same phi per axis: the inflation r = r~ / (1 - "
                       "phi) acting on wrong answers (artifact if not: the bias would be the world's phi, not the "
                       "answer-dependence)"),
        _bias_contrast("rev", -1, "mirror control: where abstention falls on RIGHT answers, arm A's reward lies below "
                       "the phi-matched null's: the sign of A's bias flips with the direction of the dependence"),
        _rejected_contrast("q", -1, "arm C's low-confidence licences are rejected by the oracle less often when the "
                           "abstained criteria are truly failed ones"),
        _rejected_contrast("rev", 1, "mirror control: arm C's low-confidence licences are rejected more often when the "
                           "abstained criteria are truly passed ones"),
        Claim("q-n:heldout-C-A", "control of the primary: C - A held-out accuracy on the consequential world minus "
              f"the same on the phi-matched null world ({_artifact('n', 'C')}: this difference at or below 0)",
              "final-round held-out accuracy, (q-C - q-A) - (n-C - n-A), paired by seed",
              _diff_in_diff("q", "n", "C", "A", heldout), role="measurement", scale=100, unit=" pt"),
    ]


SHORT = ("vgopd.steps_per_round=6", "vgopd.prompts=8", "world.options.eval_n=400")
CI = ("vgopd.steps_per_round=1", "vgopd.prompts=6", "world.options.eval_n=20")


def _arms() -> list:
    return [Arm(f"{w}-{a}", "vgopd", (*COMMON, *settings, *ARMS[a]), max_seeds=MAX_SEEDS.get(a))
            for w, (_, settings, arms) in WORLDS.items() for a in arms]


EXPERIMENT = Experiment(
    name="casa-arms",
    description="VG-OPD under CASA's arms A / B / C (both discounts) on a criteria world where abstention depends on "
                "the answer, on a null world matched on phi per axis and on a world abstaining on right answers, over "
                "seeds: what A's inflation does to rewards, rankings, licences and held-out accuracy, counted by the "
                "oracle, with undefined r counted apart.",
    arms=_arms(),
    claims=[*_cross_world_claims(), *(c for w in WORLDS for c in _world_claims(w))],
    seeds=SEEDS,
    first_seed=100,
    budgets={"default": (), "short": SHORT, "ci": CI},
    seeds_for={"ci": 2},
    tables=tables,
    notes={"default": "1 round x 10 steps x 12 prompts x G 8, one held-out evaluation of 1000 prompts after training, "
                      "1 torch thread; A and C 15 seeds in every world, B 11, C (x p) 6",
           "short": "1 round x 6 steps x 8 prompts, 400 held-out prompts (a loaded machine's stand-in)",
           "ci": "1 round of 1 step, 6 prompts, 20 held-out prompts, 2 seeds: grid, resume and verdicts, not the science"},
    calibration=CALIBRATION,
    seeded=SEEDED,
)
