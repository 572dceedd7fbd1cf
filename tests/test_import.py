"""`coevo import verl|rzero` on fixtures in the documented shapes (tests/fixtures/verl_dump: verl's
``_dump_generations``; tests/fixtures/rzero: R-Zero's ``question_evaluate/evaluate.py`` results),
then `coevo audit --json` and `coevo report` on the imported runs. Numbers are hand-computed from
the fixtures (the comments give the arithmetic); malformed lines are asserted by file and line."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

FIX = Path(__file__).parent / "fixtures"


def coevo(*args, check=True):
    p = subprocess.run([sys.executable, "-m", "coevo", *map(str, args)], capture_output=True, text=True, timeout=600,
                       env=dict(os.environ, COLUMNS="500"))  # one error line stays one line
    if check:
        assert p.returncode == 0, p.stderr
    return p


@pytest.fixture(scope="module")
def verl_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("imp") / "verl_run"
    p = coevo("import", "verl", FIX / "verl_dump", "--out", out, "--json")
    return out, json.loads(p.stdout)


@pytest.fixture(scope="module")
def rzero_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("imp") / "rzero_run"
    p = coevo("import", "rzero", FIX / "rzero", "--references", FIX / "rzero" / "references.jsonl", "--out", out, "--json")
    return out, json.loads(p.stdout)


def _where(bad):
    return [(Path(b["file"]).name, b["line"]) for b in bad]


def test_verl_import_counts_and_malformed(verl_run):
    out, res = verl_run
    # 3 steps x 2 prompts x 4 rollouts; 3 malformed lines: a cut-off line, no score, score as a string
    assert res["n_records"] == 24 and res["counts"] == {"steps": 3, "tasks": 6, "rollouts": 24, "verdicts": 24,
                                                         "rewards": 24, "task_stats": 0}
    assert _where(res["malformed"]) == [("2.jsonl", 9), ("3.jsonl", 5), ("3.jsonl", 10)]
    assert "missing field(s) score" in res["malformed"][1]["reason"]
    stored = json.loads((out / "import.json").read_text())
    assert _where(stored["malformed"]) == _where(res["malformed"]) and stored["n_malformed"] == 3
    s = json.loads((out / "summary.json").read_text())
    # step 1: coevo judges 6 of 8 correct; verl's strict '####' reward gave 0 to one '\boxed{18}': 7/8 agree
    assert s["steps"]["1"]["verdict_mean"] == 0.75 and s["steps"]["1"]["score_verdict_agreement"] == 0.875
    assert s["steps"]["2"]["verdict_mean"] == 0.125 and s["n_malformed"] == 3


def test_verl_audit_and_report(verl_run):
    out, _ = verl_run
    a = json.loads(coevo("audit", out, "--json").stdout)["runs"][0]["instruments"]
    # mu per (step, prompt): 1: 2/4, 4/4; 2: 1/4, 0/4; 3: 3/4, 4/4 -> 3 of 6 groups bearing
    assert a["bearing_rate"]["status"] == "ok" and a["bearing_rate"]["value"] == 0.5 and a["bearing_rate"]["n"] == 6
    nm = a["null_model"]
    assert nm["status"] == "ok" and nm["extra"]["k"] == 4
    # first bucket = step 1, last = step 3: (all-correct, bearing, all-wrong) shares = (1/2, 1/2, 0) each
    assert nm["extra"]["buckets"]["first"]["observed"] == [0.5, 0.5, 0.0]
    assert nm["extra"]["buckets"]["last"]["observed"] == [0.5, 0.5, 0.0]
    assert a["pseudo_label_accuracy"]["status"] == "unavailable"
    assert a["abstention_share"]["value"] == 0.0
    coevo("report", out)
    html = (out / "report.html").read_text()
    assert "Imported from verl" in html and "<td>2.jsonl</td><td>9</td>" in html and "failed" not in html


def test_rzero_import_audit_report(rzero_run):
    out, res = rzero_run
    # 10 readable questions in 2 rounds (save names v1, v2); 3 malformed: an item without results
    # (line 16), a score of 1.5 (line 50), a file cut off inside its second item (line 19)
    assert res["n_records"] == 10 and res["counts"]["steps"] == 2 and res["counts"]["tasks"] == 10
    assert _where(res["malformed"]) == [("qwen3-4b_questioner_v1_1_results.json", 16),
                                        ("qwen3-4b_questioner_v2_0_results.json", 50),
                                        ("qwen3-4b_questioner_v2_1_results.json", 19)]
    s = json.loads((out / "summary.json").read_text())
    # kept iff 0.3 <= score <= 0.7: round 1 q2 (6/9), q3 (4/9), q6 (4/6) of 5; round 2 q8, q9, q10 of 5
    # labels vs references: round 1: q2 right, q3 wrong ('20' vs 24), q6 right; round 2: q8 wrong, q9 right
    assert [r["kept_fraction"] for r in s["rounds"]] == [0.6, 0.6]
    assert [r["pseudo_label_accuracy"] for r in s["rounds"]] == pytest.approx([2 / 3, 1 / 2])
    assert s["steps"]["1"]["n_p_hat_disagree"] == 0  # coevo's verifier groups the answers as R-Zero did
    a = json.loads(coevo("audit", out, "--json").stdout)["runs"][0]["instruments"]
    pl = a["pseudo_label_accuracy"]
    assert pl["value"] == pytest.approx(0.6) and pl["n"] == 5 and pl["extra"]["n_unjudged"] == 1  # q10: no reference
    # oracle groups (questions with a reference): 9, all but q7 (9/9 correct) bearing
    assert a["bearing_rate"]["value"] == pytest.approx(8 / 9) and a["bearing_rate"]["n"] == 9
    assert a["null_model"]["status"] == "unavailable" and "different sizes" in a["null_model"]["reason"]
    coevo("report", out)
    assert "Imported from rzero" in (out / "report.html").read_text()


def test_reimport_refused_and_bad_input(verl_run, tmp_path):
    out, _ = verl_run
    p = coevo("import", "verl", FIX / "verl_dump", "--out", out, check=False)
    assert p.returncode == 2 and "exists and is not empty" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    p = coevo("import", "rzero", tmp_path / "nope", "--out", tmp_path / "r", check=False)
    assert p.returncode == 2 and "does not exist" in p.stderr
    assert not (tmp_path / "r").exists()
