"""Issue 31 item 2 (resume is explicit), through the real CLI: ``coevo run --resume RUN --set rzero.rounds=2``
continues a finished one-round run to the same ledger as a fresh two-round run, writes the change to config.yaml
and resumes.jsonl and prints it; any other key, a plan the completed steps do not fit, and the options that would
change the run are refused with one line, exit 2, nothing changed.  ``-q`` prints the run directory's line only."""
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from conftest import REPO, coevo_cmd, run_coevo  # noqa: E402
from fingerprint import fingerprint  # noqa: E402

TINY = ["--no-report", "--set", "backend.threads=1", "--set", "rzero.challenger_steps=1", "--set",
        "rzero.solver_steps=1", "--set", "rzero.challenger_prompts=4", "--set", "rzero.n_candidates=8", "--set",
        "rzero.solver_prompts=4", "--set", "world.eval_per_level=4", "--set", "tracking.tensorboard=false",
        "--set", "verify.workers=0"]


def one_line_error(p, text):
    assert p.returncode == 2 and text in p.stderr, (p.returncode, p.stderr[-800:])
    assert len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr


def test_resume_with_rounds_equals_fresh_run_and_refuses_the_rest(tmp_path):
    short, fresh = tmp_path / "short", tmp_path / "fresh"
    procs = [subprocess.Popen(coevo_cmd("run", "-q", "--out", str(d), "--set", f"rzero.rounds={n}", *TINY),
                              cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for d, n in ((short, 1), (fresh, 2))]
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err[-2000:]
        assert len(out.splitlines()) == 1 and out.startswith("run directory: "), out  # -q: the line, nothing else
    config0 = (short / "config.yaml").read_text()

    for args, text in ((["--set", "rzero.n_candidates=16"], "--set rzero.n_candidates cannot change on --resume"),
                       (["--seed", "5"], "--set seed cannot change on --resume"),
                       (["--set", "world.eval_per_level=8"], "keys that may change: rzero.rounds, tracking.*, note"),
                       (["--preset", "cpu"], "--preset cannot change a run being resumed"),
                       (["--budget", "smoke"], "--budget cannot change a run being resumed")):
        one_line_error(run_coevo("run", "--resume", str(short), *args, check=False), text)
    assert (short / "config.yaml").read_text() == config0 and not (short / "resumes.jsonl").exists()

    p = run_coevo("run", "--resume", str(short), "-q", "--set", "rzero.rounds=2", "--no-report")
    assert "resume after step 4: rzero.rounds 1 -> 2" in p.stderr and p.stdout.startswith("run directory: ")
    rec = [json.loads(line) for line in (short / "resumes.jsonl").read_text().splitlines()]
    assert len(rec) == 1 and rec[0]["after_step"] == 4 and rec[0]["changes"] == {"rzero.rounds": {"from": 1, "to": 2}}
    assert "rounds: 2" in (short / "config.yaml").read_text()
    assert fingerprint(short) == fingerprint(fresh)  # a safe key: as if the run had been started with it
    assert len(json.loads((short / "summary.json").read_text())["rounds"]) == 2

    # fewer rounds than the run has completed: its steps no longer fit the plan; nothing is written
    config2 = (short / "config.yaml").read_text()
    one_line_error(run_coevo("run", "--resume", str(short), "--set", "rzero.rounds=1", check=False),
                   "completed step 5 (round 2 challenger 1) is not in its plan")
    assert (short / "config.yaml").read_text() == config2 and len((short / "resumes.jsonl").read_text().splitlines()) == 1


def test_damaged_config_is_one_line(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text("rzero: [unclosed\n")
    one_line_error(run_coevo("run", "--resume", str(run), check=False), "config.yaml: not valid YAML")
    (run / "config.yaml").write_text("- a list\n")
    one_line_error(run_coevo("run", "--resume", str(run), check=False), "expected a mapping at the top level")
