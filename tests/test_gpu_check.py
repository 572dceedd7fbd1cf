"""scripts/gpu_check.py runs its CPU path (tiny sizes) and prints the promised JSON fields."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import need_module

need_module("transformers")
need_module("peft")

ROOT = Path(__file__).resolve().parent.parent


def test_gpu_check_cpu_path(tmp_path):
    out = tmp_path / "gpu_check.json"
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": "2"}
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu_check.py"), "--device", "cpu", "--sizes", "tiny",
                        "--timed-updates", "1", "--json-out", str(out)], capture_output=True, text=True, env=env,
                       timeout=300, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    res = json.loads(out.read_text())
    assert res["device"] and res["dtype"] == "float32"
    tiny = res["sizes"]["tiny"]
    for key in ("tokens_per_s", "update_s", "bare_fwd_bwd_s", "update_over_bare", "params", "sampled_tokens"):
        assert tiny[key] > 0, key
    assert tiny["sampled_tokens"] <= 4 * 2 * 16
    assert "peak_gpu_mem_gib" not in tiny  # CPU path
    assert json.loads(r.stdout[r.stdout.index("{"):]) == res



@pytest.mark.slow
def test_gpu_check_rgbc_steps_cpu_path(tmp_path):
    """The RGBC code path of gpu_check (two joint steps, two LoRA roles) on the tiny random model."""
    out = tmp_path / "gpu_check.json"
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": "2"}
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "gpu_check.py"), "--device", "cpu", "--sizes", "tiny",
                        "--timed-updates", "1", "--rgbc-steps", "2", "--json-out", str(out)], capture_output=True,
                       text=True, env=env, timeout=600, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    rg = json.loads(out.read_text())["rgbc"]
    assert rg["model"] == "random tiny" and len(rg["steps"]) == 2
    assert all(s["n_proposed"] == 8 for s in rg["steps"])
    assert rg["updates"] == {"solver": 2, "synthesizer": 2}  # one update row per role and step
