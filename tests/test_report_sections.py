"""report.html per recipe: common sections for every run, plus the sections the run's recipe declares
(``RecipeInfo.report_sections``). Hand-written ledgers; recipes registered by a small fake module."""
import base64
import json
import re
import textwrap

import pytest

from coevo.ledger.store import Ledger
from coevo.report.html import write_report

RZERO_CAPTIONS = ("Rewards per step", "Difficulty mix of proposed questions", "p_hat of candidate questions")
FAKE = textwrap.dedent('''
    from coevo.core.registry import RecipeInfo, Ref
    RECIPES = {
        "rz": RecipeInfo(name="rz", factory=Ref("x", "y"), roles=(),
                         report_sections=(Ref("coevo.recipes.rzero.report", "section"),),
                         summary_columns=("pseudo_label_accuracy",)),
        "rg": RecipeInfo(name="rg", factory=Ref("x", "y"), roles=(),
                         report_sections=(Ref("coevo.recipes.rgbc.report", "section"),)),
    }
''')


@pytest.fixture
def fake_recipes(tmp_path, monkeypatch):
    pkg = tmp_path / "fake_report_pkg"  # the registry takes "package.module[:name]" import paths
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "recipes.py").write_text(FAKE)
    monkeypatch.syspath_prepend(str(tmp_path))
    return "fake_report_pkg.recipes"


def _evals(rid: str) -> list[dict]:
    """L1: round 0 one of two right (0.5), round 1 both right (1.0)."""
    return [{"run_id": rid, "round": r, "step": s, "task_id": f"e{i}", "difficulty": "L1", "mode": "greedy",
             "answer": "1", "correct": c} for r, s, cs in ((0, 0, (1.0, 0.0)), (1, 9, (1.0, 1.0)))
            for i, c in enumerate(cs)]


def rzero_ledger(run_dir, recipe: str):
    run_dir.mkdir(parents=True)
    led = Ledger(run_dir / "ledger.duckdb")
    rid = "rz0"
    led.append("runs", [{"run_id": rid, "recipe": recipe, "world": "arithmetic", "seed": 0,
                         "config_yaml": "rzero: {delta: 0.25}\n"}])
    led.append("steps", [
        {"run_id": rid, "step": 1, "round": 1, "phase": "challenger", "phase_step": 0,
         "metrics_json": json.dumps({"challenger_reward_mean": 0.3, "format_failure_rate": 0.25})},
        {"run_id": rid, "step": 2, "round": 1, "phase": "dataset", "phase_step": 0, "metrics_json": "{}"},
        {"run_id": rid, "step": 3, "round": 1, "phase": "solver", "phase_step": 0,
         "metrics_json": json.dumps({"solver_reward_mean": 0.5})}])
    led.append("tasks", [{"run_id": rid, "task_id": f"c{i}", "round": 1, "step": 1, "source": "challenger",
                          "parse_ok": True, "difficulty": d} for i, d in enumerate(("L1", "L2", "L2"))]
               + [{"run_id": rid, "task_id": f"k{i}", "round": 1, "step": 2, "source": "candidate", "parse_ok": True,
                   "difficulty": "L3", "p_hat": p, "pseudo_label": "7", "oracle_answer": "7", "kept": True}
                  for i, p in enumerate((0.5, 0.7))])
    led.append("evals", _evals(rid))
    led.close()
    (run_dir / "summary.json").write_text(json.dumps({"rounds": [{"round": 1, "pseudo_label_accuracy": 0.625}],
                                                      "preset": "cpu", "wall_seconds": 1.0}))
    return run_dir


def rgbc_ledger(run_dir, recipe: str):
    """Two steps of screen/confirm rows: step 1 t1 (mu .5 / .25), t2 (.75 / 1.0), t3 (1.0, no confirm);
    step 2 t4 (.25 / .5), t5 (0.0). Screen bearing rate 3/5, kappa-bar 2/3."""
    run_dir.mkdir(parents=True)
    led = Ledger(run_dir / "ledger.duckdb")
    rid = "rg0"
    led.append("runs", [{"run_id": rid, "recipe": recipe, "world": "arithmetic", "seed": 0,
                         "config_yaml": "synco: {k: 4}\nrgbc: {doubt_stable: 0.75}\n"}])
    spec = [("t1", 1, .5, .25, 1.0), ("t2", 1, .75, 1.0, 0.0), ("t3", 1, 1.0, None, None), ("t4", 2, .25, .5, 1.0),
            ("t5", 2, 0.0, None, None)]
    ts, tasks = [], []
    for t, s, ms, mc, nu in spec:
        mt = ms if mc is None else (ms + mc) / 2
        ts.append({"run_id": rid, "task_id": t, "round": 1, "step": s, "arm": "full", "validator_ok": True,
                   "consensus_ok": True, "k_screen": 4, "mu_screen": ms, "mu_pre": ms, "k_confirm": None if mc is None else 4,
                   "mu_confirm": mc, "mu_tilde": mt, "nu": nu, "mode_share": None if nu is None else 0.75,
                   "mu_post": mc, "lag": None if mc is None else ms - mc, "reference_correct": nu != 0.0,
                   "in_doubt": nu == 0.0, "true_p": 0.5})
        tasks.append({"run_id": rid, "task_id": t, "round": 1, "step": s, "source": "synthesizer", "parse_ok": True,
                      "meta_json": json.dumps({"p_ref": 0.5, "p_ref_post": 0.5, "confirm_timing": "post"})})
    led.append("task_stats", ts)
    led.append("tasks", tasks)
    led.append("steps", [{"run_id": rid, "step": s, "round": 1, "phase": "train", "phase_step": s - 1,
                          "metrics_json": json.dumps({"rollouts": {"screen": 4 * n, "confirm_train": 4 * c}})}
                         for s, n, c in ((1, 3, 2), (2, 2, 1))])
    led.append("evals", _evals(rid))
    led.close()
    return run_dir


def images(page: str) -> list[bytes]:
    """The decoded PNG of every <img>; fails unless each src is a valid base64 PNG data URI."""
    srcs = re.findall(r"<img [^>]*src=\"([^\"]*)\"", page)
    out = []
    for s in srcs:
        assert s.startswith("data:image/png;base64,"), s[:40]
        png = base64.b64decode(s.split(",", 1)[1], validate=True)
        assert png.startswith(b"\x89PNG\r\n\x1a\n")
        out.append(png)
    return out


def test_rgbc_report_has_no_rzero_plots(tmp_path, fake_recipes):
    d = rgbc_ledger(tmp_path / "rg", f"{fake_recipes}:rg")
    page = write_report(d).read_text()
    assert "Teachable-quality report" in page
    assert not any(c in page for c in RZERO_CAPTIONS)
    # eval table: L1 0.500 at round 0, 1.000 at round 1
    assert "<td>0 (init)</td><td>0.500</td><td>0.500</td>" in page and "<td>1</td><td>1.000</td><td>1.000</td>" in page
    nums = json.loads((d / "teachable.json").read_text())
    assert nums["overall"]["bearing_rate"]["value"] == pytest.approx(3 / 5)   # t1 t2 t4 mixed of 5 screened
    assert nums["overall"]["kappa_bar"]["value"] == pytest.approx(2 / 3)      # t1, t4 mixed again
    assert nums["overall"]["nu_bar"]["value"] == pytest.approx(1 / 3)         # t2 misses
    assert nums["overall"]["kappa_true"] == pytest.approx(1 - 2 * 0.5 ** 4)   # m_4(1/2) = 0.875
    assert len(images(page)) == 3  # eval, teachable, audit


def test_rzero_report_has_its_plots(tmp_path, fake_recipes):
    d = rzero_ledger(tmp_path / "rz", f"{fake_recipes}:rz")
    page = write_report(d).read_text()
    assert all(c in page for c in RZERO_CAPTIONS)
    assert "Teachable-quality report" not in page
    assert "<th>pseudo label accuracy</th>" in page and "<td>0.625</td>" in page  # the recipe's summary column
    assert len(images(page)) == 4  # eval and three R-Zero plots (no oracle groups: no audit series)


def test_sections_return_empty_without_their_data(tmp_path):
    from coevo.recipes.rzero import report as rzero
    from coevo.recipes.rgbc import report as teachable

    rg = rgbc_ledger(tmp_path / "rg", "rgbc")
    rz = rzero_ledger(tmp_path / "rz", "rzero")
    for d, fn, rid in ((rg, rzero.section, "rg0"), (rz, teachable.section, "rz0")):
        led = Ledger(d / "ledger.duckdb", read_only=True)
        try:
            assert fn(led, rid, d) == ""
        finally:
            led.close()


def test_unresolvable_recipe_gets_common_sections_and_a_note(tmp_path):
    d = rzero_ledger(tmp_path / "rz", "no_such_recipe")
    page = write_report(d).read_text()
    assert "could not be resolved" in page and "only the common sections are shown" in page
    assert "<h2>Per round</h2>" in page and "<h2>Audit</h2>" in page
    assert not any(c in page for c in RZERO_CAPTIONS)
    assert len(images(page)) == 1  # eval


def test_builtin_recipes_declare_their_sections():
    from coevo.core.registry import Ref, get_recipe

    # A RecipeNotFound here is the failure this test exists to catch: let it fail the test.
    got = {name: get_recipe(name).report_sections for name in ("rzero", "synco", "rgbc")}
    assert got == {"rzero": (Ref("coevo.recipes.rzero.report", "section"),),
                   "synco": (Ref("coevo.recipes.rgbc.report", "section"),),
                   "rgbc": (Ref("coevo.recipes.rgbc.report", "section"),)}
