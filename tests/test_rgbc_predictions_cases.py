"""Every prediction of the RGBC proposal (P1-P6, and P4 against its zero-learning null) on constructed
ledgers, judged by the one rule (coevo.audit.verdicts): a case where it is supported and one where it is
refuted by its own failure line.

A ledger alternates two row sets over its steps (odd steps ``rows``, even steps ``alt``): the batch bootstrap
over (run, step) then draws values between the two sets' values, so the interval is known by hand to lie
between them.  A ledger that repeats one row set in every step gives a zero-width interval: ``degenerate``
(no verdict), as the rule says of a sample without spread.
"""
import pytest

from coevo.audit.run_audit import audit_runs
from coevo.ledger.store import Ledger

K, STEPS = 4, 6  # 6 steps >= MIN_BATCHES: the batch bootstrap, exact on identical batches


def ledger(run_dir, rows, arm="full", seed=0, recipe="rgbc", alt=None):
    """rows per step: (mu_screen, mu_confirm, nu, mu_post, mu_null); ``rows`` in the odd steps of 1..STEPS,
    ``alt`` (default: ``rows``) in the even ones."""
    alt = rows if alt is None else alt
    run_dir.mkdir(parents=True)
    led = Ledger(run_dir / "ledger.duckdb")
    led.append("runs", [{"run_id": run_dir.name, "recipe": recipe, "world": "arithmetic", "seed": seed}])
    led.append("task_stats", [{
        "run_id": run_dir.name, "task_id": f"s{s}-{i}", "round": 1, "step": s, "arm": arm, "k_screen": K,
        "mu_screen": ms, "k_confirm": None if mc is None else K, "mu_confirm": mc,
        "mu_tilde": ms if mc is None else (ms + mc) / 2, "nu": nu, "mode_share": None if nu is None else 0.5,
        "mu_pre": ms, "mu_post": post, "mu_null": null}
        for s in range(1, STEPS + 1) for i, (ms, mc, nu, post, null) in enumerate(rows if s % 2 else alt)])
    led.close()
    return run_dir


def preds(*dirs):
    return {p["id"]: p for p in audit_runs(list(dirs), predictions=True)["predictions"]}


def bearing(n_mixed_confirm, n, nu_miss=0, lag=0.25, null_gap=0.25):
    """n bearing tasks (mu_screen 0.5): the first n_mixed_confirm have a mixed confirm group (0.5), the
    others an all-correct one (1.0); the first nu_miss have nu = 0; mu_post = 0.5 - lag; mu_null =
    mu_post + null_gap."""
    return [(0.5, 0.5 if i < n_mixed_confirm else 1.0, 0.0 if i < nu_miss else 1.0, 0.5 - lag, 0.5 - lag + null_gap)
            for i in range(n)]


def test_p1_holds_and_fails(tmp_path):
    # 2 and 3 of 10 bearing tasks replicate in alternate steps: 0.25, interval within [0.2, 0.3]: below 0.70, <= 0.45
    p = preds(ledger(tmp_path / "h", bearing(2, 10), alt=bearing(3, 10)))["P1"]
    assert p["value"] == pytest.approx(0.25) and 0.2 <= p["ci_low"] < p["ci_high"] <= 0.3 and p["verdict"] == "supported"
    p = preds(ledger(tmp_path / "f", bearing(9, 10), alt=bearing(8, 10)))["P1"]  # 0.85 > 0.70: the pool has a frontier
    assert p["value"] == pytest.approx(0.85) and p["ci_low"] >= 0.8 and p["verdict"] == "refuted"
    assert p["line"].startswith("success <= 0.45; failure > 0.7")
    p = preds(ledger(tmp_path / "d", bearing(2, 10)))["P1"]  # the same rows in every step: zero width
    assert p["value"] == pytest.approx(0.2) and p["verdict"] == "degenerate"


def test_p2_exact_pools_are_degenerate(tmp_path):
    # P2's constructed pools are exact (every bootstrap draw the same error): no spread, no verdict
    # screen groups all-correct or all-wrong: triple (1/2, 0, 1/2), the two-point pool p in {0, 1} exactly
    p = preds(ledger(tmp_path / "h", [(1.0, None, None, None, None), (0.0, None, None, None, None)]))["P2"]
    assert p["value"] == pytest.approx(0.0) and p["verdict"] == "degenerate"
    # every group mixed: triple (0, 1, 0); a K = 4 group is mixed with probability <= 7/8, error 1/8 > 5 points
    p = preds(ledger(tmp_path / "f", bearing(2, 4)))["P2"]
    assert p["value"] == pytest.approx(1 / 8) and p["verdict"] == "degenerate"


def test_p3_holds_and_fails(tmp_path):
    p = preds(ledger(tmp_path / "h", bearing(5, 10, nu_miss=1), alt=bearing(5, 10, nu_miss=2)))["P3"]  # 0.15
    assert p["value"] == pytest.approx(0.15) and p["verdict"] == "supported"
    # no miss in 6 x 70 tasks: 0 < 1 % (no event: a Wilson interval, upper end 3.84 / 423.84 = 0.9 %)
    p = preds(ledger(tmp_path / "lo", bearing(5, 70, nu_miss=0)))["P3"]
    assert p["value"] == pytest.approx(0.0) and p["ci_high"] < 0.01 and p["verdict"] == "refuted"
    assert "failure < 0.01" in p["line"]
    p = preds(ledger(tmp_path / "hi", bearing(5, 10, nu_miss=3), alt=bearing(5, 10, nu_miss=4)))["P3"]  # 0.35 > 20 %
    assert p["value"] == pytest.approx(0.35) and p["verdict"] == "supported"
    assert "also past > 0.2: the consensus check's threshold" in p["line"]  # re-estimate the threshold


def test_p4_holds_and_fails_on_both_statistics(tmp_path):
    h = preds(ledger(tmp_path / "h", bearing(5, 10, lag=0.25, null_gap=0.25), alt=bearing(5, 10, lag=0.3, null_gap=0.3)))
    assert 0.25 <= h["P4"]["value"] <= 0.3 and h["P4"]["verdict"] == "supported"  # median |l|
    assert h["P4-null"]["value"] == pytest.approx(0.275) and h["P4-null"]["verdict"] == "supported"
    f = preds(ledger(tmp_path / "f", bearing(5, 10, lag=0.0, null_gap=0.0), alt=bearing(5, 10, lag=0.01, null_gap=0.01)))
    for pid in ("P4", "P4-null"):
        assert f[pid]["value"] <= 0.01 and f[pid]["ci_high"] < 0.02 and f[pid]["verdict"] == "refuted", pid
        assert "failure < 0.02" in f[pid]["line"]
    # the two statistics disagree where the lag is all selection noise: |l| = 0.25, l - l_null about 0
    n = preds(ledger(tmp_path / "n", bearing(5, 10, lag=0.25, null_gap=0.0), alt=bearing(5, 10, lag=0.3, null_gap=0.01)))
    assert n["P4"]["verdict"] == "supported" and n["P4-null"]["verdict"] == "refuted"
    ids = list(n)
    assert ids.index("P4") + 1 == ids.index("P4-null")  # the proposal's statistic first


def test_p5_holds_and_fails(tmp_path):
    allc = [(1.0, None, None, None, None)]
    base = ledger(tmp_path / "b", bearing(1, 4) + allc * 4, arm="synco", recipe="synco", alt=bearing(0, 4) + allc * 4)
    # full: 3 then 2 of 8 screened tasks replicate (0.3125) against the baseline's 1 then 0 (0.0625): +25 points
    full = ledger(tmp_path / "fh", bearing(3, 4) + allc * 4, alt=bearing(2, 4) + allc * 4)
    p = preds(base, full)["P5"]
    assert p["value"] == pytest.approx(0.25) and p["verdict"] == "supported"
    assert p["extra"]["baseline"] == pytest.approx(0.0625) and p["extra"]["full"] == pytest.approx(0.3125)
    same = ledger(tmp_path / "ff", bearing(1, 4) + allc * 4, alt=bearing(0, 4) + allc * 4)  # no gain: < 1 point
    p = preds(base, same)["P5"]
    # 0 gain, but 48 screened tasks per arm give an interval of +-6.8 points: it straddles the +1 point failure
    # line, so the rule says inconclusive (too wide), not refuted (the refuted branch: P1, P3, P4 above)
    assert p["value"] == pytest.approx(0.0) and p["ci_low"] < 0.01 < p["ci_high"] and p["verdict"] == "inconclusive"
    assert "too wide" in p["line"]


def test_p6_holds_and_fails(tmp_path):
    allc = [(1.0, None, None, None, None)]
    s0 = ledger(tmp_path / "s0", bearing(2, 4) + allc * 4, arm="synco", seed=0, recipe="synco",
                alt=bearing(2, 5) + allc * 3)  # bearing 4/8 and 5/8
    s1 = ledger(tmp_path / "s1", bearing(2, 6) + allc * 2, arm="synco", seed=1, recipe="synco",
                alt=bearing(2, 7) + allc)  # 6/8 and 7/8
    p = preds(s0, s1)["P6"]
    assert p["value"] == pytest.approx(0.25) and p["ci_low"] >= 0.125 and p["verdict"] == "supported"
    # the same bearing rate at both seeds in every step: a range of 0 in every draw, zero width: degenerate
    d0 = ledger(tmp_path / "d0", bearing(2, 4) + allc * 4, arm="synco", seed=0, recipe="synco")
    d2 = ledger(tmp_path / "d2", bearing(1, 4) + allc * 4, arm="synco", seed=2, recipe="synco")  # 4/8 again
    p = preds(d0, d2)["P6"]
    assert p["value"] == pytest.approx(0.0) and p["verdict"] == "degenerate"
