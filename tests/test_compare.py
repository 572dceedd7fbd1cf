"""`coevo compare` on the four RGBC arms (docs/rgbc.md): one table with four rows, JSON values equal to
`coevo audit --json`, arms grouped by config (seeds together, with the seed-to-seed range), an HTML
page with plots, and one-line errors (exit 2) on bad input."""
import json
import re

import pytest

from conftest import run_coevo
from coevo.audit.compare import arm_config, compare_runs

TINY = ["synco.rounds=1", "synco.steps_per_round=2", "synco.tasks_per_step=8", "synco.audit_samples=4",
        "world.eval_per_level=4", "verify.workers=0", "tracking.tensorboard=false"]
ARMS = {"synco": ["recipe=synco"], "full": ["recipe=rgbc", "rgbc.arm=full"],
        "mu_tilde": ["recipe=rgbc", "rgbc.arm=mu_tilde"], "rgbc-synco": ["recipe=rgbc", "rgbc.arm=synco"]}


def tiny_run(out, *sets: str):
    """`coevo run -q --out OUT --recipe R --set ...`, in this process (the CLI's import time saved)."""
    from coevo.config import PRESET_DIR, load_config
    from coevo.runner import run_from_config

    recipe = next(x.split("=", 1)[1] for x in sets if x.startswith("recipe="))
    preset = recipe if (PRESET_DIR / f"{recipe}.yaml").is_file() else "cpu"
    return run_from_config(load_config(preset, overrides=[*TINY, *sets]), out, quiet=True)


@pytest.fixture(scope="module")
def arm_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("arms")
    return {name: tiny_run(root / name, *sets) for name, sets in ARMS.items()}


def test_four_arms_one_table_and_json_equals_audit(arm_runs, tmp_path):
    dirs = [str(d) for d in arm_runs.values()]
    out = tmp_path / "cmp" / "compare.html"
    p = run_coevo("compare", "--html", str(out), *dirs)
    assert p.stdout.count("coevo compare · 4 runs · 4 arms") == 1
    assert "per arm: mean over seeds" not in p.stdout  # one run per arm: no second table
    rows = [ln for ln in p.stdout.splitlines() if re.match(r"^│ (synco|rgbc/)", ln)]
    assert len(rows) == 4, p.stdout
    res = json.loads(run_coevo("compare", "--json", *dirs).stdout)
    assert [r["arm_label"] for r in res["runs"]] == ["synco", "rgbc/full", "rgbc/mu_tilde", "rgbc/synco"]
    assert res["differs"] == ["recipe", "rgbc.arm"]
    audit = json.loads(run_coevo("audit", "--json", *dirs).stdout)["runs"]
    for r, d, a in zip(res["runs"], dirs, audit):
        assert a["run_dir"] == d and r["instruments"] == a["instruments"]  # the same numbers, computed once
        summary = json.loads((arm_runs[next(k for k, v in arm_runs.items() if str(v) == d)] / "summary.json")
                             .read_text())
        assert r["summary"]["final_eval"] == summary["rounds"][-1]["solver_eval_accuracy"]["overall"]
        assert r["summary"]["initial_eval"] == summary["initial_solver_eval_accuracy"]["overall"]
        ok = [k for k, v in r["instruments"].items() if v["status"] == "ok"]
        assert {"bearing_rate", "eval_accuracy"} <= set(ok)  # non-empty instruments
    kappa = {r["arm_label"]: r["instruments"]["kappa_bar"]["status"] for r in res["runs"]}
    assert kappa["rgbc/full"] == "ok"
    # one arm per run: its mean is the run's value and its range 0
    for a, r in zip(res["arms"], res["runs"]):
        m = a["instruments"]["bearing_rate"]
        assert (m["n_runs"], m["mean"], m["range"]) == (1, r["instruments"]["bearing_rate"]["value"], 0.0)
    page = out.read_text()
    assert page.count("<img ") == 2 and page.count("data:image/png;base64,") == 2
    assert "rgbc/mu_tilde" in page


def test_seeds_of_one_config_are_one_arm_with_range(arm_runs, tmp_path):
    """A second seed of the full arm joins its arm; mean and range = seed_range by hand."""
    seed1 = tmp_path / "full-seed1"
    tiny_run(seed1, *ARMS["full"], "seed=1")
    res = compare_runs([arm_runs["full"], seed1, arm_runs["synco"]])
    assert [a["label"] for a in res["arms"]] == ["rgbc/full", "synco"]
    full = res["arms"][0]
    assert full["seeds"] == [0, 1]
    a, b = (r["summary"]["final_eval"] for r in res["runs"][:2])
    m = full["summary"]["final_eval"]
    assert m["n_runs"] == 2 and m["mean"] == pytest.approx((a + b) / 2) and m["range"] == pytest.approx(abs(a - b))
    assert m["per_run"] == [{"seed": 0, "value": a}, {"seed": 1, "value": b}]
    p = run_coevo("compare", str(arm_runs["full"]), str(seed1), str(arm_runs["synco"]))
    assert "per arm: mean over seeds" in p.stdout


def test_arm_config_ignores_seed_and_bookkeeping():
    a = arm_config({"seed": 0, "out_root": "runs", "note": "x", "tracking": {"wandb": True},
                    "recipe": "rgbc", "rgbc": {"arm": "full"}})
    assert a == {"recipe": "rgbc", "rgbc.arm": "full"}


def test_bad_input_is_one_line_exit_2(arm_runs, tmp_path):
    for args in ([str(tmp_path / "missing")], [str(tmp_path)], [str(arm_runs["synco"]), str(tmp_path / "nope")]):
        p = run_coevo("compare", *args, check=False)
        assert p.returncode == 2, (args, p.stdout, p.stderr)
        assert len(p.stderr.strip().splitlines()) == 1 and p.stderr.startswith("error:"), p.stderr
        assert "Traceback" not in p.stdout + p.stderr
