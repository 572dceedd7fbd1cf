"""The worlds of ``coevo experiment casa-arms``, what their settings were chosen on, and the pilot of its designs.

- ``CONSEQUENTIAL``: abstention that depends on the answer (docs/criteria.md "Abstention with consequences");
- ``NULL``: the phi-matched null world: the consequential world's simulated abstention patterns per axis
  (``PHI_PATTERNS``), drawn whatever the answer says, every other channel off;
- ``REVERSED``: per criterion the consequential rates given verdict 1 / 0 swapped and scaled to the same overall
  rate (``REVERSED_RATES``), every other channel off: more abstention on right answers, the same phi level.

``PHI_PATTERNS`` and ``REVERSED_RATES`` are ``coevo.recipes.vgopd.casa.calibrate`` on the consequential world's
runs q-A, q-B, q-C at seeds 0-2 (world seed 0; the default grid of ad836ad), the calibration runs recorded in
``CALIBRATION``; the evaluation grid (seeds from 100, world seeds per run) holds them out.
"""
from __future__ import annotations

import json

from coevo.experiments.spec import Calibration

__all__ = ["CONSEQUENTIAL", "NULL", "REVERSED", "PHI_PATTERNS", "REVERSED_RATES", "WORLDS", "CALIBRATION", "PILOT",
           "PILOT_SEEDS"]

CONSEQUENTIAL = ("world.options.judge_unknown_rate=0.05", "world.options.judge_unknown_wrong_rate=0.6",
                 "world.options.timeout_rate=0.05", "world.options.timeout_power=4",
                 "world.options.unparsable_rate=0.02", "world.options.unparsable_format='[0-9] ?(s|min|h)$'",
                 "world.options.unparsable_format_rate=0.8")
# the share of (answer, axis) rows whose simulated abstentions were exactly this set of criteria, on the
# consequential world's calibration runs (8,640 rows per axis: 9 runs x 10 steps x 12 prompts x 8 answers)
PHI_PATTERNS = {
    "arithmetic": {"dist": 0.2741, "dist+total": 0.0175, "dist+total+total_setup": 0.0016, "dist+total_setup": 0.0149,
                   "total": 0.0328, "total+total_setup": 0.001, "total_setup": 0.0253},
    "final": {"final_value": 0.0784},
    "method": {"order": 0.1211, "order+setup": 0.0046, "setup": 0.0515},
    "units": {"convert": 0.0343, "convert+final_unit": 0.0019, "convert+final_unit+wrong_unit": 0.0002,
              "convert+wrong_unit": 0.0003, "final_unit": 0.0385, "final_unit+wrong_unit": 0.0005, "wrong_unit": 0.0478},
}
# per criterion [abstention rate given verdict 1, given verdict 0]: where the consequential world abstained more
# on the wrong verdict, its two rates swapped and scaled to its overall rate (dist there: 0.488 of wrong, 0.029 of
# right answers; here 0.720 of right, 0.043 of wrong); kept where it already abstained more on the right one
# (total, and the penalty wrong_unit: 0.068 without the fault, 0.015 with it)
REVERSED_RATES = {"convert": [0.0377, 0.0352], "dist": [0.7202, 0.0428], "final_unit": [0.042, 0.0228],
                  "final_value": [0.2114, 0.0405], "order": [0.1282, 0.0245], "setup": [0.0562, 0.0241],
                  "total": [0.053, 0.0528], "total_setup": [0.0503, 0.0321], "wrong_unit": [0.0147, 0.0677]}
_OFF = ("world.options.judge_unknown_rate=0", "world.options.timeout_rate=0", "world.options.unparsable_rate=0")
NULL = (*_OFF, f"world.options.phi_patterns={json.dumps(PHI_PATTERNS, sort_keys=True)}")
REVERSED = (*_OFF, f"world.options.verdict_rates={json.dumps(REVERSED_RATES, sort_keys=True)}")
WORLDS = {"q": ("consequential", CONSEQUENTIAL, ("A", "B", "C", "Cp")),
          "n": ("phi-matched null", NULL, ("A", "B", "C")),
          "rev": ("reversed", REVERSED, ("A", "B", "C"))}

_OLD = {"seed": [0, 1, 2], "world.options.seed": [0], "world.options.channel_seed": [0], "world.options.eval_seed": [0]}
PILOT_SEEDS = (0, 1, 2, 3, 4)
_PILOT = {"seed": PILOT_SEEDS, "world.options.seed": PILOT_SEEDS, "world.options.channel_seed": PILOT_SEEDS,
          "world.options.eval_seed": PILOT_SEEDS}
CALIBRATION = [
    Calibration.on(" ".join(CONSEQUENTIAL), "answer-dependent abstention strong enough to show in A's reward bias, the "
                   "oracle's failure rate by abstention reason and both heterogeneity tests (chosen by hand with the "
                   "experiment; no record of a tuning loop: the runs looked at before it shipped were the ci, short and "
                   "default grids at seeds 0-2 on world seed 0)", _OLD,
                   "commits 8c2c01d and 0f06f0c (git log -S judge_unknown_wrong_rate=0.6); docs/vgopd.md"),
    Calibration.on("world.options.phi_patterns=PHI_PATTERNS", "the consequential world's distribution of simulated "
                   "abstention patterns per axis", _OLD, "coevo.recipes.vgopd.casa.calibrate.measure on q-A, q-B, q-C "
                   "seeds 0-2 at ad836ad's default budget; docs/casa.md"),
    Calibration.on("world.options.verdict_rates=REVERSED_RATES", "the consequential world's abstention rates given "
                   "verdict 1 / 0 per criterion, swapped at the same overall rate", _OLD,
                   "coevo.recipes.vgopd.casa.calibrate.measure on q-A, q-B, q-C seeds 0-2; docs/casa.md"),
    Calibration.on("pilot SDs of the designs (PILOT)", "the seed-to-seed SD of each tested claim's per-seed value",
                   _PILOT, "coevo.recipes.vgopd.experiment_pilot at the default budget, seeds 0-4 with world seeds = run seed; "
                   "docs/casa.md"),
]
_P = ("the pilot (coevo.recipes.vgopd.experiment_pilot): the default budget on calibration seeds 0-4 (world, abstention "
      "and held-out seeds = the run seed), per-seed values ")
# claim -> (pilot SD of one seed's value (a paired difference), where it came from); "reversals": the SD of the
# reversal rate between seeds beyond the binomial part of a seed's ~9 decided reversals
PILOT = {
    "heldout-C-A": (0.0124, _P + "+3.1, +0.4, +0.2, +0.7, +0.2 pt (5 seeds; at 100 held-out prompts it was 3.6 pt)"),
    "heldout-B-A": (0.0070, _P + "+1.4, +0.8, 0.0 pt (3 seeds)"),
    "reversals": (0.05, _P + "8.8 decided reversals a run, rates 1, 0.875, 1, 0.9, 0.857: their SD 0.069 lies below the "
                  "binomial SD 0.085, so no extra-binomial part was measured; 0.05 is a floor, not a measurement"),
    "CASA-P3": (0.0085, _P + "+0.034, +0.023, +0.032, +0.037, +0.046 (5 seeds)"),
    "CASA-P3-precision": (0.0197, _P + "+0.212, +0.236, +0.197 (3 seeds)"),
    "q-n:reward-bias-A": (0.0022, _P + "+0.73, +1.00, +0.92, +1.34, +0.99 pt (5 seeds)"),
    "rev-n:reward-bias-A": (0.0038, _P + "-0.95, -1.49, -1.99, -1.28, -1.56 pt (5 seeds)"),
    "q-n:recheck-rejected-C": (0.0304, _P + "-18.1, -16.4, -23.1, -22.2, -17.2 pt (5 seeds)"),
    "rev-n:recheck-rejected-C": (0.0376, _P + "+28.5, +21.7, +21.0, +18.3, +22.9 pt (5 seeds)"),
}
