"""`coevo run --preset smollm2-cpu --recipe rgbc|synco` on CPU (issue #13 done-criterion 1): real
SmolLM2-135M Synthesizer tasks pass the free-form validator and the consensus check, reach the
Reasoner (screen groups), a confirm group is drawn, one LoRA update per role, and the report has
the teachable-quality section. Slow (about 2 min each on 2 cores); CI runs it (.ci/run)."""
from __future__ import annotations

import json
import subprocess
import sys

import duckdb
import pytest

from conftest import require_smollm2


def _run(tmp_path, *args):
    require_smollm2()
    out = tmp_path / "run"
    r = subprocess.run([sys.executable, "-m", "coevo.cli", "run", "--preset", "smollm2-cpu", *args, "--out", str(out),
                        "-q"], capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, r.stderr[-3000:]
    con = duckdb.connect(str(out / "ledger.duckdb"), read_only=True)
    return out, (lambda sql: con.execute(sql).fetchall())


@pytest.mark.slow
def test_smollm2_rgbc_full_tasks_reach_the_reasoner(tmp_path):
    out, q = _run(tmp_path, "--recipe", "rgbc", "--set", "rgbc.arm=full")
    # validated Synthesizer tasks (every validator check passed) that the consensus check accepted
    n_valid = q("select count(*) from (select task_id from verdicts where target like 'validator:%' "
                "group by task_id having min(value) = 1)")[0][0]
    kept = q("select task_id from tasks where kept")
    assert n_valid >= 1 and len(kept) >= 1
    purposes = dict(q("select purpose, count(*) from rollouts where role = 'solver' group by 1"))
    assert purposes.get("consensus", 0) == 4 * n_valid
    assert purposes.get("screen", 0) == 4 * len(kept)  # K = 4 per accepted task
    assert purposes.get("confirm", 0) >= 4  # at least one bearing task got its confirm group
    ups = {role: (b, a) for role, b, a in q("select role, version_before, version_after from updates")}
    assert ups == {"solver": ("solver:smollm2+0", "solver:smollm2+1"),
                   "synthesizer": ("synthesizer:smollm2+0", "synthesizer:smollm2+1")}
    assert "Teachable-quality report" in (out / "report.html").read_text()
    summary = json.loads((out / "summary.json").read_text())
    print(f"smollm2-cpu rgbc full: {summary['wall_seconds']:.0f} s, {n_valid} validated, {len(kept)} accepted, "
          f"rollouts {purposes}")


@pytest.mark.slow
def test_smollm2_synco_runs(tmp_path):
    out, q = _run(tmp_path, "--recipe", "synco")
    assert q("select count(*) from tasks where kept")[0][0] >= 1
    assert {r for (r,) in q("select role from updates")} == {"solver", "synthesizer"}
    assert "Teachable-quality report" in (out / "report.html").read_text()
