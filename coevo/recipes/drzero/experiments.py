"""The False Frontiers experiments on the engine (``coevo.experiments``; docs/experiments.md, docs/drzero.md).

``crossfit-ablation`` (False Frontiers (the fold ablation), the fixed question-bank replay): per seed, the untrained
proposer writes one bank of questions with drafts (``drzero.prompts`` contexts; the same bank in every arm of a
seed), two fresh auxiliary solvers train ``crossfit.aux_steps`` GRPO steps on their fold of the bank, and the
scorer the fold strategy names answers every bank question ``n_answers`` times (``crossfit.replay: true``: one
``coevo run`` per (arm, seed)).  FF here is the *scorer's* agreement with a wrong draft: the instrument of the
source's ablation.  Arms: the three strategies on the calibrated world; the same three on the null world
(``misread_rate=0``: FF = 0 by construction, 3 seeds); and three controls (issue #30):

- ``shared-source-id`` / ``shared-same-source``: the world where a planted misreading is in *every* source of
  its fact (``world.options.misread_shared``: an error shared through pretraining, the limitation the source
  names): source isolation has no clean source to fall back on;
- ``source-id-own-source``: source-id folds whose scorer may also retrieve the question's own source
  (``crossfit.retrieve_own_source``);
- ``same-source-unfiltered``: the same-source arm with its fold filter off (``crossfit.retrieve_in_fold=false``).

Claims: FF(source-id) < FF(random-question) (primary), FF(random-question) < FF(same-source), FF(source-id) <
FF(same-source) (each a paired-by-seed difference of pooled counts, smallest effect of interest 1 point); the
controls' differences, FF by hop and each scorer's agreement with right labels (a reader check) as
measurements, each control with the result that would mark the headline an artifact (docs/drzero.md "Issue
30"); the null world's FF (by construction).  16 seeds: the primary needs 6 for 80 % power, 16 resolve the
controls' 1-point artifact lines.

``drzero-arms`` (False Frontiers' four arms, its FF table and its cost table) is in ``arms.py``.

Held out (issue #30): ``misread_rate`` 0.8 was chosen on world seed 0, fold seed 0, run seeds 0-2, and the
pilots were run on run / world / fold seeds 0-2 (``CALIBRATION``); evaluation seeds start at 100 and every run
draws its own world and folds (``SEEDED``: world seed = fold seed = run seed).  The tiny facts assets were
pretrained on world seed 0 but read the codes surface on any world (docs/drzero.md "Other worlds").
"""
from __future__ import annotations

from coevo.experiments.claims import Claim, Design, SeedSample, ratio_over_seeds, ratio_paired
from coevo.experiments.spec import Arm, Calibration, Experiment

STRATEGIES = ("same-source", "random-question", "source-id")
# False Frontiers (the fold ablation): FF per strategy, the midpoint of its range
PAPER_FF = {"same-source": (0.064 + 0.087) / 2, "random-question": (0.050 + 0.062) / 2,
            "source-id": (0.004 + 0.001) / 2}
FIRST_SEED = 100  # evaluation seeds: off the calibration seeds 0-2
SEEDED = {"world.options.seed": 0, "crossfit.fold_seed": 0}  # every run its own world and folds


def calibration(pilot: str, record: str) -> list:
    """What was chosen on which seeds: the misread rate (docs/drzero.md) and the designs' pilots."""
    return [
        Calibration.on("world.options.misread_rate=0.8", "FF(same-source) in the fold ablation's 6.4-8.7 % band "
                       "(issue 22: 5-9 %)", {"seed": [0, 1, 2], "world.options.seed": [0], "crossfit.fold_seed": [0]},
                       "docs/drzero.md 'Calibration: co-cheating at the paper's rate' (bank seeds 0-2, world 0, "
                       "folds 0)"),
        Calibration.on(pilot, "the designs' pilot SDs", {"seed": [0, 1, 2], "world.options.seed": [0, 1, 2],
                                                         "crossfit.fold_seed": [0, 1, 2]}, record),
    ]


def last(key: str):
    """A last-round value of summary.json: a round estimate's ``value`` or a plain number."""
    def metric(s: dict):
        v = s["rounds"][-1].get(key)
        return v.get("value") if isinstance(v, dict) else v
    return metric


def last_count(key: str):
    """``count(runs, arm, seed)`` of a last-round estimate ``{value, n}``: (value x n, n), the counts it came from."""
    def count(runs, arm: str, seed: int):
        v = runs.summary(arm, seed)["rounds"][-1].get(key) or {}
        return (round((v.get("value") or 0.0) * v["n"]), v["n"]) if v.get("n") else None
    return count


ff_count = last_count("false_agreement")  # the round audit's: the scoring group's agreement with a wrong label


def hop_count(hops: tuple):
    """``count(runs, arm, seed)``: the round audit's false agreements and audited pairs of questions with these
    hop counts (``false_agreement_by_hop`` of the last round)."""
    def count(runs, arm: str, seed: int):
        by = runs.summary(arm, seed)["rounds"][-1].get("false_agreement_by_hop") or {}
        got = [by[f"hop{h}"] for h in hops if f"hop{h}" in by]
        n = sum(g["n"] for g in got)
        return (sum(g["false_agreements"] for g in got), n) if n else None
    return count


def right_count(runs, arm: str, seed: int):
    """``count(runs, arm, seed)``: the scoring group's agreements with *right* labels and the right labels
    (``agreement_by_truth`` of the last round): a reader that agrees with nothing scores low here too."""
    r = (runs.summary(arm, seed)["rounds"][-1].get("agreement_by_truth") or {}).get("right") or {}
    return (r["agree"], r["n"]) if r.get("n") else None


def per_seed_dir(runs, arm: str, fn) -> dict:
    out = {}
    for s in runs.seeds(arm):
        v = fn(runs.run_dir(arm, s))
        if v is not None:
            out[s] = float(v)
    return out


def paired_dir(arm: str, baseline: str, fn, what: str):
    """Per seed: fn(run_dir of arm) - fn(run_dir of baseline), on the seeds both ran (a paired t)."""
    def sample(runs) -> SeedSample:
        a, b = per_seed_dir(runs, arm, fn), per_seed_dir(runs, baseline, fn)
        return SeedSample({s: a[s] - b[s] for s in sorted(set(a) & set(b))},
                          f"paired t over seeds ({what}, {arm} - {baseline})")
    sample.arms = (arm, baseline)
    return sample


# ---------------------------------------------------------------------- the fold ablation
FF_SESOI_WHY = ("the source reads MSV's 6.1 -> 5.7 % (0.4 points) as barely moving FF; a fold or arm effect under "
                "1 point would be smaller than what the source itself calls small")
# pilot: the grid at its default budget on calibration seeds 0-2 (world, fold and bank seed = run seed)
ABLATION_PILOT_SD = 0.005  # baselines' FF between seeds below the binomial SD (random-question 3.3 vs 3.5 points)
ABLATION_PILOT = ("pilot on calibration seeds 0-2 (world = fold = bank seed; docs/drzero.md 'Issue 30'): extra-binomial "
                  "SD of the baseline's FF between seeds (random-question 3/63, 7/64, 6/62: SD 3.3 points, below the "
                  "binomial 3.5; same-source 4/63, 2/64, 3/62: 1.6 below 2.7): floor 0.5 points")
NULL_WHY = ("with misread_rate 0 the world plants no misreading, so no source can carry a wrong answer and the "
            "oracle agrees with every source: FF = 0 (tests/test_facts_world.py::test_misread_rate_zero_plants_nothing)")


def _ff_claim(name, statement, arm, base, source, role, base_rate, what="the source's effect"):
    return Claim(name, statement, f"FF({arm}) - FF({base}): pooled false agreements over audited questions, "
                 "paired by seed", ratio_paired(arm, base, ff_count), role=role, direction=-1, smallest_effect=-0.01,
                 smallest_effect_why=FF_SESOI_WHY,
                 design=Design("seeds (paired: one bank per seed), ~63 audited questions per run", source,
                               what, ABLATION_PILOT_SD, ABLATION_PILOT, kind="ratio", n_per_seed=63,
                               base_rate=base_rate),
                 source_value=source, scale=100, unit=" pp")


def _control(name, statement, arm, base, artifact, count=ff_count):
    """A control's measurement: FF(arm) - FF(base), paired by seed; ``artifact``: the result that would mark the
    headline an artifact (docs/drzero.md)."""
    return Claim(name, statement, f"FF({arm}) - FF({base}), pooled, paired by seed", ratio_paired(arm, base, count),
                 role="measurement", source_note=f"artifact if: {artifact}", scale=100, unit=" pp")


ARTIFACT = {
    "shared": "source-id still cuts FF by 1 point or more against same-source in the world where every source of a "
              "misread fact carries the misreading: with no clean source left, the cut cannot come from source "
              "isolation",
    "own": "source-id FF stays 1 point or more below same-source when its scorer may retrieve the question's own "
           "source: the cut then comes from the fold-trained scorer itself (e.g. one that agrees with nothing: see "
           "its agreement with right labels), not from not reading the misread source",
    "unfiltered": "same-source FF moves by 1 point or more with its fold filter off: the comparison's baseline is then "
                  "shaped by the filter, not by the scorer having the question's source",
    "hop1": "source-id false agreements on 1-hop questions in the calibrated world (at most one misreading per fact, "
            "every fact in >= 2 sources: a scorer that cannot retrieve the question's source has no wrong value to "
            "copy): the reader would then be agreeing by chance, not by reading",
}


def ablation_claims() -> list:
    return [
        _ff_claim("source-id-below-random-question", "source-id folds cut FF far below random-question folds (the "
                  "fold ablation: 0.4 % / 0.1 % vs 5.0-6.2 %): what matters is that the scorer has not seen the "
                  "question's source", "source-id", "random-question",
                  PAPER_FF["source-id"] - PAPER_FF["random-question"], "primary", PAPER_FF["random-question"]),
        _ff_claim("random-question-below-same-source", "a random question split lowers FF a little against a scorer "
                  "with the question's source (the fold ablation: 5.0-6.2 % vs 6.4-8.7 %)", "random-question",
                  "same-source", PAPER_FF["random-question"] - PAPER_FF["same-source"], "secondary",
                  PAPER_FF["same-source"], "the source's effect; out of reach: 7 % power at the 16 seeds run, over "
                  "60 seeds for 80 % (0.05 / 2)"),
        _ff_claim("source-id-below-same-source", "source-id folds against a scorer with the question's source (the "
                  "fold ablation: 0.1-0.4 % vs 6.4-8.7 %)", "source-id", "same-source",
                  PAPER_FF["source-id"] - PAPER_FF["same-source"], "secondary", PAPER_FF["same-source"]),
        *[Claim(f"ff-{s}", f"FF with {s} folds (the fold ablation: "
                f"{ {'same-source': '6.4-8.7', 'random-question': '5.0-6.2', 'source-id': '0.4 / 0.1'}[s]} %)",
                f"FF({s}) on the calibrated world, pooled over seeds", ratio_over_seeds(s, ff_count),
                role="measurement", source_value=PAPER_FF[s], scale=100, unit=" %",
                source_note="the calibration target: 5-9 %" if s == "same-source" else "an outcome")
          for s in STRATEGIES],
        Claim("ff-hop1-source-id", "source-id FF on 1-hop questions (the structure: only a later hop's misreading "
              "can reach a scorer that never retrieves the question's source)", "FF(source-id), 1-hop questions, "
              "pooled over seeds", ratio_over_seeds("source-id", hop_count((1,))), role="measurement",
              source_note=f"artifact if: {ARTIFACT['hop1']}", scale=100, unit=" %"),
        Claim("ff-later-hops-source-id", "source-id FF on 2- to 4-hop questions", "FF(source-id), 2-4-hop questions, "
              "pooled over seeds", ratio_over_seeds("source-id", hop_count((2, 3, 4))), role="measurement",
              scale=100, unit=" %"),
        _control("control-shared:source-id-vs-same-source", "control (a), errors shared across sources: source-id - "
                 "same-source FF in the misread_shared world (expected: no cut, the limitation the source names)",
                 "shared-source-id", "shared-same-source", ARTIFACT["shared"]),
        Claim("control-shared:ff-hop1-source-id", "control (a): source-id FF on 1-hop questions in the misread_shared "
              "world (non-zero: the misreading is in every source the scorer may read)", "FF(shared-source-id), "
              "1-hop questions, pooled", ratio_over_seeds("shared-source-id", hop_count((1,))), role="measurement",
              scale=100, unit=" %"),
        _control("control-own-source:vs-same-source", "control (b): source-id folds whose scorer may retrieve the "
                 "question's own source, against same-source (expected: no cut: the reader copies the misread "
                 "passage it retrieves)", "source-id-own-source", "same-source", ARTIFACT["own"]),
        _control("control-unfiltered:same-source", "control (c): the same-source arm with its fold filter off, against "
                 "with it (expected: no change)", "same-source-unfiltered", "same-source", ARTIFACT["unfiltered"]),
        *[Claim(f"agree-right-{a}", f"the {a} scorer's agreement with right labels (a reader check: a scorer that "
                "cannot read agrees with nothing, right labels included)", f"agreements with right labels / right "
                f"labels ({a}), pooled over seeds", ratio_over_seeds(a, right_count), role="measurement", scale=100,
                unit=" %") for a in (*STRATEGIES, "source-id-own-source", "shared-source-id", "shared-same-source")],
        *[Claim(f"null-ff-{s}", f"the null world (misread_rate 0: nothing to misread) gives FF = 0 with {s} folds",
                f"FF({s}), misread_rate 0, pooled over seeds", ratio_over_seeds(f"null-{s}", ff_count),
                role="by construction", construction=NULL_WHY, source_value=0.0, scale=100, unit=" %")
          for s in STRATEGIES],
    ]


def ablation_tables(runs) -> dict:
    rows = []
    for arm in runs.arms:
        for seed in runs.seeds(arm):
            r = runs.summary(arm, seed)["rounds"][-1]
            fa, pl = r.get("false_agreement") or {}, r.get("pseudo_label_accuracy") or {}
            by = r.get("false_agreement_by_hop") or {}
            n = fa.get("n") or 0
            hops = " ".join(f"{by[h]['false_agreements']}/{by[h]['n']}" for h in sorted(by) if h.startswith("hop"))
            rows.append([arm, seed, f"{round((fa.get('value') or 0) * n)}/{n}", f"{100 * (fa.get('value') or 0):.1f} %",
                         hops, f"{pl.get('value', float('nan')):.3f}", f"{r.get('proposer_reward_mean') or 0:.3f}"])
    return {"Runs (one bank per seed)": {"head": ["arm", "seed", "false agreements / audited", "FF",
                                                  "by hop 1 2 3 4", "drafts right", "proposer reward f(k)"],
                                         "rows": rows}}


REPLAY = ("recipe=crossfit", "crossfit.replay=true", "world.options.eval_per_hop=5")
ABLATION_CI = ("drzero.prompts=8", "crossfit.aux_steps=1", "crossfit.aux_prompts=4", "crossfit.aux_group=2",
               "drzero.n_answers=3", "drzero.max_turns=2", "world.options.eval_per_hop=1")


def _replay(name: str, strategy: str, *extra: str) -> Arm:
    return Arm(name, "crossfit", (*REPLAY, f"crossfit.fold_strategy={strategy}", *extra))


ABLATION_ARMS = [
    *[_replay(s, s) for s in STRATEGIES],
    *[Arm(f"null-{s}", "crossfit", (*REPLAY, f"crossfit.fold_strategy={s}", "world.options.misread_rate=0"),
          max_seeds=3) for s in STRATEGIES],  # by construction: 3 seeds show it
    _replay("shared-source-id", "source-id", "world.options.misread_shared=true"),
    _replay("shared-same-source", "same-source", "world.options.misread_shared=true"),
    _replay("source-id-own-source", "source-id", "crossfit.retrieve_own_source=true"),
    _replay("same-source-unfiltered", "same-source", "crossfit.retrieve_in_fold=false"),
]

ABLATION = Experiment(
    name="crossfit-ablation",
    description="False Frontiers' fold ablation: the fixed question-bank replay of the CrossFit fold strategies (same-source, "
                "random-question, source-id) on the calibrated facts world, the null world and three controls (errors "
                "shared across sources, the question's own source retrievable, the fold filter off), paired by seed.",
    arms=ABLATION_ARMS,
    claims=ablation_claims(),
    seeds=16,  # primary: 6 for 80 %; 16 for the controls' resolution (docs/drzero.md "Issue 30")
    first_seed=FIRST_SEED,
    seeded=dict(SEEDED),
    calibration=calibration("the fold ablation's pilot (the grid at its default budget: FF per arm)",
                            "docs/drzero.md 'Issue 30'"),
    budgets={"default": ("drzero.prompts=64",), "ci": ABLATION_CI},
    seeds_for={"ci": 2},
    tables=ablation_tables,
    notes={"default": "bank of 64 proposer prompts, 2 auxiliary steps per fold (8 questions x 5), 5 scoring answers",
           "ci": "bank of 8, 1 auxiliary step of 4 x 2, 3 scoring answers, 2 search turns: the grid, not the science"},
)
