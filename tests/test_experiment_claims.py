"""Claims of coevo/experiments/claims.py and the one rule of coevo/audit/verdicts.py on hand-computed numbers:
the t interval over seeds, the pooled-ratio interval of counts, the clustered interval, the observed MDE, every
branch of the rule, Holm's adjustment and the decision interval, degenerate samples, refused declarations."""
import math
from pathlib import Path

import pytest

from coevo.audit.verdicts import decide, explain, holm, p_value
from coevo.experiments.claims import (Claim, ClusteredSample, Design, RatioSample, SeedSample, clustered_interval,
                                      evaluate, judge_rows, mde, over_seeds, paired_by_seed, ratio_interval,
                                      seed_interval)
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
    assert d["mde_observed"] == pytest.approx(3.0965101474461254)
    assert d["mde_observed"] == pytest.approx((T975_2 + T80_2) / math.sqrt(3)) and not d["degenerate"]


def test_seed_interval_degenerate():
    assert math.isnan(seed_interval([]).get("estimate"))
    one = seed_interval([0.4])
    assert one["estimate"] == 0.4 and math.isnan(one["se"]) and "ci_low" not in one
    same = seed_interval([0.1, 0.1, 0.1])  # no spread: a zero-width interval at 0.1, degenerate
    assert same["se"] == 0.0 and same["ci_low"] == pytest.approx(0.1) and same["degenerate"]


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


@pytest.mark.parametrize("est,lo,hi,direction,failure,success,want", [
    # P5's lines (+1 pt failure, +3 pt success), direction +1
    (0.040, 0.020, 0.060, 1, 0.01, 0.03, "supported"),     # beyond the failure line, estimate reaches success
    (0.020, 0.015, 0.025, 1, 0.01, 0.03, "inconclusive"),  # beyond the failure line, estimate short: between the lines
    (0.005, -0.01, 0.009, 1, 0.01, 0.03, "refuted"),       # wholly short of the failure line (a +0.5 pt "gain")
    (0.020, 0.005, 0.035, 1, 0.01, 0.03, "inconclusive"),  # straddles the failure line
    (0.040, 0.010, 0.070, 1, 0.01, 0.03, "inconclusive"),  # touches the line: every comparison is strict
    (-0.02, -0.04, -0.01, -1, -0.01, None, "inconclusive"),  # direction -1, touches -1 pt
    (-0.05, -0.08, -0.02, -1, -0.01, None, "supported"),   # smallest effect of interest -1 pt, no success line
    (0.01, 0.00, 0.02, -1, -0.01, None, "refuted"),
    (0.30, 0.20, 0.40, -1, 0.70, 0.45, "supported"),       # RGBC P1: <= 0.45 promised, >= 0.70 refutes
    (0.80, 0.72, 0.88, -1, 0.70, 0.45, "refuted"),
    (0.60, 0.50, 0.69, -1, 0.70, 0.45, "inconclusive"),    # between the lines
    (0.10, float("nan"), float("nan"), 1, 0.01, None, "inconclusive"),
])
def test_the_rule_by_hand(est, lo, hi, direction, failure, success, want):
    assert decide(est, lo, hi, direction, failure, success) == want


def test_the_rule_degenerate_and_bad_lines():
    assert decide(0.4, 0.4, 0.4, 1, 0.1, 0.2, degenerate=True) == "degenerate"
    with pytest.raises(ValueError, match="short of the failure line"):
        decide(0.4, 0.3, 0.5, 1, 0.1, 0.05)
    with pytest.raises(ValueError, match="direction"):
        decide(0.4, 0.3, 0.5, 0, 0.1)
    why = explain("inconclusive", 0.02, 0.005, 0.035, 1, 0.01, 0.03, power=0.4)
    assert why.startswith("underpowered") and "40 %" in why
    assert explain("inconclusive", 0.02, 0.015, 0.025, 1, 0.01, 0.03).startswith("between the lines")
    assert explain("inconclusive", 0.02, 0.005, 0.035, 1, 0.01, 0.03, power=0.9).startswith("too wide")


def test_holm_by_hand():
    # p = 0.01, 0.04, 0.03 (m = 3): sorted 0.01 x3 = 0.03; 0.03 x2 = 0.06; 0.04 x1 = 0.04 -> max(0.06, 0.04) = 0.06
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    adj = holm([0.2, float("nan"), 0.01])  # NaN is out of the family: m = 2
    assert adj[0] == pytest.approx(0.2) and math.isnan(adj[1]) and adj[2] == pytest.approx(0.02)


def test_p_value_by_hand():
    # est 2, se 0.5, df 2, failure 0: t = 4; P(T_2 > t) = (1 - t / sqrt(t^2 + 2)) / 2, so p = 1 - 4 / sqrt(18) = 0.0572
    assert p_value(2.0, 0.5, 2, 0.0) == pytest.approx(1 - 4 / math.sqrt(18))
    assert math.isnan(p_value(2.0, 0.0, 2, 0.0)) and math.isnan(p_value(2.0, 0.5, 0, 0.0))


def _tested(name, values, role="secondary", failure=0.0, success=None, direction=1):
    return Claim(name, "words", "stat", lambda runs: SeedSample(values), role=role, direction=direction,
                 failure_line=failure, success_line=success, arms=("a",),
                 design=Design("seeds", 1.0 * direction, "test", 1.0, "test"))


def test_judge_rows_holm_and_the_decision_interval():
    """Failure line 0, df 2, P(T_2 > t) = (1 - t / sqrt(t^2 + 2)) / 2. Secondaries: a (2, 2.1, 1.9): t = 34.6,
    p = 0.00083; c (1.4, 2, 2.6): SE 0.3464, t = 5.774, p = 1 - 5.774 / sqrt(35.33) = 0.0287; b (1, 2, 3): SE 0.5774,
    t = 3.464, p = 1 - 3.464 / sqrt(14) = 0.0742. Holm: a x3 = 0.0025, c x2 = 0.0574, b x1 = 0.0742: a supported;
    c, significant alone, is inconclusive after the correction; its decision interval is the (1 - 0.05 p / p~) one."""
    runs = Runs({}, {})
    claims = [_tested("prim", {0: 1.0, 1: 1.1, 2: 0.9}, "primary"),
              _tested("a", {0: 2.0, 1: 2.1, 2: 1.9}), _tested("b", {0: 1.0, 1: 2.0, 2: 3.0}),
              _tested("c", {0: 1.4, 1: 2.0, 2: 2.6})]
    rows = {r["name"]: r for r in judge_rows([evaluate(c, runs) for c in claims])}
    t = 2 / (0.6 / math.sqrt(3))
    assert rows["c"]["p"] == pytest.approx(1 - t / math.sqrt(t * t + 2)) == pytest.approx(0.02872, abs=1e-5)
    assert rows["b"]["p"] == pytest.approx(1 - math.sqrt(12) / math.sqrt(14))
    assert rows["prim"]["p_adjusted"] == rows["prim"]["p"]  # the primary is not adjusted
    assert rows["a"]["p_adjusted"] == pytest.approx(3 * rows["a"]["p"])
    assert rows["c"]["p_adjusted"] == pytest.approx(2 * rows["c"]["p"])
    assert rows["b"]["p_adjusted"] == pytest.approx(rows["b"]["p"])
    assert [rows[k]["verdict"] for k in ("prim", "a", "b", "c")] == ["supported", "supported", "inconclusive",
                                                                      "inconclusive"]
    c = rows["c"]
    assert c["ci_low"] > 0 > c["decision_low"]  # the 95 % interval excludes 0; the Holm-level one does not
    assert c["decision_level"] == pytest.approx(1 - 0.05 / 2)


def test_co_primaries_are_holm_adjusted_among_themselves():
    """Two primaries: c's p 0.0287 (above) and a's 0.00083; Holm over the two: a x2, c x1; the secondary
    b alone (its own family of one) keeps its p."""
    runs = Runs({}, {})
    claims = [_tested("a", {0: 2.0, 1: 2.1, 2: 1.9}, "primary"), _tested("c", {0: 1.4, 1: 2.0, 2: 2.6}, "primary"),
              _tested("b", {0: 1.0, 1: 2.0, 2: 3.0})]
    Experiment("e", "d", [Arm("a")], claims).check_claims()  # two primaries are allowed
    rows = {r["name"]: r for r in judge_rows([evaluate(c, runs) for c in claims])}
    assert rows["a"]["p_adjusted"] == pytest.approx(2 * rows["a"]["p"])
    assert rows["c"]["p_adjusted"] == pytest.approx(rows["c"]["p"])
    assert rows["b"]["p_adjusted"] == pytest.approx(rows["b"]["p"])
    assert rows["a"]["verdict"] == rows["c"]["verdict"] == "supported"


def test_zero_width_and_ties_are_degenerate():
    runs = Runs({}, {})
    rows = judge_rows([evaluate(_tested("flat", {0: 0.4, 1: 0.4, 2: 0.4}, "primary"), runs),
                       evaluate(Claim("zeros", "w", "s", lambda r: RatioSample({0: 0, 1: 0}, {0: 60, 1: 64},
                                                                               {0: 0, 1: 0}, {0: 63, 1: 64}),
                                      role="secondary", failure_line=-0.01, direction=-1, arms=("a",),
                                      design=Design("seeds", -0.04, "t", 0.01, "t", kind="ratio", n_per_seed=64,
                                                    base_rate=0.06)), runs)])
    assert [r["verdict"] for r in rows] == ["degenerate", "degenerate"]
    assert all(math.isnan(r["p"]) for r in rows)


def test_ratio_interval_by_hand():
    # arm: 6/60, 2/40 -> R = 8/100 = 0.08; base: 3/50, 3/50 -> Rb = 0.06; difference 0.02
    # u_g = (y - R n)/N - (yb - Rb nb)/Nb: seed 0 (6 - 4.8)/100 - (3 - 3)/100 = 0.012; seed 1 (2 - 3.2)/100 - 0 = -0.012
    # CR1 var = G/(G-1) x sum u^2 = 2 x 2 x 0.000144 = 0.000576 -> SE 0.024, df 1
    d = ratio_interval({0: 6, 1: 2}, {0: 60, 1: 40}, {0: 3, 1: 3}, {0: 50, 1: 50})
    assert d["estimate"] == pytest.approx(0.02) and d["se"] == pytest.approx(0.024) and d["df"] == 1
    assert d["per_seed"] == pytest.approx({"0": 0.04, "1": -0.01}) and d["units"] == 100
    assert d["ci_low"] == pytest.approx(0.02 - T975_1 * 0.024)
    one = ratio_interval({0: 6, 1: 2}, {0: 60, 1: 40})  # one arm: u = 0.012, -0.012 -> the same SE
    assert one["estimate"] == pytest.approx(0.08) and one["se"] == pytest.approx(0.024)
    # counts, not a mean of percentages: the mean of 6/60 and 2/40 is 0.075, the pooled rate 0.08
    assert seed_interval([0.1, 0.05])["estimate"] == pytest.approx(0.075)


def test_incomplete_declarations_are_refused():
    ok = _tested("ok", {0: 1.0}, "primary")
    bad = [Claim("no-lines", "w", "s", lambda r: None, role="secondary", arms=("a",),
                 design=Design("seeds", 1.0, "t", 1.0, "t")),
           Claim("no-why", "w", "s", lambda r: None, role="secondary", smallest_effect=0.1, arms=("a",),
                 design=Design("seeds", 1.0, "t", 1.0, "t")),
           Claim("no-design", "w", "s", lambda r: None, role="secondary", failure_line=0.0, arms=("a",)),
           Claim("power-at-line", "w", "s", lambda r: None, role="secondary", failure_line=0.0, arms=("a",),
                 design=Design("seeds", 0.0, "t", 1.0, "t")),
           Claim("no-identity", "w", "s", lambda r: None, role="by construction")]
    want = ["a failure line", "the reason for the smallest effect", "a design", "beyond the failure line",
            "the identity"]
    for c, w in zip(bad, want):
        assert any(w in p for p in c.problems()), (c.name, c.problems())
        with pytest.raises(ValueError, match="incomplete pre-registration"):
            Experiment("e", "d", [Arm("a")], [ok, c]).grid()
    with pytest.raises(ValueError, match="a primary claim"):
        Experiment("e", "d", [Arm("a")], [_tested("x", {}), _tested("y", {})]).grid()
    with pytest.raises(ValueError, match="unknown arm"):
        Experiment("e", "d", [Arm("b")], [ok]).grid()
    assert ok.problems() == [] and Experiment("e", "d", [Arm("a")], [ok]).grid()


def _runs():
    """arm a at seeds 0-2 and arm b at seeds 0-3 (b's seed 3 has no partner)."""
    acc = {("a", 0): 0.5, ("a", 1): 0.7, ("a", 2): 0.6, ("b", 0): 0.4, ("b", 1): 0.5, ("b", 2): 0.5, ("b", 3): 0.9}
    summaries = {k: {"acc": v} for k, v in acc.items()}
    return Runs(summaries, {k: Path(f"/nonexistent/{k[0]}-s{k[1]}") for k in acc})


def test_claim_paired_by_seed_by_hand():
    # differences a - b on seeds 0, 1, 2: 0.1, 0.2, 0.1 -> mean 0.133333, sd 0.057735, SE 0.033333
    c = Claim("a-vs-b", "a beats b", "acc a - b", paired_by_seed("a", "b", lambda s: s["acc"]), role="primary",
              failure_line=0.05, design=Design("seeds", 0.1, "t", 0.05, "t"))
    assert c.arms == ("a", "b")
    row = judge_rows([evaluate(c, _runs())])[0]
    assert row["n"] == 3 and row["per_seed"] == pytest.approx({"0": 0.1, "1": 0.2, "2": 0.1})
    assert row["estimate"] == pytest.approx(0.4 / 3) and row["se"] == pytest.approx(1 / 30)
    assert row["ci_low"] == pytest.approx(0.4 / 3 - T975_2 / 30) and row["ci_high"] == pytest.approx(0.4 / 3 + T975_2 / 30)
    assert row["ci_low"] < 0.05 < row["ci_high"]   # -0.0101 .. 0.2768 straddles the +0.05 failure line
    assert row["verdict"] == "inconclusive" and "straddles the failure line" in row["why"]
    assert row["mde_observed"] == pytest.approx((T975_2 + T80_2) / 30)  # after the data, a secondary column


def test_claim_measurement_and_clustered():
    c = Claim("b-level", "b's accuracy", "acc b", over_seeds("b", lambda s: s["acc"]), role="measurement",
              source_value=0.6)
    row = judge_rows([evaluate(c, _runs())])[0]
    assert row["estimate"] == pytest.approx(0.575) and row["n"] == 4 and row["verdict"] == "measured"
    cc = Claim("units", "units above zero", "mean of units", lambda runs: ClusteredSample([1, 0, 1, 1], ["a", "a", "b", "b"]),
               role="primary", failure_line=0.0, arms=("a",), design=Design("units", 0.5, "t", 0.5, "t"))
    r2 = judge_rows([evaluate(cc, _runs())])[0]
    assert r2["se"] == pytest.approx(0.25) and r2["clusters"] == 2 and r2["verdict"] == "inconclusive"
    missing = judge_rows([evaluate(_tested("z", {}, "primary"), _runs())])[0]
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
