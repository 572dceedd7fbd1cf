"""report.html in a real browser: headless Chromium (Debian package, /usr/bin/chromium) over the
DevTools pipe (scripts/report_screenshot.py).  For short runs of R-Zero, SynCo, RGBC and the toy
recipe: every <img> loads (naturalWidth > 0), the console shows no error, each report carries
the common sections plus its own recipe's sections only (no section or plot of another recipe,
empty or not), and a full-page screenshot is written.

Marker ``browser`` (deselected by default): ``pytest -m browser tests/test_report_browser.py``.
"""
import importlib.util
import os
from pathlib import Path

import pytest

from conftest import REPO, run_coevo

pytestmark = pytest.mark.browser

CHROMIUM = os.environ.get("COEVO_CHROMIUM", "/usr/bin/chromium")
SHORT = ["-q", "--set", "world.eval_per_level=4", "--set", "sampling.max_new_tokens=24"]
_SYN = ["--set", "synco.rounds=1", "--set", "synco.steps_per_round=1", "--set", "synco.tasks_per_step=8",
        "--set", "synco.audit_samples=4"]
RUNS = {
    "rzero": [*SHORT, "--set", "rzero.rounds=1", "--set", "rzero.challenger_steps=1", "--set", "rzero.solver_steps=1",
              "--set", "rzero.challenger_prompts=8", "--set", "rzero.n_candidates=24",
              "--set", "rzero.solver_prompts=8"],
    "synco": [*SHORT, "--recipe", "synco", *_SYN],
    "rgbc": [*SHORT, "--recipe", "rgbc", "--set", "rgbc.arm=full", *_SYN],
    "toy": ["-q", "--preset", str(REPO / "examples" / "toy_recipe.yaml")],
}
COMMON = ["Per round", "Plots", "Audit", "Loop speed"]
COMMON_FIGURES = {"Solver oracle accuracy per difficulty and round", "Seconds per step by stage",
                  "Audit instruments per step"}  # the audit plot: only when a per-step series exists
# each recipe's own sections (h2 title prefixes) and figures: none may show up in another's report
OWN = {
    "rzero": (("R-Zero: Challenger and Solver",),
              {"Rewards per step", "Difficulty mix of proposed questions", "p_hat of candidate questions"}),
    "teachable": (("Teachable-quality report",), {"Instrument (95% CI) against oracle truth per step"}),
    "toy": (("Toy recipe: multi-turn rollouts",), set()),
}
RECIPE_OF = {"rzero": "rzero", "synco": "teachable", "rgbc": "teachable", "toy": "toy"}


def section_owner(title: str) -> str | None:
    """Which recipe's section an h2 title is (None: a common section)."""
    for k, (prefixes, _) in OWN.items():
        if title.startswith(prefixes):
            return k
    return None


def _screenshot_module():
    spec = importlib.util.spec_from_file_location("report_screenshot", REPO / "scripts" / "report_screenshot.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def shot():
    if not Path(CHROMIUM).is_file():
        pytest.fail(f"no browser at {CHROMIUM}: apt-get install chromium (the browser test needs it)")
    return _screenshot_module()


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """The run directory of a RUNS entry, run once per module."""
    done: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in done:
            out = tmp_path_factory.mktemp("browser") / name
            run_coevo("run", "--out", str(out), *RUNS[name])
            done[name] = out
        return done[name]
    return get


@pytest.mark.parametrize("name", list(RUNS))
def test_report_in_headless_chromium(name, shot, run_dir, tmp_path):
    out = run_dir(name)
    png = tmp_path / f"{name}.png"
    facts = shot.inspect_report(out / "report.html", png)
    assert facts["images"], "the report has no images"
    assert facts["broken_images"] == [], facts["broken_images"]
    assert facts["console_errors"] == [], facts["console_errors"]
    # a full-page PNG, taller than the viewport
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and facts["screenshot"]["size"][1] > 900
    # the common sections, and the recipe's own sections and figures only: nothing of another recipe
    own = RECIPE_OF[name]
    sections = facts["sections"]
    assert [t for t in sections if section_owner(t) is None] == COMMON, sections
    assert {section_owner(t) for t in sections} - {None} == {own}, sections
    captions = set(facts["captions"])
    assert OWN[own][1] <= captions, captions
    assert captions <= COMMON_FIGURES | OWN[own][1], captions - COMMON_FIGURES - OWN[own][1]
    assert not [n for n in facts["notes"] if "failed" in n], facts["notes"]


def test_readme_screenshot_script(shot, run_dir, tmp_path):
    """scripts/report_screenshot.py on an existing run writes the PNG and prints its checks."""
    res = shot.main(["--run", str(run_dir("rzero")), "--out", str(tmp_path / "report.png")])
    assert (tmp_path / "report.png").stat().st_size > 10_000
    assert res["broken_images"] == [] and res["console_errors"] == []
    assert "Loop speed" in res["sections"]
