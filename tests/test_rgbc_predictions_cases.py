"""Every prediction of the RGBC proposal (P1-P6, and P4 against its zero-learning null) on constructed
ledgers: one case where it holds and one where it crosses its termination line (issue 23 item 4).

Each ledger repeats the same rows in every step, so every batch-bootstrap draw (over (run, step)) gives
the same value and the interval is that value exactly: the verdicts follow from hand-computed numbers.
"""
import pytest

from coevo.audit.run_audit import audit_runs
from coevo.ledger.store import Ledger

K, STEPS = 4, 6  # 6 steps >= MIN_BATCHES: the batch bootstrap, exact on identical batches


def ledger(run_dir, rows, arm="full", seed=0, recipe="rgbc"):
    """rows per step: (mu_screen, mu_confirm, nu, mu_post, mu_null); repeated in steps 1..STEPS."""
    run_dir.mkdir(parents=True)
    led = Ledger(run_dir / "ledger.duckdb")
    led.append("runs", [{"run_id": run_dir.name, "recipe": recipe, "world": "arithmetic", "seed": seed}])
    led.append("task_stats", [{
        "run_id": run_dir.name, "task_id": f"s{s}-{i}", "round": 1, "step": s, "arm": arm, "k_screen": K,
        "mu_screen": ms, "k_confirm": None if mc is None else K, "mu_confirm": mc,
        "mu_tilde": ms if mc is None else (ms + mc) / 2, "nu": nu, "mode_share": None if nu is None else 0.5,
        "mu_pre": ms, "mu_post": post, "mu_null": null}
        for s in range(1, STEPS + 1) for i, (ms, mc, nu, post, null) in enumerate(rows)])
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
    p = preds(ledger(tmp_path / "h", bearing(2, 10)))["P1"]  # 2 of 10 bearing tasks replicate: 0.2 <= 0.45
    assert p["value"] == pytest.approx(0.2) and p["verdict"] == "holds"
    p = preds(ledger(tmp_path / "f", bearing(9, 10)))["P1"]  # 0.9 >= 0.70: the pool has a frontier
    assert p["value"] == pytest.approx(0.9) and p["verdict"] == "termination line crossed"
    assert p["line"].startswith(">= 0.7")


def test_p2_holds_and_fails(tmp_path):
    # screen groups all-correct or all-wrong: triple (1/2, 0, 1/2), the two-point pool p in {0, 1} exactly
    p = preds(ledger(tmp_path / "h", [(1.0, None, None, None, None), (0.0, None, None, None, None)]))["P2"]
    assert p["value"] == pytest.approx(0.0) and p["verdict"] == "holds"
    # every group mixed: triple (0, 1, 0); a K = 4 group is mixed with probability <= 7/8, error 1/8 > 5 points
    p = preds(ledger(tmp_path / "f", bearing(2, 4)))["P2"]
    assert p["value"] == pytest.approx(1 / 8) and p["verdict"] == "termination line crossed"


def test_p3_holds_and_fails(tmp_path):
    p = preds(ledger(tmp_path / "h", bearing(5, 10, nu_miss=1)))["P3"]  # 1 in 10 modes miss the reference
    assert p["value"] == pytest.approx(0.1) and p["verdict"] == "holds"
    # no miss in 6 x 70 tasks: 0 < 1 % (no event: a Wilson interval, upper end 3.84 / 423.84 = 0.9 %)
    p = preds(ledger(tmp_path / "lo", bearing(5, 70, nu_miss=0)))["P3"]
    assert p["value"] == pytest.approx(0.0) and p["verdict"] == "termination line crossed"
    assert p["line"].startswith("< 0.01")
    p = preds(ledger(tmp_path / "hi", bearing(5, 10, nu_miss=3)))["P3"]  # 0.3 > 20 %: re-estimate the threshold
    assert p["value"] == pytest.approx(0.3) and p["line"].startswith("> 0.2")


def test_p4_holds_and_fails_on_both_statistics(tmp_path):
    h = preds(ledger(tmp_path / "h", bearing(5, 10, lag=0.25, null_gap=0.25)))
    assert h["P4"]["value"] == pytest.approx(0.25) and h["P4"]["verdict"] == "holds"  # median |l| = 0.25
    assert h["P4-null"]["value"] == pytest.approx(0.25) and h["P4-null"]["verdict"] == "holds"  # |mean(mu_null - mu_post)|
    f = preds(ledger(tmp_path / "f", bearing(5, 10, lag=0.0, null_gap=0.0)))
    for pid in ("P4", "P4-null"):
        assert f[pid]["value"] == pytest.approx(0.0) and f[pid]["verdict"] == "termination line crossed", pid
        assert f[pid]["line"].startswith("< 0.02")
    # the two statistics disagree where the lag is all selection noise: |l| = 0.25, l - l_null = 0
    n = preds(ledger(tmp_path / "n", bearing(5, 10, lag=0.25, null_gap=0.0)))
    assert n["P4"]["verdict"] == "holds" and n["P4-null"]["verdict"] == "termination line crossed"
    ids = list(n)
    assert ids.index("P4") + 1 == ids.index("P4-null")  # the proposal's statistic first


def test_p5_holds_and_fails(tmp_path):
    base = ledger(tmp_path / "b", bearing(1, 4) + [(1.0, None, None, None, None)] * 4, arm="synco", recipe="synco")
    # full: 3 of 8 screened tasks replicate (0.375) against the baseline's 1 of 8 (0.125): +25 points
    full = ledger(tmp_path / "fh", bearing(3, 4) + [(1.0, None, None, None, None)] * 4)
    p = preds(base, full)["P5"]
    assert p["value"] == pytest.approx(0.25) and p["verdict"] == "holds"
    assert p["extra"]["baseline"] == pytest.approx(0.125) and p["extra"]["full"] == pytest.approx(0.375)
    same = ledger(tmp_path / "ff", bearing(1, 4) + [(1.0, None, None, None, None)] * 4)  # no gain: < 1 point
    p = preds(base, same)["P5"]
    assert p["value"] == pytest.approx(0.0) and p["verdict"] == "termination line crossed"


def test_p6_holds_and_fails(tmp_path):
    allc = [(1.0, None, None, None, None)]
    s0 = ledger(tmp_path / "s0", bearing(2, 4) + allc * 4, arm="synco", seed=0, recipe="synco")  # bearing 4/8
    s1 = ledger(tmp_path / "s1", bearing(2, 6) + allc * 2, arm="synco", seed=1, recipe="synco")  # bearing 6/8
    p = preds(s0, s1)["P6"]
    assert p["value"] == pytest.approx(0.25) and p["verdict"] == "holds"
    s2 = ledger(tmp_path / "s2", bearing(1, 4) + allc * 4, arm="synco", seed=2, recipe="synco")  # 4/8 again
    p = preds(s0, s2)["P6"]
    assert p["value"] == pytest.approx(0.0) and p["verdict"] == "termination line crossed"
    assert p["line"].startswith("< 0.005")
