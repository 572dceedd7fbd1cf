"""Pinned results of short deterministic runs (shipped tiny checkpoints, seed 0).

A refactor must not move these numbers silently: each run's ledger is reduced to one
fingerprint per table over its result columns (tests/fingerprint.py) plus summary.json and
a few per-step instruments.  If a change is *meant* to move them, regenerate with
``python tests/test_pinned.py`` and say in the commit which change moved them and why.
"""
import json
import sys
from pathlib import Path

import duckdb
import pytest

sys.path.insert(0, str(Path(__file__).parent))
from conftest import run_coevo  # noqa: E402
from fingerprint import fingerprint, summary_numbers  # noqa: E402

SHORT = ["--set", "world.eval_per_level=20"]
RUNS = {
    "rzero": ["--set", "rzero.rounds=1", "--set", "rzero.challenger_steps=1", "--set", "rzero.solver_steps=2",
              "--set", "rzero.challenger_prompts=16", "--set", "rzero.n_candidates=64",
              "--set", "rzero.solver_prompts=16"],
}
_SYN = ["--set", "synco.rounds=1", "--set", "synco.steps_per_round=2", "--set", "synco.tasks_per_step=16",
        "--set", "synco.audit_samples=8"]
RUNS.update({
    "synco": ["--recipe", "synco", *_SYN],
    "rgbc-full": ["--recipe", "rgbc", "--set", "rgbc.arm=full", *_SYN],
    "rgbc-mu_tilde": ["--recipe", "rgbc", "--set", "rgbc.arm=mu_tilde", *_SYN],
    "rgbc-synco": ["--recipe", "rgbc", "--set", "rgbc.arm=synco", *_SYN],
})
STEP_KEYS = ("n_accepted", "n_bearing", "kappa_bar", "nu_bar", "lag_bar", "synthesizer_reward_mean",
             "solver_reward_mean", "challenger_reward_mean", "kept_fraction", "pseudo_label_accuracy")


def step_numbers(run_dir: Path) -> list:
    con = duckdb.connect(str(run_dir / "ledger.duckdb"), read_only=True)
    rows = con.execute("SELECT step, metrics_json FROM steps WHERE phase <> 'eval' ORDER BY step").fetchall()
    con.close()
    out = []
    for step, m in rows:
        m = json.loads(m)
        got = {}
        for k in STEP_KEYS:
            v = m.get(k)
            if isinstance(v, dict):
                v = v.get("value")
            if v is not None:
                got[k] = round(float(v), 9)
        out.append([step, got])
    return out


def observe(name: str, tmp: Path) -> dict:
    out = tmp / name
    run_coevo("run", "-q", "--out", str(out), *SHORT, *RUNS[name])
    return {"fingerprint": fingerprint(out), "summary": summary_numbers(out), "steps": step_numbers(out)}


PINNED_FILE = Path(__file__).parent / "pinned_runs.json"


@pytest.mark.parametrize("name", list(RUNS))
def test_pinned_run(name, tmp_path):
    pinned = json.loads(PINNED_FILE.read_text())[name]
    got = observe(name, tmp_path)
    assert got["fingerprint"] == pinned["fingerprint"]
    assert got["summary"] == pinned["summary"]
    assert got["steps"] == pinned["steps"]


if __name__ == "__main__":  # regenerate the pinned values (say why in the commit)
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        res = {name: observe(name, Path(d)) for name in RUNS}
    PINNED_FILE.write_text(json.dumps(res, indent=1, sort_keys=True) + "\n")
    print(f"wrote {PINNED_FILE}")
