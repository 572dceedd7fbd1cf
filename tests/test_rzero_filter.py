"""R-Zero's code variant of the Solver-dataset filter (issue #13 item 6): 9 samples, band [0.3, 0.8]."""
from __future__ import annotations

import json

import duckdb

from conftest import TINY_RUN, run_coevo


def test_reference_filter_draws_9_answers_and_keeps_the_band(tmp_path):
    """The shipped Challenger writes parseable questions; 9 answers each; kept iff p_hat in [0.3, 0.8]."""
    out = tmp_path / "run"
    run_coevo("run", "--out", str(out), *TINY_RUN, "--set", "rzero.solver_filter=reference",
              "--set", "rzero.challenger_steps=0", "--set", "rzero.solver_steps=1")
    con = duckdb.connect(str(out / "ledger.duckdb"), read_only=True)
    per_task = con.execute("select task_id, count(*) from rollouts where purpose='candidate' group by task_id").fetchall()
    assert per_task and {n for _, n in per_task} == {9}
    kept = con.execute("select p_hat, kept from tasks where source='candidate' and p_hat is not null").fetchall()
    assert kept and all(k == (0.3 - 1e-9 <= p <= 0.8 + 1e-9) for p, k in kept)
    cfg = (out / "config.yaml").read_text()
    assert "solver_filter: reference" in cfg
    assert json.loads((out / "summary.json").read_text())["rounds"]


def test_bad_band_is_one_line():
    p = run_coevo("run", "--set", "rzero.filter_band=[0.8,0.3]", check=False)
    assert p.returncode == 2 and "rzero.filter_band" in p.stderr
