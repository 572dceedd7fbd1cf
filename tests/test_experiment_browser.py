"""The experiment report (coevo/experiments/report.py) in a real browser: headless Chromium over
the DevTools pipe (scripts/report_screenshot.py, as tests/test_report_browser.py).  A result with
a supported, a refuted, an inconclusive and a measured claim, a failed run and a table: every
<img> loads, one figure per claim, no console error, the sections in order, a full-page PNG.

Marker ``browser`` (deselected by default): ``pytest -m browser tests/test_experiment_browser.py``.
"""
import importlib.util
import os
from pathlib import Path

import pytest

from coevo.experiments.claims import Claim, Design, SeedSample, evaluate, judge_rows
from coevo.experiments.spec import Runs

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("COEVO_CHROMIUM", "/usr/bin/chromium")


@pytest.fixture(scope="module")
def shot():
    if not Path(CHROMIUM).is_file():
        pytest.fail(f"no browser at {CHROMIUM}: apt-get install chromium (the browser test needs it)")
    spec = importlib.util.spec_from_file_location("report_screenshot", REPO / "scripts" / "report_screenshot.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _claim(name, values, role, success, failure):
    tested = role in ("primary", "secondary")
    return Claim(name, f"statement of {name}", f"statistic of {name}", lambda runs: SeedSample(values), role=role,
                 success_line=success if tested else None, failure_line=failure if tested else None,
                 design=Design("seeds", 0.2, "a test value", 0.05, "constructed") if tested else None,
                 arms=("a",), scale=100, unit=" pt")


def constructed_result() -> dict:
    runs = Runs({}, {})
    claims = judge_rows([evaluate(c, runs) for c in (
        _claim("supported", {0: 0.10, 1: 0.12, 2: 0.11}, "primary", 0.05, 0.01),
        _claim("refuted", {0: 0.00, 1: 0.01, 2: -0.01}, "secondary", 0.2, 0.1),
        _claim("inconclusive", {0: -0.2, 1: 0.3, 2: 0.05}, "secondary", 0.1, 0.01),
        _claim("measured", {0: 0.6, 1: 0.7, 2: 0.65}, "measurement", None, None))])
    return {"experiment": "constructed", "description": "four claims, one of each verdict", "budget": "default",
            "budget_note": "", "seeds": [0, 1, 2], "complete": False,
            "failed": [{"run": "b-s2", "error": "config: rzero.rounds: must be >= 1"}], "claims": claims,
            "tables": {"Runs": {"head": ["arm", "seed"], "rows": [["a", 0], ["a", 1]]}},
            "timing": {"wall_s": 12.0, "runs_wall_s": 20.0, "runs_cpu_s": 18.0,
                       "model_compute_share_of_run_wall": 0.5}}


def test_verdicts_of_the_constructed_claims():
    v = [c["verdict"] for c in constructed_result()["claims"]]
    assert v == ["supported", "refuted", "inconclusive", "measured"]


def test_experiment_report_in_headless_chromium(shot, tmp_path):
    from coevo.experiments.report import write_report

    res = constructed_result()
    path = write_report(res, tmp_path / "report.html")
    png = tmp_path / "report.png"
    facts = shot.inspect_report(path, png)
    assert len(facts["images"]) == 4, facts["images"]  # one plot per claim
    assert facts["broken_images"] == [] and facts["console_errors"] == [], facts
    assert facts["sections"] == ["Failed runs", "Claims", "Plots", "Runs", "Timing"], facts["sections"]
    assert {c.split(":")[0] for c in facts["captions"]} == {"supported", "refuted", "inconclusive", "measured"}
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
