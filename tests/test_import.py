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


LINE_V1_1, LINE_V2_0, LINE_V2_1 = 34, 49, 19  # where each damaged record starts
RZ_NAMES = ("qwen3-4b_questioner_v1_0_results.json", "qwen3-4b_questioner_v1_1_results.json",
            "qwen3-4b_questioner_v2_0_results.json", "qwen3-4b_questioner_v2_1_results.json")


def damaged_copy(dst: Path) -> Path:
    """tests/fixtures/rzero (as R-Zero's own scripts write them, make_fixtures.py) with three damaged
    records added: a question_generate record (no results) in v1_1, a score of 1.5 in v2_0, and v2_1
    cut off inside a new item (evaluate.sh kill -9s the slow writers after an hour)."""
    dst.mkdir()
    for name in RZ_NAMES:
        (dst / name).write_bytes((FIX / "rzero" / name).read_bytes())
    for name, item in ((RZ_NAMES[1], {"question": "What is 2 + 3?", "answer": "5", "score": 0}),
                       (RZ_NAMES[2], {"question": "What is 6 / 3?", "answer": "2", "score": 1.5, "results": ["2"]})):
        data = json.loads((dst / name).read_text())
        (dst / name).write_text(json.dumps(data + [item], indent=4))  # evaluate.py's json.dump(..., indent=4)
    cut = (dst / RZ_NAMES[3]).read_text()
    (dst / RZ_NAMES[3]).write_text(cut[:-2] + ',\n    {\n        "question": "What is the lar')
    return dst


@pytest.fixture(scope="module")
def rzero_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("imp")
    src, out = damaged_copy(d / "rzero"), d / "rzero_run"
    p = coevo("import", "rzero", src, "--references", FIX / "rzero" / "references.jsonl", "--out", out, "--json")
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
    # the fixtures (make_fixtures.py: R-Zero's question_generate.py + evaluate.py on canned samples):
    # v1_0: q1 391 (8/9), q2 100 (6/9, one sample unboxed: "None"), q3 20 (4/9; reference 24);
    # v1_1: q4 label "None" (9 unboxed samples, score 1.0), q5 5/6 (5/9, two "None"); (a 'box' question skipped)
    # v2_0: q7 144 (9/9), q8 30 (5/9, reference 23, one "None"), q9 42 (4/8: one empty box dropped);
    # v2_1: q10 12 (6/9, no reference); (a '\\text' answer skipped). Plus the 3 damaged records.
    assert res["n_records"] == 9 and res["counts"]["steps"] == 2 and res["counts"]["tasks"] == 9
    assert res["counts"]["rollouts"] == 9 * 8 + 8
    assert _where(res["malformed"]) == [(RZ_NAMES[1], LINE_V1_1), (RZ_NAMES[2], LINE_V2_0), (RZ_NAMES[3], LINE_V2_1)]
    assert "a question_generate file?" in res["malformed"][0]["reason"]
    s = json.loads((out / "summary.json").read_text())
    # kept iff 0.3 <= score <= 0.7 and the label is not "None": round 1 q2, q3, q5 of 5; round 2 q8, q9, q10 of 4
    # labels vs references: round 1: q2 right, q3 wrong ('20' vs 24), q5 right; round 2: q8 wrong, q9 right
    assert [r["kept_fraction"] for r in s["rounds"]] == [0.6, 0.75]
    assert [r["pseudo_label_accuracy"] for r in s["rounds"]] == pytest.approx([2 / 3, 1 / 2])
    # coevo's verifier groups the answers as R-Zero did; q4's "None" label has no answer to agree with
    assert [s["steps"][k]["n_p_hat_disagree"] for k in "12"] == [0, 0]
    assert [s["steps"][k]["n_label_none"] for k in "12"] == [1, 0]
    a = json.loads(coevo("audit", out, "--json").stdout)["runs"][0]["instruments"]
    pl = a["pseudo_label_accuracy"]
    assert pl["value"] == pytest.approx(0.6) and pl["n"] == 5 and pl["extra"]["n_unjudged"] == 1  # q10: no reference
    # oracle groups with a judged answer: 7 (q4's 9 "None" are abstentions); all but q7 (9/9 correct) bearing
    assert a["bearing_rate"]["value"] == pytest.approx(6 / 7) and a["bearing_rate"]["n"] == 7
    # the "None" samples are abstentions with their reason: 1 + 9 + 2 + 1 = 13 samples, each with a
    # pseudo-label verdict and (but for q10, which has none) an oracle verdict
    assert a["abstention_share"]["extra"]["reasons"] == {"no-answer": 26}
    assert a["null_model"]["status"] == "unavailable" and "different sizes" in a["null_model"]["reason"]
    coevo("report", out)
    assert "Imported from rzero" in (out / "report.html").read_text()


def test_rzero_fixtures_are_as_rzero_writes_them():
    """9 results per question but where a sample boxed nothing; "None" kept; R-Zero's indent=4."""
    sizes, nones = [], 0
    for name in RZ_NAMES:
        text = (FIX / "rzero" / name).read_text()
        items = json.loads(text)
        assert text == json.dumps(items, indent=4)
        sizes += [len(it["results"]) for it in items]
        nones += sum(r == "None" for it in items for r in it["results"])
    assert sorted(sizes) == [8] + [9] * 8 and nones == 13


def test_reimport_refused_and_bad_input(verl_run, tmp_path):
    out, _ = verl_run
    p = coevo("import", "verl", FIX / "verl_dump", "--out", out, check=False)
    assert p.returncode == 2 and "exists and is not empty" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    p = coevo("import", "rzero", tmp_path / "nope", "--out", tmp_path / "r", check=False)
    assert p.returncode == 2 and "does not exist" in p.stderr
    assert not (tmp_path / "r").exists()
