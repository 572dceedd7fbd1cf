"""The pilot of ``casa-arms``' designs, on calibration seeds (docs/casa.md "Pilot and seeds").

The default grid of ``coevo.recipes.vgopd.experiments`` at run seeds 0-4 (world, abstention and held-out seeds
= the run seed, as in the evaluation grid): arms A and C of every world at all five seeds, B and C (x p) at the
first three.  Per tested claim the SD of its per-seed values (paired differences) is the pilot SD of its
Design (``experiment_worlds.PILOT``); for the reversal rate the SD between seeds less the binomial part.
These seeds are recorded in ``experiment_worlds.CALIBRATION``, so no evaluation run repeats them::

    coevo experiment run coevo.recipes.vgopd.experiment_pilot:PILOT_EXPERIMENT --out runs/casa-pilot --jobs 1
    python -m coevo.recipes.vgopd.experiment_pilot runs/casa-pilot/result.json
"""
from __future__ import annotations

import json
import math
import sys
from dataclasses import replace

from coevo.recipes.vgopd.experiment_worlds import PILOT_SEEDS
from coevo.recipes.vgopd.experiments import CORE, EXPERIMENT

__all__ = ["PILOT_EXPERIMENT", "pilot_sds"]

PILOT_EXPERIMENT = replace(
    EXPERIMENT, name="casa-arms-pilot", first_seed=PILOT_SEEDS[0], seeds=len(PILOT_SEEDS), calibration=[],
    arms=[replace(a, max_seeds=None if a.name.split("-")[-1] in CORE else 3) for a in EXPERIMENT.arms])


def pilot_sds(result: dict) -> dict:
    """Per tested claim of a finished pilot's ``result.json``: seeds, mean and SD of the per-seed values (for a
    pooled rate: the SD between seeds less the binomial SD of a seed's units, floored at 0)."""
    out = {}
    for c in result["claims"]:
        if c["role"] not in ("primary", "secondary"):
            continue
        v = [float(x) for x in (c.get("per_seed") or {}).values() if x is not None and math.isfinite(float(x))]
        n = len(v)
        mean = sum(v) / n if n else float("nan")
        sd = math.sqrt(sum((x - mean) ** 2 for x in v) / (n - 1)) if n > 1 else float("nan")
        row = {"seeds": n, "mean": mean, "sd": sd, "values": v}
        if c.get("units") and n > 1:  # a pooled rate: units per seed
            m = c["units"] / n
            binom = math.sqrt(max(c["estimate"] * (1 - c["estimate"]), 0.0) / m) if m else float("nan")
            row.update(units_per_seed=m, binomial_sd=binom, extra_binomial_sd=math.sqrt(max(sd ** 2 - binom ** 2, 0.0)))
        out[c["name"]] = row
    return out


if __name__ == "__main__":  # pragma: no cover - a reading aid
    res = json.loads(open(sys.argv[1]).read())
    for name, row in pilot_sds(res).items():
        print(name, json.dumps({k: (round(x, 5) if isinstance(x, float) else x) for k, x in row.items()
                                if k != "values"}), [round(x, 4) for x in row["values"]])
