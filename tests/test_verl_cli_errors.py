"""User errors are one line in logs: stderr that is not a terminal (a CI log, a file, a pipe) gets
the message unwrapped, however long (the run-lock error names a path, a host and a time)."""
import subprocess
import sys

import pytest
import typer

from coevo import cli_common

LONG = ("run directory /very/long/path/to/a/run/directory/that/goes/on/runs/rzero-smollm2-cpu-2026-12-01 "
        "is being written by pid 12345 on host vm since 2026-12-01 10:00:00 (a live process holds run.lock)")


def test_fail_is_one_line_when_stderr_is_a_pipe(tmp_path):
    missing = tmp_path / ("a-run-directory-with-a-long-name-" * 4)
    p = subprocess.run([sys.executable, "-m", "coevo.cli", "audit", str(missing)], capture_output=True, text=True,
                       env={"COLUMNS": "80", "PATH": "/usr/bin:/bin"})
    assert p.returncode == 2
    assert p.stderr == f"error: run directory not found: {missing}\n"


def test_fail_in_process(capsys):
    with pytest.raises(typer.Exit):
        cli_common.fail(LONG + " [not markup]")
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "[not markup]" in err
