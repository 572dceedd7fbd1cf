"""The adapter's ledger parts under the way verl ends its reward workers (killed by ``ray.shutdown()``,
no atexit): every call's rows are committed before it returns; task ids carry verl's split; the
step comes from what the call carries, and where nothing carries one the row says so."""
import os
import subprocess
import sys

from coevo.integrations.common import close_parts
from coevo.integrations.importers import import_parts
from coevo.integrations.verl_reward import compute_score
from coevo.ledger.store import Ledger

KILLED = ("import os, signal\n"
          "from coevo.integrations.verl_reward import compute_score as f\n"
          "for i, s in enumerate(['#### 3', '#### 4', '#### 3']):\n"
          "    f(data_source='d', solution_str=s, ground_truth='3', extra_info={'index': 0, 'split': 'train'},\n"
          "      verifier='integer', verify_workers=0)\n"
          "os.kill(os.getpid(), signal.SIGKILL)\n")


def test_rows_survive_a_killed_worker(tmp_path):
    p = subprocess.run([sys.executable, "-c", KILLED], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, COEVO_LEDGER=str(tmp_path / "led")))
    assert p.returncode == -9, p.stderr
    assert list((tmp_path / "led" / "parts").glob("*/run.lock"))  # the killed worker's lock stays: stale
    res = import_parts(tmp_path / "led", tmp_path / "run")
    assert res["counts"]["rollouts"] == 3 and res["counts"]["verdicts"] == 3 and res["counts"]["tasks"] == 1


def gsm8k_extra(split, index):  # verl's examples/data_preprocess/gsm8k.py
    return {"split": split, "index": index, "answer": "...", "question": f"{split} question {index}"}


def test_train_and_test_rows_are_two_tasks_and_steps_are_read(tmp_path):
    kw = {"ledger": str(tmp_path / "led"), "verifier": "integer", "verify_workers": 0}
    compute_score("openai/gsm8k", "#### 3", "3", dict(gsm8k_extra("train", 0), global_steps=4), **kw)
    compute_score("openai/gsm8k", "#### 5", "3", gsm8k_extra("test", 0), **kw)
    close_parts()
    import_parts(tmp_path / "led", tmp_path / "run")
    led = Ledger(tmp_path / "run" / "ledger.duckdb", read_only=True)
    t = led.query("SELECT task_id, step, json_extract_string(meta_json, '$.step_from') AS src FROM tasks "
                  "ORDER BY task_id")
    led.close()
    assert t == [{"task_id": "openai/gsm8k:test:0", "step": 0, "src": "none"},
                 {"task_id": "openai/gsm8k:train:0", "step": 4, "src": "extra_info.global_steps"}]
