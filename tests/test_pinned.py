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
# the facts-world recipes (Dr. Zero family) and VG-OPD's CASA arms, one short round each
_DRZ = ["--set", "drzero.rounds=1", "--set", "drzero.proposer_steps=1", "--set", "drzero.solver_steps=1",
        "--set", "drzero.prompts=8", "--set", "drzero.solver_prompts=8", "--set", "world.options.eval_per_hop=4"]
_CF = ["--set", "crossfit.aux_steps=1", "--set", "crossfit.aux_prompts=4"]
_VG = ["--set", "vgopd.rounds=1", "--set", "vgopd.steps_per_round=2", "--set", "vgopd.prompts=6",
       "--set", "world.options.eval_n=12"]
RUNS.update({
    "drzero": ["--recipe", "drzero", *_DRZ],
    "crossfit": ["--recipe", "crossfit", *_DRZ, *_CF],
    "msv+crossfit": ["--recipe", "msv+crossfit", *_DRZ, *_CF],
    "vgopd-A": ["--recipe", "vgopd", "--set", "casa.arm=A", *_VG],
    "vgopd-B": ["--recipe", "vgopd", "--set", "casa.arm=B", *_VG],
    "vgopd-C": ["--recipe", "vgopd", "--set", "casa.arm=C", "--set", "casa.discount=one_minus_precision", *_VG],
    "vgopd-C-precision": ["--recipe", "vgopd", "--set", "casa.arm=C", "--set", "casa.discount=precision", *_VG],
})
NO_SHORT = {"drzero", "crossfit", "msv+crossfit", "vgopd-A", "vgopd-B", "vgopd-C", "vgopd-C-precision"}  # no world.eval_per_level
STEP_KEYS = ("n_accepted", "n_bearing", "kappa_bar", "nu_bar", "lag_bar", "synthesizer_reward_mean",
             "solver_reward_mean", "challenger_reward_mean", "kept_fraction", "pseudo_label_accuracy")
EXTRA_KEYS = ("proposer_reward_mean", "false_agreement", "phi", "reward_mean")  # the runs added later (NO_SHORT)


def step_numbers(run_dir: Path, keys=STEP_KEYS) -> list:
    con = duckdb.connect(str(run_dir / "ledger.duckdb"), read_only=True)
    rows = con.execute("SELECT step, metrics_json FROM steps WHERE phase <> 'eval' ORDER BY step").fetchall()
    con.close()
    out = []
    for step, m in rows:
        m = json.loads(m)
        got = {}
        for k in keys:
            v = m.get(k)
            if isinstance(v, dict):
                v = v.get("value")
            if v is not None:
                got[k] = round(float(v), 9)
        out.append([step, got])
    return out


def observe(name: str, tmp: Path) -> dict:
    out = tmp / name
    run_coevo("run", "-q", "--out", str(out), *([] if name in NO_SHORT else SHORT), *RUNS[name])
    keys = STEP_KEYS + (EXTRA_KEYS if name in NO_SHORT else ())
    return {"fingerprint": fingerprint(out), "summary": summary_numbers(out), "steps": step_numbers(out, keys)}


PINNED_FILE = Path(__file__).parent / "pinned_runs.json"


@pytest.mark.parametrize("name", list(RUNS))
def test_pinned_run(name, tmp_path):
    pinned = json.loads(PINNED_FILE.read_text())[name]
    got = observe(name, tmp_path)
    # a table pinned as a list has one fingerprint per CPU class, every other table of the run equal on all of them:
    # vgopd-A/B's rewards (VG-OPD's advantages over 96 criterion rewards cross a 5th-decimal rounding between the CI machine
    # of 2026-12-05 and this one of 2026-12-06 (Intel Xeon, AVX-512), same code, numpy 2.4.6, duckdb 2.0.1, torch 2.13.0)
    for table, fp in pinned["fingerprint"].items():
        assert got["fingerprint"].get(table) in (fp if isinstance(fp, list) else [fp]), table
    assert set(got["fingerprint"]) == set(pinned["fingerprint"])
    assert got["summary"] == pinned["summary"]
    assert got["steps"] == pinned["steps"]


if __name__ == "__main__":  # regenerate the pinned values (say why in the commit); names: only those runs
    import tempfile

    only = sys.argv[1:] or list(RUNS)
    res = json.loads(PINNED_FILE.read_text()) if PINNED_FILE.exists() else {}
    with tempfile.TemporaryDirectory() as d:
        res.update({name: observe(name, Path(d)) for name in only})  # (a per-CPU list is replaced: re-add the others)
    PINNED_FILE.write_text(json.dumps(res, indent=1, sort_keys=True) + "\n")
    print(f"wrote {PINNED_FILE}")
