"""Small helpers every report section shares: a matplotlib figure as an embedded PNG, a figure tag,
an HTML table. Imports nothing else from coevo, so any report section can use it."""
from __future__ import annotations

import base64
import html
import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

__all__ = ["png_data_uri", "figure_html", "table_html", "plt"]


def png_data_uri(fig) -> str:
    """``data:image/png;base64,...`` of a matplotlib figure (closed afterwards)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def figure_html(uri: str, caption: str, alt: str | None = None) -> str:
    """A ``<figure>`` with the image and its caption."""
    a = html.escape(alt if alt is not None else caption)
    return f'<figure><img alt="{a}" src="{uri}"/><figcaption>{html.escape(caption)}</figcaption></figure>'


def table_html(rows: list[list], head: list[str]) -> str:
    """An HTML table; every cell escaped."""
    h = "".join(f"<th>{html.escape(str(x))}</th>" for x in head)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(x))}</td>" for x in r) + "</tr>" for r in rows)
    return f"<table><tr>{h}</tr>{body}</table>"
