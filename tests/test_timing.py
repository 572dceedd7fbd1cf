"""coevo.timing: per-stage seconds of a step (a fake clock, hand-computed values), their ledger
column (old ledgers get it added, NULL) and the report's "Loop speed" section."""
import json

import pytest

from coevo import timing
from coevo.ledger.store import Ledger
from coevo.ledger.views import step_stage_seconds
from coevo.report.speed import speed_section


@pytest.fixture
def clock(monkeypatch):
    """time.perf_counter as seen by coevo.timing: advanced by hand."""
    now = [100.0]
    monkeypatch.setattr(timing.time, "perf_counter", lambda: now[0])

    def tick(dt: float) -> None:
        now[0] += dt
    return tick


def test_stages_are_exclusive_and_add_up(clock):
    with timing.record() as rec:
        with timing.stage("reward"):
            clock(1.0)  # reward's own work: 1 + 0.5
            with timing.stage("sample"):
                clock(2.0)
                with timing.stage("sample"):  # same name inside: counted once, by the outer one
                    clock(3.0)
                with timing.model_compute():  # overlapping counter
                    clock(0.25)
            with timing.stage("verify"):
                clock(0.5)
            clock(0.5)
            with timing.stage("eval"):  # eval absorbs what is opened inside it
                with timing.stage("sample"):
                    clock(4.0)
                with timing.model_compute():
                    clock(1.0)
        clock(0.75)  # outside every stage: "other"
    d = rec.as_dict()
    assert d == {"eval": 5.0, "reward": 1.5, "sample": 5.25, "verify": 0.5, "other": 0.75, "total": 13.0,
                 "model_compute": 1.25}
    assert sum(v for k, v in d.items() if k not in ("total", "model_compute")) == pytest.approx(d["total"])


def test_no_record_no_cost(clock):
    assert timing.current() is None
    with timing.stage("sample"), timing.model_compute():
        clock(1.0)
    assert timing.current() is None


def _old_ledger(path):
    """A steps table as coevo wrote it before stage_seconds_json existed."""
    import duckdb

    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE steps (run_id VARCHAR, step BIGINT, round BIGINT, phase VARCHAR, phase_step BIGINT, "
                "completed_at DOUBLE, seconds DOUBLE, proposer_version VARCHAR, solver_version VARCHAR, "
                "metrics_json VARCHAR, versions_json VARCHAR)")
    con.execute("INSERT INTO steps (run_id, step, round, phase, phase_step, metrics_json) "
                "VALUES ('r', 0, 0, 'eval', 0, '{}')")
    con.close()


def test_old_ledger_gets_the_column_and_new_steps_fill_it(tmp_path, clock):
    path = tmp_path / "ledger.duckdb"
    _old_ledger(path)
    ro = Ledger(path, read_only=True)  # read-only (report of an old run): no column, no timings, no error
    assert step_stage_seconds(ro, "r") == []
    assert "no per-stage timings" in speed_section(ro, "r")
    ro.close()
    led = Ledger(path)  # writable: the column is added, NULL in the old row
    with timing.record():
        with led.step("r", 1, 1, "solver", 0) as w:
            with timing.stage("update"):
                clock(2.0)
            w.add("updates", [{"run_id": "r", "step": 1, "role": "solver"}])
    rows = led.query("SELECT step, stage_seconds_json FROM steps ORDER BY step")
    assert rows[0]["stage_seconds_json"] is None
    st = json.loads(rows[1]["stage_seconds_json"])
    assert st["update"] == 2.0 and st["ledger"] == 0.0 and st["total"] == 2.0 and st["other"] == 0.0
    got = step_stage_seconds(led, "r")
    assert [s["step"] for s in got] == [1] and got[0]["phase"] == "solver"
    html = speed_section(led, "r")
    assert "Loop speed" in html and "<img" in html and ">update<" in html and ">100%<" in html
    led.close()
