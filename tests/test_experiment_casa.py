"""``coevo experiment casa-arms --budget ci`` (10 arms x 2 seeds of a one-step VG-OPD run on the consequential, the
phi-matched null and the reversed criteria world): the registered command end to end, killed with -9 in the
middle and rerun; every claim evaluated, the verdict logic reached, the tables (runs with the undefined-r count,
phi per axis, abstention reasons, heterogeneity tests, CASA-P1..P4 per world) and the report written.

Marker ``slow`` (~3 min CPU on 2 cores; 20 runs of ~10 s CPU): ``pytest -m slow tests/test_experiment_casa.py``.
"""

import pytest

from experiment_kill import kill_then_finish

pytestmark = pytest.mark.slow
ARMS = ["n-A", "n-B", "n-C", "q-A", "q-B", "q-C", "q-Cp", "rev-A", "rev-B", "rev-C"]


@pytest.mark.timeout(2400)
def test_casa_arms_ci_budget_killed_and_resumed(tmp_path):
    out = tmp_path / "casa"
    res = kill_then_finish("casa-arms", out, "q-A-s100", 1)
    assert res["complete"] and sorted(res["runs"]) == sorted(f"{a}-s{s}" for a in ARMS for s in (100, 101))
    claims = {c["name"]: c for c in res["claims"]}
    assert len(claims) == 36 and [c["headline"] for c in res["claims"]].count(True) == 1
    assert res["smoke"] and {c["verdict"] for c in res["claims"]} == {"smoke: no verdict"}
    assert all(c["n"] == 2 for n, c in claims.items() if "reversals" not in n and "rejected" not in n), \
        [(n, c["n"]) for n, c in claims.items()]
    # one step, no update yet: every arm of a world saw the same rollouts; r~ never exceeds the oracle
    assert claims["q:reward-bias-B"]["estimate"] < 0 and claims["q-n:reward-bias-A"]["role"] == "secondary"
    assert 0 <= claims["n:r-undefined-A"]["estimate"] < 0.5
    t = res["tables"]
    assert len(t["Runs"]["rows"]) == 20 and all(" of " in row[6] for row in t["Runs"]["rows"])  # undefined r counted
    phi = t["phi-matched null world: phi per axis (pooled over arms and seeds)"]["rows"]
    assert [row[0] for row in phi] == ["arithmetic", "final", "method", "units"]
    het = t["consequential world: heterogeneity (chi-square of homogeneity; arm A, distinct checks)"]["rows"]
    assert [h[0] for h in het] == ["timeout vs answer length", "unparsable vs output format"]
    preds = [row[0] for row in t["reversed world: coevo audit --predictions"]["rows"]]
    assert preds == ["CASA-P1", "CASA-P2", "CASA-P3", "CASA-P4"]
    assert (out / "report.html").is_file()
