"""``coevo experiment casa-arms --budget ci`` (7 arms x 2 seeds of a one-step VG-OPD run on the
consequential and the null criteria world): the registered command end to end, killed with -9 in the
middle and rerun; every claim evaluated, the verdict logic reached, the tables (runs, abstention
reasons, heterogeneity tests, CASA-P1..P4 per world) and the report written.

Marker ``slow`` (~2 min CPU on 2 cores; 14 runs of ~16 s CPU): ``pytest -m slow tests/test_experiment_casa.py``.
"""

import pytest

from experiment_kill import kill_then_finish

pytestmark = pytest.mark.slow
ARMS = ["n-A", "n-B", "n-C", "q-A", "q-B", "q-C", "q-Cp"]


@pytest.mark.timeout(1800)
def test_casa_arms_ci_budget_killed_and_resumed(tmp_path):
    out = tmp_path / "casa"
    res = kill_then_finish("casa-arms", out, "q-A-s0", 1)
    assert res["complete"] and sorted(res["runs"]) == sorted(f"{a}-s{s}" for a in ARMS for s in (0, 1))
    claims = {c["name"]: c for c in res["claims"]}
    assert len(claims) == 21 and [c["headline"] for c in res["claims"]].count(True) == 1
    assert res["smoke"] and {c["verdict"] for c in res["claims"]} == {"smoke: no verdict"}
    assert all(c["n"] == 2 for n, c in claims.items() if "reversals" not in n and "rejected" not in n), \
        [(n, c["n"]) for n, c in claims.items()]
    # one step, no update yet: every arm of a world saw the same rollouts, so A's reward bias is the
    # same number in each, and positive on the consequential world only
    assert claims["q:reward-bias-A"]["estimate"] > 0 > claims["q:reward-bias-B"]["estimate"]
    assert claims["q-n:reward-bias-A"]["estimate"] > 0 and claims["q-n:reward-bias-A"]["role"] == "by construction"
    t = res["tables"]
    assert len(t["Runs"]["rows"]) == 14
    het = t["consequential world: heterogeneity (chi-square of homogeneity; arm A, distinct checks)"]["rows"]
    assert [h[0] for h in het] == ["timeout vs answer length", "unparsable vs output format"]
    preds = [row[0] for row in t["null world: coevo audit --predictions"]["rows"]]
    assert preds == ["CASA-P1", "CASA-P2", "CASA-P3", "CASA-P4"]
    assert (out / "report.html").is_file()
