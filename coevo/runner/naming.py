"""Default run directories that never collide: ``<out_root>/<recipe>-<YYYYmmdd-HHMMSS>``, and when two runs start
in the same second (two shells, an experiment's jobs) ``...-2``, ``...-3``, ...: the name is taken by ``mkdir``,
which only one process can win, so no two runs ever share a directory."""
from __future__ import annotations

import time
from pathlib import Path

from coevo.runlock import disk_trouble

MAX_SUFFIX = 1000


def claim_default_run_dir(out_root: str | Path, recipe: str, error: type[Exception]) -> Path:
    """Create and return a new, empty run directory under ``out_root``; ``error``: one line on failure."""
    root = Path(out_root)
    stem = f"{recipe}-{time.strftime('%Y%m%d-%H%M%S')}"
    try:
        root.mkdir(parents=True, exist_ok=True)
        for i in range(1, MAX_SUFFIX + 1):
            d = root / (stem if i == 1 else f"{stem}-{i}")
            try:
                d.mkdir()
                return d
            except FileExistsError:
                continue
    except OSError as e:
        raise error(disk_trouble(e, root) or f"cannot create a run directory in {root}: {e.strerror or e}") from None
    raise error(f"cannot create a run directory in {root}: {stem} and {MAX_SUFFIX - 1} suffixed names exist")
