"""``coevo experiment rzero-seeds --budget ci`` (3 arms x 2 seeds of a minute-scale R-Zero run): the
registered command end to end, killed with -9 in the middle and rerun; every claim evaluated on
both seeds, and no verdict printed: the ci budget is a smoke test (``smoke: no verdict``), the report written.

Marker ``slow`` (~3 min on 2 cores): ``pytest -m slow tests/test_experiment_rzero.py``.
"""

import pytest

from experiment_kill import kill_then_finish

pytestmark = pytest.mark.slow


@pytest.mark.timeout(1800)
def test_rzero_seeds_ci_budget_killed_and_resumed(tmp_path):
    out = tmp_path / "rz"
    res = kill_then_finish("rzero-seeds", out, "two-s100", 2)
    assert res["complete"] and sorted(res["runs"]) == [f"{a}-s{s}" for a in ("frozen", "single", "two")
                                                        for s in (100, 101)]
    names = [c["name"] for c in res["claims"]]
    assert names == ["two-vs-frozen", "frontier-gain", "frontier-gain-frozen", "pseudo-label-r1", "pseudo-label-r2",
                     "pseudo-label-r3", "pseudo-label-decline", "two-vs-single"]
    assert all(c["n"] == 2 for c in res["claims"]), [(c["name"], c["n"]) for c in res["claims"]]
    assert res["smoke"] and {c["verdict"] for c in res["claims"]} == {"smoke: no verdict"}
    assert [c["headline"] for c in res["claims"]].count(True) == 1
    assert res["tables"]["Runs"]["rows"] and (out / "report.html").read_text().count("<img") == 8
