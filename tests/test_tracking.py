"""Tracking (coevo/tracking.py): TensorBoard event files hold every per-step number of the ledger,
a kill -9 and resume neither loses nor duplicates a point, a failing tracker never stops a run,
W&B only offline."""
import os
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO, coevo_cmd, kill_after_step, run_coevo
from coevo.config import build_config
from coevo.ledger import views
from coevo.ledger.store import open_run_ledger
from coevo.tracking import MARK, Tracker, flatten_metrics, open_tracker, read_scalars, step_scalars

ARGS = ["-q", "--recipe", "rgbc", "--set", "rgbc.arm=full", "--set", "synco.rounds=1", "--set", "synco.steps_per_round=3",
        "--set", "synco.tasks_per_step=8", "--set", "synco.audit_samples=4", "--set", "world.eval_per_level=6",
        "--set", "verify.workers=0"]


def f32(x: float) -> float:
    return float(np.float32(x))  # TensorBoard scalars are float32 (simple_value)


def test_flatten_metrics_hand_computed():
    m = {"n_accepted": 4, "kappa_bar": {"value": 0.5, "se": 0.25, "n": 2}, "ok": True, "lag_bar": {"se": float("nan")},
         "eval": {"greedy": {"overall": 0.75, "by_difficulty": {"L1": 1.0}}}, "first": [1, 2], "why": "x"}
    assert flatten_metrics(m) == {"n_accepted": 4.0, "kappa_bar": 0.5, "kappa_bar/se": 0.25, "kappa_bar/n": 2.0,
                                  "eval/greedy/overall": 0.75, "eval/greedy/by_difficulty/L1": 1.0}
    assert step_scalars({"metrics": {"a": 1}, "seconds": 2.5}) == {"a": 1.0, "run/step_seconds": 2.5}


def _ledger(run_dir: Path):
    led = open_run_ledger(run_dir)
    return led, views.run_info(led)["run_id"]


def assert_tensorboard_equals_ledger(run_dir: Path) -> dict:
    """Every scalar of every committed step is in the event files once, equal to the ledger's number."""
    from coevo.audit.run_audit import audit_run

    tb = read_scalars(run_dir / "tensorboard")
    led, rid = _ledger(run_dir)
    try:
        rows = views.step_metrics(led, rid)
        evals = {r: views.eval_accuracy(led, rid, r) for r in [0, *views.rounds_completed(led, rid)]}
    finally:
        led.close()
    expect: dict = {}
    for r in rows:
        for tag, v in step_scalars(r).items():
            expect.setdefault(tag, []).append((r["step"], f32(v)))
    expect[MARK] = [(r["step"], float(r["step"])) for r in rows]
    assert tb == expect  # same tags, same steps (no duplicate, none missing), same values
    # the report's numbers by name: eval accuracy overall and by difficulty, the step instruments
    for r in rows:
        got = {t: dict(p) for t, p in tb.items()}
        if r["phase"] == "eval":
            acc = evals[r["round"]]
            assert got["eval/greedy/overall"][r["step"]] == f32(acc["overall"])
            for d, a in acc["by_difficulty"].items():
                assert got[f"eval/greedy/by_difficulty/{d}"][r["step"]] == f32(a)
        else:
            for key in ("kappa_bar", "bearing_rate", "synthesizer_reward_mean", "solver_reward_mean"):
                if r["metrics"].get(key) is not None:
                    v = r["metrics"][key]
                    assert got[key][r["step"]] == f32(v["value"] if isinstance(v, dict) else v)
    # the audit's per-step series (what the report's audit plot shows), in tensorboard/audit
    audit = read_scalars(run_dir / "tensorboard" / "audit")
    ins = audit_run(run_dir)["instruments"]
    for key in ("bearing_rate", "kappa_bar", "nu_bar"):
        want = [(p["step"], f32(p["value"])) for p in ins[key]["extra"]["per_step"]]
        assert want and audit[f"audit/{key}"] == want
    assert audit[MARK][-1][0] == rows[-1]["step"]
    return tb


def test_kill_and_resume_logs_each_step_once(tmp_path):
    run_dir = tmp_path / "run"
    p = subprocess.Popen(coevo_cmd("run", "--out", str(run_dir), *ARGS), cwd=REPO,
                         env=dict(os.environ, PYTHONUNBUFFERED="1"), stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    kill_after_step(p, run_dir, step=2)
    assert len(list((run_dir / "tensorboard").glob("events.out.tfevents.*"))) == 1
    out = run_coevo("run", "--resume", str(run_dir), "-q")
    assert "warning: tracking" not in out.stdout + out.stderr
    assert len(list((run_dir / "tensorboard").glob("events.out.tfevents.*"))) == 2
    tb = assert_tensorboard_equals_ledger(run_dir)
    assert [s for s, _ in tb[MARK]] == [0, 1, 2, 3, 4]


def _fake_step_rows(run_dir: Path):
    """A tiny ledger with three committed steps (no model): metrics only."""
    from coevo.ledger.store import Ledger

    led = Ledger(run_dir / "ledger.duckdb")
    led.append("runs", [{"run_id": "r1", "created_at": 0.0, "recipe": "synco", "world": "arithmetic", "seed": 0,
                         "config_yaml": "", "coevo_version": "test"}])
    for s in range(3):
        with led.step("r1", s, 1, "train", s) as w:
            w.metrics = {"x": 0.1 * s, "est": {"value": s / 4, "se": 0.5}}
            w.versions = {}
    return led


def test_partial_step_is_purged_and_replayed(tmp_path):
    """A writer killed between a step's scalars and its mark: the reopened tracker purges the partial
    step (TensorBoard purge_step) and logs it again from the ledger, so it appears once."""
    cfg = build_config({"tracking": {"audit_instruments": False}})
    led = _fake_step_rows(tmp_path)
    tr = open_tracker(cfg, tmp_path, led, "r1")
    w = tr.writers["tensorboard"]
    assert w.done == 2
    from tensorboardX.summary import scalar

    w.w.write_event(w.Event(step=3, summary=scalar("x", 99.0)))  # step 3's scalars written, its mark never:
    w.w.close()  # a kill here
    with led.step("r1", 3, 1, "train", 3) as sw:
        sw.metrics = {"x": 0.3}
        sw.versions = {}
    tr2 = open_tracker(cfg, tmp_path, led, "r1")
    tr2.close()
    led.close()
    tb = read_scalars(tmp_path / "tensorboard")
    assert tb["x"] == [(0, 0.0), (1, f32(0.1)), (2, f32(0.2)), (3, f32(0.3))]
    assert tb["est"] == [(0, 0.0), (1, 0.25), (2, 0.5)]
    assert tb[MARK] == [(0, 0.0), (1, 1.0), (2, 2.0), (3, 3.0)]


def test_failing_tracker_warns_once_and_never_raises(tmp_path, capsys, monkeypatch):
    cfg = build_config({"tracking": {"audit_instruments": False}})
    led = _fake_step_rows(tmp_path)
    (tmp_path / "tensorboard").write_text("not a directory")  # the writer cannot start
    tr = open_tracker(cfg, tmp_path, led, "r1")
    assert tr.writers == {}
    tr.sync(led, "r1")
    tr.close()
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln]
    assert len(lines) == 1 and lines[0].startswith("warning: tracking (tensorboard) off")
    # a writer that fails mid-run: one warning, then silence
    bad = types.SimpleNamespace(done=-1, log=lambda items: 1 / 0, close=lambda: None)
    tr = Tracker(tmp_path, {"tensorboard": bad})
    tr.sync(led, "r1")
    tr.sync(led, "r1")
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln]
    assert len(lines) == 1 and "ZeroDivisionError" in lines[0] and tr.writers == {}
    # a missing package
    for mod in ("tensorboardX", "tensorboardX.event_file_writer", "tensorboardX.proto.event_pb2"):
        monkeypatch.setitem(sys.modules, mod, None)
    (tmp_path / "tensorboard").unlink()
    tr = open_tracker(cfg, tmp_path, led, "r1")
    led.close()
    assert tr.writers == {}
    out = capsys.readouterr().err
    assert out.count("\n") == 1 and "ModuleNotFoundError" in out and "pip install tensorboardX" in out


def test_wandb_offline_only(tmp_path, monkeypatch, capsys):
    """W&B: mode offline (set before the import), files under the run directory, one point per step;
    without the package, one warning line."""
    calls = {"log": []}

    class Run:
        def log(self, d, step):
            calls["log"].append((step, d))

        def finish(self):
            calls["finished"] = True

    def init(**kw):
        calls["init"] = kw
        calls["env"] = os.environ.get("WANDB_MODE")
        return Run()

    monkeypatch.setitem(sys.modules, "wandb", types.SimpleNamespace(init=init))
    monkeypatch.delenv("WANDB_MODE", raising=False)
    cfg = build_config({"tracking": {"tensorboard": False, "wandb": True, "wandb_project": "p"}})
    led = _fake_step_rows(tmp_path)
    tr = open_tracker(cfg, tmp_path, led, "r1")
    assert calls["env"] == "offline" and calls["init"]["mode"] == "offline"
    assert calls["init"]["dir"] == str(tmp_path) and calls["init"]["project"] == "p" and (tmp_path / "wandb").is_dir()
    assert calls["log"] == []  # steps committed before the open (a resume) are not sent again
    with led.step("r1", 3, 1, "train", 3) as sw:
        sw.metrics = {"x": 0.3}
        sw.versions = {}
    tr.sync(led, "r1")
    tr.sync(led, "r1")
    tr.close()
    assert calls["log"] == [(3, {"x": 0.3, "run/step_seconds": calls["log"][0][1]["run/step_seconds"]})]
    assert calls["finished"]
    monkeypatch.setitem(sys.modules, "wandb", None)
    open_tracker(cfg, tmp_path, led, "r1").close()
    led.close()
    out = [ln for ln in capsys.readouterr().err.splitlines() if ln]
    assert len(out) == 1 and out[0].startswith("warning: tracking (wandb) off")
