"""A second example recipe added as ONE folder (examples/toy_variant: registration, recipe with its
own reward, preset): it runs through the real CLI, its proposer rewards are its formula, and no
file outside the folder names it — adding it touched nothing else."""
import json
import subprocess

import duckdb

from conftest import REPO
from test_toy_recipe import documented_run


def test_variant_folder_runs_with_its_own_reward(tmp_path):
    out = tmp_path / "variant"
    documented_run("examples/toy_variant/preset.yaml", "--out", str(out), "-q")  # README's line, from the root
    con = duckdb.connect(str(out / "ledger.duckdb"), read_only=True)
    rewards = con.execute("SELECT w.step, w.item_id, w.reward FROM rewards w WHERE w.role = 'proposer' "
                          "ORDER BY w.step, w.item_id").fetchall()
    # the solver's oracle pass rate per proposed task, from its verdicts
    mu = dict(((s, t), m) for s, t, m in con.execute(
        "SELECT r.step, r.task_id, avg(CASE WHEN v.value = 1 THEN 1.0 ELSE 0.0 END) FROM rollouts r JOIN verdicts v "
        "ON v.rollout_id = r.rollout_id AND v.target = 'oracle' WHERE r.role = 'solver' AND r.purpose = 'solve' "
        "GROUP BY r.step, r.task_id").fetchall())
    recipe = con.execute("SELECT recipe FROM runs").fetchone()[0]
    con.close()
    assert recipe == "examples.toy_variant"
    assert rewards and len(mu) > 0
    checked = 0
    for step, item, reward in rewards:
        if (step, item) in mu:  # a parsed task: 1 - 2|p - 1/2| of the solver's pass rate
            assert abs(reward - (1 - 2 * abs(mu[step, item] - 0.5))) < 1e-9
            checked += 1
        else:  # a malformed proposal: no task, reward 0
            assert reward == 0.0
    assert checked > 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["recipe"] == "examples.toy_variant" and summary["rounds"][0]["proposer_reward_mean"] is not None


def test_nothing_outside_the_folder_names_the_variant():
    files = subprocess.run(["git", "grep", "-l", "-e", "toy_variant", "-e", "toy-variant", "--", "."],
                           cwd=REPO, capture_output=True, text=True).stdout.split()
    outside = [f for f in files if not f.startswith("examples/toy_variant/") and f != "tests/test_toy_variant.py"
               and not f.startswith("docs/") and f != "README.md"]  # documentation may list it
    assert outside == []
