"""The files of one R-Zero Challenger step, traced, against docs/architecture.md (issue #33 item 5).

A 1-step R-Zero Challenger run (the shipped tiny checkpoints, the arithmetic world, an in-process
verifier) runs its initial evaluation untraced, then its Challenger step under ``sys.settrace``,
from ``Loop.step`` through the ledger commit.  Every coevo file whose code runs is classified:

- recipe: the recipe folder (``coevo/recipes/rzero/``);
- behind an interface: the backend policy (``coevo/backends/``), the world implementation
  (``coevo/worlds/``) and the run verifier (``coevo/verify/``), passed to the recipe as objects;
- core: every other file.

The traced files must equal the lists of docs/architecture.md's section "One R-Zero Challenger
step, file by file" exactly (a new file on the path fails here until the page names it), and the
core files must be at most eight.
"""
import re
import sys
from pathlib import Path

import pytest

import coevo

REPO = Path(__file__).resolve().parents[1]
PKG = Path(coevo.__file__).resolve().parent
DOC = REPO / "docs" / "architecture.md"
SECTION = "## One R-Zero Challenger step, file by file"
INTERFACES = ("coevo/backends/", "coevo/worlds/", "coevo/verify/")
RECIPE = "coevo/recipes/rzero/"
MAX_CORE = 8
RUN = ["rzero.rounds=1", "rzero.challenger_steps=1", "rzero.solver_steps=0", "rzero.challenger_prompts=4",
       "rzero.challenger_group=2", "rzero.m=2", "world.eval_per_level=1", "verify.workers=0"]


def kind(path: str) -> str:
    """core, recipe or interface (behind one of the three interfaces the recipe is given)."""
    if path.startswith(RECIPE):
        return "recipe"
    if path.startswith(INTERFACES):
        return "interface"
    return "core"


def traced_files(tmp_path: Path) -> dict[str, set[str]]:
    """The coevo files whose code runs in the Challenger step of a 1-step R-Zero run, by kind."""
    from coevo.config import load_config
    from coevo.ledger.store import Ledger
    from coevo.runner import make_policies, make_recipe, make_world, recipe_info
    from coevo.runner.loop import Loop
    from coevo.verify.run import run_verifier_from_config

    cfg = load_config("cpu", None, RUN)
    info = recipe_info(cfg)
    world = make_world(cfg)
    policies = make_policies(cfg, None, info)
    led = Ledger(tmp_path / "ledger.duckdb", tables=info.tables)
    led.append("runs", [{"run_id": "trace", "recipe": "rzero", "config_yaml": "{}"}])
    recipe = make_recipe(cfg, world, policies, "trace", run_verifier_from_config(cfg.verify, world, None, led), info)
    loop = Loop(led, "trace", recipe, policies)
    loop.step(loop.plan[0])  # the initial evaluation, untraced: imports made, caches warm
    spec = next(s for s in loop.plan if s.phase == "challenger")
    seen: set[str] = set()
    root = str(PKG) + "/"

    def tracer(frame, event, arg):
        f = frame.f_code.co_filename
        if f.startswith(root):
            seen.add("coevo/" + f[len(root):])

    old = sys.gettrace()
    sys.settrace(tracer)
    try:
        loop.step(spec)
    finally:
        sys.settrace(old)
    led.close()
    assert led_rows(tmp_path / "ledger.duckdb", spec.step) > 0
    out: dict[str, set[str]] = {"core": set(), "recipe": set(), "interface": set()}
    for p in seen:
        out[kind(p)].add(p)
    return out


def led_rows(path: Path, step: int) -> int:
    """Rows the traced step committed (its rewards: one per Challenger question)."""
    import duckdb

    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute("SELECT count(*) FROM rewards WHERE step = ?", [step]).fetchone()[0]
    finally:
        con.close()


def documented(text: str | None = None) -> dict[str, set[str]]:
    """The files the page lists for the step, by kind (every `coevo/....py` of the section)."""
    text = DOC.read_text() if text is None else text
    assert SECTION in text, f"docs/architecture.md has no section {SECTION!r}"
    body = text.split(SECTION, 1)[1].split("\n## ", 1)[0]
    out: dict[str, set[str]] = {"core": set(), "recipe": set(), "interface": set()}
    for p in re.findall(r"`(coevo/[\w/]+\.py)`", body):
        out[kind(p)].add(p)
    return out


def test_documented_list_is_read():
    doc = documented("## One R-Zero Challenger step, file by file\n1. `coevo/runner/loop.py` x\n"
                     "2. `coevo/recipes/rzero/recipe.py`\nbehind: `coevo/worlds/arithmetic.py`\n## Next\n"
                     "`coevo/other.py`\n")
    assert doc == {"core": {"coevo/runner/loop.py"}, "recipe": {"coevo/recipes/rzero/recipe.py"},
                   "interface": {"coevo/worlds/arithmetic.py"}}


@pytest.fixture(scope="module")
def step_files(tmp_path_factory) -> dict[str, set[str]]:
    return traced_files(tmp_path_factory.mktemp("trace"))


def test_step_files_match_the_page(step_files):
    doc = documented()
    for k in ("core", "recipe", "interface"):
        assert step_files[k] == doc[k], (f"{k} files: run but not on the page: {sorted(step_files[k] - doc[k])}; "
                                         f"on the page but not run: {sorted(doc[k] - step_files[k])}")


@pytest.mark.xfail(strict=True, reason="issue #33 item 5: 16 core files today (docs/architecture.md); "
                   "remove this mark when the step reaches 8")
def test_step_has_at_most_eight_core_files(step_files):
    core = sorted(step_files["core"])
    assert len(core) <= MAX_CORE, f"{len(core)} core files in one R-Zero Challenger step: {core}"
