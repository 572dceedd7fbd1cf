"""coevo's TRL reward functions (coevo/integrations/trl.py) called as TRL 1.16's ``GRPOTrainer`` calls
them (``_calculate_rewards``: prompts, completions, completion_ids, the dataset's columns, trainer_state,
log_extra, log_metric), without TRL installed: rewards against hand-computed values, abstentions as None,
the step from the trainer state, rows tagged trl; the buffered ledger writer under normal exit, SIGTERM
(default and chained handlers), SIGINT and the trainer callback, with real signals on a subprocess:
0 rows lost. TRL's own trainer drives them in tests/test_trl.py."""
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from transformers import TrainerControl, TrainerState, TrainingArguments

from coevo.integrations.common import close_parts
from coevo.integrations.importers import import_parts
from coevo.integrations.trl import ChallengerReward, CoevoLedgerCallback, SolverReward, text_of
from coevo.ledger.store import Ledger

REPO = Path(__file__).resolve().parents[1]
TOWER = r"\boxed{\dfrac{5^{\left(5^{\left(5^{\left(5^5\right)}\right)} - 4\right)} - 5}{16}}"  # hangs math-verify


def trl_kwargs(step, **columns):
    """The keyword arguments GRPOTrainer._calculate_rewards adds to prompts / completions."""
    logged = {"extra": {}, "metric": {}}
    kw = dict(columns, completion_ids=None, trainer_state=TrainerState(global_step=step),
              log_extra=lambda k, v: logged["extra"].__setitem__(k, v),
              log_metric=lambda k, v: logged["metric"].__setitem__(k, v))
    return kw, logged


def merged(root: Path, out: Path) -> Ledger:
    close_parts()
    import_parts(root, out)
    return Ledger(out / "ledger.duckdb", read_only=True)


PROMPTS = ["What is 2+2?"] * 3 + ["What is 3*3?"] * 3
COMPLETIONS = ["\\boxed{4}", "it is 5 \\boxed{5}", "no idea", "\\boxed{9}", "\\boxed{9}", "\\boxed{8}"]
SOLUTIONS = ["4"] * 3 + [None] * 3  # the second prompt has no reference: the verifier abstains


def test_solver_standard_format_rows_and_step(tmp_path):
    f = SolverReward(ledger=str(tmp_path / "led"), verifier="integer", verify_workers=0)
    kw, logged = trl_kwargs(3, solution=SOLUTIONS)
    assert f(PROMPTS, COMPLETIONS, **kw) == [1.0, 0.0, 0.0, None, None, None]
    assert f.__name__ == "coevo_solver"
    assert logged["metric"] == {"coevo_solver/abstained": 0.5}
    assert logged["extra"]["coevo_solver_verdict"] == [1, 0, 0, "no-target", "no-target", "no-target"]
    led = merged(tmp_path / "led", tmp_path / "run")
    t = led.query("SELECT DISTINCT task_id, step, source, json_extract_string(meta_json, '$.framework') AS fw, "
                  "json_extract_string(meta_json, '$.role') AS role, "
                  "json_extract_string(meta_json, '$.step_from') AS src FROM tasks ORDER BY task_id")
    assert len(t) == 2 and {(x["step"], x["source"], x["fw"], x["role"], x["src"]) for x in t} == \
        {(3, "trl", "trl", "solver", "trainer_state.global_step")}
    r = led.query("SELECT t.question, r.group_idx, r.purpose, r.role, v.value, w.reward FROM rollouts r "
                  "JOIN verdicts v USING (rollout_id) JOIN rewards w ON w.item_id = r.rollout_id "
                  "JOIN tasks t ON t.task_id = r.task_id ORDER BY t.question, r.group_idx")
    assert [(x["question"], x["group_idx"], x["value"], x["reward"]) for x in r] == [
        ("What is 2+2?", 0, 1, 1.0), ("What is 2+2?", 1, 0, 0.0), ("What is 2+2?", 2, 0, 0.0),
        ("What is 3*3?", 0, None, None), ("What is 3*3?", 1, None, None), ("What is 3*3?", 2, None, None)]
    assert {x["purpose"] for x in r} == {"p_hat"} and {x["role"] for x in r} == {"solver"}
    led.close()
    from coevo.audit.run_audit import audit_run

    a = audit_run(tmp_path / "run")["instruments"]
    assert a["bearing_rate"]["value"] == 1.0 and a["bearing_rate"]["n"] == 1  # mu = 1/3: bearing; the other: abstained
    assert a["abstention_share"]["status"] == "ok" and a["abstention_share"]["value"] == 0.5


def test_solver_conversational_format_same_rewards(tmp_path):
    f = SolverReward(verifier="integer", verify_workers=0)  # no ledger: rewards only
    prompts = [[{"role": "system", "content": "Be brief."}, {"role": "user", "content": p}] for p in PROMPTS]
    comps = [[{"role": "assistant", "content": c}] for c in COMPLETIONS]
    kw, _ = trl_kwargs(0, answer=SOLUTIONS)
    assert f(prompts, comps, **kw) == [1.0, 0.0, 0.0, None, None, None]
    assert text_of(prompts[0], "user") == "What is 2+2?"
    assert text_of([{"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "image"},
                                                     {"type": "text", "text": "b"}]}], "assistant") == "ab"


def test_solver_missing_column_fails_loudly():
    f = SolverReward(verifier="integer", verify_workers=0)
    with pytest.raises(ValueError, match="no reference column .* among the dataset's columns \\['question'\\]"):
        f(["q"], ["\\boxed{1}"], question=["q"])


def test_pool_timeout_holds_off_the_main_thread():
    """math-verify's own timeouts need SIGALRM (main thread only: TRL's accuracy_reward turns them off
    elsewhere); coevo's pool kills the hung check from any thread and reports an abstention."""
    f = SolverReward(verifier="math", verify_workers=1, timeout_s=1.5)
    out = {}
    th = threading.Thread(target=lambda: out.setdefault("r", f(["q", "q"], [TOWER, "\\boxed{1/2}"],
                                                             solution=["1", "0.5"])))
    th.start()
    th.join(120)
    assert out["r"] == [None, 1.0]


def test_challenger_reward_hand_computed(tmp_path):
    """4 completions, B = 4: q0's Solver answers 4,4,4,5 (p_hat 3/4, r_unc = 1 - 2|3/4 - 1/2| = 1/2),
    q1's 7,7,7,7 (p_hat 1, r_unc 0), one without a question (format failure: 0), q3 without any Solver
    answer (abstained: None); every question its own cluster, r_rep = 1/4. r = max(0, r_unc - r_rep)."""
    answers = {"How many legs do three spiders have in total?": ["\\boxed{4}"] * 3 + ["\\boxed{5}"],
               "Compute the sum of the first ten primes.": ["\\boxed{7}"] * 4,
               "Which prime number follows the integer 13 directly?": []}
    f = ChallengerReward(lambda qs: [answers[q] for q in qs], ledger=str(tmp_path / "led"), verifier="integer",
                         verify_workers=0)
    comps = [f"<question>{q}</question>" for q in list(answers)[:2]] + ["no question here",
                                                                       f"<question>{list(answers)[2]}</question>"]
    kw, logged = trl_kwargs(5)
    assert f(["Propose a problem."] * 4, comps, **kw) == [0.25, 0.0, 0.0, None]
    assert logged["metric"] == {"coevo_challenger/format_ok": 0.75}
    led = merged(tmp_path / "led", tmp_path / "run")
    w = led.query("SELECT role, step, reward, json_extract(components_json, '$.p_hat') AS p, "
                  "json_extract_string(components_json, '$.framework') AS fw FROM rewards ORDER BY item_id")
    assert [(x["role"], x["step"], x["reward"], x["fw"]) for x in w] == [
        ("challenger", 5, 0.25, "trl"), ("challenger", 5, 0.0, "trl"), ("challenger", 5, 0.0, "trl"),
        ("challenger", 5, None, "trl")]
    assert float(w[0]["p"]) == 0.75
    assert led.count("verdicts") == 8 and led.count("rollouts") == 8  # one per Solver answer
    led.close()


def test_callback_closes_the_parts_at_train_end(tmp_path):
    f = SolverReward(ledger=str(tmp_path / "led"), verifier="integer", verify_workers=0, flush_rows=10**6,
                     flush_s=10**6)
    kw, _ = trl_kwargs(1, solution=SOLUTIONS)
    f(PROMPTS, COMPLETIONS, **kw)
    args = TrainingArguments(output_dir=str(tmp_path / "out"), report_to=[])
    CoevoLedgerCallback().on_train_end(args, TrainerState(global_step=1), TrainerControl())
    res = import_parts(tmp_path / "led", tmp_path / "run")  # no "still being written": the lock is released
    assert res["counts"]["rollouts"] == 6 and res["counts"]["verdicts"] == 6


CHILD = """
import os, signal, sys, time
from types import SimpleNamespace
from coevo.integrations.trl import SolverReward
mode = sys.argv[1]
if mode == "chained":  # a handler the program had before coevo's writer: it still runs after the commit
    signal.signal(signal.SIGTERM, lambda s, f: sys.exit(143))
f = SolverReward(verifier="integer", verify_workers=0, flush_rows=10**6, flush_s=10**6)
for step in range(20):
    f(["q"] * 8, ["\\\\boxed{%d}" % k for k in range(8)], solution=["3"] * 8, trainer_state=SimpleNamespace(global_step=step))
print("ready", flush=True)
if mode == "exit":
    sys.exit(0)
time.sleep(120)
"""


@pytest.mark.parametrize("mode,sig,rc", [("exit", None, 0), ("default", signal.SIGTERM, -signal.SIGTERM),
                                         ("chained", signal.SIGTERM, 143), ("default", signal.SIGINT, -signal.SIGINT)])
def test_no_row_lost_at_exit_and_signals(tmp_path, mode, sig, rc):
    """20 calls x 8 completions buffered (never flushed by size or time), then normal exit, SIGTERM
    with the default action, SIGTERM with the program's own handler, SIGINT: 160 rows in every table."""
    env = dict(os.environ, COEVO_LEDGER=str(tmp_path / "led"), PYTHONPATH=str(REPO))
    p = subprocess.Popen([sys.executable, "-c", CHILD, mode], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=env)
    assert p.stdout.readline().strip() == "ready", p.stderr.read()
    if sig is not None:
        p.send_signal(sig)
    p.wait(timeout=120)
    assert p.returncode == rc, p.stderr.read()
    res = import_parts(tmp_path / "led", tmp_path / "run")
    assert {k: res["counts"][k] for k in ("rollouts", "verdicts", "rewards", "steps")} == \
        {"rollouts": 160, "verdicts": 160, "rewards": 160, "steps": 20}
    led = Ledger(tmp_path / "run" / "ledger.duckdb", read_only=True)
    assert led.query("SELECT sum(value) AS ok FROM verdicts") == [{"ok": 20}]  # \\boxed{3} of each call
    led.close()
