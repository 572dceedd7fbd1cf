"""Claims of coevo/experiments/claims.py on hand-computed numbers: the t interval over seeds, the
paired interval, the clustered interval, the MDE, the verdict rule, a claim evaluated on runs."""
import math
from pathlib import Path

import pytest

from coevo.experiments.claims import (Claim, ClusteredSample, clustered_interval, evaluate, magnitude, mde,
                                      over_seeds, paired_by_seed, seed_interval, verdict)
from coevo.experiments.spec import Arm, Experiment, Runs, manifest_conflict, resources_for

T975_2, T80_2 = 4.302652729749462, 1.0606601717798214  # Student t quantiles, df = 2
T975_1 = 12.706204736174694


def test_seed_interval_by_hand():
    # 1, 2, 3: mean 2, sd 1, SE 1/sqrt(3) = 0.577350, df 2; CI 2 -/+ 4.302653 x 0.577350 = 2 -/+ 2.484138
    d = seed_interval([1.0, 2.0, 3.0])
    assert d["estimate"] == 2.0 and d["df"] == 2 and d["n"] == 3
    assert d["se"] == pytest.approx(0.5773502691896258)
    assert d["ci_low"] == pytest.approx(-0.4841377117503303) and d["ci_high"] == pytest.approx(4.48413771175033)
    # MDE = (t_.975,2 + t_.80,2) x SE = (4.302653 + 1.060660) x 0.577350 = 3.096510
    assert d["mde"] == pytest.approx(3.0965101474461254)
    assert d["mde"] == pytest.approx((T975_2 + T80_2) / math.sqrt(3))


def test_seed_interval_degenerate():
    assert math.isnan(seed_interval([]).get("estimate"))
    one = seed_interval([0.4])
    assert one["estimate"] == 0.4 and math.isnan(one["se"]) and "ci_low" not in one
    same = seed_interval([0.1, 0.1, 0.1])  # no spread: a zero-width interval at 0.1
    assert same["se"] == 0.0 and same["ci_low"] == pytest.approx(0.1) and same["mde"] == 0.0


def test_mde_normal_limit_and_small_df():
    assert mde(1.0, float("inf")) == pytest.approx(1.959963984540054 + 0.8416212335729143)  # 2.80 SE
    assert mde(0.5, 2) == pytest.approx((T975_2 + T80_2) * 0.5)
    assert math.isnan(mde(0.5, 0)) and math.isnan(mde(float("nan"), 3))


def test_clustered_interval_by_hand():
    # values 1 0 | 1 1 in clusters a | b: mean 0.75; cluster sums of residuals -0.5, +0.5;
    # CR1 var = G/(G-1) x sum s_g^2 / n^2 = 2 x 0.5 / 16 = 0.0625 -> SE 0.25, df = G - 1 = 1
    d = clustered_interval([1, 0, 1, 1], ["a", "a", "b", "b"])
    assert d["estimate"] == 0.75 and d["se"] == pytest.approx(0.25) and d["df"] == 1 and d["clusters"] == 2
    assert d["ci_low"] == pytest.approx(0.75 - T975_1 * 0.25) and d["ci_high"] == pytest.approx(0.75 + T975_1 * 0.25)
    single = clustered_interval([1, 0], ["a", "a"])  # one cluster: no interval
    assert single["df"] == 0 and "ci_low" not in single


@pytest.mark.parametrize("lo,hi,direction,paper,want", [
    (0.1, 0.5, 1, 0.3, "reproduced"),      # excludes 0 on the paper's side, paper value inside
    (0.1, 0.5, 1, 0.9, "reproduced"),      # the sign is reproduced even where the size differs
    (-0.2, 0.4, 1, 0.3, "inconclusive"),   # covers both 0 and the paper
    (-0.2, 0.1, 1, 0.3, "refuted"),        # covers 0, excludes the paper's +0.3
    (-0.5, -0.1, 1, None, "refuted"),      # no paper number: wholly on the wrong side of 0
    (-0.2, 0.1, 1, None, "inconclusive"),
    (-0.5, -0.1, -1, -0.3, "reproduced"),
    (0.2, 0.6, -1, -0.3, "refuted"),
    (float("nan"), float("nan"), 1, 0.3, "inconclusive"),
    (0.1, 0.5, 0, 0.3, "measured"),
])
def test_verdict_rule(lo, hi, direction, paper, want):
    assert verdict(lo, hi, direction, paper) == want


def test_magnitude():
    assert magnitude(0.1, 0.5, 0.3) == "consistent with the paper"
    assert magnitude(0.1, 0.5, 0.9) == "paper above the interval"
    assert magnitude(0.1, 0.5, 0.0) == "paper below the interval"
    assert magnitude(0.1, 0.5, None) is None


def _runs():
    """arm a at seeds 0-2 and arm b at seeds 0-3 (b's seed 3 has no partner)."""
    acc = {("a", 0): 0.5, ("a", 1): 0.7, ("a", 2): 0.6, ("b", 0): 0.4, ("b", 1): 0.5, ("b", 2): 0.5, ("b", 3): 0.9}
    summaries = {k: {"acc": v} for k, v in acc.items()}
    return Runs(summaries, {k: Path(f"/nonexistent/{k[0]}-s{k[1]}") for k in acc})


def test_claim_paired_by_seed_by_hand():
    # differences a - b on seeds 0, 1, 2: 0.1, 0.2, 0.1 -> mean 0.133333, sd 0.057735, SE 0.033333
    c = Claim("a-vs-b", "a beats b", "acc a - b", paired_by_seed("a", "b", lambda s: s["acc"]), direction=1,
              paper_value=0.05)
    row = evaluate(c, _runs())
    assert row["n"] == 3 and row["per_seed"] == pytest.approx({"0": 0.1, "1": 0.2, "2": 0.1})
    assert row["estimate"] == pytest.approx(0.4 / 3) and row["se"] == pytest.approx(1 / 30)
    assert row["ci_low"] == pytest.approx(0.4 / 3 - T975_2 / 30) and row["ci_high"] == pytest.approx(0.4 / 3 + T975_2 / 30)
    assert row["ci_low"] < 0 < row["ci_high"]   # -0.0101 .. 0.2768
    assert row["verdict"] == "inconclusive" and "below the MDE" in row["why"]
    assert row["mde"] == pytest.approx((T975_2 + T80_2) / 30)  # 0.1788: the budget sees effects above this


def test_claim_over_seeds_and_clustered():
    c = Claim("b-level", "b's accuracy", "acc b", over_seeds("b", lambda s: s["acc"]), direction=0, paper_value=0.6)
    row = evaluate(c, _runs())
    assert row["estimate"] == pytest.approx(0.575) and row["n"] == 4 and row["verdict"] == "measured"
    cc = Claim("units", "units above zero", "mean of units",
               lambda runs: ClusteredSample([1, 0, 1, 1], ["a", "a", "b", "b"]), direction=1, paper_value=0.5)
    r2 = evaluate(cc, _runs())
    assert r2["se"] == pytest.approx(0.25) and r2["clusters"] == 2 and r2["verdict"] == "inconclusive"
    missing = evaluate(Claim("z", "z", "z", over_seeds("zz", lambda s: s["acc"])), _runs())
    assert missing["n"] == 0 and missing["verdict"] == "inconclusive" and "no interval" in missing["why"]


def test_grid_resources_and_manifest():
    exp = Experiment("e", "d", [Arm("x", "cpu", ("a=1",)), Arm("y", "qwen-1gpu")], claims=[], seeds=2,
                     budgets={"default": (), "ci": ("b=2",)})
    g = exp.grid("ci")
    assert [r.name for r in g] == ["x-s0", "y-s0", "x-s1", "y-s1"]  # seed-major
    assert g[0].run_args() == ["--preset", "cpu", "--set", "a=1", "--set", "b=2", "--set", "backend.threads=1",
                               "--set", "seed=0"]
    assert g[0].resources.gpus == 0 and g[1].resources.gpus == 1  # qwen-1gpu: openai backend -> a GPU
    assert resources_for("cpu", ["backend.kind=hf", "backend.options.device=cuda"]).gpus == 1
    assert resources_for("smollm2-cpu").gpus == 0 and resources_for("qwen-1gpu", ["backend.options.device=cpu"]).gpus == 0
    with pytest.raises(ValueError, match="unknown budget"):
        exp.grid("huge")
    m = exp.manifest("ci", g)
    assert manifest_conflict(m, exp.manifest("ci", exp.grid("ci", seeds=3))) is None  # more seeds: compatible
    assert "other arguments" in manifest_conflict(m, exp.manifest("default", exp.grid("default")))


def test_grid_max_seeds_secondary_arm():
    """An arm with max_seeds runs only the first n seeds; the headline pair keeps every seed, and a
    paired claim pairs on the seeds both arms ran."""
    exp = Experiment("e", "d", [Arm("x"), Arm("y", max_seeds=2)], claims=[], seeds=4)
    assert [r.name for r in exp.grid()] == ["x-s0", "y-s0", "x-s1", "y-s1", "x-s2", "x-s3"]
    assert [r.name for r in exp.grid(seeds=1)] == ["x-s0", "y-s0"]
    with pytest.raises(ValueError, match="max_seeds must be >= 1"):
        Experiment("e", "d", [Arm("x", max_seeds=0)], claims=[]).grid()
    runs = Runs({("x", s): {"acc": 0.1 * s} for s in range(4)} | {("y", s): {"acc": 0.5} for s in range(2)},
                {})
    assert paired_by_seed("x", "y", lambda s: s["acc"])(runs).values == pytest.approx({0: -0.5, 1: -0.4})
