import csv
import json
import os
import subprocess
import sys

import pytest

from coevo.recipes.rgbc.doubt import DoubtError, anchor_precision_recall, export_doubt, import_labels
from coevo.ledger.store import Ledger


def make_run(path, n_bucket=6, n_control=10):
    """A run directory whose ledger holds nu-defined tasks: bucket tasks (mode != reference, stable)
    and controls (mode == reference). Truth: bucket 0-4 wrong reference with the mode right, bucket 5
    reference right; control 0-1 wrong reference (mode also wrong), the rest right."""
    path.mkdir()
    led = Ledger(path / "ledger.duckdb")
    led.append("runs", [{"run_id": "r", "recipe": "rgbc", "config_yaml": "rgbc:\n  doubt_gate_precision: 0.8\n"
                                                                          "  doubt_gate_recall: 0.75\n"}])
    tasks, stats, truth = [], [], {}
    for i in range(n_bucket):
        q = f"{10 + i}+{20 + i}"
        val = 30 + 2 * i
        ref, mode = (val + 10, val) if i < 5 else (val, val + 1)
        tid = f"b{i}"
        tasks.append({"run_id": "r", "task_id": tid, "step": 1, "source": "synthesizer", "question": q,
                      "reference": str(ref), "oracle_answer": str(val)})
        stats.append({"run_id": "r", "task_id": tid, "step": 1, "nu": 0.0, "in_doubt": True, "mode_answer": str(mode)})
        truth[tid] = val
    for i in range(n_control):
        q = f"{40 + i}+{50 + i}"
        val = 90 + 2 * i
        ref = val + 1 if i < 2 else val
        tid = f"c{i}"
        tasks.append({"run_id": "r", "task_id": tid, "step": 1, "source": "synthesizer", "question": q,
                      "reference": str(ref), "oracle_answer": str(val)})
        stats.append({"run_id": "r", "task_id": tid, "step": 1, "nu": 1.0, "in_doubt": False, "mode_answer": str(ref)})
        truth[tid] = val
    led.append("tasks", tasks)
    led.append("task_stats", stats)
    led.close()
    return truth


def label(run_dir, truth, out):
    key = json.loads((run_dir / "doubt" / "key.json").read_text())
    with open(out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "correct_answer"])
        for rid, it in key["items"].items():
            w.writerow([rid, truth[it["task_id"]]])


def test_export_is_blind_and_import_scores_the_anchor(tmp_path):
    rd = tmp_path / "run"
    truth = make_run(rd)
    res = export_doubt(rd, n=200, seed=1)
    assert res["exported"] == 16 and res["strata"]["bucket"] == {"N": 6, "n": 6}
    rows = list(csv.DictReader(open(rd / "doubt" / "export.csv")))
    assert set(rows[0]) == {"id", "question", "answer_1", "answer_2", "correct_answer"}  # no nu, no stratum
    assert len((rd / "doubt" / "export.jsonl").read_text().splitlines()) == 16
    label(rd, truth, tmp_path / "labels.csv")
    g = import_labels(rd, tmp_path / "labels.csv")
    # precision: 5 of 6 bucket modes are right; recall: 5 caught of 7 wrong references
    assert g["precision"] == pytest.approx(5 / 6) and g["recall"] == pytest.approx(5 / 7)
    assert g["gate_passed"] is False and "drop" in g["decision"]
    g2 = import_labels(rd, tmp_path / "labels.csv", min_precision=0.8, min_recall=0.7)
    assert g2["gate_passed"] is True and json.loads((rd / "doubt" / "gate.json").read_text())["gate_passed"]


def test_stratified_recall_weights():
    items = [{"stratum": "bucket", "reference": "1", "mode": "2", "human": "2"},
             {"stratum": "control", "reference": "3", "mode": "3", "human": "4"},
             {"stratum": "control", "reference": "5", "mode": "5", "human": None}]
    r = anchor_precision_recall(items, {"bucket": {"N": 1, "n": 1}, "control": {"N": 10, "n": 2}})
    # one caught (weight 1) against 1 + 5 weighted wrong references
    assert r["precision"] == 1.0 and r["recall"] == pytest.approx(1 / 6) and r["n_labelled"] == 2


def test_errors_are_one_line(tmp_path):
    with pytest.raises(DoubtError):
        export_doubt(tmp_path)
    rd = tmp_path / "run"
    make_run(rd)
    with pytest.raises(DoubtError, match="no export"):
        import_labels(rd, tmp_path / "x.csv")
    export_doubt(rd, n=4)
    (tmp_path / "bad.csv").write_text("id,correct_answer\nzzz,1\n")
    with pytest.raises(DoubtError, match="not in the export"):
        import_labels(rd, tmp_path / "bad.csv")
    p = subprocess.run([sys.executable, "-m", "coevo.cli", "doubt", "import", str(rd), str(tmp_path / "nope.csv")],
                       capture_output=True, text=True, env={**os.environ, "COLUMNS": "400"})
    assert p.returncode == 2 and "labels file not found" in p.stderr and len(p.stderr.strip().splitlines()) == 1
