"""`coevo certify` with SmolLM2-135M on CPU on the shipped easy word-problem pool (issue #13
done-criterion 2): kappa-bar with an interval, the null-model fit error and nu-bar. Slow (about
2 min for the first 24 tasks on 2 cores); CI runs it (.ci/run). The whole pool's numbers are in
docs/rgbc.md."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import require_smollm2

POOL = Path(__file__).resolve().parent.parent / "coevo" / "data" / "easy_word_problems.jsonl"


@pytest.mark.slow
def test_smollm2_certificate_on_the_easy_pool(tmp_path):
    require_smollm2()
    html = tmp_path / "cert.html"
    r = subprocess.run([sys.executable, "-m", "coevo", "certify", str(POOL), "--model", "smollm2", "--world", "math",
                        "--limit", "24", "--max-new-tokens", "64", "--temperature", "0.7", "--top-p", "0.95",
                        "--batch", "8", "--html", str(html), "--json"], capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, r.stderr[-3000:]
    c = json.loads(r.stdout)
    assert c["n_tasks"] == 24 and c["world"] == "math" and c["policy_version"] == "solver:smollm2+0"
    kb = c["kappa_bar"]
    assert kb["n"] >= 3  # bearing tasks: the pool is easy enough for a 135M model
    assert 0.0 <= kb["ci_low"] <= kb["value"] <= kb["ci_high"] <= 1.0
    assert c["null_model"]["fit_error"] < 0.01
    assert c["nu_bar"]["n"] == kb["n"] and "verdict" in c["p1"]
    assert c["budget"]["confirm_rollouts"] == 4 * kb["n"]
    assert "<img" in html.read_text()
    print(f"smollm2 certificate (24 tasks): kappa-bar {kb['value']:.3f} [{kb['ci_low']:.3f}, {kb['ci_high']:.3f}] "
          f"n={kb['n']}, fit error {c['null_model']['fit_error']:.1e}, nu-bar {c['nu_bar']['value']:.3f}, "
          f"{c['seconds']:.0f} s")
