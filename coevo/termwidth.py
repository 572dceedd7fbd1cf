"""How wide the tables on stdout are: the terminal's width; ``COLUMNS`` when it is set (as a shell exports it, or
``COLUMNS=80 coevo audit RUN``); otherwise (a pipe, a log file) ``wide`` columns, so a log keeps one row a line."""
from __future__ import annotations

import os

WIDE = 160


def out_console(wide: int = WIDE, **kwargs):
    """A rich Console on stdout sized as above (rich reads ``COLUMNS`` itself; a terminal reports its own size)."""
    from rich.console import Console

    c = Console(**kwargs)
    if c.is_terminal or (os.environ.get("COLUMNS") or "").isdigit():
        return c
    return Console(width=wide, **kwargs)


def fits(console, renderable) -> bool:
    """Whether ``renderable`` prints within the console's width without folding."""
    from rich.measure import Measurement

    return Measurement.get(console, console.options.update(max_width=10**4), renderable).maximum <= console.width
