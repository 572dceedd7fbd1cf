"""Issue 31 items 6 and 7, through the real CLI: ``coevo run --budget smoke`` goes through the default recipe in a
few CPU seconds; the progress bar goes to stderr, the round table and the run directory's line to stdout, the
tables fit ``COLUMNS=80`` (the run's and ``coevo audit``'s); a default run name that is taken gets a suffix."""
import re
import resource
import sys
import threading
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).parent))
from conftest import run_coevo  # noqa: E402

SMOKE_CPU_S = 30  # the promise: <= 30 s on 2 cores; the run is one busy core, so its CPU time is its quiet wall


def _cpu_of_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _take_names(root: Path, seconds: int) -> None:
    """Every default name ``rzero-<stamp>`` of the next ``seconds``, already taken by another run."""
    now = time.time()
    for i in range(seconds):
        d = root / f"rzero-{time.strftime('%Y%m%d-%H%M%S', time.localtime(now + i))}"
        d.mkdir(parents=True, exist_ok=True)
        (d / "config.yaml").write_text("recipe: rzero\n")


def test_smoke_budget_streams_width_and_names(tmp_path):
    root = tmp_path / "runs"
    _take_names(root, 900)
    cpu0, t0 = _cpu_of_children(), time.time()
    p = run_coevo("run", "--budget", "smoke", "--seed", "1", "--set", f"out_root={root}", timeout=900,
                  env={"COLUMNS": "80"})
    cpu, wall = _cpu_of_children() - cpu0, time.time() - t0
    print(f"coevo run --budget smoke: {cpu:.1f} s CPU, {wall:.1f} s wall on this machine")
    out = p.stdout.splitlines()
    m = re.fullmatch(r"run directory: (\S+)  \(([\d.]+) s wall; report.html, summary.json, ledger.duckdb\)", out[-1])
    assert m, out[-3:]
    run = Path(m.group(1))
    assert run.parent == root and re.fullmatch(r"rzero-\d{8}-\d{6}-2", run.name), run  # its stamp was taken
    table = out[:-1]  # the run directory's line stays one line (a path to copy), whatever the width
    assert max(len(line) for line in table) <= 80, [line for line in table if len(line) > 80]
    assert "round 1 eval" not in p.stdout and "round 1 eval" in p.stderr  # the bar on stderr, the table on stdout
    assert any(line.lstrip("│┃ ").startswith("round") for line in out)
    cfg = yaml.safe_load((run / "config.yaml").read_text())
    assert cfg["seed"] == 1 and cfg["rzero"]["rounds"] == 1 and "budget smoke:" in cfg["note"]
    assert (run / "report.html").is_file() and (run / "checkpoints" / "round-1").is_dir()
    assert cpu <= SMOKE_CPU_S, f"smoke budget took {cpu:.1f} s CPU"
    a = run_coevo("audit", str(run), env={"COLUMNS": "80"})
    lines = a.stdout.splitlines()
    assert lines and max(len(line) for line in lines) <= 80, [line for line in lines if len(line) > 80]


def test_default_names_never_collide(tmp_path):
    from coevo.runner.loop import RunError
    from coevo.runner.naming import claim_default_run_dir

    got, threads = [], [threading.Thread(target=lambda: got.append(claim_default_run_dir(tmp_path, "x", RunError)))
                        for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(got)) == 8 and all(d.is_dir() and not any(d.iterdir()) for d in got)
    (tmp_path / "file").write_text("")
    try:
        claim_default_run_dir(tmp_path / "file", "x", RunError)
    except RunError as e:
        assert str(e).startswith(f"cannot create a run directory in {tmp_path / 'file'}")
    else:
        raise AssertionError("a file as out_root must be refused")
