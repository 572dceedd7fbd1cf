"""``coevo experiment rgbc-arms --budget ci`` (4 arms and the 2 control arms x 2 seeds of a minute-scale RGBC
run, evaluation seeds 100-101): the registered command end to end, killed with -9 in the middle and rerun (the
killed run resumes); every claim evaluated on both seeds, P5 recomputed from the ledgers by hand, the budget
table, the control table and the report.

Marker ``slow`` (~4 min on a quiet 2-core machine): ``pytest -m slow tests/test_experiment_rgbc.py``.
"""
from pathlib import Path

import pytest

from experiment_kill import kill_then_finish

pytestmark = pytest.mark.slow
ARMS = ("full", "full_post", "mu_tilde", "synco")
CONTROL = ("law_unimodal", "law_bimodal")
SEEDS = (100, 101)


def _productive(run_dir: Path, second: str = "mu_confirm") -> tuple:
    """(tasks with 0 < mu_screen < 1 and 0 < second < 1, screened tasks), straight from the ledger."""
    from coevo.ledger.store import Ledger

    led = Ledger(run_dir / "ledger.duckdb", read_only=True)
    r = led.query(f"SELECT count(*) FILTER (WHERE mu_screen > 0 AND mu_screen < 1 AND {second} > 0 AND "
                  f"{second} < 1) AS both, count(*) AS n FROM task_stats WHERE mu_screen IS NOT NULL")[0]
    led.close()
    return r["both"], r["n"]


@pytest.mark.timeout(1800)
def test_rgbc_arms_ci_budget_killed_and_resumed(tmp_path):
    out = tmp_path / "rg"
    res = kill_then_finish("rgbc-arms", out, "synco-s100", 2)
    assert res["complete"] and sorted(res["runs"]) == sorted(f"{a}-s{s}" for a in ARMS + CONTROL for s in SEEDS)
    claims = {c["name"]: c for c in res["claims"]}
    assert list(claims)[:7] == ["P5-full", "P5-full_post", "P5-mu_tilde", "P5post-full", "P5post-full_post",
                                "P5post-mu_tilde", "P6"]
    assert [c["headline"] for c in res["claims"]].count(True) == 1 and claims["P5-full"]["headline"]
    assert res["smoke"] and {c["verdict"] for c in res["claims"]} == {"smoke: no verdict"}
    for name, c in claims.items():
        if name != "P6":
            assert c["n"] == 2, name
    # P5 by hand: the per-seed differences of the replicated productive rate, from the ledgers
    runs = out / "runs"
    rate = lambda c: c[0] / c[1]  # noqa: E731
    full = {s: _productive(runs / f"full-s{s}") for s in SEEDS}
    syn = {s: _productive(runs / f"synco-s{s}") for s in SEEDS}
    diffs = {s: rate(full[s]) - rate(syn[s]) for s in SEEDS}
    assert claims["P5-full"]["per_seed"] == {str(s): pytest.approx(d) for s, d in diffs.items()}
    # counts, not a mean of percentages: the pooled rates' difference
    pooled = (sum(f[0] for f in full.values()) / sum(f[1] for f in full.values())
              - sum(c[0] for c in syn.values()) / sum(c[1] for c in syn.values()))
    assert claims["P5-full"]["estimate"] == pytest.approx(pooled)
    post = {s: rate(_productive(runs / f"full-s{s}", "mu_post")) - rate(_productive(runs / f"synco-s{s}", "mu_post"))
            for s in SEEDS}
    assert claims["P5post-full"]["per_seed"] == {str(s): pytest.approx(d) for s, d in post.items()}
    assert claims["P6"]["n"] == 2 and claims["P6"]["method"].startswith("bootstrap of the range")
    # tables: every run's Reasoner rollouts, the pooled predictions, the curves, the no-truth split
    t = res["tables"]
    bud = t["Reasoner rollouts per run (budget match)"]["rows"]
    per_run = [row for row in bud if isinstance(row[1], int)]
    assert len(per_run) == 8 and all(row[4] == row[2] + row[3] for row in per_run)
    means = {row[0]: row for row in bud if row[1] == "mean of 2"}  # one per arm: the ratio of means to synco
    assert set(means) == set(ARMS) and means["synco"][5] == "1.000"
    full = [row[4] for row in per_run if row[0] == "full"]
    syn = [row[4] for row in per_run if row[0] == "synco"]
    assert means["full"][5] == f"{sum(full) / sum(syn):.3f}"
    assert [row[0] for row in t["RGBC proposal P1-P4 pooled over the grid"]["rows"]] == ["P1", "P2", "P3", "P4",
                                                                                          "P4-null"]
    assert t["No-truth split: all-wrong tasks (mu_1 = 0), not pooled"]["rows"]
    ctl = t["Control: P1 and P2 on worlds with a known pass-rate law"]["rows"]
    assert [(r[0], r[1]) for r in ctl] == [("P1", "unimodal"), ("P1", "bimodal"), ("P2", "unimodal"), ("P2", "bimodal")]
    assert {row[0] for row in t["kappa-bar, nu-bar, l-bar per step (mean over seeds) beside the oracle's truth"]["rows"]} \
        == set(ARMS)
    assert (out / "report.html").is_file()
    assert "--resume" in (runs / "synco-s100.log").read_text()
