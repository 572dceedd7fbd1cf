"""The files of one R-Zero Challenger step, traced, against docs/architecture.md (issue #33 item 5).

A 1-step R-Zero Challenger run (the shipped tiny checkpoints, the arithmetic world, an in-process
verifier) runs its initial evaluation untraced, then its Challenger step under ``sys.settrace``,
from ``Loop.step`` through the ledger commit.  Every coevo file whose code runs is classified:

- recipe: the recipe folder (``coevo/recipes/rzero/``);
- behind an interface: the backend policy (``coevo/backends/``), the world implementation
  (``coevo/worlds/``) and the run verifier (``coevo/verify/``), passed to the recipe as objects;
- service: the per-stage timers (``coevo/timing.py``) and the signal deferral around the commit
  (``coevo/interrupt.py``), which every stage and command use and no row depends on:
  ``test_services_change_no_row`` runs the step again with every reference to their functions
  replaced by a no-op and requires the same rows, clock columns aside;
- core: every other file.

The traced files must equal the lists of docs/architecture.md's section "One R-Zero Challenger
step, file by file" exactly (a new file on the path fails here until the page names it), and the
core files must be at most eight.
"""
import json
import re
import sys
from contextlib import contextmanager, nullcontext
from pathlib import Path

import pytest

import coevo

REPO = Path(__file__).resolve().parents[1]
PKG = Path(coevo.__file__).resolve().parent
DOC = REPO / "docs" / "architecture.md"
SECTION = "## One R-Zero Challenger step, file by file"
INTERFACES = ("coevo/backends/", "coevo/worlds/", "coevo/verify/")
SERVICES = ("coevo/timing.py", "coevo/interrupt.py")
KINDS = ("core", "recipe", "interface", "service")
RECIPE = "coevo/recipes/rzero/"
CLOCK = {"steps": {"completed_at", "seconds", "stage_seconds_json"}, "verdicts": {"elapsed_s"}}  # wall-clock columns
MAX_CORE = 8
RUN = ["rzero.rounds=1", "rzero.challenger_steps=1", "rzero.solver_steps=0", "rzero.challenger_prompts=4",
       "rzero.challenger_group=2", "rzero.m=2", "world.eval_per_level=1", "verify.workers=0"]


def kind(path: str) -> str:
    """core, recipe, interface (behind one of the three interfaces the recipe is given) or service."""
    if path.startswith(RECIPE):
        return "recipe"
    if path.startswith(INTERFACES):
        return "interface"
    if path in SERVICES:
        return "service"
    return "core"


def challenger_step(tmp_path: Path, tracer=None) -> tuple[Path, int]:
    """A 1-step R-Zero run's initial evaluation (untraced: imports made, caches warm), then its
    Challenger step (under ``tracer`` when given).  Returns the ledger's path and the step."""
    from coevo.config import load_config
    from coevo.ledger.store import Ledger
    from coevo.runner import make_policies, make_recipe, make_world, recipe_info
    from coevo.runner.loop import Loop
    from coevo.verify.run import run_verifier_from_config

    tmp_path.mkdir(parents=True, exist_ok=True)
    cfg = load_config("cpu", None, RUN)
    info = recipe_info(cfg)
    world = make_world(cfg)
    policies = make_policies(cfg, None, info)
    led = Ledger(tmp_path / "ledger.duckdb", tables=info.tables)
    led.append("runs", [{"run_id": "trace", "recipe": "rzero", "config_yaml": "{}"}])
    recipe = make_recipe(cfg, world, policies, "trace", run_verifier_from_config(cfg.verify, world, None, led), info)
    loop = Loop(led, "trace", recipe, policies)
    loop.step(loop.plan[0])
    spec = next(s for s in loop.plan if s.phase == "challenger")
    old = sys.gettrace()
    if tracer is not None:
        sys.settrace(tracer)
    try:
        loop.step(spec)
    finally:
        sys.settrace(old)
    led.close()
    return tmp_path / "ledger.duckdb", spec.step


def traced_files(tmp_path: Path) -> dict[str, set[str]]:
    """The coevo files whose code runs in the Challenger step of a 1-step R-Zero run, by kind."""
    seen: set[str] = set()
    root = str(PKG) + "/"

    def tracer(frame, event, arg):
        f = frame.f_code.co_filename
        if f.startswith(root):
            seen.add("coevo/" + f[len(root):])

    path, step = challenger_step(tmp_path, tracer)
    assert led_rows(path, step) > 0
    out: dict[str, set[str]] = {k: set() for k in KINDS}
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
    out: dict[str, set[str]] = {k: set() for k in KINDS}
    for p in re.findall(r"`(coevo/[\w/]+\.py)`", body):
        out[kind(p)].add(p)
    return out


def test_documented_list_is_read():
    doc = documented("## One R-Zero Challenger step, file by file\n1. `coevo/runner/loop.py` x\n"
                     "2. `coevo/recipes/rzero/recipe.py`\nbehind: `coevo/worlds/arithmetic.py`\n## Next\n"
                     "`coevo/other.py`\n")
    assert doc == {"core": {"coevo/runner/loop.py"}, "recipe": {"coevo/recipes/rzero/recipe.py"},
                   "interface": {"coevo/worlds/arithmetic.py"}, "service": set()}


@pytest.fixture(scope="module")
def step_files(tmp_path_factory) -> dict[str, set[str]]:
    return traced_files(tmp_path_factory.mktemp("trace"))


def test_step_files_match_the_page(step_files):
    doc = documented()
    for k in KINDS:
        assert step_files[k] == doc[k], (f"{k} files: run but not on the page: {sorted(step_files[k] - doc[k])}; "
                                         f"on the page but not run: {sorted(doc[k] - step_files[k])}")


def test_step_has_at_most_eight_core_files(step_files):
    core = sorted(step_files["core"])
    assert len(core) <= MAX_CORE, f"{len(core)} core files in one R-Zero Challenger step: {core}"


@contextmanager
def services_stubbed():
    """Every reference to a service function, in every loaded coevo module, replaced by a no-op."""
    from coevo import interrupt, timing

    real = (timing.stage, timing.record, timing.model_compute, interrupt.held, interrupt.check)
    swapped = []
    for name, mod in list(sys.modules.items()):
        if not (name == "coevo" or name.startswith("coevo.")) or mod is None:
            continue
        for attr, val in list(vars(mod).items()):
            if any(val is f for f in real):
                noop = (lambda *a, **k: None) if val is interrupt.check else (lambda *a, **k: nullcontext())
                swapped.append((mod, attr, val))
                setattr(mod, attr, noop)
    try:
        yield len(swapped)
    finally:
        for mod, attr, val in swapped:
            setattr(mod, attr, val)


def step_rows(path: Path, step: int) -> dict[str, list[tuple]]:
    """Every row the step committed, by table, clock columns left out, in a stable order."""
    import duckdb

    con = duckdb.connect(str(path), read_only=True)
    try:
        out = {}
        for (table,) in con.execute("SELECT table_name FROM information_schema.tables").fetchall():
            cols = [c for (c,) in con.execute("SELECT column_name FROM information_schema.columns WHERE table_name = ? "
                                              "ORDER BY ordinal_position", [table]).fetchall()]
            if "step" not in cols:
                continue
            keep = [c for c in cols if c not in CLOCK.get(table, set())]
            q = f"SELECT {', '.join(keep)} FROM {table} WHERE step = ?"
            out[table] = sorted(con.execute(q, [step]).fetchall(), key=repr)
        return out
    finally:
        con.close()


def stage_seconds(path: Path, step: int) -> dict:
    import duckdb

    con = duckdb.connect(str(path), read_only=True)
    try:
        got = con.execute("SELECT stage_seconds_json FROM steps WHERE step = ?", [step]).fetchone()[0]
    finally:
        con.close()
    return json.loads(got) if got else {}


def test_services_change_no_row(tmp_path):
    """The two service files hold no step logic: with every reference to their functions replaced by a
    no-op, the Challenger step commits the same rows in every table (clock columns aside), and only the
    per-stage seconds are gone."""
    a, step = challenger_step(tmp_path / "with")
    with services_stubbed() as n:
        b, _ = challenger_step(tmp_path / "without")
    assert n >= 8  # stage in stages/step, verify/run, backends/tiny, ledger/store...; record; held; check
    ra, rb = step_rows(a, step), step_rows(b, step)
    assert {t for t, rows in ra.items() if rows} >= {"rollouts", "verdicts", "rewards", "updates", "tasks", "steps"}
    for table in ra:
        assert ra[table] == rb[table], f"table {table}: the services changed a row"
    assert "sample" in stage_seconds(a, step) and "sample" not in stage_seconds(b, step)

