"""R-Zero's real results files: mathruler 0.1.0's ``extract_boxed_content`` returns the string "None" for a
sample without a box, which R-Zero's evaluate.py keeps; coevo imports it as no answer, with its reason."""
import json

from coevo.integrations.importers import import_rzero
from coevo.ledger.store import Ledger

# the shape evaluate.py writes (json.dump(results_all, f, indent=4)): 9 entries per question
FILE = [{"question": "What is 2+2?", "answer": "4", "score": 6 / 9, "results": ["4"] * 6 + ["None", "5", "None"]},
        {"question": "Prove nothing.", "answer": "None", "score": 1.0, "results": ["None"] * 9}]


def test_none_is_no_answer_with_reason(tmp_path):
    d = tmp_path / "gen"
    d.mkdir()
    (d / "q_v1_0_results.json").write_text(json.dumps(FILE, indent=4))
    res = import_rzero(d, tmp_path / "run", workers=0)
    assert res["n_malformed"] == 0
    led = Ledger(tmp_path / "run" / "ledger.duckdb", read_only=True)
    v = led.query("SELECT task_id, value, reason FROM verdicts WHERE target = 'pseudo_label' ORDER BY rollout_id")
    a = led.query("SELECT answer FROM rollouts ORDER BY rollout_id")
    kept = led.query("SELECT kept FROM tasks ORDER BY task_id")
    led.close()
    q0 = [x for x in v if x["task_id"].endswith("q0")]
    assert sum(x["value"] is None for x in q0) == 2 and {x["reason"] for x in q0 if x["value"] is None} == {"no-answer"}
    assert sum(x["value"] == 1 for x in q0) == 6
    assert all(x["value"] is None for x in v if x["task_id"].endswith("q1"))
    assert sum(x["answer"] is None for x in a) == 11 and "None" not in {x["answer"] for x in a}
    assert kept == [{"kept": True}, {"kept": False}]
